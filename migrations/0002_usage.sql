-- 0002_usage: where the meter stores usage. Samples are kept per
-- (sandbox, minute) as one compact block of per-second values, in tables
-- partitioned by month; hourly rollups per account feed dashboards.
-- meter/README.md explains the layout and why.

-- Compact keys for the usage tables: an int instead of a text id in
-- every block row and index entry.
ALTER TABLE accounts
    ADD COLUMN account_pk integer GENERATED ALWAYS AS IDENTITY UNIQUE;
COMMENT ON COLUMN accounts.account_pk IS
    'compact key of the account in the usage tables';

CREATE TABLE sandboxes (
    account_pk    integer     NOT NULL REFERENCES accounts (account_pk),
    sandbox_pk    integer     GENERATED ALWAYS AS IDENTITY,
    sandbox_id    meter_id    NOT NULL UNIQUE,
    first_seen_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_pk, sandbox_pk),
    UNIQUE (sandbox_pk)
);
COMMENT ON TABLE sandboxes IS
    'every sandbox seen, and the account it belongs to for ever';
COMMENT ON COLUMN sandboxes.account_pk IS
    'the account of the sandbox; a sample of it under another is rejected';
COMMENT ON COLUMN sandboxes.sandbox_pk IS
    'compact key of the sandbox in usage_blocks';
COMMENT ON COLUMN sandboxes.sandbox_id IS
    'the sandbox_id that samples carry';
COMMENT ON COLUMN sandboxes.first_seen_at IS
    'when the meter first stored a sample of the sandbox';

CREATE TABLE usage_blocks (
    account_pk  integer     NOT NULL,
    sandbox_pk  integer     NOT NULL,
    minute      integer     NOT NULL,
    seconds     bigint      NOT NULL
                CHECK (seconds <> 0 AND (seconds >> 60) = 0),
    arrived_at  timestamptz NOT NULL,
    data        bytea       NOT NULL,
    FOREIGN KEY (account_pk, sandbox_pk)
        REFERENCES sandboxes (account_pk, sandbox_pk)
) PARTITION BY RANGE (minute);
COMMENT ON TABLE usage_blocks IS
    'per-second usage: one row per sandbox, minute and batch that brought '
    'seconds of that minute; each (sandbox, second) is in exactly one row';
COMMENT ON COLUMN usage_blocks.account_pk IS
    'the account (accounts.account_pk), first so the table shards by account';
COMMENT ON COLUMN usage_blocks.sandbox_pk IS
    'the sandbox (sandboxes.sandbox_pk)';
COMMENT ON COLUMN usage_blocks.minute IS
    'Unix minute of the block: floor(ts / 60)';
COMMENT ON COLUMN usage_blocks.seconds IS
    'bit i set: second minute*60+i is in this row (60 bits)';
COMMENT ON COLUMN usage_blocks.arrived_at IS
    'when the batch that brought these seconds was committed; later than '
    'the minute for late samples';
COMMENT ON COLUMN usage_blocks.data IS
    'the values of the seconds present, encoded by meter/block.c';
CREATE INDEX usage_blocks_key ON usage_blocks (account_pk, sandbox_pk, minute);

-- Creates the monthly partition of usage_blocks holding day, if missing.
CREATE FUNCTION usage_blocks_partition(day date) RETURNS text
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
    END IF;
    RETURN name;
END
$$;
COMMENT ON FUNCTION usage_blocks_partition(date) IS
    'creates the monthly partition of usage_blocks that holds a day';

CREATE TABLE usage_hourly (
    account_pk        integer     NOT NULL REFERENCES accounts (account_pk),
    hour              integer     NOT NULL,
    samples           bigint      NOT NULL CHECK (samples > 0),
    running_s         bigint      NOT NULL CHECK (running_s >= 0),
    vcpu_s            numeric     NOT NULL CHECK (vcpu_s >= 0),
    cpu_used_s        numeric     NOT NULL CHECK (cpu_used_s >= 0),
    mem_byte_s        numeric     NOT NULL CHECK (mem_byte_s >= 0),
    mem_used_byte_s   numeric     NOT NULL CHECK (mem_used_byte_s >= 0),
    disk_byte_s       numeric     NOT NULL CHECK (disk_byte_s >= 0),
    egress_bytes      numeric     NOT NULL CHECK (egress_bytes >= 0),
    added_at          timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE usage_hourly IS
    'hourly usage per account: each batch adds one row per account and '
    'hour it touched, in its own transaction, so sums over rows always '
    'agree with usage_blocks and concurrent batches never update a shared row';
COMMENT ON COLUMN usage_hourly.account_pk IS 'the account';
COMMENT ON COLUMN usage_hourly.hour IS 'Unix hour: floor(ts / 3600)';
COMMENT ON COLUMN usage_hourly.samples IS 'seconds stored (running and paused)';
COMMENT ON COLUMN usage_hourly.running_s IS 'running seconds';
COMMENT ON COLUMN usage_hourly.vcpu_s IS 'allocated vCPU-seconds';
COMMENT ON COLUMN usage_hourly.cpu_used_s IS 'used vCPU-seconds';
COMMENT ON COLUMN usage_hourly.mem_byte_s IS 'allocated memory, byte-seconds';
COMMENT ON COLUMN usage_hourly.mem_used_byte_s IS 'used memory, byte-seconds';
COMMENT ON COLUMN usage_hourly.disk_byte_s IS 'disk held, byte-seconds (running and paused)';
COMMENT ON COLUMN usage_hourly.egress_bytes IS 'bytes sent';
COMMENT ON COLUMN usage_hourly.added_at IS 'when the batch was committed';
CREATE INDEX usage_hourly_key ON usage_hourly (account_pk, hour);
