-- 0020_unbilled: nothing goes unbilled silently. The invoice run
-- records the accounts whose draft it could not compute, and why; the
-- overview and the run's summary list them beside the usage stored for
-- hours an account was on no price book (which no run bills).

CREATE TABLE invoice_run_failures (
    account_id  meter_id    NOT NULL REFERENCES accounts ON DELETE RESTRICT,
    period      date        NOT NULL CHECK (extract(day FROM period) = 1),
    error       text        NOT NULL,
    failed_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, period)
);
COMMENT ON TABLE invoice_run_failures IS
    'accounts whose draft for a period the last invoice run could not '
    'compute; a run that computes it deletes the row';
COMMENT ON COLUMN invoice_run_failures.account_id IS 'the account';
COMMENT ON COLUMN invoice_run_failures.period IS
    'the period''s first day';
COMMENT ON COLUMN invoice_run_failures.error IS
    'why, as the run said it (an unknown price, a refused statement)';
COMMENT ON COLUMN invoice_run_failures.failed_at IS
    'when the last run that failed it ended its batch';

GRANT SELECT, INSERT, UPDATE, DELETE ON invoice_run_failures TO meter_worker;

-- The hours [lo, hi) of the period starting at period during which an
-- account was on no price book (before its first assignment), and that
-- assignment's first day (NULL: none). Only these accounts' rollups are
-- then read, a statement for each, so that a fleet whose every account
-- is on a book pays little for the check.
CREATE FUNCTION unbilled_gaps(period date)
RETURNS TABLE (account_pk integer, account_id text, first_book date,
               lo bigint, hi bigint)
LANGUAGE sql STABLE AS $$
    WITH p AS (SELECT extract(epoch FROM period)::bigint / 3600 AS lo,
                      extract(epoch FROM period + interval '1 month')::bigint
                          / 3600 AS hi),
         f AS (SELECT b.account_id, min(b.valid_from) AS first
                 FROM account_price_books b GROUP BY b.account_id)
    SELECT a.account_pk, a.account_id, f.first, p.lo,
           least(p.hi, coalesce(extract(epoch FROM f.first)::bigint / 3600,
                                p.hi))
      FROM accounts a CROSS JOIN p LEFT JOIN f USING (account_id)
     WHERE f.first IS NULL OR extract(epoch FROM f.first)::bigint / 3600 > p.lo
$$;
COMMENT ON FUNCTION unbilled_gaps(date) IS
    'the hours of a period during which each account was on no price book';
