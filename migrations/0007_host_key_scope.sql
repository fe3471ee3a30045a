-- 0007_host_key_scope: a host key may be limited to a list of accounts
-- (a host that runs some customers' sandboxes only), so that a leaked
-- key forges usage for those accounts at most. A host key without rows
-- here writes any account, as before.

CREATE TABLE host_key_accounts (
    key_id     bigint   NOT NULL REFERENCES api_keys,
    account_id meter_id NOT NULL,
    PRIMARY KEY (key_id, account_id)
);
COMMENT ON TABLE host_key_accounts IS
    'the accounts a host key may write usage for; a host key with no row '
    'here may write any account';
COMMENT ON COLUMN host_key_accounts.key_id IS 'the host key';
COMMENT ON COLUMN host_key_accounts.account_id IS
    'an account it may write (it need not exist yet: accounts are created '
    'by their first sample)';

COMMENT ON COLUMN audit_log.action IS
    'key.create, key.revoke, key.change, key.delete, key.scope, book.import, '
    'account.assign, account.unassign, credit.grant, usage.quarantine, '
    'invoice.finalize, credit_note.finalize';

CREATE FUNCTION host_key_accounts_check() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT role FROM api_keys WHERE key_id = NEW.key_id) <> 'host' THEN
        RAISE EXCEPTION 'key % is not a host key: only host keys are scoped '
            'to accounts', NEW.key_id USING ERRCODE = 'check_violation';
    END IF;
    PERFORM audit('key.scope', NEW.account_id, 'key ' || NEW.key_id, '{}');
    RETURN NULL;
END;
$$;
CREATE TRIGGER host_key_accounts_check AFTER INSERT ON host_key_accounts
    FOR EACH ROW EXECUTE FUNCTION host_key_accounts_check();
-- The scope is set when the key is created and never changed: a new
-- scope is a new key.
CREATE FUNCTION host_key_accounts_refuse() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a host key''s accounts are fixed when it is created: '
        'create another key' USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER host_key_accounts_fixed BEFORE UPDATE OR DELETE
    ON host_key_accounts FOR EACH ROW EXECUTE FUNCTION host_key_accounts_refuse();
