-- 0012_worker_role: meterd and meterctl's daily commands work as the
-- role meter_worker, which owns nothing: it cannot alter or disable a
-- trigger (only a table's owner can), nor set session_replication_role
-- (only a superuser can), so the immutability of final documents, the
-- append-only audit log and the quarantine hold against everything that
-- reaches the database through meterd and its keys. The role that runs
-- the migrations owns the schema and all in it, and does what needs the
-- owner: migrations, VACUUM (meterctl usage compact), archiving a month
-- (detaching its partitions, meter/README.md). docs/reliability.md says
-- how an operator sets up both roles on a database of their own.
--
-- The embedded cluster (meter/cluster/cluster.c) creates meter_worker as
-- a login role. Elsewhere the operator creates it, or this migration
-- does (NOLOGIN, to be granted to a login role) if its role may.

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'meter_worker') THEN
        CREATE ROLE meter_worker NOLOGIN;
    END IF;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE EXCEPTION 'role "meter_worker" does not exist and role "%" may '
        'not create it: create it first (CREATE ROLE meter_worker LOGIN, '
        'docs/reliability.md)', current_user;
END
$$;

-- The schema: used, never created in, but by its owner.
DO $$
BEGIN
    EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM PUBLIC', current_schema());
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO meter_worker', current_schema());
END
$$;

-- What the daily work reads and writes, table by table. What a trigger
-- refuses (updating a final invoice, deleting a quarantine) is granted
-- where the table's other rows need it: the trigger decides, and the
-- worker cannot turn it off. Identity columns need no grant on their
-- sequences; foreign keys are checked as the owner.
GRANT SELECT ON schema_migrations TO meter_worker;
GRANT SELECT, INSERT, UPDATE ON accounts TO meter_worker;
GRANT SELECT, INSERT, UPDATE ON api_keys TO meter_worker;
GRANT SELECT, INSERT ON price_books TO meter_worker;
GRANT SELECT, INSERT, UPDATE ON account_price_books TO meter_worker;
GRANT SELECT, INSERT ON host_key_accounts TO meter_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON web_sessions TO meter_worker;
GRANT SELECT, INSERT, UPDATE ON sandboxes TO meter_worker;
GRANT SELECT, INSERT, DELETE ON usage_blocks TO meter_worker;
GRANT SELECT, INSERT, DELETE ON usage_packs TO meter_worker;
GRANT SELECT, INSERT, DELETE ON usage_pack_queue TO meter_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON usage_hourly TO meter_worker;
GRANT SELECT, INSERT, UPDATE ON usage_hourly_merged TO meter_worker;
GRANT SELECT ON usage_hourly_totals TO meter_worker;
GRANT SELECT, INSERT ON usage_quarantines TO meter_worker;
GRANT SELECT, INSERT ON usage_blocks_quarantined TO meter_worker;
GRANT SELECT, INSERT ON usage_hourly_quarantined TO meter_worker;
GRANT SELECT, INSERT, UPDATE ON invoice_numbers TO meter_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON invoices TO meter_worker;
GRANT SELECT, INSERT, DELETE ON invoice_lines TO meter_worker;
GRANT SELECT, INSERT, DELETE ON invoice_usage TO meter_worker;
GRANT SELECT, INSERT, DELETE ON invoice_revenue TO meter_worker;
GRANT SELECT, INSERT ON credit_grants TO meter_worker;
-- The audit log is read, never written, by the worker: its triggers
-- write it as the owner (below), so the worker can add no entry of its
-- own.
GRANT SELECT ON audit_log TO meter_worker;

-- Creating a month's partitions needs the owner of usage_blocks and
-- usage_packs: the function runs as its owner, on a fixed search_path
-- (the schema, then pg_temp) so that no object of the caller's stands in
-- for one of its own, and only the worker (and the owner) may call it.
-- The partitions are the owner's; the worker reaches them through their
-- parents, which is where the grants above are checked.
--
-- The audit triggers run as the owner too, and audit() may be called by
-- no one else: an entry is written by an act on an audited table or not
-- at all. db_user stays the session's user (session_user).
DO $$
DECLARE
    path text := format('%I, pg_temp', current_schema());
    fn text;
BEGIN
    FOREACH fn IN ARRAY ARRAY['usage_blocks_partition(date)',
                              'audit_api_keys()', 'audit_price_books()',
                              'audit_account_price_books()',
                              'audit_credit_grants()',
                              'audit_usage_quarantines()', 'audit_invoices()',
                              'host_key_accounts_check()'] LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = %s',
                       fn, path);
    END LOOP;
END
$$;
REVOKE EXECUTE ON FUNCTION usage_blocks_partition(date) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION usage_blocks_partition(date) TO meter_worker;
REVOKE EXECUTE ON FUNCTION audit(text, text, text, jsonb) FROM PUBLIC;
