-- 0021_admin_api: what the management API (/v1/admin/..., meterd's
-- admin.c) needs beyond meterctl's tables: an account's metadata and
-- the id the provider's own systems know it by, assignments that end
-- (an account on no book from a date), the audit of accounts, and the
-- answers of idempotent creations.

ALTER TABLE accounts
    ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'
        CHECK (jsonb_typeof(metadata) = 'object'
               AND length(metadata::text) <= 16384),
    ADD COLUMN external_id text UNIQUE
        CHECK (length(external_id) BETWEEN 1 AND 200);
COMMENT ON COLUMN accounts.metadata IS
    'the provider''s own keys and values (a JSON object of at most 8 KiB '
    'written compact, as the API checks it: jsonb''s text, with a space '
    'after each colon and comma, is at most twice that); '
    'never read by billing';
COMMENT ON COLUMN accounts.external_id IS
    'the id of the account in the provider''s systems (its signup, CRM), '
    'unique; NULL if none was given';

-- An assignment without a book ends the one before: the account is on
-- no book from valid_from until its next assignment.
ALTER TABLE account_price_books
    ALTER COLUMN price_book_id DROP NOT NULL,
    ALTER COLUMN version DROP NOT NULL,
    ADD CHECK ((price_book_id IS NULL) = (version IS NULL));
COMMENT ON COLUMN account_price_books.price_book_id IS
    'the book; NULL: the account is on none from valid_from (an end)';

CREATE OR REPLACE FUNCTION audit_account_price_books() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM audit('account.unassign', OLD.account_id,
                      coalesce('book ' || OLD.price_book_id || ' v'
                               || OLD.version, 'no book'),
                      jsonb_build_object('valid_from', OLD.valid_from));
    ELSIF TG_OP = 'UPDATE' THEN
        IF row(OLD.*) IS DISTINCT FROM row(NEW.*) THEN
            PERFORM audit(CASE WHEN NEW.price_book_id IS NULL
                          THEN 'account.end' ELSE 'account.assign' END,
                          NEW.account_id,
                          coalesce('book ' || NEW.price_book_id || ' v'
                                   || NEW.version, 'no book'),
                          jsonb_build_object('valid_from', NEW.valid_from,
                              'old', jsonb_build_object(
                                  'account_id', OLD.account_id,
                                  'book', OLD.price_book_id,
                                  'version', OLD.version,
                                  'valid_from', OLD.valid_from)));
        END IF;
    ELSE
        PERFORM audit(CASE WHEN NEW.price_book_id IS NULL
                      THEN 'account.end' ELSE 'account.assign' END,
                      NEW.account_id,
                      coalesce('book ' || NEW.price_book_id || ' v'
                               || NEW.version, 'no book'),
                      jsonb_build_object('valid_from', NEW.valid_from));
    END IF;
    RETURN NULL;
END;
$$;

