-- 0018_fleet_reads: the dashboards and /v1/reports/* read the usage of
-- every shard through postgres_fdw (docs/scale.md, "Reads").
--
-- Every database serves the rows of the buckets it holds, and only
-- those: held_hourly_totals and held_hourly. While a bucket moves, its
-- rows are on two shards, the source holding it and the target
-- receiving a copy; the target's are counted once bucket_holds names it
-- there, at the switch, when the source's stop counting.
--
-- The catalog reads fleet_hourly_totals and fleet_hourly. With every
-- bucket its own (one server, the default) they are views of its own
-- tables, as fast as before. Once the map gives buckets to other
-- shards, meter_fleet_sync (meter/db/fleet.c) makes them tables
-- partitioned by LIST (bucket), a foreign partition for each shard that
-- holds some, reading that shard's held_* views (the catalog's own
-- through a loopback server), their column part the bucket. Each report
-- statement groups by part and account first, so that with
-- enable_partitionwise_aggregate each shard sums its own rows and sends
-- the sums (tests/test_fleet_reads.c checks
-- each statement's plan).

-- postgres_fdw is needed on a catalog with shards only, and only a
-- superuser may create it: where the migrating role may not, it is
-- left to a superuser (CREATE EXTENSION postgres_fdw), and
-- meter_fleet_sync names it when it is missing.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS postgres_fdw;
EXCEPTION WHEN insufficient_privilege THEN
    RAISE NOTICE 'postgres_fdw not created (role "%" may not): a catalog '
        'with shards needs it (docs/scale.md)', current_user;
END
$$;

-- What this database serves to the catalog: the rows of its buckets.
CREATE VIEW held_hourly_totals AS
    SELECT meter_bucket(account_pk) AS bucket, account_pk, hour, samples,
           running_s, vcpu_s, cpu_used_s, mem_byte_s, mem_used_byte_s,
           disk_byte_s, egress_bytes
      FROM usage_hourly_totals
     WHERE meter_bucket(account_pk) IN (SELECT bucket FROM bucket_holds);
COMMENT ON VIEW held_hourly_totals IS
    'usage_hourly_totals of the buckets this database holds, with the '
    'bucket: what the catalog''s fleet_hourly_totals reads of it';

CREATE VIEW held_hourly AS
    SELECT meter_bucket(account_pk) AS bucket, account_pk, hour, samples,
           added_at
      FROM usage_hourly
     WHERE meter_bucket(account_pk) IN (SELECT bucket FROM bucket_holds);
COMMENT ON VIEW held_hourly IS
    'usage_hourly of the buckets this database holds, with the bucket, '
    'for the batches ingested lately: what the catalog''s fleet_hourly '
    'reads of it';

GRANT SELECT ON held_hourly_totals, held_hourly TO meter_worker;

-- The map the fleet_* relations were built for: the report statements
-- compare it with the map (fleet_stale) and rebuild them first if it
-- changed, so a map set by hand is read over right away.
CREATE TABLE fleet_built (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    map  text    NOT NULL
);
COMMENT ON TABLE fleet_built IS
    'what fleet_hourly_totals and fleet_hourly were last built for (one row)';
COMMENT ON COLUMN fleet_built.one IS 'the row''s key: there is one';
COMMENT ON COLUMN fleet_built.map IS
    'fleet_map() when they were built; empty: never';

-- The map and the shards' conninfos, as one text (a digest).
CREATE FUNCTION fleet_map() RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT md5(coalesce((SELECT string_agg(bucket || ':' || shard_id, ','
                                           ORDER BY bucket)
                           FROM shard_buckets), '')
               || '/' ||
               coalesce((SELECT string_agg(shard_id || '=' ||
                                           coalesce(conninfo, ''), ','
                                           ORDER BY shard_id)
                           FROM shards), ''))
$$;
GRANT SELECT ON fleet_built TO meter_worker;

COMMENT ON FUNCTION fleet_map() IS
    'a digest of the shard map and the shards'' conninfos';

CREATE FUNCTION fleet_stale() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT map FROM fleet_built), '') <> fleet_map()
$$;
COMMENT ON FUNCTION fleet_stale() IS
    'whether the map changed since fleet_hourly_totals and fleet_hourly '
    'were built (meter_fleet_sync builds them again)';

-- Builds fleet_hourly_totals and fleet_hourly for the map, from
-- scratch: views of this database's tables when it holds every bucket;
-- otherwise partitioned tables with a foreign partition for each shard
-- holding buckets, through a server meter_shard_N and a user mapping
-- for PUBLIC. servers holds, for each such shard (by its number as
-- text), the server's options and the user mapping's, as meterd's
-- libpq reads its conninfo ({"server": {...}, "user": {...}}: the
-- caller parses it, PostgreSQL cannot). Without force, does nothing
-- when they were built for the map already. Idempotent, one statement:
-- a move calls it in the transaction that switches the map. As the
-- owner: meter_worker neither creates servers nor owns the tables.
CREATE FUNCTION meter_fleet_sync(servers jsonb, force boolean)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    r record;
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
                AND c.relname IN ('fleet_hourly_totals', 'fleet_hourly') LOOP
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
        COMMENT ON VIEW fleet_hourly_totals IS
            'usage_hourly_totals: what the reports sum (meter_fleet_sync '
            'builds it for the shard map; part is 0, one server)';
        COMMENT ON VIEW fleet_hourly IS
            'usage_hourly: what the reports read of the batches ingested '
            'lately (meter_fleet_sync builds it; part is 0, one server)';
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
        COMMENT ON TABLE fleet_hourly_totals IS
            'usage_hourly_totals of every shard, partitioned by bucket '
            '(part): what the reports sum (meter_fleet_sync builds it)';
        COMMENT ON TABLE fleet_hourly IS
            'usage_hourly of every shard, partitioned by bucket (part): '
            'what the reports read of the batches ingested lately';
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
            EXECUTE format('CREATE FOREIGN TABLE %I PARTITION OF '
                           'fleet_hourly_totals FOR VALUES IN (%s) '
                           'SERVER %I OPTIONS (table_name %L)',
                           'fleet_hourly_totals_' || r.shard_id, r.buckets,
                           srv, 'held_hourly_totals');
            EXECUTE format('ALTER FOREIGN TABLE %I ALTER COLUMN part '
                           'OPTIONS (column_name %L)',
                           'fleet_hourly_totals_' || r.shard_id, 'bucket');
            EXECUTE format('CREATE FOREIGN TABLE %I PARTITION OF '
                           'fleet_hourly FOR VALUES IN (%s) '
                           'SERVER %I OPTIONS (table_name %L)',
                           'fleet_hourly_' || r.shard_id, r.buckets, srv,
                           'held_hourly');
            EXECUTE format('ALTER FOREIGN TABLE %I ALTER COLUMN part '
                           'OPTIONS (column_name %L)',
                           'fleet_hourly_' || r.shard_id, 'bucket');
        END LOOP;
    END IF;
    GRANT SELECT ON fleet_hourly_totals, fleet_hourly TO meter_worker;
    INSERT INTO fleet_built (map) VALUES (fleet_map())
        ON CONFLICT (one) DO UPDATE SET map = excluded.map;
    RETURN true;
END
$$;
COMMENT ON FUNCTION meter_fleet_sync(jsonb, boolean) IS
    'builds fleet_hourly_totals and fleet_hourly for the shard map: views '
    'of this database''s usage, or tables partitioned by bucket with a '
    'foreign partition a shard; true if it built them';
REVOKE ALL ON FUNCTION meter_fleet_sync(jsonb, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION meter_fleet_sync(jsonb, boolean) TO meter_worker;

-- Built now if every bucket is here (the default, and every shard);
-- otherwise by the first report, or meterctl shard sync, which know
-- how to reach the shards.
INSERT INTO fleet_built (map) VALUES ('');
SELECT meter_fleet_sync('{}', true)
 WHERE NOT EXISTS (SELECT 1 FROM shard_buckets WHERE shard_id <> 0);
