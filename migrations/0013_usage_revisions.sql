-- 0013_usage_revisions: what tells the invoice run that a closed
-- period's usage changed. Arrivals only add seconds, so comparing the
-- count of stored seconds with the count a document rated finds them;
-- a quarantine takes seconds away, and a resend into the seconds it freed
-- puts the same count back with other values (docs/invoicing.md). So a
-- quarantine raises the revision of every account-period it touches, in
-- its own transaction, and the invoice run records the revision it read
-- before reading the usage: a period whose revision moved since is rated
-- again. And late usage in another currency than the current period's
-- goes on a document of its own for the period (rules section 9): one
-- draft per account, period and currency.

CREATE TABLE usage_revisions (
    account_pk integer NOT NULL REFERENCES accounts (account_pk),
    period     date    NOT NULL
               CHECK (period = date_trunc('month', period)::date),
    revision   bigint  NOT NULL CHECK (revision > 0),
    PRIMARY KEY (account_pk, period)
);
COMMENT ON TABLE usage_revisions IS
    'account-periods whose stored usage lost seconds (a quarantine): '
    'raised by each such change, absent (0) while none happened';
COMMENT ON COLUMN usage_revisions.account_pk IS
    'the account (accounts.account_pk), first so the table shards by account';
COMMENT ON COLUMN usage_revisions.period IS 'first day of the month (UTC)';
COMMENT ON COLUMN usage_revisions.revision IS
    'how many changes took seconds away from the period''s usage';

-- Quarantines made before this migration count: each period they took
-- seconds from is rated again once by its account's next invoice (a
-- difference of zero bills nothing).
INSERT INTO usage_revisions (account_pk, period, revision)
SELECT account_pk,
       date_trunc('month', to_timestamp(minute::bigint * 60)
                           AT TIME ZONE 'UTC')::date,
       count(DISTINCT quarantine_id)
  FROM usage_blocks_quarantined
 GROUP BY 1, 2;

ALTER TABLE invoice_usage ADD COLUMN revision bigint CHECK (revision >= 0);
COMMENT ON COLUMN invoice_usage.revision IS
    'the usage_revisions.revision of the period it rated, read before the '
    'usage (0: none); NULL for a credit note, and for ratings made before '
    'this column (taken as 0)';

DROP INDEX invoices_one_draft;
CREATE UNIQUE INDEX invoices_one_draft ON invoices (account_id, period, currency)
    WHERE status = 'draft' AND kind = 'invoice';

-- meterd keeps each sandbox's first running minute in memory and lowers
-- the stored one only when a batch runs earlier; a quarantine can raise
-- it (or clear it) for the sandboxes whose first run it took away. It
-- then raises this epoch, and a meterd that reads a new epoch forgets
-- what it kept (meter/db/registry.c).
CREATE TABLE first_run_epoch (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    epoch bigint  NOT NULL DEFAULT 0 CHECK (epoch >= 0)
);
COMMENT ON TABLE first_run_epoch IS
    'one row: raised by each quarantine that changed a sandbox''s '
    'first_running_minute other than lowering it';
COMMENT ON COLUMN first_run_epoch.one IS 'the single row';
COMMENT ON COLUMN first_run_epoch.epoch IS 'how many such quarantines';
INSERT INTO first_run_epoch DEFAULT VALUES;

-- The daily work (0012): a quarantine raises both, the invoice run and
-- ingestion read them.
GRANT SELECT, INSERT, UPDATE ON usage_revisions TO meter_worker;
GRANT SELECT, UPDATE ON first_run_epoch TO meter_worker;
