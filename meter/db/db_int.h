/*
 * db_int.h - shared by the files of meter/db/; private.
 */
#ifndef DB_INT_H
#define DB_INT_H

#include "meter_db.h"

#include <stdio.h>

/* Advisory lock classes (first key), besides ingest.c's and
 * 0002_usage.sql's: a quarantine against compactions. */
#define DB_LOCK_QUARANTINE "7243615"

/* The eight sums of the rollups (usage_hourly, usage_hourly_merged,
 * usage_period_merged), as SQL: summed over rows under their own names;
 * a row t with an ON CONFLICT's excluded row added (the merge); a row t
 * with a row d's taken back (a quarantine). */
#define DB_ROLLUP_SUMS                                                         \
    " sum(samples) AS samples, sum(running_s) AS running_s,"                   \
    " sum(vcpu_s) AS vcpu_s, sum(cpu_used_s) AS cpu_used_s,"                   \
    " sum(mem_byte_s) AS mem_byte_s,"                                          \
    " sum(mem_used_byte_s) AS mem_used_byte_s,"                                \
    " sum(disk_byte_s) AS disk_byte_s, sum(egress_bytes) AS egress_bytes"
#define DB_ROLLUP_SET_(op, d)                                                  \
    " samples = t.samples " op " " d ".samples,"                               \
    " running_s = t.running_s " op " " d ".running_s,"                         \
    " vcpu_s = t.vcpu_s " op " " d ".vcpu_s,"                                  \
    " cpu_used_s = t.cpu_used_s " op " " d ".cpu_used_s,"                      \
    " mem_byte_s = t.mem_byte_s " op " " d ".mem_byte_s,"                      \
    " mem_used_byte_s = t.mem_used_byte_s " op " " d ".mem_used_byte_s,"       \
    " disk_byte_s = t.disk_byte_s " op " " d ".disk_byte_s,"                   \
    " egress_bytes = t.egress_bytes " op " " d ".egress_bytes"
#define DB_ROLLUP_ADD_EXCLUDED DB_ROLLUP_SET_("+", "excluded")
#define DB_ROLLUP_TAKE_D DB_ROLLUP_SET_("-", "d")

/* The principal of row `row` of r, whose first columns are key_id,
 * role, account_id ('' for none) and scoped (a boolean): the columns of
 * meter_db_key_lookup, which meter_db_session_lookup shares. 0, or -1
 * with e set if a column does not read (db_get_int64...). */
int db_principal_of(const PGresult *r, int row, struct meter_principal *who,
                    struct meter_err *e);

/* The server answered a statement on db (meter_db_set_progress). */
void db_answered(PGconn *db);

/* The status of a statement that failed (r may be NULL), its message
 * "what: the server's message" in e: SOFT for serialization failures
 * and deadlocks, HARD otherwise. Clears r. For the few statements that
 * cannot go through meter_db_exec (COPY, binary results, cursors). */
enum meter_db_status db_failed(PGconn *db, PGresult *r, const char *what,
                               struct meter_err *e);

/* Runs sql, a query, with n text parameters and binary results into
 * *res: NONE (rows or not), or the failure with "what: ..." in e and
 * *res NULL. */
enum meter_db_status db_exec_binary(PGconn *db, const char *what,
                                    const char *sql, int n,
                                    const char *const *values, PGresult **res,
                                    struct meter_err *e);

/* Runs sql, a COPY ... FROM STDIN, with len bytes of data: NONE, or
 * the status of the failure with "what: the server's message". */
enum meter_db_status db_copy_in(PGconn *db, const char *sql, const char *data,
                                size_t len, const char *what,
                                struct meter_err *e);

/* Binary COPY data (FORMAT binary) built in a buffer: the header, then
 * for each row its field count and its fields (int4, int8, bytes or
 * NULL, each with its length), then the end. */
void db_copy_header(struct meter_buf *b);
void db_copy_row(struct meter_buf *b, uint16_t fields);
void db_copy_int4(struct meter_buf *b, int32_t v);
void db_copy_int8(struct meter_buf *b, int64_t v);
void db_copy_bytes(struct meter_buf *b, const void *p, size_t len);
void db_copy_null(struct meter_buf *b);
/* A one-dimensional bigint[] of the n values v (none: empty). */
void db_copy_int8_array(struct meter_buf *b, const int64_t *v, size_t n);
void db_copy_end(struct meter_buf *b);

/* Array parameters in text: an element appended to "{" or to the
 * previous element (a text quoted, NULL for none; an integer), closed
 * by the caller's "}"; db_int4_array writes a whole one. */
