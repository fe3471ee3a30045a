-- 0011_usage_packs: an hour of a sandbox's blocks in one row. Each batch
-- stores its seconds of a sandbox as one usage_blocks row per minute it
-- touched (60-second batches not aligned to the minute: two rows of 30
-- seconds), and a row costs about 110 bytes beyond its data (tuple
-- header, line pointer, keys, arrival, key, index entry): 3.7 bytes a
-- second, more than the data itself. Once an hour has ended and settled,
-- meterd (meter/db/usage_pack.c) moves the hour's blocks of each sandbox
-- into one usage_packs row, each block kept as it was with its seconds,
-- its batch's key and arrival (meter/sample/pack.c), in one transaction:
-- a second is in a block or in a pack, never both, never neither.
-- Readers (the invoice run, exactly-once, the quarantine) read both.

CREATE TABLE usage_packs (
    account_pk    integer     NOT NULL,
    sandbox_pk    integer     NOT NULL,
    minute        integer     NOT NULL CHECK (minute % 60 = 0),
    first_arrival timestamptz NOT NULL,
    last_arrival  timestamptz NOT NULL,
    key_ids       bigint[]    NOT NULL,
    data          bytea       COMPRESSION lz4 NOT NULL,
    FOREIGN KEY (account_pk, sandbox_pk)
        REFERENCES sandboxes (account_pk, sandbox_pk)
) PARTITION BY RANGE (minute);
COMMENT ON TABLE usage_packs IS
    'per-second usage of past hours: one row per sandbox and hour, holding '
    'the blocks that usage_blocks held for it, each as it was stored';
COMMENT ON COLUMN usage_packs.account_pk IS
    'the account (accounts.account_pk), first so the table shards by account';
COMMENT ON COLUMN usage_packs.sandbox_pk IS 'the sandbox (sandboxes.sandbox_pk)';
COMMENT ON COLUMN usage_packs.minute IS
    'first Unix minute of the hour: packs and blocks read in one order';
COMMENT ON COLUMN usage_packs.first_arrival IS
    'the earliest arrival (usage_blocks.arrived_at) of its blocks';
COMMENT ON COLUMN usage_packs.last_arrival IS
    'the latest arrival of its blocks: a quarantine looks from here';
COMMENT ON COLUMN usage_packs.key_ids IS
    'the API keys of its blocks (usage_blocks.key_id), each once: what a '
    'quarantine looks for';
COMMENT ON COLUMN usage_packs.data IS
    'the blocks, their minutes, seconds, keys and arrivals, encoded by '
    'meter/sample/pack.c';
CREATE UNIQUE INDEX usage_packs_key ON usage_packs (account_pk, sandbox_pk, minute);
CREATE INDEX usage_packs_arrival ON usage_packs (last_arrival);

CREATE TABLE usage_pack_queue (
    account_pk integer NOT NULL REFERENCES accounts (account_pk),
    hour       integer NOT NULL,
    PRIMARY KEY (account_pk, hour)
);
COMMENT ON TABLE usage_pack_queue IS
    'account-hours whose blocks may not all be packed yet: the rollup merge '
    '(usage_merge.c) adds the hours of the batches it merges, packing '
    'removes an hour once none of its blocks is left';
COMMENT ON COLUMN usage_pack_queue.account_pk IS 'the account';
COMMENT ON COLUMN usage_pack_queue.hour IS 'Unix hour: floor(ts / 3600)';
-- Packing takes the oldest hour due first.
CREATE INDEX usage_pack_queue_hour ON usage_pack_queue (hour, account_pk);
INSERT INTO usage_pack_queue SELECT DISTINCT account_pk, hour FROM usage_hourly;

-- The monthly partitions of usage_packs are made with those of
-- usage_blocks, and archived with them (meter/README.md).
CREATE OR REPLACE FUNCTION usage_blocks_partition(day date) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    first date := date_trunc('month', day)::date;
    name text := format('usage_blocks_%s', to_char(first, 'YYYYMM'));
    packs text := format('usage_packs_%s', to_char(first, 'YYYYMM'));
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
    IF to_regclass(packs) IS NULL THEN
        EXECUTE format('CREATE TABLE %I PARTITION OF usage_packs '
                       'FOR VALUES FROM (%s) TO (%s)', packs, lo, hi);
        EXECUTE format('COMMENT ON TABLE %I IS %L', packs,
                       'usage_packs of ' || to_char(first, 'YYYY-MM'));
    END IF;
    RETURN name;
END
$$;
COMMENT ON FUNCTION usage_blocks_partition(date) IS
    'creates the monthly partitions of usage_blocks and usage_packs that '
    'hold a day; SQLSTATE MT001 if the month is archived (its usage_blocks '
    'partition detached)';

SELECT usage_blocks_partition(make_date(
           substr(c.relname, 14, 4)::int, substr(c.relname, 18, 2)::int, 1))
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 WHERE i.inhparent = 'usage_blocks'::regclass;
