-- 0019_bucket_moves: a bucket of accounts moves to another shard online
-- (meterctl shard move, meter/db/shard_move.c, docs/scale.md). The
-- source publishes the bucket's rows; the target subscribes, copies
-- them and follows the source's writes (logical replication, a row
-- filter on the bucket); then the source fences the bucket's batches
-- (bucket_holds.moving), the target catches up, and the map switches.
--
-- Logical replication carries inserts of the append-only tables
-- (usage_blocks, usage_hourly, usage_packs: no replica identity, so
-- their updates and deletes cannot be published) and every change of the
-- keyed ones (sandboxes, usage_hourly_merged, usage_pack_queue). Only
-- merging and packing update or delete rows of the first: they leave
-- alone the buckets a database does not hold or is moving away, so that
-- nothing happens to the source's copy that the target's would not see.

CREATE TABLE bucket_moves (
    bucket      integer     PRIMARY KEY CHECK (bucket BETWEEN 0 AND 63),
    target      text        NOT NULL,
    fences      integer     NOT NULL DEFAULT 0,
    started_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE bucket_moves IS
    'the buckets this database is moving to another shard (the source''s '
    'rows), and, replicated, those it is receiving (the target''s): '
    'merging and packing leave their usage alone';
COMMENT ON COLUMN bucket_moves.bucket IS 'meter_bucket(account_pk)';
COMMENT ON COLUMN bucket_moves.target IS 'the name of the shard it moves to';
COMMENT ON COLUMN bucket_moves.fences IS
    'raised with bucket_holds.moving each time the source stops taking the '
    'bucket''s batches; replicated, the target has caught up with a fence '
    'when it sees its number';
COMMENT ON COLUMN bucket_moves.started_at IS 'when the move began';

GRANT SELECT ON bucket_moves TO meter_worker;

-- The row filter of a bucket: meter_bucket as written, since a
-- publication's filter may use built-in functions only.
CREATE FUNCTION meter_move_filter(bucket integer) RETURNS text
LANGUAGE sql IMMUTABLE STRICT
RETURN format('((hashint4extended(account_pk, 8816678312871386365) & 63)'
              ' + 35) & 63 = %s', bucket);

-- On the source: the two publications of a bucket (if not there).
CREATE FUNCTION meter_move_publish(bucket integer) RETURNS void
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
                       ' usage_pack_queue WHERE (%s),'
                       ' bucket_moves WHERE (bucket = %s)',
                       format('meter_move_%s_keyed', bucket), f, f, f, bucket);
    END IF;
END
$$;
COMMENT ON FUNCTION meter_move_publish(integer) IS
    'on a move''s source: publishes the bucket''s rows (meter_move_B_append, '
    'meter_move_B_keyed)';

CREATE FUNCTION meter_move_unpublish(bucket integer) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('DROP PUBLICATION IF EXISTS %I, %I',
                   format('meter_move_%s_append', bucket),
                   format('meter_move_%s_keyed', bucket));
END
$$;
COMMENT ON FUNCTION meter_move_unpublish(integer) IS
    'on a move''s source: drops the bucket''s publications';

-- On the target: the subscription to the source's publications, through
-- the slot meter_move_B made on the source beforehand (so that this may
-- run in a transaction).
CREATE FUNCTION meter_move_subscribe(bucket integer, conninfo text)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    name text := format('meter_move_%s', bucket);
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_subscription WHERE subname = name) THEN
        EXECUTE format('CREATE SUBSCRIPTION %I CONNECTION %L'
                       ' PUBLICATION %I, %I WITH (create_slot = false,'
                       ' slot_name = %L, copy_data = true, binary = true)',
                       name, conninfo, name || '_append', name || '_keyed',
                       name);
    END IF;
END
$$;
COMMENT ON FUNCTION meter_move_subscribe(integer, text) IS
    'on a move''s target: subscribes to the bucket''s publications on the '
    'source (conninfo), through its slot meter_move_B';

-- Detached from its slot, which the source drops: dropping a
-- subscription with a slot cannot run in a transaction.
CREATE FUNCTION meter_move_unsubscribe(bucket integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    name text := format('meter_move_%s', bucket);
BEGIN
    IF EXISTS (SELECT 1 FROM pg_subscription WHERE subname = name) THEN
        EXECUTE format('ALTER SUBSCRIPTION %I DISABLE', name);
        EXECUTE format('ALTER SUBSCRIPTION %I SET (slot_name = NONE)', name);
        EXECUTE format('DROP SUBSCRIPTION %I', name);
    END IF;
END
$$;
COMMENT ON FUNCTION meter_move_unsubscribe(integer) IS
    'on a move''s target: drops the subscription, leaving its slot on the '
    'source';
