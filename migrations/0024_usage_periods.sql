-- 0024_usage_periods: the merged rollups summed again, per account and
-- month, so that the usage alerts (alerts.c) read a row an account
-- instead of its 720 hours: over 10,000 accounts the month's hourly
-- sums took seconds to read each minute (docs/performance.md, "Usage
-- alerts").
--
-- usage_period_merged holds, per account and period, exactly the sums
-- of the account's rows of usage_hourly_merged in that period: the
-- statements that change those change these in the same statement
-- (the merge adds, a quarantine takes back, a bucket's move copies
-- them and its clean-up deletes them), and tests compare the two.

-- A bucket's move begun before this migration would not carry the new
-- table (its publication is the old one's): finish or call moves off
-- first.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM bucket_moves) THEN
        RAISE EXCEPTION 'a bucket is moving (bucket_moves): finish the move '
            'or call it off (meterctl shard move --abort) before migrating';
    END IF;
END
$$;

-- The period (first day of the UTC month) of an hour since the epoch.
CREATE FUNCTION meter_period_of(hour integer) RETURNS date
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN date_trunc('month', to_timestamp(hour::bigint * 3600)
                           AT TIME ZONE 'UTC')::date;
COMMENT ON FUNCTION meter_period_of(integer) IS
    'the period (first day of the UTC month) holding an hour since the epoch';

CREATE TABLE usage_period_merged (
    account_pk        integer NOT NULL REFERENCES accounts (account_pk),
    period            date    NOT NULL CHECK (extract(day FROM period) = 1),
    samples           bigint  NOT NULL CHECK (samples >= 0),
    running_s         bigint  NOT NULL CHECK (running_s >= 0),
    vcpu_s            numeric NOT NULL CHECK (vcpu_s >= 0),
    cpu_used_s        numeric NOT NULL CHECK (cpu_used_s >= 0),
    mem_byte_s        numeric NOT NULL CHECK (mem_byte_s >= 0),
    mem_used_byte_s   numeric NOT NULL CHECK (mem_used_byte_s >= 0),
    disk_byte_s       numeric NOT NULL CHECK (disk_byte_s >= 0),
    egress_bytes      numeric NOT NULL CHECK (egress_bytes >= 0),
    PRIMARY KEY (account_pk, period)
);
-- The alerts read one period of every account.
CREATE INDEX usage_period_merged_period ON usage_period_merged (period);
COMMENT ON TABLE usage_period_merged IS
    'usage_hourly_merged summed per account and period (UTC month)';
COMMENT ON COLUMN usage_period_merged.account_pk IS 'as in usage_hourly';
COMMENT ON COLUMN usage_period_merged.period IS
    'first day of the month (UTC): meter_period_of(hour)';
COMMENT ON COLUMN usage_period_merged.samples IS
    'as in usage_hourly_merged, summed';
COMMENT ON COLUMN usage_period_merged.running_s IS
    'as in usage_hourly_merged, summed';
COMMENT ON COLUMN usage_period_merged.vcpu_s IS
    'as in usage_hourly_merged, summed';
COMMENT ON COLUMN usage_period_merged.cpu_used_s IS
    'as in usage_hourly_merged, summed';
COMMENT ON COLUMN usage_period_merged.mem_byte_s IS
    'as in usage_hourly_merged, summed';
COMMENT ON COLUMN usage_period_merged.mem_used_byte_s IS
    'as in usage_hourly_merged, summed';
COMMENT ON COLUMN usage_period_merged.disk_byte_s IS
    'as in usage_hourly_merged, summed';
COMMENT ON COLUMN usage_period_merged.egress_bytes IS
    'as in usage_hourly_merged, summed';
GRANT SELECT, INSERT, UPDATE ON usage_period_merged TO meter_worker;

-- Computes usage_period_merged again from usage_hourly_merged, with no
-- merge or quarantine under way (their advisory locks, usage_merge.c and
-- audit.c): how this migration fills it, and the repair should a merge
-- of an older meterd have run after it (docs/operations.md).
CREATE FUNCTION meter_periods_rebuild() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(7243615, 0), pg_advisory_xact_lock(7243615, 1);
    DELETE FROM usage_period_merged;
    INSERT INTO usage_period_merged
    SELECT account_pk, meter_period_of(hour), sum(samples), sum(running_s),
           sum(vcpu_s), sum(cpu_used_s), sum(mem_byte_s),
           sum(mem_used_byte_s), sum(disk_byte_s), sum(egress_bytes)
      FROM usage_hourly_merged GROUP BY 1, 2;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION meter_periods_rebuild() IS
    'computes usage_period_merged again from usage_hourly_merged (waits '
    'for merges and quarantines); the account-periods written';
SELECT meter_periods_rebuild();

CREATE VIEW usage_period_totals AS
    SELECT account_pk, period, samples, running_s, vcpu_s, cpu_used_s,
           mem_byte_s, mem_used_byte_s, disk_byte_s, egress_bytes
      FROM usage_period_merged WHERE samples > 0
    UNION ALL
    SELECT account_pk, meter_period_of(hour), samples, running_s, vcpu_s,
           cpu_used_s, mem_byte_s, mem_used_byte_s, disk_byte_s,
           egress_bytes
      FROM usage_hourly WHERE NOT merged;
COMMENT ON VIEW usage_period_totals IS
    'rows whose sums per account and period are those of usage_hourly: a '
    'row an account and period once merged (usage_hourly_totals by month)';
GRANT SELECT ON usage_period_totals TO meter_worker;

CREATE VIEW held_period_totals AS
    SELECT meter_bucket(account_pk) AS bucket, account_pk, period, samples,
           running_s, vcpu_s, cpu_used_s, mem_byte_s, mem_used_byte_s,
           disk_byte_s, egress_bytes
      FROM usage_period_totals
     WHERE meter_bucket(account_pk) IN (SELECT bucket FROM bucket_holds);
COMMENT ON VIEW held_period_totals IS
    'usage_period_totals of the buckets this database holds, with the '
    'bucket: what the catalog''s fleet_period_totals reads of it';
GRANT SELECT ON held_period_totals TO meter_worker;

-- A bucket's move carries the new table with usage_hourly_merged (a
-- move begun before this migration is finished without it: finish
-- moves before upgrading, docs/operations.md).
CREATE OR REPLACE FUNCTION meter_move_publish(bucket integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f text := meter_move_filter(bucket);
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_publication
                    WHERE pubname = format('meter_move_%s_append', bucket)) THEN
        EXECUTE format('CREATE PUBLICATION %I FOR TABLE usage_blocks WHERE (%s),'
                       ' usage_hourly WHERE (%s), usage_packs WHERE (%s)'
                       ' WITH (publish = ''insert'','
                       ' publish_via_partition_root = true)',
                       format('meter_move_%s_append', bucket), f, f, f);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_publication
                    WHERE pubname = format('meter_move_%s_keyed', bucket)) THEN
        EXECUTE format('CREATE PUBLICATION %I FOR TABLE sandboxes WHERE (%s),'
                       ' usage_hourly_merged WHERE (%s),'
                       ' usage_period_merged WHERE (%s),'
                       ' usage_pack_queue WHERE (%s),'
                       ' bucket_moves WHERE (bucket = %s)',
                       format('meter_move_%s_keyed', bucket), f, f, f, f,
                       bucket);
    END IF;