-- Accounts an operator or the API creates or changes; not those a
-- sample creates (ingestion's hot path writes no audit row).
CREATE FUNCTION audit_accounts() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NOT NEW.auto_created THEN
            PERFORM audit('account.create', NEW.account_id,
                          'account ' || NEW.account_id,
                          jsonb_build_object('name', NEW.name,
                                             'external_id', NEW.external_id,
                                             'metadata', NEW.metadata));
        END IF;
    ELSIF (OLD.name, OLD.external_id, OLD.metadata)
          IS DISTINCT FROM (NEW.name, NEW.external_id, NEW.metadata) THEN
        PERFORM audit('account.update', NEW.account_id,
                      'account ' || NEW.account_id,
                      jsonb_build_object(
                          'old', jsonb_build_object('name', OLD.name,
                              'external_id', OLD.external_id,
                              'metadata', OLD.metadata),
                          'new', jsonb_build_object('name', NEW.name,
                              'external_id', NEW.external_id,
                              'metadata', NEW.metadata)));
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER accounts_audit AFTER INSERT OR UPDATE ON accounts
    FOR EACH ROW EXECUTE FUNCTION audit_accounts();

-- As 0012 made the other audit triggers: they run as the owner, the
-- only one who may call audit() (CREATE OR REPLACE reset the first).
DO $$
DECLARE
    path text := format('%I, pg_temp', current_schema());
BEGIN
    EXECUTE format('ALTER FUNCTION audit_account_price_books() SECURITY '
                   'DEFINER SET search_path = %s', path);
    EXECUTE format('ALTER FUNCTION audit_accounts() SECURITY DEFINER '
                   'SET search_path = %s', path);
END
$$;

-- The hours [lo, hi) of the period starting at period during which an
-- account was on no price book: before its first assignment, and from
-- each end until its next assignment; with the day its book begins
-- (NULL: it has none after).
CREATE OR REPLACE FUNCTION unbilled_gaps(period date)
RETURNS TABLE (account_pk integer, account_id text, first_book date,
               lo bigint, hi bigint)
LANGUAGE sql STABLE AS $$
    WITH p AS (SELECT extract(epoch FROM period)::bigint / 3600 AS lo,
                      extract(epoch FROM period + interval '1 month')::bigint
                          / 3600 AS hi),
         -- Each account's stretches without a book: from the start of
         -- time to its first assignment, and from each end to the next.
         s AS (SELECT b.account_id, b.valid_from AS since,
                      lead(b.valid_from) OVER w AS until,
                      b.price_book_id IS NULL AS ends,
                      row_number() OVER w AS n
                 FROM account_price_books b
               WINDOW w AS (PARTITION BY b.account_id ORDER BY b.valid_from)),
         gaps AS (SELECT s.account_id, NULL::date AS since, s.since AS until
                    FROM s WHERE s.n = 1
                  UNION ALL
                  SELECT s.account_id, s.since, s.until FROM s WHERE s.ends)
    SELECT a.account_pk, a.account_id, g.until,
           greatest(p.lo, coalesce(extract(epoch FROM g.since)::bigint / 3600,
                                   p.lo)),
           least(p.hi, coalesce(extract(epoch FROM g.until)::bigint / 3600,
                                p.hi))
      FROM accounts a CROSS JOIN p
      LEFT JOIN gaps g ON g.account_id = a.account_id
     WHERE NOT EXISTS (SELECT 1 FROM account_price_books b
                        WHERE b.account_id = a.account_id)
        OR (coalesce(extract(epoch FROM g.since)::bigint / 3600, p.lo) < p.hi
            AND coalesce(extract(epoch FROM g.until)::bigint / 3600, p.hi)
                > p.lo)
$$;

-- The answers of creations made with an Idempotency-Key header: the
-- same key and request again get the first answer, another request
-- with the key a 409. Kept a day.
CREATE TABLE idempotency_keys (
    key_id       bigint      NOT NULL REFERENCES api_keys ON DELETE CASCADE,
    idem_key     text        NOT NULL CHECK (length(idem_key) BETWEEN 1 AND 255),
    request      bytea       NOT NULL CHECK (length(request) = 32),
    status       integer     CHECK (status BETWEEN 200 AND 299),
    response     text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (key_id, idem_key),
    CHECK ((status IS NULL) = (response IS NULL))
);
COMMENT ON TABLE idempotency_keys IS
    'answers of the management API''s creations by Idempotency-Key, per '
    'API key, kept a day';
COMMENT ON COLUMN idempotency_keys.key_id IS
    'the API key that sent it: each key has its own Idempotency-Keys';
COMMENT ON COLUMN idempotency_keys.idem_key IS 'the Idempotency-Key header';
COMMENT ON COLUMN idempotency_keys.created_at IS
    'when the first request claimed it; a day later it is forgotten';
COMMENT ON COLUMN idempotency_keys.request IS
    'SHA-256 of the method, path and body the key was first used with';
COMMENT ON COLUMN idempotency_keys.status IS
    'the answer''s status; NULL while the first request is under way';
COMMENT ON COLUMN idempotency_keys.response IS
    'the answer''s JSON body';

GRANT SELECT, INSERT, UPDATE, DELETE ON idempotency_keys TO meter_worker;

-- An account as the management API answers it, with its assignments;
-- NULL if there is no such account.
CREATE FUNCTION account_json(id text) RETURNS json
LANGUAGE sql STABLE AS $$
    SELECT json_build_object(
        'id', a.account_id, 'name', a.name, 'external_id', a.external_id,
        'metadata', a.metadata,
        'created_at', to_char(a.created_at AT TIME ZONE 'UTC',
                              'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
        'auto_created', a.auto_created,
        'price_books', coalesce((SELECT json_agg(json_build_object(
            'from', to_char(b.valid_from, 'YYYY-MM-DD'),
            'price_book_id', b.price_book_id, 'version', b.version)
            ORDER BY b.valid_from) FROM account_price_books b
            WHERE b.account_id = a.account_id), '[]'))
      FROM accounts a WHERE a.account_id = id
$$;
COMMENT ON FUNCTION account_json(text) IS
    'an account as GET /v1/admin/accounts/{id} answers it';
