-- 0005_archived_months: a month whose usage partition was detached (the
-- way to archive it) is refused by name instead of failing inside the
-- insert. meter/README.md says what archiving means.

CREATE OR REPLACE FUNCTION usage_blocks_partition(day date) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    first date := date_trunc('month', day)::date;
    name text := format('usage_blocks_%s', to_char(first, 'YYYYMM'));
    lo bigint := extract(epoch FROM first::timestamp)::bigint / 60;
    hi bigint := extract(epoch FROM (first + interval '1 month')::timestamp)::bigint / 60;
BEGIN
    -- Serialize creators: CREATE TABLE IF NOT EXISTS alone races.
    PERFORM pg_advisory_xact_lock(7243612, 2);
    IF to_regclass(name) IS NULL THEN
        EXECUTE format('CREATE TABLE %I PARTITION OF usage_blocks '
                       'FOR VALUES FROM (%s) TO (%s)', name, lo, hi);
        EXECUTE format('COMMENT ON TABLE %I IS %L', name,
                       'usage_blocks of ' || to_char(first, 'YYYY-MM'));
    ELSIF NOT EXISTS (SELECT 1 FROM pg_inherits
                       WHERE inhrelid = to_regclass(name)
                         AND inhparent = 'usage_blocks'::regclass) THEN
        RAISE EXCEPTION 'month % is archived: its usage partition % is '
            'detached', to_char(first, 'YYYY-MM'), name
            USING ERRCODE = 'MT001';
    END IF;
    RETURN name;
END
$$;
COMMENT ON FUNCTION usage_blocks_partition(date) IS
    'creates the monthly partition of usage_blocks that holds a day; '
    'SQLSTATE MT001 if the month is archived (its partition detached)';