END
$$;

-- meter_fleet_sync builds fleet_period_totals beside fleet_hourly_totals
-- and fleet_hourly, the same way: a view of this database's own rows on
-- one server, else a table partitioned by bucket with a foreign
-- partition a shard (0018 says why and how).
CREATE OR REPLACE FUNCTION meter_fleet_sync(servers jsonb, force boolean)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    r record;
    t record;
    o jsonb;
    srv text;
    opts text;
BEGIN
    -- One sync at a time; the others then find it done.
    PERFORM pg_advisory_xact_lock(7243613, -1);
    IF NOT force AND NOT fleet_stale() THEN
        RETURN false;
    END IF;
    FOR r IN SELECT srvname FROM pg_foreign_server
              WHERE srvname ~ '^meter_shard_[0-9]+$' LOOP
        EXECUTE format('DROP SERVER %I CASCADE', r.srvname);
    END LOOP;
    FOR r IN SELECT c.relname, c.relkind FROM pg_class c
              WHERE c.relnamespace = current_schema()::regnamespace
                AND c.relname IN ('fleet_hourly_totals', 'fleet_hourly',
                                  'fleet_period_totals') LOOP
        EXECUTE format(CASE r.relkind WHEN 'v' THEN 'DROP VIEW %I'
                       ELSE 'DROP TABLE %I' END, r.relname);
    END LOOP;
    IF NOT EXISTS (SELECT 1 FROM shard_buckets WHERE shard_id <> 0) THEN
        -- Every bucket here: this database's own rows, unfiltered.
        -- part, the partitions' key over shards, is a constant here:
        -- the statements group by it, and a bucket computed for each
        -- row made them a fifth slower on one server.
        CREATE VIEW fleet_hourly_totals AS
            SELECT 0 AS part, account_pk, hour,
                   samples, running_s, vcpu_s, cpu_used_s, mem_byte_s,
                   mem_used_byte_s, disk_byte_s, egress_bytes
              FROM usage_hourly_totals;
        CREATE VIEW fleet_hourly AS
            SELECT 0 AS part, account_pk, hour,
                   samples, added_at
              FROM usage_hourly;
        CREATE VIEW fleet_period_totals AS
            SELECT 0 AS part, account_pk, period,
                   samples, running_s, vcpu_s, cpu_used_s, mem_byte_s,
                   mem_used_byte_s, disk_byte_s, egress_bytes
              FROM usage_period_totals;
        COMMENT ON VIEW fleet_hourly_totals IS
            'usage_hourly_totals: what the reports sum (meter_fleet_sync '
            'builds it for the shard map; part is 0, one server)';
        COMMENT ON VIEW fleet_hourly IS
            'usage_hourly: what the reports read of the batches ingested '
            'lately (meter_fleet_sync builds it; part is 0, one server)';
        COMMENT ON VIEW fleet_period_totals IS
            'usage_period_totals: what the alerts sum (meter_fleet_sync '
            'builds it; part is 0, one server)';
    ELSE
        IF NOT EXISTS (SELECT 1 FROM pg_extension
                        WHERE extname = 'postgres_fdw') THEN
            RAISE EXCEPTION 'postgres_fdw is not installed in this '
                'database: a superuser runs CREATE EXTENSION postgres_fdw '
                '(docs/scale.md)';
        END IF;
        CREATE TABLE fleet_hourly_totals (
            part integer NOT NULL, account_pk integer NOT NULL,
            hour integer NOT NULL, samples bigint NOT NULL,
            running_s bigint NOT NULL, vcpu_s numeric NOT NULL,
            cpu_used_s numeric NOT NULL, mem_byte_s numeric NOT NULL,
            mem_used_byte_s numeric NOT NULL, disk_byte_s numeric NOT NULL,
            egress_bytes numeric NOT NULL
        ) PARTITION BY LIST (part);
        CREATE TABLE fleet_hourly (
            part integer NOT NULL, account_pk integer NOT NULL,
            hour integer NOT NULL, samples bigint NOT NULL,
            added_at timestamptz NOT NULL
        ) PARTITION BY LIST (part);
        CREATE TABLE fleet_period_totals (
            part integer NOT NULL, account_pk integer NOT NULL,
            period date NOT NULL, samples bigint NOT NULL,
            running_s bigint NOT NULL, vcpu_s numeric NOT NULL,
            cpu_used_s numeric NOT NULL, mem_byte_s numeric NOT NULL,
            mem_used_byte_s numeric NOT NULL, disk_byte_s numeric NOT NULL,
            egress_bytes numeric NOT NULL
        ) PARTITION BY LIST (part);
        COMMENT ON TABLE fleet_hourly_totals IS
            'usage_hourly_totals of every shard, partitioned by bucket '
            '(part): what the reports sum (meter_fleet_sync builds it)';
        COMMENT ON TABLE fleet_hourly IS
            'usage_hourly of every shard, partitioned by bucket (part): '
            'what the reports read of the batches ingested lately';
        COMMENT ON TABLE fleet_period_totals IS
            'usage_period_totals of every shard, partitioned by bucket '
            '(part): what the alerts sum (meter_fleet_sync builds it)';
        FOR r IN SELECT shard_id, string_agg(bucket::text, ', '
                                             ORDER BY bucket) AS buckets
                   FROM shard_buckets GROUP BY shard_id ORDER BY shard_id LOOP
            o := servers -> r.shard_id::text;
            IF o IS NULL OR jsonb_typeof(o -> 'server') <> 'object'
               OR jsonb_typeof(o -> 'user') <> 'object' THEN
                RAISE EXCEPTION 'no connection options for shard %',
                    r.shard_id;
            END IF;
            srv := 'meter_shard_' || r.shard_id;
            -- Scans of several shards run at once; rows come in
            -- batches of 10,000 (sums, a row an account).
            SELECT string_agg(format('%I %L', key, value), ', ')
              INTO opts
              FROM (SELECT key, value FROM jsonb_each_text(o -> 'server')
                     WHERE key NOT IN ('async_capable', 'fetch_size')
                    UNION ALL VALUES ('async_capable', 'true'),
                                     ('fetch_size', '10000')) x;
            EXECUTE format('CREATE SERVER %I FOREIGN DATA WRAPPER '
                           'postgres_fdw OPTIONS (%s)', srv, opts);
            -- Without a password, the shard trusts this server's
            -- connections (peer, trust, a certificate): postgres_fdw
            -- allows that to a role that is no superuser only if a
            -- superuser said so on the mapping.
            SELECT string_agg(format('%I %L', key, value), ', ')
              INTO opts
              FROM (SELECT key, value FROM jsonb_each_text(o -> 'user')
                     WHERE key <> 'password_required'
                    UNION ALL SELECT 'password_required', 'false'
                     WHERE NOT (o -> 'user') ? 'password') x;
            BEGIN
                EXECUTE format('CREATE USER MAPPING FOR PUBLIC SERVER %I%s',
                               srv, CASE WHEN opts IS NULL THEN ''
                                    ELSE ' OPTIONS (' || opts || ')' END);
            EXCEPTION WHEN insufficient_privilege THEN
                RAISE EXCEPTION 'cannot map the catalog''s roles to '
                    'shard %: %', r.shard_id, SQLERRM
                    USING HINT = 'give the shard''s conninfo a password, '
                        'or let a superuser own the schema (docs/scale.md)';
            END;
            -- Each fleet relation's partition of the shard reads the
            -- shard's held_ view of the same name.
            FOR t IN VALUES ('fleet_hourly_totals', 'held_hourly_totals'),
                            ('fleet_hourly', 'held_hourly'),
                            ('fleet_period_totals', 'held_period_totals') LOOP
                EXECUTE format('CREATE FOREIGN TABLE %I PARTITION OF %I'
                               ' FOR VALUES IN (%s) SERVER %I'
                               ' OPTIONS (table_name %L)',
                               t.column1 || '_' || r.shard_id, t.column1,
                               r.buckets, srv, t.column2);
                EXECUTE format('ALTER FOREIGN TABLE %I ALTER COLUMN part '
                               'OPTIONS (column_name %L)',
                               t.column1 || '_' || r.shard_id, 'bucket');
            END LOOP;
        END LOOP;
    END IF;
    GRANT SELECT ON fleet_hourly_totals, fleet_hourly, fleet_period_totals
        TO meter_worker;
    INSERT INTO fleet_built (map) VALUES (fleet_map())
        ON CONFLICT (one) DO UPDATE SET map = excluded.map;
    RETURN true;
END
$$;
COMMENT ON FUNCTION meter_fleet_sync(jsonb, boolean) IS
    'builds fleet_hourly_totals, fleet_hourly and fleet_period_totals for '
    'the shard map: views of this database''s usage, or tables partitioned '
    'by bucket with a foreign partition a shard; true if it built them';

-- Built now if every bucket is here; otherwise by the next report or
-- meterctl shard sync, which know how to reach the shards (the map
-- built is forgotten, so that they build it again).
UPDATE fleet_built SET map = '';
SELECT meter_fleet_sync('{}', true)
 WHERE NOT EXISTS (SELECT 1 FROM shard_buckets WHERE shard_id <> 0);
