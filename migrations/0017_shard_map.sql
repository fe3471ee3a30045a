-- 0017_shard_map: per-account usage may live on several PostgreSQL
-- databases, the shards, each holding some of the 64 buckets of accounts
-- (meter_bucket, 0016_keys_by_account); the catalog, the database meterd
-- and meterctl are given, keeps what is small and global and the map of
-- which shard holds which bucket (docs/scale.md). Every database runs
-- every migration: a shard's catalog tables stay empty but for the
-- shadow rows of its accounts in `accounts`, there for its foreign keys.
--
-- One server remains the default: the catalog is shard 0, "local",
-- holding all 64 buckets, and meterd routes every batch to it, in one
-- transaction as before.

CREATE TABLE shards (
    shard_id  integer     PRIMARY KEY CHECK (shard_id BETWEEN 0 AND 255),
    name      text        NOT NULL UNIQUE
              CHECK (name ~ '^[a-z][a-z0-9_-]{0,31}$'),
    conninfo  text        UNIQUE CHECK (conninfo <> ''),
    added_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE shards IS
    'the databases that hold per-account usage (the catalog''s own is '
    'shard 0)';
COMMENT ON COLUMN shards.shard_id IS 'the shard''s number';
COMMENT ON COLUMN shards.name IS 'the shard''s name, for meterctl shard';
COMMENT ON COLUMN shards.conninfo IS
    'how meterd and meterctl reach it (libpq conninfo, as meter_worker), '
    'once; NULL: the catalog''s own database';
COMMENT ON COLUMN shards.added_at IS 'when meterctl shard add added it';

INSERT INTO shards (shard_id, name) VALUES (0, 'local');

CREATE TABLE shard_buckets (
    bucket    integer PRIMARY KEY CHECK (bucket BETWEEN 0 AND 63),
    shard_id  integer NOT NULL REFERENCES shards,
    epoch     bigint  NOT NULL DEFAULT 1 CHECK (epoch > 0)
);
COMMENT ON TABLE shard_buckets IS
    'the shard map: which shard holds each bucket of accounts';
COMMENT ON COLUMN shard_buckets.bucket IS 'meter_bucket(account_pk)';
COMMENT ON COLUMN shard_buckets.shard_id IS 'the shard that holds it';
COMMENT ON COLUMN shard_buckets.epoch IS
    'raised each time the bucket moves to another shard';

INSERT INTO shard_buckets (bucket, shard_id)
    SELECT b, 0 FROM generate_series(0, 63) b;

-- What this database holds, checked by every batch it stores (ingest.c):
-- a batch routed by an old map is refused, and a move waits for the
-- batches under way before it switches a bucket.
CREATE TABLE bucket_holds (
    bucket  integer PRIMARY KEY CHECK (bucket BETWEEN 0 AND 63),
    moving  boolean NOT NULL DEFAULT false
);
COMMENT ON TABLE bucket_holds IS
    'the buckets whose usage this database stores; a new shard holds none '
    'until a bucket moves to it (meterctl shard add empties it)';
COMMENT ON COLUMN bucket_holds.bucket IS 'meter_bucket(account_pk)';
COMMENT ON COLUMN bucket_holds.moving IS
    'fenced by a move: batches of the bucket are refused here until the '
    'map names its new shard';

INSERT INTO bucket_holds (bucket) SELECT b FROM generate_series(0, 63) b;

-- The check each batch makes before it stores usage of some buckets
-- here: a shared lock on each bucket (which a move takes exclusively to
-- fence writers: it waits for the batches under way, and batches after
-- it wait for it), then, with the locks held, whether this database
-- holds each and no move is switching it. SQLSTATE MT002 names the
-- buckets it does not hold: meterd reads the map again.
CREATE FUNCTION bucket_check(buckets integer[]) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    missing integer[];
BEGIN
    PERFORM pg_advisory_xact_lock_shared(7243613, b)
       FROM unnest(buckets) b ORDER BY b;
    missing := ARRAY(SELECT b FROM unnest(buckets) b
                      WHERE NOT EXISTS (SELECT 1 FROM bucket_holds h
                                         WHERE h.bucket = b AND NOT h.moving)
                      ORDER BY b);
    IF cardinality(missing) > 0 THEN
        RAISE EXCEPTION 'this database does not hold bucket(s) % now: '
            'read the shard map again', missing
            USING ERRCODE = 'MT002';
    END IF;
END
$$;
COMMENT ON FUNCTION bucket_check(integer[]) IS
    'locks buckets shared for the transaction and checks this database '
    'holds them (SQLSTATE MT002 if not)';

-- A batch over several shards is prepared on each (PREPARE TRANSACTION)
-- and then committed on each; the decision is written here first, so
-- that a transaction left prepared by a crash is committed if and only
-- if its batch's decision says so (meter_db_shards_resolve).
CREATE TABLE shard_commits (
    gid         text        PRIMARY KEY CHECK (gid ~ '^meter:[0-9a-f]{32}$'),
    committed   boolean     NOT NULL,
    decided_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE shard_commits IS
    'the outcome of each batch prepared on several shards, until every '
    'shard has it';
COMMENT ON COLUMN shard_commits.gid IS
    'the batch''s transaction name, the same on every shard it touched';
COMMENT ON COLUMN shard_commits.committed IS
    'true: commit the prepared parts; false: roll them back (a resolver '
    'decided for a batch whose meterd was gone)';
COMMENT ON COLUMN shard_commits.decided_at IS 'when';

GRANT SELECT, INSERT, UPDATE, DELETE ON shards TO meter_worker;
GRANT SELECT, INSERT, UPDATE ON shard_buckets TO meter_worker;
GRANT SELECT, INSERT, UPDATE, DELETE ON bucket_holds TO meter_worker;
GRANT SELECT, INSERT, DELETE ON shard_commits TO meter_worker;
