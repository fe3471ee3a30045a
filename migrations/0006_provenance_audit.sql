-- 0006_provenance_audit: which key stored each block of usage, so that
-- usage forged with a leaked host key can be found and quarantined; and
-- an append-only audit log of what operators did. docs/reliability.md
-- says how they are used.

ALTER TABLE usage_blocks ADD COLUMN key_id bigint;
COMMENT ON COLUMN usage_blocks.key_id IS
    'the API key (api_keys.key_id) whose batch stored the block; NULL when '
    'stored otherwise (tests, benchmarks)';
ALTER TABLE usage_hourly ADD COLUMN key_id bigint;
COMMENT ON COLUMN usage_hourly.key_id IS
    'the API key whose batch added the row, as usage_blocks.key_id';
COMMENT ON COLUMN usage_blocks.arrived_at IS
    'when the batch that brought these seconds arrived (the meter''s clock); '
    'later than the minute for late samples';
COMMENT ON COLUMN usage_hourly.added_at IS
    'when the batch arrived: its blocks'' arrived_at (from this migration on)';

CREATE TABLE usage_quarantines (
    quarantine_id bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key_id        bigint      NOT NULL REFERENCES api_keys,
    from_at       timestamptz NOT NULL,
    to_at         timestamptz NOT NULL CHECK (to_at > from_at),
    reason        text        NOT NULL CHECK (length(reason) BETWEEN 1 AND 500),
    blocks        bigint      NOT NULL CHECK (blocks >= 0),
    seconds       bigint      NOT NULL CHECK (seconds >= 0),
    created_at    timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE usage_quarantines IS
    'usage set aside: the blocks a key stored in [from_at, to_at) were '
    'moved to usage_blocks_quarantined, out of rating and invoicing';
COMMENT ON COLUMN usage_quarantines.quarantine_id IS 'number of the quarantine';
COMMENT ON COLUMN usage_quarantines.key_id IS 'the key whose usage was set aside';
COMMENT ON COLUMN usage_quarantines.from_at IS
    'first arrival time set aside (usage_blocks.arrived_at)';
COMMENT ON COLUMN usage_quarantines.to_at IS 'end of the arrival times set aside, excluded';
COMMENT ON COLUMN usage_quarantines.reason IS 'why, as the operator gave it';
COMMENT ON COLUMN usage_quarantines.blocks IS 'blocks moved';
COMMENT ON COLUMN usage_quarantines.seconds IS 'seconds of usage in them';
COMMENT ON COLUMN usage_quarantines.created_at IS 'when';

-- The columns of usage_blocks and usage_hourly, then the quarantine.
CREATE TABLE usage_blocks_quarantined (
    LIKE usage_blocks,
    quarantine_id bigint NOT NULL REFERENCES usage_quarantines
);
COMMENT ON TABLE usage_blocks_quarantined IS
    'blocks of usage_blocks set aside by a quarantine; kept, never rated';
COMMENT ON COLUMN usage_blocks_quarantined.account_pk IS 'as in usage_blocks';
COMMENT ON COLUMN usage_blocks_quarantined.sandbox_pk IS 'as in usage_blocks';
COMMENT ON COLUMN usage_blocks_quarantined.minute IS 'as in usage_blocks';
COMMENT ON COLUMN usage_blocks_quarantined.seconds IS 'as in usage_blocks';
COMMENT ON COLUMN usage_blocks_quarantined.arrived_at IS 'as in usage_blocks';
COMMENT ON COLUMN usage_blocks_quarantined.data IS 'as in usage_blocks';
COMMENT ON COLUMN usage_blocks_quarantined.key_id IS 'as in usage_blocks';
COMMENT ON COLUMN usage_blocks_quarantined.quarantine_id IS
    'the quarantine that set the block aside';
CREATE INDEX usage_blocks_quarantined_key
    ON usage_blocks_quarantined (account_pk, sandbox_pk, minute);

CREATE TABLE usage_hourly_quarantined (
    LIKE usage_hourly,
    quarantine_id bigint NOT NULL REFERENCES usage_quarantines
);
COMMENT ON TABLE usage_hourly_quarantined IS
    'rows of usage_hourly set aside with the blocks they sum';
COMMENT ON COLUMN usage_hourly_quarantined.account_pk IS 'as in usage_hourly';
COMMENT ON COLUMN usage_hourly_quarantined.hour IS 'as in usage_hourly';
COMMENT ON COLUMN usage_hourly_quarantined.samples IS 'as in usage_hourly';
COMMENT ON COLUMN usage_hourly_quarantined.running_s IS 'as in usage_hourly';
COMMENT ON COLUMN usage_hourly_quarantined.vcpu_s IS 'as in usage_hourly';
COMMENT ON COLUMN usage_hourly_quarantined.cpu_used_s IS 'as in usage_hourly';
COMMENT ON COLUMN usage_hourly_quarantined.mem_byte_s IS 'as in usage_hourly';
COMMENT ON COLUMN usage_hourly_quarantined.mem_used_byte_s IS 'as in usage_hourly';
COMMENT ON COLUMN usage_hourly_quarantined.disk_byte_s IS 'as in usage_hourly';
COMMENT ON COLUMN usage_hourly_quarantined.egress_bytes IS 'as in usage_hourly';
COMMENT ON COLUMN usage_hourly_quarantined.added_at IS 'as in usage_hourly';
COMMENT ON COLUMN usage_hourly_quarantined.key_id IS 'as in usage_hourly';
COMMENT ON COLUMN usage_hourly_quarantined.quarantine_id IS
    'the quarantine that set the row aside';

-- ---- the audit log ----------------------------------------------------------

CREATE TABLE audit_log (
    audit_id   bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor      text        NOT NULL,
    db_user    text        NOT NULL DEFAULT session_user,
    action     text        NOT NULL,
    account_id text,
    subject    text        NOT NULL,
    detail     jsonb       NOT NULL DEFAULT '{}'
);
COMMENT ON TABLE audit_log IS
    'what operators did, one row an act, written by triggers on the tables '
    'acted on (so every path is recorded); append-only: updates, deletes '
    'and truncation are refused';
COMMENT ON COLUMN audit_log.audit_id IS 'order of the acts';
COMMENT ON COLUMN audit_log.at IS 'when';
COMMENT ON COLUMN audit_log.actor IS
    'who: the session''s meter.actor setting (meterctl sets its user, meterd '
    'the key of the request), else the database user';
COMMENT ON COLUMN audit_log.db_user IS 'the database user of the session';
COMMENT ON COLUMN audit_log.action IS
    'key.create, key.revoke, key.change, key.delete, book.import, '
    'account.assign, account.unassign, credit.grant, usage.quarantine, '
    'invoice.finalize, credit_note.finalize (and what later migrations add)';
COMMENT ON COLUMN audit_log.account_id IS 'the account concerned, if one';
COMMENT ON COLUMN audit_log.subject IS 'what was acted on: a key, book, invoice...';
COMMENT ON COLUMN audit_log.detail IS 'the act''s values';
CREATE INDEX audit_log_at ON audit_log (at);

CREATE FUNCTION audit_log_refuse() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_refuse();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuse();

-- When and as which database user are the server's, whatever an INSERT
-- says.
CREATE FUNCTION audit_log_stamp() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.at := clock_timestamp();
    NEW.db_user := session_user;
    RETURN NEW;
END;
$$;
CREATE TRIGGER audit_log_stamp BEFORE INSERT ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_stamp();

-- What is set aside stays as it was set aside.
CREATE FUNCTION quarantine_refuse() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is kept as quarantined: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER usage_quarantines_fixed BEFORE UPDATE OR DELETE
    ON usage_quarantines FOR EACH ROW EXECUTE FUNCTION quarantine_refuse();
CREATE TRIGGER usage_quarantines_no_truncate BEFORE TRUNCATE
    ON usage_quarantines FOR EACH STATEMENT EXECUTE FUNCTION quarantine_refuse();
CREATE TRIGGER usage_blocks_quarantined_fixed BEFORE UPDATE OR DELETE
    ON usage_blocks_quarantined FOR EACH ROW EXECUTE FUNCTION quarantine_refuse();
CREATE TRIGGER usage_blocks_quarantined_no_truncate BEFORE TRUNCATE
    ON usage_blocks_quarantined FOR EACH STATEMENT
    EXECUTE FUNCTION quarantine_refuse();
CREATE TRIGGER usage_hourly_quarantined_fixed BEFORE UPDATE OR DELETE
    ON usage_hourly_quarantined FOR EACH ROW EXECUTE FUNCTION quarantine_refuse();
CREATE TRIGGER usage_hourly_quarantined_no_truncate BEFORE TRUNCATE
    ON usage_hourly_quarantined FOR EACH STATEMENT
    EXECUTE FUNCTION quarantine_refuse();

-- Tables whose rows are audited one by one are never truncated (that
-- would bypass their row triggers).
CREATE FUNCTION audited_no_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is audited row by row: TRUNCATE refused', TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER api_keys_no_truncate BEFORE TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION audited_no_truncate();
CREATE TRIGGER price_books_no_truncate BEFORE TRUNCATE ON price_books
    FOR EACH STATEMENT EXECUTE FUNCTION audited_no_truncate();
CREATE TRIGGER account_price_books_no_truncate BEFORE TRUNCATE
    ON account_price_books FOR EACH STATEMENT
    EXECUTE FUNCTION audited_no_truncate();

CREATE FUNCTION audit(action text, account text, subject text, detail jsonb)
RETURNS void LANGUAGE sql AS $$
    INSERT INTO audit_log (actor, action, account_id, subject, detail)
    VALUES (coalesce(nullif(current_setting('meter.actor', true), ''),
                     session_user),
            action, account, subject, detail);
$$;
COMMENT ON FUNCTION audit(text, text, text, jsonb) IS
    'appends one act to audit_log, by the session''s actor';

-- A key as the log shows it: never its token's hash, only whether it
-- changed.
CREATE FUNCTION audit_key_json(k api_keys) RETURNS jsonb
LANGUAGE sql AS $$
    SELECT jsonb_build_object('role', k.role, 'account_id', k.account_id,
                              'name', k.name, 'revoked_at', k.revoked_at);
$$;

CREATE FUNCTION audit_api_keys() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM audit('key.create', NEW.account_id, 'key ' || NEW.key_id,
                      jsonb_build_object('role', NEW.role, 'name', NEW.name));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM audit('key.delete', OLD.account_id, 'key ' || OLD.key_id,
                      audit_key_json(OLD));
    ELSIF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL
          AND audit_key_json(OLD) - 'revoked_at' = audit_key_json(NEW) - 'revoked_at'
          AND OLD.token_hash = NEW.token_hash THEN
        PERFORM audit('key.revoke', NEW.account_id, 'key ' || NEW.key_id,
                      jsonb_build_object('role', NEW.role, 'name', NEW.name));
    ELSIF audit_key_json(OLD) <> audit_key_json(NEW)
          OR OLD.token_hash <> NEW.token_hash THEN
        -- Not what meterctl does: a change by hand, recorded whole.
        PERFORM audit('key.change', NEW.account_id, 'key ' || NEW.key_id,
                      jsonb_build_object('old', audit_key_json(OLD),
                                         'new', audit_key_json(NEW),
                                         'token_changed',
                                         OLD.token_hash <> NEW.token_hash));
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER api_keys_audit AFTER INSERT OR UPDATE OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION audit_api_keys();

CREATE FUNCTION audit_price_books() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM audit('book.import', NULL,
                  'book ' || NEW.price_book_id || ' v' || NEW.version,
                  jsonb_build_object('effective_from', NEW.effective_from,
                                     'currency', NEW.currency));
    RETURN NULL;
END;
$$;
CREATE TRIGGER price_books_audit AFTER INSERT ON price_books
    FOR EACH ROW EXECUTE FUNCTION audit_price_books();

CREATE FUNCTION audit_account_price_books() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM audit('account.unassign', OLD.account_id,
                      'book ' || OLD.price_book_id || ' v' || OLD.version,
                      jsonb_build_object('valid_from', OLD.valid_from));
    ELSIF TG_OP = 'UPDATE' THEN
        IF row(OLD.*) IS DISTINCT FROM row(NEW.*) THEN
            PERFORM audit('account.assign', NEW.account_id,
                          'book ' || NEW.price_book_id || ' v' || NEW.version,
                          jsonb_build_object('valid_from', NEW.valid_from,
                              'old', jsonb_build_object(
                                  'account_id', OLD.account_id,
                                  'book', OLD.price_book_id,
                                  'version', OLD.version,
                                  'valid_from', OLD.valid_from)));
        END IF;
    ELSE
        PERFORM audit('account.assign', NEW.account_id,
                      'book ' || NEW.price_book_id || ' v' || NEW.version,
                      jsonb_build_object('valid_from', NEW.valid_from));
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER account_price_books_audit
    AFTER INSERT OR UPDATE OR DELETE ON account_price_books
    FOR EACH ROW EXECUTE FUNCTION audit_account_price_books();

CREATE FUNCTION audit_credit_grants() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM audit('credit.grant', NEW.account_id, 'grant ' || NEW.grant_id,
                  jsonb_build_object('amount', NEW.amount::text,
                                     'currency', NEW.currency,
                                     'expires_after', NEW.expires_after));
    RETURN NULL;
END;
$$;
CREATE TRIGGER credit_grants_audit AFTER INSERT ON credit_grants
    FOR EACH ROW EXECUTE FUNCTION audit_credit_grants();

CREATE FUNCTION audit_usage_quarantines() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM audit('usage.quarantine', NULL,
                  'quarantine ' || NEW.quarantine_id,
                  jsonb_build_object('key_id', NEW.key_id,
                                     'from', NEW.from_at, 'to', NEW.to_at,
                                     'reason', NEW.reason,
                                     'blocks', NEW.blocks,
                                     'seconds', NEW.seconds));
    RETURN NULL;
END;
$$;
CREATE TRIGGER usage_quarantines_audit AFTER INSERT ON usage_quarantines
    FOR EACH ROW EXECUTE FUNCTION audit_usage_quarantines();

CREATE FUNCTION audit_invoices() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'final' AND (TG_OP = 'INSERT' OR OLD.status <> 'final')
    THEN
        PERFORM audit(NEW.kind || '.finalize', NEW.account_id,
                      'invoice ' || NEW.number,
                      jsonb_build_object('period', NEW.period,
                                         'total', NEW.total::text,
                                         'currency', NEW.currency,
                                         'voids', NEW.voids));
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER invoices_audit AFTER INSERT OR UPDATE ON invoices
    FOR EACH ROW EXECUTE FUNCTION audit_invoices();