void db_array_text(struct meter_buf *b, const char *s);
void db_array_int(struct meter_buf *b, int64_t v);
void db_int4_array(struct meter_buf *b, const int32_t *v, size_t n);

/* COPY rows in text format: each field after a tab (but the first of a
 * row), escaped (NULL: \N), and the row's end. */
void db_tsv_text(struct meter_buf *b, const char *s);
void db_tsv_int(struct meter_buf *b, int64_t v);
void db_tsv_end(struct meter_buf *b);

/* Unix microseconds and PostgreSQL's binary timestamptz (microseconds
 * since 2000-01-01), both ways. */
#define DB_PG_EPOCH_US (946684800LL * 1000000)

/* HARD, with a message: for failures that are not the server's. */
enum meter_db_status db_hard(struct meter_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The calendar month (year, month) as Unix seconds [*start, *end). */
static inline void
db_period(int year, int month, int64_t *start, int64_t *end)
{
    int y, m;
    pricing_period_of(pricing_days_from_civil(year, month, 1) * 86400, &y, &m,
                      start, end);
}

/* The first day of (year, month) as "YYYY-MM-DD". */
static inline void
db_period_text(int year, int month, char buf[32])
{
    snprintf(buf, 32, "%04d-%02d-01", year, month);
}

static inline int64_t
db_period_start(int year, int month)
{
    int64_t start, end;
    db_period(year, month, &start, &end);
    return start;
}

static inline int64_t
db_period_end(int year, int month)
{
    int64_t start, end;
    db_period(year, month, &start, &end);
    return end;
}

/* A decimal as the server writes numeric: 0, or -1 if it is not one. */
static inline int
db_parse_dec(const char *s, struct pricing_dec *out)
{
    return pricing_dec_parse(s, PRICING_SCALE, out) == PRICING_OK ? 0 : -1;
}

/*
 * Typed reads of a text result (value.c): field (row, col) of r into
 * *out, 0; or -1 with "cannot read column COL (NAME) of row ROW: 'VALUE'
 * is not ..." in e, when there is no such field, it is binary, NULL
 * (but for db_get_text), not of the type (an integer is an optional
 * minus and digits, nothing before or after; a boolean "t" or "f"; a
 * decimal db_parse_dec's), or out of the type's range. *out is left as
 * it was on failure. A caller's failed read is METER_DB_HARD: the
 * database holds what the schema does not allow, or the statement does
 * not return what its reader thinks.
 */
int db_get_int64(const PGresult *r, int row, int col, int64_t *out,
                 struct meter_err *e);
int db_get_int32(const PGresult *r, int row, int col, int32_t *out,
                 struct meter_err *e);
int db_get_int(const PGresult *r, int row, int col, int *out,
               struct meter_err *e);
int db_get_uint64(const PGresult *r, int row, int col, uint64_t *out,
                  struct meter_err *e);
int db_get_bool(const PGresult *r, int row, int col, bool *out,
                struct meter_err *e);
int db_get_dec(const PGresult *r, int row, int col, struct pricing_dec *out,
               struct meter_err *e);
/* The text into buf of cap bytes, NUL-terminated; NULL reads as "" (as
 * PQgetvalue gives it: test PQgetisnull where the difference matters).
 * A text of cap bytes or more fails rather than being cut short. */
int db_get_text(const PGresult *r, int row, int col, char *buf, size_t cap,
                struct meter_err *e);

/*
 * A statement's text parameters made from C types (value.c), in order:
 * zero-initialize (struct db_params p = {0}), add each, then pass p.n
 * and p.v (and p.len and p.fmt with a binary one) to meter_db_exec and
 * friends. Numbers are written into the
 * struct itself, so it must not be copied once filled. Past
 * DB_PARAMS_MAX parameters n becomes -1 and stays so: meter_db_exec,
 * db_exec_prepared and db_exec_binary then fail (HARD) without running
 * the statement, rather than run it with parameters missing.
 */
#define DB_PARAMS_MAX 16
struct db_params {
    int n;
    const char *v[DB_PARAMS_MAX];
    int len[DB_PARAMS_MAX], fmt[DB_PARAMS_MAX]; /* as PQexecParams's */
    char num[DB_PARAMS_MAX][32];
};
/* s as it is (not copied: it must outlive the statement); NULL is SQL
 * NULL. */
void db_param_text(struct db_params *p, const char *s);
/* len bytes at data in binary (a bytea), not copied either; pass p.len
 * and p.fmt too when there is one. */
void db_param_bytes(struct db_params *p, const void *data, int len);
void db_param_int64(struct db_params *p, int64_t v);
void db_param_int32(struct db_params *p, int32_t v);
void db_param_uint64(struct db_params *p, uint64_t v);
/* "t" or "f". */
void db_param_bool(struct db_params *p, bool v);
/* The day, "YYYY-MM-DD", for a date parameter; the first of (year,
 * month) for db_param_period. */
void db_param_date(struct db_params *p, int year, int month, int day);
void db_param_period(struct db_params *p, int year, int month);

/*
 * meter_db_exec for a statement run on every request (the key and
 * session lookups): prepared once per connection under name, so the
 * server neither parses nor plans it again. Outside a transaction only:
 * the first run on a connection fails (not prepared yet) before it
 * prepares, which would abort a transaction.
 */
enum meter_db_status db_exec_prepared(PGconn *db, const char *what,
                                      const char *name, const char *sql, int n,
                                      const char *const *values,
                                      const int *lengths, const int *formats,
                                      PGresult **res, struct meter_err *e);

/* Builds the fleet relations the reports read (fleet.c) if the shard
 * map or a shard's conninfo changed since they were built. */
enum meter_db_status db_fleet_ready(PGconn *db, struct meter_err *e);

/* Writes the revenue of credit note `note`: that of `voided`, negated. */
enum meter_db_status db_revenue_negate(PGconn *db, const char *account,
                                       int64_t note, int64_t voided,
                                       struct meter_err *e);

/* Runs sql (n text parameters) and adds the first column of every row
 * to out: NONE, ROWS or the failure, with "what: ..." in e. */
enum meter_db_status db_strings(PGconn *db, const char *what, const char *sql,
                                int n, const char *const *values,
                                struct meter_strtab *out, struct meter_err *e);

/* What the registry knows of a sandbox. */
struct db_sandbox {
    char account_id[PRICING_ID_MAX + 1];
    int64_t sandbox_pk;
    int32_t account_pk;
    int32_t first_run; /* first running minute stored, or at most that
                          (INT32_MAX: none known) */
};

/* ---- two-phase commit and shards (shards.c, docs/scale.md) ---------- */

enum db_two_phase_op { DB_PREPARE, DB_COMMIT_PREPARED, DB_ROLLBACK_PREPARED };
/* PREPARE TRANSACTION, COMMIT PREPARED or ROLLBACK PREPARED of part gid
 * (meter:HEX32:SHARD; anything else is refused). With gone not NULL, a
 * part that no longer exists (settled by another process) is NONE with
 * *gone true. */
enum meter_db_status db_two_phase(PGconn *db, enum db_two_phase_op op,
                                  const char *gid, bool *gone,
                                  struct meter_err *e);
/* meter_db_transaction, ending with PREPARE TRANSACTION gid if gid is
 * not NULL (the transaction is then prepared, not committed). */
enum meter_db_status db_transaction_ends(PGconn *db, const char *begin,
                                         int attempts, meter_db_tx_fn *fn,
                                         void *arg, const char *gid,
                                         struct meter_err *e);

/* Shards a catalog may list (shards.shard_id 0-255). */
#define DB_SHARDS_MAX 256

/* A batch of samples sorted and checked (ingest.c), and its parts. */
struct db_batch;
/* A part of a routed batch: stored with gid prepared (NULL: committed),
 * on a database that must hold its buckets, and with its accounts'
 * shadow rows written first if shadow (a shard that is not the
 * catalog). */
struct db_part {
    const char *gid;
    const int32_t *buckets;
    size_t nbuckets;
    bool shadow;
};
/* Sorts and checks the n samples s as meter_ingest does (size, values,
 * the key's scope on db): OK with *out a batch to store (NULL if there
 * is nothing to store), else the refusal with *out NULL. */
enum meter_ingest_status
db_batch_open(PGconn *db, const struct meter_sample *s, size_t n,
              const struct meter_ingest_origin *o,
              struct meter_ingest_result *res, struct meter_problems *probs,
              struct meter_err *e, struct db_batch **out);
void db_batch_free(struct db_batch *b);
/* Its sandboxes (groups), each's account, and routing them. */
size_t db_batch_groups(const struct db_batch *b);
const char *db_batch_account(const struct db_batch *b, size_t g);
void db_batch_route(struct db_batch *b, size_t g, int32_t account_pk,
                    int bucket);
int db_batch_bucket(const struct db_batch *b, size_t g);
/* The part of b of the groups g with keep[g]: over b's samples, which
 * must outlive it. NULL if out of memory. */
struct db_batch *db_batch_part(const struct db_batch *b, const bool *keep);
/* Stores b (or a part, routed) on db in one transaction, as meter_ingest
 * does; *moved true (UNAVAILABLE) if db refused a bucket it no longer
 * holds. */
enum meter_ingest_status
db_batch_store(PGconn *db, struct meter_registry *reg, struct db_batch *b,
               const struct meter_ingest_origin *o, const struct db_part *part,
               struct meter_problems *probs, bool *moved, struct meter_err *e);
/* What the stored b counted; and its new sandboxes remembered in reg,
 * once it is committed. */
const struct meter_ingest_result *db_batch_result(const struct db_batch *b);
void db_batch_remember(struct db_batch *b, struct meter_registry *reg);

/* The connection on which to read account's usage: *own NULL for db
 * itself (one server, the catalog's own buckets, or an account db does
 * not know), else a new one to its shard, the caller's to PQfinish, and
 * which shard it is in *which (id and name; may be NULL). NONE, or the
 * failure: SHARD_AWAY if the shard cannot be reached. */
enum meter_db_status db_account_conn(PGconn *db, const char *account,
                                     PGconn **own,
                                     struct meter_shard_info *which,
                                     struct meter_err *e);
/* A connection to a shard by its conninfo, with TCP keepalives unless
 * the conninfo says otherwise (meter_db_connect). */
PGconn *db_shard_connect(const char *conninfo, struct meter_err *e);
/* SHARD_AWAY, e's message (why) prefixed with the shard's number and
 * name (NULL if unknown) as meter_db_away_shard reads them. */
enum meter_db_status db_shard_away(struct meter_err *e, int shard,
                                   const char *name);
/* Reads the shard map if not read yet, or again. */
int db_shards_load(struct meter_shards *sh, PGconn *catalog, bool again,
                   struct meter_err *e);
/* The shard of bucket (the map loaded). */
int db_shards_of_bucket(struct meter_shards *sh, int bucket);
/* An account's key and bucket, if known; and remembering them. */
bool db_shards_account(struct meter_shards *sh, const char *id, int32_t *pk,
                       int *bucket);
void db_shards_account_put(struct meter_shards *sh, const char *id, int32_t pk,
                           int bucket);
/* What the process knows of shard's sandboxes. NULL if out of memory. */
struct meter_registry *db_shards_registry(struct meter_shards *sh, int shard);
/* The shard's connection: the catalog for the catalog's own, else this
 * thread's, opened (again, if fresh) as needed; NULL with e if it
 * cannot be. */
PGconn *db_links_conn(struct meter_shard_links *l, PGconn *catalog, int shard,
                      bool fresh, struct meter_err *e);
struct meter_shards *db_links_shards(struct meter_shard_links *l);
/* The test hook, if set. */
void db_links_between_commits(struct meter_shard_links *l, PGconn *next);

/* Fills *out from the registry; false if the sandbox (sandbox_id of
 * account_id) is not in it. */
bool db_registry_get(struct meter_registry *r, const char *account_id,
                     const char *sandbox_id, struct db_sandbox *out);
/* Remembers a sandbox stored (committed), or a lower first_run of one
 * remembered, as read under first_run_epoch epoch: nothing if the
 * registry has seen another epoch since; a cache, so failures to
 * remember are ignored. */
void db_registry_put(struct meter_registry *r, const char *sandbox_id,
                     const struct db_sandbox *s, int64_t epoch);
/* The first_run_epoch the registry's sandboxes were read under. */
int64_t db_registry_epoch(struct meter_registry *r);
/* The database's first_run_epoch is epoch: if it is another than the
 * registry's, the registry forgets its sandboxes (a quarantine changed
 * first runs) and takes it. */
void db_registry_epoch_seen(struct meter_registry *r, int64_t epoch);
/* Whether the partition of month key (year * 12 + month) is known to
 * exist; and remembering that it does. */
bool db_registry_month_known(struct meter_registry *r, int64_t key);
void db_registry_month_add(struct meter_registry *r, int64_t key);
/* Forgets every month known (one may have been archived since). */
void db_registry_months_clear(struct meter_registry *r);

/* Takes the blocks of key_id that arrived in [from, to) (Unix seconds)
 * out of their packs, back into usage_blocks as their batches stored
 * them; the caller holds the quarantine's lock (usage_pack.c). */
enum meter_db_status db_usage_unpack(PGconn *db, int64_t key_id, int64_t from,
                                     int64_t to, struct meter_err *e);

#endif
