-- 0004_grants: credit grants (pricing rules section 14) and the line
-- fields of price books version 2: an instance line's type, a grant
-- line's grant. docs/invoicing.md explains how balances are kept.

ALTER TABLE invoice_lines
    ADD COLUMN instance meter_id,
    ADD COLUMN grant_id text
        CHECK (grant_id ~ '^[A-Za-z0-9._:-]{1,64}(/[A-Za-z0-9._:-]{1,64})?$'),
    ADD CONSTRAINT invoice_lines_instance
        CHECK (instance IS NULL OR kind IN ('instance', 'late_usage')),
    ADD CONSTRAINT invoice_lines_grant
        CHECK ((kind = 'credit_grant') = (grant_id IS NOT NULL));
COMMENT ON COLUMN invoice_lines.kind IS
    'what the line bills: cpu, memory, instance, storage, egress, runs, '
    'autopause_credit, subscription, included_credit, promotional_credit, '
    'minimum_commit (a statement''s kinds), late_usage or credit_grant';
COMMENT ON COLUMN invoice_lines.instance IS
    'an instance line''s type (price books with "instances"); late usage '
    'matches lines by kind, book and type';
COMMENT ON COLUMN invoice_lines.grant_id IS
    'a credit_grant line''s grant: an operator''s id, or BOOK/ID for a '
    'book''s. A grant''s balance is its amount plus the amounts of its '
    'lines in final documents (a credit note''s lines give back what the '
    'invoice it voids spent)';

CREATE TABLE credit_grants (
    account_id    meter_id    NOT NULL REFERENCES accounts ON DELETE RESTRICT,
    grant_id      meter_id    NOT NULL,
    amount        numeric     NOT NULL
                  CHECK (amount > 0 AND amount <= 1e15
                         AND amount = round(amount, 6)),
    currency      char(3)     NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    period        date        NOT NULL
                  CHECK (period = date_trunc('month', period)::date),
    expires_after integer     CHECK (expires_after BETWEEN 1 AND 1200),
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, grant_id),
    CHECK (period = date_trunc('month', created_at AT TIME ZONE 'UTC')::date)
);
COMMENT ON TABLE credit_grants IS
    'money an operator gave an account to spend over several periods '
    '(meterctl credits grant); a book''s grants are not stored here but '
    'follow from the account''s books. Never changed once given';
COMMENT ON COLUMN credit_grants.account_id IS 'the account that received it';
COMMENT ON COLUMN credit_grants.grant_id IS
    'unique per account; given by the operator or generated';
COMMENT ON COLUMN credit_grants.amount IS
    'at most 6 decimals, at most 10^15';
COMMENT ON COLUMN credit_grants.currency IS
    'the currency of the account''s book when the grant was given';
COMMENT ON COLUMN credit_grants.period IS
    'the period received: the month (UTC) of created_at';
COMMENT ON COLUMN credit_grants.expires_after IS
    'the periods it can be spent in, from the one received (at most '
    '1,200, a hundred years); NULL: never expires';
COMMENT ON COLUMN credit_grants.created_at IS 'when it was given';

CREATE FUNCTION credit_grants_immutable() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'grant % of account % was given and never changes; '
        'give another', OLD.grant_id, OLD.account_id
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;
COMMENT ON FUNCTION credit_grants_immutable() IS
    'refuses any change or deletion of a grant';
CREATE TRIGGER credit_grants_immutable
    BEFORE UPDATE OR DELETE ON credit_grants
    FOR EACH ROW EXECUTE FUNCTION credit_grants_immutable();
CREATE TRIGGER credit_grants_no_truncate BEFORE TRUNCATE ON credit_grants
    FOR EACH STATEMENT EXECUTE FUNCTION invoices_no_truncate();
