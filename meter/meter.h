/*
 * meter.h - the meter module's public interface: finding and running
 * the database (an external one, or the embedded cluster under var/pg/),
 * and applying the schema migrations.
 *
 * Conventions: functions return 0 on success and -1 on failure, with a
 * message in the caller's struct meter_err (lowercase, what failed
 * first, values quoted). Objects returned by *_new or *_open belong to
 * the caller and are released with the matching *_free, which accepts
 * NULL.
 */
#ifndef METER_H
#define METER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "pricing.h"

struct meter_err {
    char msg[1024];
};

/* Sets e->msg from a printf format; returns -1 so callers can
 * `return meter_fail(e, ...)`. e may be NULL. */
int meter_fail(struct meter_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- embedded cluster ------------------------------------------------ */

/*
 * The embedded database: a private PostgreSQL cluster for a working
 * directory, under WORKDIR/var/pg/, reachable only through a unix socket.
 * When the caller is root the cluster runs as an unprivileged user
 * (METER_PG_USER, default "postgres"); if that user cannot reach
 * WORKDIR/var/pg (a checkout under a 0700 home), the cluster's files go
 * to /var/tmp/meter-pg-HASH and var/pg/data links to them. A socket path
 * too long for sun_path goes to /tmp/meter-pg-HASH. Start and stop hold
 * an exclusive lock on var/pg/lock, so concurrent starts are safe.
 */
struct meter_cluster;

enum meter_cluster_state {
    METER_CLUSTER_ABSENT,  /* never initialized */
    METER_CLUSTER_STOPPED, /* initialized, not accepting connections */
    METER_CLUSTER_RUNNING, /* accepting connections */
};

/* Resolves the cluster's paths for workdir (NULL: the current directory).
 * Creates nothing; as root it checks, in a child process, whether the
 * cluster's user can reach workdir. */
struct meter_cluster *meter_cluster_open(const char *workdir,
                                         struct meter_err *e);
void meter_cluster_free(struct meter_cluster *c);

/* Initializes the cluster if needed and starts it unless running.
 * Progress lines go to stderr. */
int meter_cluster_start(struct meter_cluster *c, struct meter_err *e);
/* Stops the cluster if running (fast shutdown). */
int meter_cluster_stop(struct meter_cluster *c, struct meter_err *e);
/* Stops the cluster and deletes its files. */
int meter_cluster_destroy(struct meter_cluster *c, struct meter_err *e);
enum meter_cluster_state meter_cluster_state(const struct meter_cluster *c);

/* The libpq conninfo of the cluster's "meter" database; owned by c. */
const char *meter_cluster_conninfo(const struct meter_cluster *c);
const char *meter_cluster_datadir(const struct meter_cluster *c);
const char *meter_cluster_sockdir(const struct meter_cluster *c);
const char *meter_cluster_logfile(const struct meter_cluster *c);

/* ---- connections ----------------------------------------------------- */

/*
 * Connects to the project's database: conninfo if not NULL (a --db flag),
 * else $METER_DATABASE_URL if set and not empty, else the embedded
 * cluster of the current directory, started if needed. conninfo may be
 * any libpq keyword/value string or URI. A malformed conninfo and an
 * unreachable server are errors that say which; passwords are never
 * printed. Notices below WARNING are not shown.
 */
PGconn *meter_db_connect(const char *conninfo, struct meter_err *e);

/* Checks that conninfo parses; the message names it (password hidden). */
int meter_db_check_conninfo(const char *conninfo, struct meter_err *e);

/* ---- migrations ------------------------------------------------------ */

/* One migrations/NNNN_name.sql file. */
struct meter_migration {
    int version; /* NNNN */
    char *file;  /* base name, "0001_core.sql" */
    char *sql;   /* contents */
    size_t sql_len;
};

struct meter_migration_set {
    struct meter_migration *items; /* sorted by version, no duplicates */
    size_t n;
};

/* Parses a file name "NNNN_name.sql" (name of [a-z0-9_]); returns the
 * version, or -1 if the name is not a migration's. */
int meter_migration_version(const char *file);

/* Reads every migration of dir. Files not ending in ".sql" are ignored;
 * a ".sql" file with a malformed name, two files of one version, or an
 * unreadable file are errors naming the file. */
int meter_migrations_load(const char *dir, struct meter_migration_set *set,
                          struct meter_err *e);
void meter_migrations_release(struct meter_migration_set *set);

/* The migrations directory: $METER_MIGRATIONS_DIR, else the source
 * tree's migrations/ this binary was built from. */
const char *meter_migrations_default_dir(void);

enum meter_migration_state {
    METER_MIGRATION_PENDING,
    METER_MIGRATION_APPLIED,
    METER_MIGRATION_CHANGED, /* applied, file differs from what was applied */
    METER_MIGRATION_MISSING, /* applied, no file any more */
};

struct meter_migration_status {
    int version;
    char file[256];
    enum meter_migration_state state;
    char applied_at[64]; /* empty when pending */
};

/* Called once per migration applied by meter_migrate. */
typedef void meter_migrate_cb(const struct meter_migration *m, void *arg);

/*
 * Applies the pending migrations of set in version order, each in its
 * own transaction together with its record (version, file, SHA-256 of
 * the contents) in schema_migrations. Concurrent callers serialize on an
 * advisory lock. Refuses to apply anything, with an error naming the
 * file, if an applied migration's file has changed or disappeared.
 * *applied receives the number applied now; *version the schema version
 * after the run (0 for an empty schema).
 */
int meter_migrate(PGconn *db, const struct meter_migration_set *set,
                  meter_migrate_cb *cb, void *arg, int *applied, int *version,
                  struct meter_err *e);

/* Lists every migration known to the database or to set, by version, in
 * a malloc'd array of *n items that the caller frees. */
int meter_migrate_status(PGconn *db, const struct meter_migration_set *set,
                         struct meter_migration_status **out, size_t *n,
                         struct meter_err *e);

/* ---- samples ---------------------------------------------------------- */

/* One sample (PRICING-RULES section 1), parsed and validated. */
struct meter_sample {
    char account_id[PRICING_ID_MAX + 1];
    char sandbox_id[PRICING_ID_MAX + 1];
    struct pricing_second s;
};

/* Why a sample is invalid: the field, its value (JSON text, shortened)
 * and the reason. */
struct meter_sample_err {
    char field[80];
    char value[96];
    char reason[160];
};

/* Latest second accepted: 9999-12-31T23:59:59Z. */
#define METER_TS_MAX 253402300799LL

/*
 * Validates the JSON object obj as a sample and fills *out: ts as an
 * integer or "YYYY-MM-DDTHH:MM:SSZ"; vcpu and cpu_used with at most 4
 * decimals; integers as JSON integers; unknown fields refused; on a
 * paused sample the running-only fields are ignored (left 0).
 */
int meter_sample_parse(const json_t *obj, struct meter_sample *out,
                       struct meter_sample_err *err);

/* The fields of a sample, by number, for forms that are not one object
 * per sample (the columnar body). */
enum {
    METER_F_TS,
    METER_F_ACCOUNT,
    METER_F_SANDBOX,
    METER_F_STATE,
    METER_F_VCPU,
    METER_F_CPU_USED,
    METER_F_MEM,
    METER_F_MEM_USED,
    METER_F_DISK,
    METER_F_EGRESS,
    METER_NFIELDS
};
extern const char *const meter_sample_fields[METER_NFIELDS];
/* The number of field name, or -1. */
int meter_sample_field(const char *name);
/* As meter_sample_parse, from the values of each field (NULL: absent). */
int meter_sample_from_fields(const json_t *const v[METER_NFIELDS],
                             struct meter_sample *out,
                             struct meter_sample_err *err);

/* ---- storage blocks ---------------------------------------------------- */

/* Bytes an encoded block may take, at most. */
#define METER_BLOCK_MAX 4096

/* Encodes the n (1-60) seconds s, ascending and all in one minute, into
 * buf (METER_BLOCK_MAX bytes); returns the length. The seconds present
 * are not encoded: keep their mask beside the data. */
size_t meter_block_encode(const struct pricing_second *s, size_t n,
                          uint8_t *buf);

/* Decodes a block of Unix minute `minute` whose seconds are the bits of
 * mask into out (room for 60) and *n; -1 if data is malformed. */
int meter_block_decode(int64_t minute, uint64_t mask, const uint8_t *data,
                       size_t len, struct pricing_second *out, size_t *n);

/* ---- ingestion -------------------------------------------------------- */

/* What a process knows of sandboxes: sandbox -> account and keys, which
 * never change once stored, and the partitions that exist. Thread-safe. */
struct meter_registry;
struct meter_registry *meter_registry_new(void);
void meter_registry_free(struct meter_registry *r);

struct meter_ingest_result {
    uint64_t accepted;   /* new seconds stored */
    uint64_t duplicates; /* seconds already known with equal values */
    uint64_t conflicts;  /* seconds already known with other values */
};

/* Why a batch was refused: the first METER_MAX_PROBLEMS of total. */
enum { METER_MAX_PROBLEMS = 20 };
struct meter_problem {
    size_t index; /* of the sample in the batch */
    struct meter_sample_err err;
};
struct meter_problems {
    size_t n, total;
    struct meter_problem items[METER_MAX_PROBLEMS];
};
void meter_problems_add(struct meter_problems *p, size_t index,
                        const char *field, const char *value,
                        const char *reason);

enum meter_ingest_status {
    METER_INGEST_OK,          /* committed; *res says what */
    METER_INGEST_INVALID,     /* refused, nothing stored; see problems */
    METER_INGEST_UNAVAILABLE, /* the database is unreachable: retry later */
    METER_INGEST_ERROR,       /* another database error, in e */
};

/*
 * Stores the n validated samples s exactly once, atomically: all of it
 * commits, or nothing does. A second already stored (or earlier in the
 * batch) is a duplicate if equal, a conflict if not; the first stands.
 * Refused: samples more than 5 minutes after now_us (Unix microseconds,
 * also the arrival time stored), and a sandbox under another account.
 */
enum meter_ingest_status meter_ingest(PGconn *db, struct meter_registry *reg,
                                      const struct meter_sample *s, size_t n,
                                      int64_t now_us,
                                      struct meter_ingest_result *res,
                                      struct meter_problems *probs,
                                      struct meter_err *e);

/* ---- reading stored usage ---------------------------------------------- */

/* Stored seconds of [from, to) (Unix seconds), of one account or all
 * (account NULL), as a pricing source: blocks of one (sandbox, minute),
 * each sandbox's together and in order. Holds a read transaction on db
 * until freed; db must not be used for anything else meanwhile. */
struct meter_store_reader;
struct meter_store_reader *meter_store_reader_new(PGconn *db,
                                                  const char *account,
                                                  int64_t from, int64_t to,
                                                  struct meter_err *e);
struct pricing_source meter_store_source(struct meter_store_reader *r);
void meter_store_reader_free(struct meter_store_reader *r);

/* A sample as one NDJSON line (with its newline) in the canonical form
 * that export writes and rate reads; returns what snprintf returns. */
int meter_sample_format(char *buf, size_t n, const char *account,
                        const char *sandbox, const struct pricing_second *s);

/* ---- generated fleets -------------------------------------------------- */

/* A deterministic generated fleet (its mix: meter/fleet.c, meter/README.md). */
struct meter_fleet;
struct meter_fleet *meter_fleet_new(uint64_t seed, size_t sandboxes,
                                    size_t accounts, int64_t start);
void meter_fleet_free(struct meter_fleet *f);
size_t meter_fleet_size(const struct meter_fleet *f);
/* The next second meter_fleet_next will generate. */
int64_t meter_fleet_now(const struct meter_fleet *f);

/* Receives n consecutive seconds of one sandbox. */
typedef void meter_fleet_cb(const char *account, const char *sandbox,
                            const struct pricing_second *s, size_t n,
                            void *arg);
/* Generates the next `seconds` seconds of every slot, sandbox by sandbox;
 * returns the number of samples. */
size_t meter_fleet_next(struct meter_fleet *f, uint32_t seconds,
                        meter_fleet_cb *cb, void *arg);

/* ---- request bodies ---------------------------------------------------- */

/* Inflates a gzip stream of len bytes into a malloc'd *out of at most max
 * bytes: 0, -1 if corrupt or truncated, -2 if larger than max. */
int meter_gunzip(const char *in, size_t len, size_t max, char **out,
                 size_t *out_len);

/* Parses and validates a body of samples: NDJSON if ndjson, else a JSON
 * array of samples or the columnar object (docs in meter/README.md).
 * *out (malloc'd, n samples) holds every sample read; p lists the
 * invalid ones and any syntax error. At most max samples. -1 only when
 * out of memory. */
int meter_body_parse(const char *body, size_t len, bool ndjson, size_t max,
                     struct meter_sample **out, size_t *n,
                     struct meter_problems *p);

/* A growable text buffer; oom is set if an append ran out of memory. */
struct meter_text {
    char *p;
    size_t len, cap;
    size_t items;
    bool oom;
};
void meter_text_add(struct meter_text *t, const void *data, size_t n);
void meter_text_str(struct meter_text *t, const char *s);
void meter_text_free(struct meter_text *t);

/* Builds a columnar body: begin, one add per run of consecutive seconds
 * of one sandbox (n >= 1), end. */
void meter_columnar_begin(struct meter_text *t);
void meter_columnar_add(struct meter_text *t, const char *account,
                        const char *sandbox, const struct pricing_second *s,
                        size_t n);
void meter_columnar_end(struct meter_text *t);

/* ---- API keys ---------------------------------------------------------- */

enum { METER_TOKEN_LEN = 68 }; /* "mtr_" and 64 hex digits (256 bits) */

/* A new random token, NUL-terminated in out[METER_TOKEN_LEN + 1]. */
int meter_token_new(char *out);
/* SHA-256 of the token: what is stored and looked up. */
void meter_token_hash(const char *token, uint8_t out[32]);

/* Parses "YYYY-MM-DDTHH:MM:SSZ" (UTC, no fraction, no offset, no leap
 * second) into Unix seconds; -1 if malformed. */
int meter_parse_rfc3339(const char *s, int64_t *ts);

#endif
