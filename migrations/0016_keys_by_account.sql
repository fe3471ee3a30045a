-- 0016_keys_by_account: every key of the per-account tables starts with
-- the account, so that they can be split by account over several
-- PostgreSQL clusters (docs/scale.md), and sandbox keys that last.
--
-- A sandbox is now (account, sandbox_id): the same sandbox_id under two
-- accounts is two sandboxes. A uniqueness across accounts would need one
-- registry of every sandbox ever seen, on one server, written by every
-- new sandbox of the fleet; a host key limited to its accounts
-- (0007_host_key_scope) is what keeps a host from writing another
-- customer's usage.
--
-- sandbox_pk becomes 64-bit: at 500,000 sandboxes at once, each living
-- about 20 minutes, 2^31 keys last about 44 days.

ALTER TABLE sandboxes DROP CONSTRAINT sandboxes_sandbox_id_key,
                      DROP CONSTRAINT sandboxes_sandbox_pk_key,
                      ADD UNIQUE (account_pk, sandbox_id),
                      ALTER COLUMN sandbox_pk TYPE bigint;
ALTER TABLE usage_blocks ALTER COLUMN sandbox_pk TYPE bigint;
ALTER TABLE usage_packs ALTER COLUMN sandbox_pk TYPE bigint;
ALTER TABLE usage_blocks_quarantined ALTER COLUMN sandbox_pk TYPE bigint;

COMMENT ON TABLE sandboxes IS
    'every sandbox seen: a sandbox_id of an account';
COMMENT ON COLUMN sandboxes.account_pk IS
    'the account of the sandbox: the same sandbox_id under another account '
    'is another sandbox';
COMMENT ON COLUMN sandboxes.sandbox_pk IS
    'compact key of the sandbox in usage_blocks and usage_packs, after its '
    'account';

-- The bucket of an account: the hash partition of account_pk among 64,
-- computed as PostgreSQL's own PARTITION BY HASH (account_pk) with
-- MODULUS 64 computes it (the seed and the combination of
-- compute_partition_hash_value in partbounds.c; tests/test_schema.c
-- checks it against satisfies_hash_partition), so that tables
-- partitioned by hash of the account and the router agree. Built-in
-- functions only: a publication's row filter may use it as written.
CREATE FUNCTION meter_bucket(account_pk integer) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN ((hashint4extended(account_pk, 8816678312871386365) & 63) + 35) & 63;
COMMENT ON FUNCTION meter_bucket(integer) IS
    'the bucket (0-63) of an account_pk: its hash partition among 64';
