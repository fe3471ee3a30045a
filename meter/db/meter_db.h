/*
 * meter_db.h - the database layer: choosing and opening the connection,
 * one statement helper and one transaction runner with one status
 * convention, and one file per operation (migrations, API keys, price
 * books, accounts, partitions, the ingest transaction, reading stored
 * usage, browser sessions). No SQL lives outside this module but the
 * embedded cluster's own CREATE DATABASE and CREATE ROLE.
 *
 * Statuses (Taler's GNUNET_DB_QueryStatus is the model): operations that
 * talk to the server return enum meter_db_status; METER_DB_HARD,
 * METER_DB_SOFT and METER_DB_SHARD_AWAY carry a message in e. Other
 * functions return 0 or -1 with a message in e. A PGconn belongs to one
 * thread at a time; the registry is the one object meant to be shared
 * between threads. Objects from *_new belong to the caller and are
 * released with the matching *_free, which accepts NULL.
 */
#ifndef METER_DB_H
#define METER_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "meter_sample.h"
#include "meter_util.h"
#include "pricing.h"
#include "report.h"

enum meter_db_status {
    /* The shard that holds what was asked for cannot be reached, was lost
     * or is busy, where db itself answered: retry later; e names the
     * shard (meter_db_away_shard). */
    METER_DB_SHARD_AWAY = -4,
    METER_DB_ABORT = -3, /* the caller's transaction function chose to roll
                            back, for a reason of its own (no message) */
    METER_DB_HARD = -2,  /* an error a retry will not fix, or a lost
                            connection (see meter_db_lost) */
    METER_DB_SOFT = -1,  /* a serialization failure or a deadlock: run the
                            transaction again */
    METER_DB_NONE = 0,   /* done; no rows */
    METER_DB_ROWS = 1,   /* done; one row or more */
};

/* ---- connections ------------------------------------------------------ */

/*
 * The database to use for daily work (meterd, meterctl's commands but
 * the maintenance ones), into a malloc'd *out: flag (a --db option) if
 * not NULL, else $METER_DATABASE_URL if set and not empty, else the
 * embedded cluster of the current directory if it is running, as its
 * worker role (meter_cluster_worker_conninfo). Never starts anything:
 * with none of these the error says how to get a database. The string
 * is checked to parse (the message never shows a password).
 */
int meter_db_conninfo(const char *flag, char **out, struct meter_err *e);

/*
 * The same for the schema's owner (meterctl migrate, usage compact's
 * VACUUM): flag, else $METER_OWNER_DATABASE_URL, else
 * $METER_DATABASE_URL (a database with one role for both), else the
 * embedded cluster as its owner (meter_cluster_conninfo).
 */
int meter_db_owner_conninfo(const char *flag, char **out, struct meter_err *e);

/* Checks that conninfo parses; the message names it (password hidden). */
int meter_db_check_conninfo(const char *conninfo, struct meter_err *e);

/* Connects to conninfo (NULL: meter_db_conninfo(NULL)), waiting at most
 * 5 s unless conninfo sets connect_timeout. An unreachable server is an
 * error naming its host, port and database. Notices below WARNING are
 * not shown. */
PGconn *meter_db_connect(const char *conninfo, struct meter_err *e);

/* Whether db's connection is gone (a retry needs a new one). */
bool meter_db_lost(PGconn *db);

/*
 * Whether a failure st (< 0) of an operation on db is the database
 * being away or busy, so that the same request may succeed later: no
 * connection (db NULL), a lost one (meter_db_lost), SOFT (a
 * serialization failure or deadlock still failing after the retries),
 * or the last statement given up by the server for want of time or
 * resources (a statement or lock timeout, a cancel, too many
 * connections, out of memory or disk). False for a statement the
 * server refused on a live connection (a privilege, a constraint, a
 * value it cannot take: a retry will not fix it), for a failure that
 * was not the server's, and for ABORT. True for SHARD_AWAY, whatever
 * db is.
 */
bool meter_db_unavailable(PGconn *db, enum meter_db_status st);

/* The shard a SHARD_AWAY failure's message names ("shard 2 'two'", or
 * "shard 2"), into out: what a client may be shown of it (no conninfo,
 * no server's message); "" if e names none. */
void meter_db_away_shard(const struct meter_err *e, char out[48]);

/* A failure st of an operation on db that read usage on the connection
 * usage, to shard (its name may be NULL): SHARD_AWAY, naming the shard
 * in e, if usage is a shard's and was lost or busy while db was not
 * (meter_db_unavailable); else st. */
enum meter_db_status meter_db_shard_failed(PGconn *db, PGconn *usage, int shard,
                                           const char *name,
                                           enum meter_db_status st,
                                           struct meter_err *e);

/* Whether the server answers a query on db within timeout_ms: 0, or -1
 * with e set; a server that does not answer in time leaves db broken
 * (meter_db_lost), so that its next user reconnects. */
int meter_db_ping(PGconn *db, int timeout_ms, struct meter_err *e);

/* ---- statements and transactions ---------------------------------------- */

/*
 * Runs sql with n text parameters (lengths and formats may be NULL: all
 * text; else as PQexecParams) and text results. *res receives the
 * result when res is not NULL and the statement succeeded; the caller
 * PQclears it. Errors are "what: the server's message".
 */
enum meter_db_status meter_db_exec(PGconn *db, const char *what,
                                   const char *sql, int n,
                                   const char *const *values,
                                   const int *lengths, const int *formats,
                                   PGresult **res, struct meter_err *e);

/* One attempt of a transaction's work, between BEGIN and COMMIT. Must
 * start over from its inputs each time: a retry follows a rollback. */
typedef enum meter_db_status meter_db_tx_fn(PGconn *db, void *arg,
                                            struct meter_err *e);

/*
 * Runs fn in a transaction opened with begin ("BEGIN", or "BEGIN
 * ISOLATION LEVEL ..."), committing if fn returns NONE or ROWS and
 * rolling back otherwise. A SOFT result, from fn or the commit, runs it
 * again, up to attempts times in all; returns what the last attempt
 * returned (SOFT if every attempt was). Never leaves a transaction open.
 * Called inside a transaction, it runs fn in a savepoint of it instead
 * (begin's isolation is then the outer one's), released or rolled back
 * to, and the outer transaction commits or not.
 */
enum meter_db_status meter_db_transaction(PGconn *db, const char *begin,
                                          int attempts, meter_db_tx_fn *fn,
                                          void *arg, struct meter_err *e);

/* ---- migrations ---------------------------------------------------------- */

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

/* The migrations directory into out: $METER_MIGRATIONS_DIR, else the
 * installed data's (meter_data_dir). */
int meter_migrations_default_dir(char *out, size_t n, struct meter_err *e);

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

/* The newest migration applied to db: its base name without ".sql"
 * ("0019_bucket_moves") into file (n bytes) and its number into
 * *version; "" and 0 when none is (no schema_migrations table, or an
 * empty one). ROWS, NONE (none applied), or an error. */
enum meter_db_status meter_db_schema_at(PGconn *db, char *file, size_t n,
                                        int *version, struct meter_err *e);

/* ---- API keys and who calls ---------------------------------------------- */

enum { METER_TOKEN_LEN = 68 }; /* "mtr_" and 64 hex digits (256 bits) */

/* 2 * nbytes random hex digits (nbytes at most 64) from the kernel's
 * generator, NUL-terminated, into out: 0, or -1 if none could be had. */
int meter_random_hex(char *out, size_t nbytes);
/* A new random token, NUL-terminated in out[METER_TOKEN_LEN + 1]. */
int meter_token_new(char *out);
/* SHA-256 of the token: what is stored and looked up. */
void meter_token_hash(const char *token, uint8_t out[32]);

/* The roles of keys, as bits so that a route can allow several. */
enum meter_role {
    METER_ROLE_HOST = 1,    /* sends samples */
    METER_ROLE_ACCOUNT = 2, /* one account's own data */
    METER_ROLE_FINANCE = 4, /* reports and invoices */
    METER_ROLE_ADMIN = 8,   /* everything */
};
/* "host", "account", ...; "?" for anything else. */
const char *meter_role_name(enum meter_role role);
/* The role named s, or 0. */
enum meter_role meter_role_parse(const char *s);

/* Who a request comes from. */
struct meter_principal {
    int64_t key_id;
    enum meter_role role;
    char account_id[PRICING_ID_MAX + 1]; /* empty unless role account */
    bool scoped; /* a host key limited to its accounts (host_key_accounts) */
};

/* Looks a bearer token up among keys not revoked: ROWS and *who filled,
 * NONE if unknown or revoked, HARD on a database error. */
enum meter_db_status meter_db_key_lookup(PGconn *db, const char *token,
                                         struct meter_principal *who,
                                         struct meter_err *e);

/* Creates a key (account: required for role account, else NULL) and
 * writes its token, shown only now, to token; ROWS and *key_id. scope
 * (NULL: none), for a host key only: the comma-separated accounts it
 * may write usage for, valid ids. */
enum meter_db_status meter_db_key_create(PGconn *db, enum meter_role role,
                                         const char *account, const char *name,
                                         const char *scope,
                                         char token[METER_TOKEN_LEN + 1],
                                         int64_t *key_id, struct meter_err *e);

/* One key as listed (never its token); times RFC 3339 UTC, revoked ""
 * while active, account "" for keys of no account. */
struct meter_key {
    int64_t key_id;
    const char *role, *account_id, *name, *created_at, *revoked_at;
    const char *scope; /* a host key's accounts, comma-separated; "" */
};
typedef void meter_key_cb(const struct meter_key *k, void *arg);
/* Calls cb for each key in key_id order. */
enum meter_db_status meter_db_key_list(PGconn *db, meter_key_cb *cb, void *arg,
                                       struct meter_err *e);

/* Revokes key id, and deletes its browser sessions: ROWS, or NONE if
 * there is no such active key. */
enum meter_db_status meter_db_key_revoke(PGconn *db, int64_t key_id,
                                         struct meter_err *e);

/* ---- the management API (0021_admin_api.sql, admin.c) -------------------
 *
 * Answers are JSON (a new reference in *out) as the API gives them: an
 * account is account_json's {id, name, external_id, metadata,
 * created_at, auto_created, price_books: [{from, price_book_id,
 * version}]}. */

/* An account's fields; NULL: none (create) or unchanged (update).
 * metadata is a JSON object's text. */
struct meter_admin_account {
    const char *id, *name, *external_id, *metadata;
};
/* Creates account a: ROWS and the account, or NONE with e saying why
 * not (the id exists, or the external id is another account's). */
enum meter_db_status
meter_db_admin_account_create(PGconn *db, const struct meter_admin_account *a,
                              json_t **out, struct meter_err *e);
/* Account id: ROWS, or NONE if there is none. */
enum meter_db_status meter_db_admin_account_get(PGconn *db, const char *id,
                                                json_t **out,
                                                struct meter_err *e);
/* A page of at most limit accounts after id after (NULL: from the
 * first), in id order: {items, next_after} (next_after null on the
 * last page). */
enum meter_db_status meter_db_admin_accounts_list(PGconn *db, const char *after,
                                                  int limit, json_t **out,
                                                  struct meter_err *e);
/* Sets a's fields that are not NULL: ROWS and the account, NONE if there
 * is no such account, HARD naming the account whose external id it is. */
enum meter_db_status
meter_db_admin_account_update(PGconn *db, const struct meter_admin_account *a,
                              json_t **out, struct meter_err *e);
/* Puts account id on no price book from date from (YYYY-MM-DD) until
 * its next assignment: ROWS, or NONE if there is no such account. */
enum meter_db_status meter_db_account_end(PGconn *db, const char *id,
                                          const char *from,
                                          struct meter_err *e);
/* Every stored version of every book: [{id, version, name, provider,
 * currency, effective_from, stored_at}]. */
enum meter_db_status meter_db_books_list(PGconn *db, json_t **out,
                                         struct meter_err *e);
/* Version version (0: the latest) of book id as stored: ROWS, or NONE. */
enum meter_db_status meter_db_book_get(PGconn *db, const char *id, int version,
                                       json_t **out, struct meter_err *e);

/* Creations made with an Idempotency-Key header (Stripe's scheme), per
 * API key: the first claims the key for its request (SHA-256 of method,
 * path and body); the same request again gets the first answer, another
 * request with the key is refused. */
enum meter_idem_outcome {
    METER_IDEM_NEW,           /* claimed: run it, meter_db_idem_release */
    METER_IDEM_DONE,          /* answered before: status and response */
    METER_IDEM_UNDER_WAY,     /* the first request is still running */
    METER_IDEM_OTHER_REQUEST, /* the key was used with another request */
};
struct meter_idem {
    enum meter_idem_outcome outcome;
    int status;     /* DONE: the first answer's status */
    char *response; /* DONE: its body (free it) */
};
void meter_idem_request_hash(const char *method, const char *path,
                             const char *body, size_t len, uint8_t out[32]);
enum meter_db_status meter_db_idem_claim(PGconn *db, int64_t key_id,
                                         const char *idem_key,
                                         const uint8_t request[32],
                                         struct meter_idem *out,
                                         struct meter_err *e);
/* Stores a claimed key's answer (status 2xx, response its body), in the
 * transaction of the request's work: the two commit together or not at
 * all, so that a request cut off between them is not done twice. */
enum meter_db_status meter_db_idem_answer(PGconn *db, int64_t key_id,
                                          const char *idem_key, int status,
                                          const char *response,
                                          struct meter_err *e);
/* Ends a claim once that transaction has ended: with no answer committed
 * (answered false), forgets it, so that a retry runs the request again;
 * then gives up its lease. */
enum meter_db_status meter_db_idem_release(PGconn *db, int64_t key_id,
                                           const char *idem_key, bool answered,
                                           struct meter_err *e);

/* ---- browser sessions (0008_web_sessions.sql) ----------------------------
 *
 * A browser signs in with a key and gets a session token for its
 * cookie: "mts_" and 64 random hex digits, stored only as SHA-256, as
 * keys are. A session authenticates as its key, with the key's role and
 * account, until it expires, is deleted (signing out), or the key is
 * revoked. Each session has its own CSRF token (64 hex digits), which
 * requests that change something must carry.
 */

enum { METER_CSRF_LEN = 64 };

/* Starts a session of active key key_id for ttl_s seconds (1 or more):
 * ROWS with its token in token and its CSRF token in csrf, shown only
 * now; NONE if the key is unknown or revoked. A key holds at most
 * max_live (1 or more) live sessions: past it its oldest end, *ended
 * says how many. Sign-ins of one key take turns on its row (FOR NO KEY
 * UPDATE), so the cap holds with any number of meterd. Deletes a batch
 * of expired sessions on the way, so that the table holds little more
 * than the live ones. */
enum meter_db_status meter_db_session_create(PGconn *db, int64_t key_id,
                                             unsigned ttl_s, unsigned max_live,
                                             char token[METER_TOKEN_LEN + 1],
                                             char csrf[METER_CSRF_LEN + 1],
                                             int64_t *ended,
                                             struct meter_err *e);

/* Looks a session token up: ROWS with *who (its key's) and its CSRF
 * token in csrf; NONE if the token is unknown, its session expired or
 * signed out, or its key revoked. */
enum meter_db_status meter_db_session_lookup(PGconn *db, const char *token,
                                             struct meter_principal *who,
                                             char csrf[METER_CSRF_LEN + 1],
                                             struct meter_err *e);

/* Ends the session of token: ROWS, or NONE if there was none. */
enum meter_db_status meter_db_session_delete(PGconn *db, const char *token,
                                             struct meter_err *e);

/* ---- price books and accounts -------------------------------------------- */

/* Stores book, parsed from text, as its next immutable version: ROWS
 * with *version, or NONE (and *version 0) if text equals the latest. */
enum meter_db_status meter_db_book_add(PGconn *db,
                                       const struct pricing_book *book,
                                       const char *text, int *version,
                                       struct meter_err *e);

/* Adds account id (or renames it if name is not NULL and it exists);
 * with book (and from, a date YYYY-MM-DD), puts it on the latest version
 * of that book from that date: ROWS. A book never stored is HARD with
 * "no price book 'BOOK'", and nothing is written. */
enum meter_db_status meter_db_account_add(PGconn *db, const char *id,
                                          const char *name, const char *book,
                                          const char *from,
                                          struct meter_err *e);

/* ---- storage ------------------------------------------------------------ */

/* Creates the monthly usage partitions of this month and the next
 * `months` - 1, ahead of need; the error suggests migrating. */
int meter_db_prepare_partitions(PGconn *db, int months, struct meter_err *e);

/* ---- ingestion ----------------------------------------------------------- */

/* What a process knows of one database's sandboxes: (account, sandbox
 * id) -> keys, which never change once stored, and the partitions that
 * exist. A cache: bounded, and nothing is lost when it is dropped.
 * Thread-safe. */
struct meter_registry;
struct meter_registry *meter_registry_new(void);
void meter_registry_free(struct meter_registry *r);

struct meter_ingest_result {
    uint64_t accepted;   /* new seconds stored */
    uint64_t duplicates; /* seconds already known with equal values */
    uint64_t conflicts;  /* seconds already known with other values */
    size_t sandboxes;    /* distinct sandboxes of the batch, once counted */
};

enum meter_ingest_status {
    METER_INGEST_OK,          /* committed; *res says what */
    METER_INGEST_INVALID,     /* refused, nothing stored; see problems */
    METER_INGEST_FORBIDDEN,   /* refused, nothing stored: accounts the key
                                 may not write; see problems */
    METER_INGEST_TOO_LARGE,   /* refused, nothing stored: more distinct
                                 sandboxes (res->sandboxes) than
                                 o->max_sandboxes */
    METER_INGEST_UNAVAILABLE, /* the database is unreachable or too busy:
                                 retry later */
    METER_INGEST_ERROR,       /* another database error, in e */
};

/* Where and when a batch comes from. */
struct meter_ingest_origin {
    int64_t now_us;       /* Unix microseconds: the arrival time stored */
    int64_t max_age;      /* seconds before now a sample may be; 0: no bound */
    int64_t key_id;       /* the API key that sent it, stored with its blocks
                             (provenance); 0: none */
    bool scoped;          /* key_id may write only its accounts
                             (host_key_accounts) */
    size_t max_sandboxes; /* distinct sandboxes a batch may hold; 0: no
                             bound */
};

/*
 * Stores the n validated samples s exactly once, atomically: all of it
 * commits, or nothing does. A second already stored (or earlier in the
 * batch) is a duplicate if equal, a conflict if not; the first stands.
 * Refused: more distinct sandboxes than o->max_sandboxes (TOO_LARGE,
 * before anything else is checked); samples more than 5 minutes after
 * o->now_us, samples more than o->max_age seconds before it, or in a
 * month archived (INVALID); an account o->key_id may not write
 * (FORBIDDEN). A refused batch creates nothing. A sandbox is a
 * sandbox_id of an account: the same id under another account is
 * another sandbox.
 */
enum meter_ingest_status meter_ingest(PGconn *db, struct meter_registry *reg,
                                      const struct meter_sample *s, size_t n,
                                      const struct meter_ingest_origin *o,
                                      struct meter_ingest_result *res,
                                      struct meter_problems *probs,
                                      struct meter_err *e);

/* ---- shards (docs/scale.md) ---------------------------------------------
 *
 * Per-account usage may live on several databases, the shards, each
 * holding some of the METER_BUCKETS buckets of accounts; the catalog (the
 * database programs are given) holds the map. One server is the default:
 * the catalog is shard 0 and holds every bucket. */

#define METER_BUCKETS 64

/* The process's view of the shards: the map as last read, which account
 * is in which bucket, and what it knows of each shard's sandboxes (a
 * struct meter_registry each). A cache in front of the catalog, read
 * again when a shard refuses a bucket it no longer holds; two meterd
 * processes need not share it. Thread-safe. */
struct meter_shards;
struct meter_shards *meter_shards_new(void);
void meter_shards_free(struct meter_shards *sh);

/* One thread's connections to the shards, opened when first needed with
 * the map's conninfo, each with statement_timeout timeout_ms (0: the
 * server's); the catalog's own shard is the catalog connection the
 * caller passes. Not thread-safe: one per thread. */
struct meter_shard_links;
struct meter_shard_links *meter_shard_links_new(struct meter_shards *sh,
                                                int timeout_ms);
void meter_shard_links_free(struct meter_shard_links *l);

/* Stores the n validated samples s as meter_ingest does, each account's
 * on the shard that holds its bucket: new accounts are created in the
 * catalog first (and stay if the batch then fails: no usage, no book);
 * a batch of one shard is that shard's one transaction; over several,
 * each shard's part is prepared (PREPARE TRANSACTION), the decision
 * written in the catalog, then each committed, so that a batch stores
 * everything or, if any part fails before the decision, nothing. A
 * part whose commit fails (its shard lost after the decision) is
 * committed again on a new connection; if that fails too: UNAVAILABLE,
 * and meter_db_shards_resolve commits it later (a resend meanwhile
 * counts the committed parts as duplicates). */
enum meter_ingest_status
meter_ingest_routed(PGconn *catalog, struct meter_shards *sh,
                    struct meter_shard_links *l, const struct meter_sample *s,
                    size_t n, const struct meter_ingest_origin *o,
                    struct meter_ingest_result *res,
                    struct meter_problems *probs, struct meter_err *e);

/* Test hook: called between the commits of a batch's parts, with the
 * connection of the part committed next; NULL (the default) in service. */
typedef void meter_ingest_hook(PGconn *next, void *arg);
void meter_shard_links_hook(struct meter_shard_links *l,
                            meter_ingest_hook *between_commits, void *arg);

/* Settles the parts of batches left prepared on the shards (a meterd
 * gone between its PREPARE and its COMMIT): committed where the catalog
 * says the batch was decided, rolled back where it was not and the part
 * is older than grace_s seconds (the decision for it is then written as
 * a rollback first, so its meterd cannot decide otherwise). Then forgets
 * the decisions no reachable shard needs, if every shard was reached.
 * *settled counts the parts. HARD if the catalog or a shard fails. */
enum meter_db_status meter_db_shards_resolve(PGconn *catalog,
                                             struct meter_shard_links *l,
                                             int grace_s, long *settled,
                                             struct meter_err *e);

/* 0 if db's shard map gives db itself every bucket of accounts (one
 * server; or a shard, whose own map lists no other), else -1 naming how
 * many: what reads every account's usage at once (the readers, usage
 * compact and quarantine) refuses to answer from part of it on a
 * catalog of several shards, since those reads are not built over
 * shards (docs/scale.md; the reports read through fleet.c), and the
 * invoice run and preview choose by it where to read. */
int meter_db_usage_whole(PGconn *db, struct meter_err *e);

/* The shard of each account ids[k] into shard[k] (-1: no such account),
 * from the map in catalog. */
enum meter_db_status meter_db_accounts_shards(PGconn *catalog,
                                              const char *const *ids, size_t n,
                                              int *shard, struct meter_err *e);
/* This thread's connection to shard (the catalog for its own), opened
 * as needed; NULL with e if it cannot be: a shard that does not answer
 * is named in e as SHARD_AWAY's are (meter_db_away_shard). */
PGconn *meter_shard_links_conn(struct meter_shard_links *l, PGconn *catalog,
                               int shard, struct meter_err *e);

/* A shard as meterctl shard list shows it. */
struct meter_shard_info {
    int id;
    char name[33];
    char conninfo[1024]; /* "" for the catalog's own database */
    int buckets;         /* buckets the map gives it */
};
typedef void meter_shard_cb(const struct meter_shard_info *s, void *arg);
enum meter_db_status meter_db_shard_list(PGconn *catalog, meter_shard_cb *cb,
                                         void *arg, struct meter_err *e);

/* Adds shard name, reached with conninfo (as meterd will reach it): it
 * must answer, be no database listed already (the catalog's own, or a
 * shard's under another conninfo: by system identifier and oid, every
 * listed shard reached to compare), be migrated to the catalog's
 * version and hold no usage;
 * it is then emptied of buckets (a new shard holds none until one moves
 * to it) and listed in the catalog. HARD naming what is wrong. */
enum meter_db_status meter_db_shard_add(PGconn *catalog, const char *name,
                                        const char *conninfo,
                                        struct meter_err *e);

/* A line of a move's progress, for the operator; false stops the move
 * there (a test's way to cut it short: running it again finishes it). */
typedef bool meter_move_note(void *arg, const char *line);
/* Moves bucket (0-63) to the shard named target while meterd stores its
 * usage (shard_move.c, docs/scale.md): copied by logical replication,
 * its batches fenced on the source until the target has caught up, the
 * map switched, the source's copy deleted. The source and the target
 * are reached with their conninfo (the catalog's own for shard 0) as
 * role user (NULL: the catalog connection's), which must be able to
 * publish, subscribe and take a table's lock: their owner, a superuser
 * on PostgreSQL 15. Waits at most copy_s seconds for the copy. A move
 * cut short is finished by running it again; with abort, called off
 * instead (until the map names the target): the source keeps the
 * bucket, the target's copy is deleted. note, if not NULL, gets its
 * progress. HARD naming what failed. */
enum meter_db_status meter_db_shard_move(PGconn *catalog, int bucket,
                                         const char *target, const char *user,
                                         int copy_s, bool abort,
                                         meter_move_note *note, void *arg,
                                         struct meter_err *e);

/* Builds the catalog's relations that the reports read over every
 * shard (fleet_hourly_totals and fleet_hourly, migration 0018) for the
 * shard map as it is in catalog's transaction: views of its own usage
 * while it holds every bucket; else a foreign partition for each shard
 * holding buckets (a postgres_fdw server meter_shard_N with a user
 * mapping for PUBLIC, from the shard's conninfo; the catalog's own
 * through its connection's host, port, database and user). Idempotent;
 * one statement, so a caller's transaction (a move's switch) includes
 * it. The reports build them again by themselves when the map or a
 * conninfo changed since. -1 naming what failed (postgres_fdw missing,
 * a mapping without a password that only a superuser may make). */
int meter_db_fleet_sync(PGconn *catalog, struct meter_err *e);

/* ---- invoices (docs/invoicing.md) ---------------------------------------- */

/* Adds to out the accounts on a price book during the period (year,
 * month), or only account `only` if it is: the invoice run's work. */
enum meter_db_status meter_db_invoice_accounts(PGconn *db, int year, int month,
                                               const char *only,
                                               struct meter_strtab *out,
                                               struct meter_err *e);

/* Reads document ref (a number, or a draft's id) into inv as stored,
 * only among account's when account is not NULL: ROWS, or NONE if there
 * is none (billing_document checks a final one is what was issued). */
enum meter_db_status meter_db_invoice_get(PGconn *db, const char *ref,
                                          const char *account,
                                          struct report_invoice *inv,
                                          struct meter_err *e);

/* Which documents to list: NULL or 0 for any; a page of at most limit
 * (0: 100) with ids above after, in id order. */
struct meter_invoice_filter {
    const char *account;
    int year, month;
    const char *status; /* "draft", "final" or "void" */
    int64_t after;
    int limit;
};
/* Called with each document's header (no lines). */
typedef void meter_invoice_cb(const struct report_invoice *inv, void *arg);
enum meter_db_status meter_db_invoice_list(PGconn *db,
                                           const struct meter_invoice_filter *f,
                                           meter_invoice_cb *cb, void *arg,
                                           struct meter_err *e);

/* ---- credit grants (pricing rules section 14) ---------------------------- */

/* A grant an account has received; balance is what its final documents
 * left (docs/invoicing.md). */
struct meter_grant {
    char account_id[PRICING_ID_MAX + 1];
    struct pricing_grant grant;
    bool from_book; /* a book's grant ("BOOK/ID"), else an operator's */
};
typedef void meter_grant_cb(const struct meter_grant *g, void *arg);

/* ---- finance's reports (reports.c, docs/dashboards.md) ------------------
 *
 * Each report is one JSON document, *out (a new reference), built by the
 * database from the rollups and the documents' revenue by day; amounts
 * are decimal strings per currency. */

/* The overview of period (year, month) as of now (Unix seconds): revenue
 * so far against the previous period's, by day, book, pricing model and
 * account, the autopause credit, the idle share, and samples ingested
 * per minute over the hour before now, and what the period leaves
 * unbilled (meter_db_not_billed). */
enum meter_db_status meter_db_report_overview(PGconn *db, int year, int month,
                                              int64_t now, json_t **out,
                                              struct meter_err *e);

/* What period (year, month) leaves unbilled, as the overview's
 * not_billed: {"no_book": [usage stored for hours its account was on
 * no price book], "run_failed": [accounts whose draft the last invoice
 * run could not compute]}, each with the account and why. */
enum meter_db_status meter_db_not_billed(PGconn *db, int year, int month,
                                         json_t **out, struct meter_err *e);

/* Which accounts, in what order. */
struct meter_report_query {
    int year, month;    /* the period */
    const char *search; /* id or name containing it (any case); NULL: all */
    const char *sort;   /* account, name, book, revenue, vcpu_hours or
                           gib_hours */
    bool descending;
    int page, per_page; /* page from 1 */
};
/* A page of accounts with their book, revenue and usage in the period,
 * and how many match. */
enum meter_db_status
meter_db_report_accounts(PGconn *db, const struct meter_report_query *q,
                         json_t **out, struct meter_err *e);
/* One account in the period: its usage and revenue by day, its books,
 * its documents, and the period's draft as the unbilled estimate. NONE
 * (and *out NULL) if there is no such account. */
enum meter_db_status meter_db_report_account(PGconn *db, const char *account,
                                             int year, int month, json_t **out,
                                             struct meter_err *e);
/* The fleet's usage by hour or day over [from, to), Unix seconds on
 * whole hours. */
enum meter_db_status meter_db_report_usage(PGconn *db, int64_t from, int64_t to,
                                           bool daily, json_t **out,
                                           struct meter_err *e);

/* Which documents. */
struct meter_report_invoices {
    int year, month;     /* the period; 0: any */
    const char *account; /* NULL: any */
    const char *status;  /* draft, final or void (voided by a final credit
                            note); NULL: any */
    int page, per_page;  /* page from 1 */
};
/* A page of documents, newest period first, each with its status and
 * its ref (the number once final, else the id: how GET
 * /v1/invoices/{ref} names it), and how many match. */
enum meter_db_status
meter_db_report_invoices(PGconn *db, const struct meter_report_invoices *q,
                         json_t **out, struct meter_err *e);

/* For tests: while set, each report function above, instead of running
 * its statement, gives it and its parameters to fn, on db in the
 * report's transaction with its settings, and returns NONE; NULL (the
 * default) runs them. Not for threads: set it before, unset it after. */
typedef void meter_db_report_hook(PGconn *db, const char *sql, int n,
                                  const char *const *values, void *arg);
void meter_db_report_hook_set(meter_db_report_hook *fn, void *arg);

/* ---- watching the database's answers ------------------------------------ */

/* Called with the connection each time the server has answered a
 * statement (meter_db_exec, COPY, the usage cursor's fetches), on the
 * thread that ran it; NULL: none. Process-wide: set before threads use
 * the layer. meterd's watchdog restarts a request's deadline with it. */
typedef void meter_db_progress_fn(PGconn *db);
void meter_db_set_progress(meter_db_progress_fn *fn);

/* The server cancels this session's statements that run longer than ms
 * milliseconds (statement_timeout; 0: never). */
enum meter_db_status meter_db_set_statement_timeout(PGconn *db, unsigned ms,
                                                    struct meter_err *e);

/* Makes every later transaction of this session read-only
 * (default_transaction_read_only), the usage reader's included: for a
 * program that must never write, such as costsim replay. */
enum meter_db_status meter_db_set_read_only(PGconn *db, struct meter_err *e);

/* ---- provenance and the audit log (0006_provenance_audit.sql) ---------- */

/* Names who the session acts for in the audit log ("meterctl:alice",
 * "key 7 (finance)"); "" or NULL: the database user. */
enum meter_db_status meter_db_set_actor(PGconn *db, const char *actor,
                                        struct meter_err *e);

struct meter_audit_entry {
    int64_t id;
    const char *at; /* RFC 3339, UTC */
    const char *actor, *db_user, *action;
    const char *account; /* "" if none */
    const char *subject;
    const char *detail; /* a JSON object */
};
typedef void meter_audit_cb(const struct meter_audit_entry *x, void *arg);

/* Calls cb for at most limit entries of the audit log after id after,
 * oldest first. */
enum meter_db_status meter_db_audit_list(PGconn *db, int64_t after, int limit,
                                         meter_audit_cb *cb, void *arg,
                                         struct meter_err *e);

struct meter_quarantine {
    int64_t id, blocks, seconds;
};

/*
 * Sets aside the usage that key key_id stored between from and to (Unix
 * seconds, arrival time, to excluded): its blocks and their hourly rows
 * move to the quarantine tables, out of rating, invoicing and the
 * dashboards, kept, and audited with reason. Finalized invoices do not
 * change. The seconds set aside may then be stored again by another key.
 */
enum meter_db_status meter_db_usage_quarantine(PGconn *db, int64_t key_id,
                                               int64_t from, int64_t to,
                                               const char *reason,
                                               struct meter_quarantine *out,
                                               struct meter_err *e);

/* Calls cb for each grant of account (NULL: of every account, by
 * account); NONE if there is no such account. */
enum meter_db_status meter_db_grants_list(PGconn *db, const char *account,
                                          meter_grant_cb *cb, void *arg,
                                          struct meter_err *e);

/*
 * Gives account a grant of amount (a decimal > 0, at most 6 decimals),
 * spendable for expires_after periods (0: never), received in the month
 * of now (Unix seconds) and in the currency of the account's book that
 * day (refused if it has none). id NULL: grant-N, the first N free;
 * otherwise refused if the account already has it. *out_id receives it.
 */
enum meter_db_status meter_db_grant_add(PGconn *db, const char *account,
                                        const char *amount, int expires_after,
                                        const char *id, int64_t now,
                                        char out_id[PRICING_ID_MAX + 1],
                                        struct meter_err *e);

/* ---- usage by hour or day ------------------------------------------------ */

/* One bucket of an account's usage; the sums are decimal strings. */
struct meter_usage_point {
    int64_t start; /* Unix seconds */
    const char *samples, *running_s, *vcpu_s, *cpu_used_s, *mem_byte_s,
        *mem_used_byte_s, *disk_byte_s, *egress_bytes;
};
typedef void meter_usage_cb(const struct meter_usage_point *p, void *arg);

/* Calls cb for each hour (or day, with daily) of [from, to), widened to
 * whole buckets, that has usage of account, starting after `after`
 * (a bucket's start; a page's cursor), at most limit of them. */
enum meter_db_status meter_db_usage_series(PGconn *db, const char *account,
                                           int64_t from, int64_t to, bool daily,
                                           int64_t after, int limit,
                                           meter_usage_cb *cb, void *arg,
                                           struct meter_err *e);

/* Merges at most limit of the hourly rollups not merged yet to one row
 * per account and hour (usage_merge.c, migration 0010), in a
 * transaction of its own; *rows receives how many it merged. Skips
 * (NONE, *rows 0) while another merge or a quarantine runs: readers of
 * usage_hourly_totals read the same sums either way, fewer rows once
 * merged. */
enum meter_db_status meter_db_usage_merge(PGconn *db, uint64_t limit,
                                          uint64_t *rows, struct meter_err *e);

/* What one pack transaction did (meter_db_usage_pack). */
struct meter_pack_result {
    uint64_t blocks; /* usage_blocks rows packed */
    uint64_t packs;  /* usage_packs rows written */
    bool more;       /* it took an account-hour: call again */
    bool busy;       /* skipped: another merge or pack, or a quarantine */
};

/* Packs the blocks of the oldest account-hour queued that ended at
 * least settle_s seconds ago (usage_pack.c, migration 0011), up to 500
 * of its sandboxes, in a transaction of its own. Skips (NONE, more
 * false) when nothing is due, or while another merge or pack, or a
 * quarantine, runs. Readers read the same seconds either way. */
enum meter_db_status meter_db_usage_pack(PGconn *db, int64_t settle_s,
                                         struct meter_pack_result *out,
                                         struct meter_err *e);

/* What meterd's thread does, at once and to the end: merges the rollups
 * (which queues their hours), then packs every hour due; *out sums the
 * blocks and packs, and busy says another merge or pack, or a
 * quarantine, kept it from finishing. */
enum meter_db_status meter_db_usage_pack_due(PGconn *db, int64_t settle_s,
                                             struct meter_pack_result *out,
                                             struct meter_err *e);

/* ---- closing a month ------------------------------------------------------
 */

/* Adds to out the accounts with stored usage in the period. */
enum meter_db_status meter_db_usage_accounts(PGconn *db, int year, int month,
                                             struct meter_strtab *out,
                                             struct meter_err *e);

/* Rewrites account's blocks of the period together, in (sandbox,
 * minute) order, in one transaction of its own (not inside another);
 * *rows receives the number of blocks. Same seconds, same values:
 * nothing a reader or ingestion sees changes but the speed of reading
 * them. ROWS, NONE, or the failure. */
enum meter_db_status meter_db_usage_compact(PGconn *db, const char *account,
                                            int year, int month, uint64_t *rows,
                                            struct meter_err *e);

/* VACUUM (ANALYZE) of the period's partition, after compacting it
 * (NONE if the period has no partition); HARD, naming the partition,
 * unless db's role is (a member of) the partition's owner. */
enum meter_db_status meter_db_usage_vacuum(PGconn *db, int year, int month,
                                           struct meter_err *e);

/* ---- reading stored usage ------------------------------------------------ */

/* Stored seconds of [from, to) (Unix seconds), of one account or all
 * (account NULL), as a pricing source: blocks of one (sandbox, minute),
 * each sandbox's together and in order. Holds a read transaction on db
 * until freed; db must not be used for anything else meanwhile. One
 * account's are read on its shard, which db (the catalog) names, on a
 * connection of the reader's own; every account's only where db holds
 * them all (meter_db_usage_whole). */
struct meter_usage_reader;
struct meter_usage_reader *meter_usage_reader_new(PGconn *db,
                                                  const char *account,
                                                  int64_t from, int64_t to,
                                                  struct meter_err *e);
struct pricing_source meter_usage_source(struct meter_usage_reader *r);
void meter_usage_reader_free(struct meter_usage_reader *r);

/* ---- what the invoice run reads (meter/billing/ says what it means) ---- */

/* One row of account_price_books, with its book parsed. */
struct meter_db_assignment {
    int64_t from;                     /* Unix seconds */
    char book_id[PRICING_ID_MAX + 1]; /* "": an end, on no book from then */
    int version;
    struct pricing_book *book; /* NULL for an end */
};

/* Price books parsed once for a run: version `version` of `id`. */
struct meter_db_book_entry {
    char id[PRICING_ID_MAX + 1];
    int version;
    struct pricing_book *book;
};
struct meter_db_books {
    struct meter_db_book_entry *v;
    size_t n, cap;
};
void meter_db_books_release(struct meter_db_books *c);

struct meter_db_account {
    const char *id;
    char name[801]; /* 200 characters of UTF-8 */
    int32_t pk;
    struct meter_db_assignment *a;
    size_t na;
    const struct pricing_book *override; /* preview: this book instead */
    struct meter_db_books books;         /* the books of an account read alone
                                            (meter_db_account_load); in a batch,
                                            the batch's cache holds them */
};

/* Reads the accounts accts[0..n) name by their id (an account not found
 * keeps pk 0), locking their rows in id order when lock, and their
 * assignments, with books from cache (read into it as needed). */
enum meter_db_status
meter_db_accounts_load(PGconn *db, struct meter_db_account *const *accts,
                       size_t n, bool lock, struct meter_db_books *cache,
                       struct meter_err *e);

/* Reads the account (locking its row FOR NO KEY UPDATE when lock) and
 * its assignments; HARD with "no account" if there is none. */
enum meter_db_status meter_db_account_load(PGconn *db,
                                           struct meter_db_account *acct,
                                           bool lock, struct meter_err *e);
/* The same without a lock: NONE if there is no such account. */
enum meter_db_status meter_db_account_read(PGconn *db,
                                           struct meter_db_account *acct,
                                           struct meter_err *e);
void meter_db_account_release(struct meter_db_account *acct);

/* The grants an account has received (its books' and its operator's,
 * in that order), with the balances its final documents left. */
struct meter_db_grants {
    struct pricing_grant *g; /* a book's named "BOOK/ID" */
    size_t n, cap;
};
enum meter_db_status
meter_db_account_grants(PGconn *db, const struct meter_db_account *acct,
                        struct meter_db_grants *out, struct meter_err *e);
void meter_db_grants_release(struct meter_db_grants *gs);
/* The same for n accounts at once: out[k] for accts[k]. */
enum meter_db_status meter_db_accounts_grants(
    PGconn *db, const struct meter_db_account *const *accts,
    struct meter_db_grants *const *out, size_t n, struct meter_err *e);

/* The drivers of one period's days: weights out of 10^9 of the period's
 * whole, per driver (running seconds, vCPU, memory, disk, egress), so
 * that a product with an amount never overflows. */
struct meter_db_period_days {
    int year, month;
    int64_t first_day; /* Unix day of the period's first */
    int ndays;
    int64_t w[31][5];
};
/* out[k]: the drivers of (year, month) for account pks[k], n ascending. */
enum meter_db_status
meter_db_revenue_drivers(PGconn *db, const int32_t *pks, size_t n, int year,
                         int month, struct meter_db_period_days *const *out,
                         struct meter_err *e);

/* Opens a reader of stored usage as meter_usage_reader_new does, but
 * with own_tx false inside the caller's transaction (at its isolation
 * level), which it leaves open when freed. */
struct meter_usage_reader *meter_db_usage_open(PGconn *db, const char *account,
                                               int64_t from, int64_t to,
                                               bool own_tx,
                                               struct meter_err *e);

/* A reader of the stored usage of a batch's accounts (their keys pks,
 * ascending, and ids; both kept by the caller until it is freed) in
 * [from, to), inside the caller's transaction; then one source per
 * account, asked for in ascending order: the blocks of accounts not
 * asked for are passed over. */
struct meter_usage_reader *
meter_db_usage_open_batch(PGconn *db, const int32_t *pks,
                          const char *const *ids, size_t n, int64_t from,
                          int64_t to, struct meter_err *e);
struct pricing_source
meter_db_usage_account_source(struct meter_usage_reader *r, int32_t account_pk);
/* Whether the batch's read failed (a stored block that does not
 * decode, the cursor): the accounts after it cannot be read either. */
bool meter_db_usage_failed(const struct meter_usage_reader *r);
/* Seconds the last account's source returned. */
uint64_t meter_db_usage_account_seconds(const struct meter_usage_reader *r);

/* Seconds the reader has returned so far. */
uint64_t meter_db_usage_seconds(const struct meter_usage_reader *r);

/* ---- what the invoice run reads and writes, a batch at a time ----------- */

/* Documents one run may write for an account: the period's invoice, and
 * one for late usage in each other currency (rules section 9). */
#define METER_INVOICE_DOCS 8

/* An account of a batch of the invoice run, and what the period holds of
 * it, as meter_db_bills_* read it. The caller sets acct.id, and active
 * on the accounts to read further; meter_db_bill_release frees it. */
/* An earlier period with a live final invoice, and what the latest
 * rating of it that stands saw (no_samples: it counted none). */
struct meter_db_rated_period {
    int period; /* pricing_period_index */
    bool no_samples;
    uint64_t samples, first_runs, revision;
};

struct meter_db_bill {
    struct meter_db_account acct;
    bool active;
    /* The period's final invoices that no credit note voids. */
    struct {
        char number[16];
        char currency[4];
    } live[METER_INVOICE_DOCS];
    size_t nlive;
    /* Read before the usage: a later change is then seen as late. */
    uint64_t first_runs, revision;
    struct report_invoice billed;        /* what final documents bill of the
                                            period, grant lines aside */
    struct meter_db_rated_period *rated; /* earlier periods with a live
                                            final invoice */
    size_t nrated;
    int late[64]; /* earlier periods (pricing_period_index) to rate again */
    size_t nlate;
    int *finals; /* earlier periods with a final invoice */
    size_t nfinals;
    struct meter_db_grants grants; /* with the balances final documents left */
    struct {
        int64_t id;
        char currency[4];
    } drafts[METER_INVOICE_DOCS]; /* the period's drafts */
    size_t ndrafts;
    struct meter_db_period_days days; /* the period's, for revenue */
    char problem[256]; /* what stored documents hold that the run cannot
                          take ('' if nothing): billed in two currencies,
                          too many late periods or drafts */
};
void meter_db_bill_release(struct meter_db_bill *b);

/* What meter_db_bills_read reads of the active bills, besides their
 * state (first runs and revision), always read. */
enum {
    METER_DB_BILLS_LIVE = 1 << 0,    /* live */
    METER_DB_BILLS_HISTORY = 1 << 1, /* billed, late, grants, drafts, days */
    METER_DB_BILLS_FINALS = 1 << 2,  /* finals */
};

/* Reads bills[0..n)'s accounts by id (pk 0: none such) and their books
 * (from cache, parsed once), locking the accounts' rows in id order when
 * lock (so batches that share accounts do not deadlock). */
enum meter_db_status meter_db_bills_lock(PGconn *db,
                                         struct meter_db_bill *const *bills,
                                         size_t n, bool lock,
                                         struct meter_db_books *cache,
                                         struct meter_err *e);
/* Reads what `what` names of the active bills for (year, month) from
 * their documents in db, the catalog, a few statements for the whole
 * batch: live; with history billed, rated, finals (with finals),
 * grants, drafts. */
enum meter_db_status meter_db_bills_read(PGconn *db,
                                         struct meter_db_bill *const *bills,
                                         size_t n, int year, int month,
                                         unsigned what, struct meter_err *e);
/* Reads what the active bills' usage holds from usage, the database
 * that stores it (their shard; the catalog itself on one server): their
 * state; with history (after meter_db_bills_read's), the earlier
 * periods of rated whose usage changed, as late, and the days. */
enum meter_db_status meter_db_bills_usage(PGconn *usage,
                                          struct meter_db_bill *const *bills,
                                          size_t n, int year, int month,
                                          unsigned what, struct meter_err *e);

/* One account's period, read as the batch reads it, for the earlier
 * periods a run rates again: its state, then (after its usage) what
 * final documents bill of it. */
enum meter_db_status
meter_db_period_state(PGconn *db, const struct meter_db_account *acct, int year,
                      int month, uint64_t *first_runs, uint64_t *revision,
                      struct meter_err *e);
enum meter_db_status meter_db_billed_lines(PGconn *db,
                                           const struct meter_db_account *acct,
                                           int year, int month,
                                           struct report_invoice *billed,
                                           struct meter_err *e);

/* What a document's run rated of one period (invoice_usage). */
struct meter_db_rated {
    int year, month;
    uint64_t seconds;              /* stored seconds read */
    uint64_t first_runs, revision; /* read before them */
    uint64_t running_s, idle_s;    /* of the statements priced */
};

/* A document's revenue on one day, for one kind of charge and book
 * (invoice_revenue): its amount, to the currency's minor unit. */
struct meter_db_revenue_cell {
    int64_t day;             /* Unix day */
    const char *kind, *book; /* book "" for none */
    int version;
    struct pricing_dec amount;
};

/* A draft to write: inv (its id that of the draft it replaces, or 0 for
 * a new one), what it rated (the first document of an account's run),
 * and its revenue by day. */
struct meter_db_draft {
    struct report_invoice *inv;
    const struct meter_db_rated *rated;
    size_t nrated;
    const struct meter_db_revenue_cell *cells;
    size_t ncells;
};

/*
 * Writes the batch's drafts of (year, month): removes the drafts of the
 * accounts none[0..nnone) (no book in the period) and the drafts gone
 * (ngone ids of accounts gone_accounts, in currencies no longer billed),
 * then writes drafts[0..n): each replaces the draft whose id it carries
 * (kept) or is new (ids given in the drafts' order), then the lines,
 * what they rated and the revenue by day, one COPY each. Sets each
 * document's id, created_at and status.
 */
enum meter_db_status meter_db_drafts_store(
    PGconn *db, int year, int month, const char *const *none, size_t nnone,
    const char *const *gone_accounts, const int64_t *gone_ids, size_t ngone,
    struct meter_db_draft *drafts, size_t n, struct meter_err *e);

/* A read-only snapshot of db (REPEATABLE READ) for what follows, until
 * meter_db_snapshot_end (which rolls back whatever is open): the invoice
 * run reads a batch's usage on its shard so, beside its transaction in
 * the catalog. */
enum meter_db_status meter_db_snapshot_begin(PGconn *db, struct meter_err *e);
void meter_db_snapshot_end(PGconn *db);

/* The transaction's commit waits for no disk flush (what it writes is
 * recomputed by any run: drafts). */
enum meter_db_status meter_db_commit_async(PGconn *db, struct meter_err *e);

/* Numbers the n drafts docs[] in order, at once (the year's counter row
 * stays locked until commit: numbers are gap-free and never given twice,
 * migration 0014), hashes them and makes them final. */
enum meter_db_status
meter_db_invoices_finalize(PGconn *db, struct report_invoice *const *docs,
                           size_t n, struct meter_err *e);

/* Records what the invoice run of accounts[0..n) for (year, month) did:
 * errors[k] why account k's draft could not be computed, or NULL if it
 * was (its earlier failure is forgotten). Commits with the caller's
 * transaction, if any. */
enum meter_db_status meter_db_run_failures_store(PGconn *db, int year,
                                                 int month,
                                                 const char *const *accounts,
                                                 const char *const *errors,
                                                 size_t n, struct meter_err *e);

/* Forgets the recorded failures of (year, month) of the accounts not
 * among accounts[0..n): after a run of every account, those it no longer
 * runs (on no book in the period any more). */
enum meter_db_status meter_db_run_failures_keep(PGconn *db, int year, int month,
                                                const char *const *accounts,
                                                size_t n, struct meter_err *e);

/* Stores credit note `note` of document `voided` (a draft: finalize it
 * next): its lines, the periods it takes back (to be rated again) and
 * its revenue, that of the voided document negated. */
enum meter_db_status meter_db_credit_note_store(PGconn *db,
                                                struct report_invoice *note,
                                                int64_t voided,
                                                struct meter_err *e);

/* ---- usage alerts and spend limits (alerts.c, migration 0023) --------- */

/* A rule: account NULL watches every account; metric amount (with
 * currency), vcpu_hours, gib_hours, storage_gib_hours, egress_gb or
 * running_hours; threshold a decimal > 0; percents 1 to 10 of 1-1000. */
struct meter_alert_rule {
    const char *account, *name, *metric, *threshold, *currency;
    const int *percents;
    size_t npercents;
};
/* Adds rule x: ROWS and *id, NONE if its account does not exist, or the
 * failure (a value the table refuses). Audited. */
enum meter_db_status meter_db_alert_rule_add(PGconn *db,
                                             const struct meter_alert_rule *x,
                                             int64_t *id, struct meter_err *e);
/* The rules not removed, as JSON [{rule_id, account_id, name, metric,
 * threshold, currency, percents, created_at}]. */
enum meter_db_status meter_db_alert_rules_list(PGconn *db, json_t **out,
                                               struct meter_err *e);
/* Removes rule id (its crossings stay): ROWS, or NONE if there is no
 * such rule. Audited. */
enum meter_db_status meter_db_alert_rule_remove(PGconn *db, int64_t id,
                                                struct meter_err *e);
/* Evaluates every rule over the period of now (Unix seconds): each
 * percent an account's value has reached is raised once per period, a
 * crossing and an alert.triggered event in one transaction; *raised
 * counts the new ones, *watched the accounts with usage watched. Skips
 * (0 raised) while another session evaluates. */
enum meter_db_status meter_db_alerts_evaluate(PGconn *db, int64_t now,
                                              int *raised, size_t *watched,
                                              struct meter_err *e);
/* The rules watching account, each with its value now and the percents
 * crossed this period: {account_id, period, alerts: [{rule_id, name,
 * metric, threshold, currency, percents, value (null with why_no_value
 * when it has none), crossed: [{percent, value, at}], all_accounts}]};
 * NONE if there is no such account, or scoped_key (not 0: a host key
 * limited to some accounts) may not write its usage. */
enum meter_db_status meter_db_account_alerts(PGconn *db, const char *account,
                                             int64_t scoped_key, int64_t now,
                                             json_t **out, struct meter_err *e);

/* Tells of the usage of the period of now stored for accounts on no
 * price book (meter_db_not_billed's no_book): a usage.unbilled event for
 * each account not told of yet this period; *raised counts them. */
enum meter_db_status meter_db_unbilled_raise(PGconn *db, int64_t now,
                                             int *raised, struct meter_err *e);

/* ---- webhooks (webhooks.c, migration 0022, docs/webhooks.md) ---------- */

/*
 * Writes event `type` (a webhook_event_type of migration 0022:
 * invoice.finalized, invoice.voided, invoice.run_failed, usage.unbilled,
 * alert.triggered) of account (NULL: the whole fleet) with payload (a
 * JSON object, the body's data; borrowed) to the outbox, with a delivery
 * for each live endpoint that listens to type: ROWS, or the failure.
 * Call it inside the transaction that does what the event reports, so
 * that the event commits, or rolls back, with it. An endpoint gets one
 * account's events in the order of their event_pk: the caller holds the
 * account's row (as the invoice run and voids do) so that this is the
 * order they happened in. db is the catalog.
 */
enum meter_db_status meter_db_event_add(PGconn *db, const char *type,
                                        const char *account, json_t *payload,
                                        struct meter_err *e);

/* Registers an endpoint: url (http or https), event_types (types
 * separated by commas; NULL or "": all), secret (meter_webhook_secret_new's
 * form, checked by the table too): ROWS with its number in *id, or the
 * failure (a url, type or secret the table refuses). Audited. */
enum meter_db_status meter_db_webhook_add(PGconn *db, const char *url,
                                          const char *event_types,
                                          const char *secret, int64_t *id,
                                          struct meter_err *e);

/* An endpoint as listed: never its secret. Strings belong to the call. */
struct meter_webhook {
    int64_t id;
    const char *url;
    const char *event_types;              /* separated by commas; "": all */
    const char *created_at, *disabled_at; /* ISO 8601 UTC; "": live */
    int64_t pending, delivered, failed;   /* its deliveries */
};
typedef void meter_webhook_cb(const struct meter_webhook *w, void *arg);
/* Calls cb for each endpoint, removed ones too, by number. */
enum meter_db_status meter_db_webhook_list(PGconn *db, meter_webhook_cb *cb,
                                           void *arg, struct meter_err *e);

/* Removes (disables) endpoint id and gives up its pending deliveries:
 * ROWS, or NONE if there is no such live endpoint. Audited. */
enum meter_db_status meter_db_webhook_remove(PGconn *db, int64_t id,
                                             struct meter_err *e);

/* Which deliveries meter_db_webhook_deliveries lists. */
struct meter_webhook_filter {
    const char *event_id; /* NULL: any */
    int64_t endpoint_id;  /* 0: any */
    bool failed;          /* only those given up */
    int64_t after;        /* only events after this seq (a cursor) */
    int limit;            /* at most; 0: 100 */
};
/* A delivery as listed. Strings belong to the call; times ISO 8601 UTC. */
struct meter_webhook_delivery {
    int64_t endpoint_id, seq; /* seq: the event's order, a cursor */
    const char *event_id, *type, *account, *created_at;
    int attempts;
    int last_status;        /* HTTP status of the last attempt; 0: none */
    const char *last_error; /* "" if none */
    const char *state;      /* pending, delivered or failed */
    const char *last_attempt_at;
    const char *next_attempt_at; /* pending: when tried next; else "" */
    const char *done_at;         /* delivered or failed: when; else "" */
};
typedef void meter_webhook_delivery_cb(const struct meter_webhook_delivery *d,
                                       void *arg);
/* Calls cb for each delivery f selects, by event then endpoint. */
enum meter_db_status
meter_db_webhook_deliveries(PGconn *db, const struct meter_webhook_filter *f,
                            meter_webhook_delivery_cb *cb, void *arg,
                            struct meter_err *e);

/* A delivery claimed to be sent: the endpoint, the event, and what to
 * send. Strings are malloc'd, freed by meter_db_webhook_claims_free. */
struct meter_webhook_claim {
    int64_t endpoint_id, event_pk;
    int attempts; /* made before this one */
    char *url, *secret;
    char *event_id, *type, *created, *account; /* account "": none */
    char *data;                                /* the payload, JSON */
};
/*
 * Claims at most max due deliveries for this caller (delivery thread):
 * each is leased for lease_s seconds, in which no other meterd claims
 * it; a delivery is due when its next attempt's time has come, and no
 * earlier event of its account to its endpoint is pending. One
 * statement, committed at once: ROWS with *out (n of them, by event), or
 * NONE. If the caller dies before meter_db_webhook_record, the lease
 * runs out and a later claim (anyone's) sends it again.
 */
enum meter_db_status meter_db_webhook_claim(PGconn *db, int max, int lease_s,
                                            struct meter_webhook_claim **out,
                                            size_t *n, struct meter_err *e);
void meter_db_webhook_claims_free(struct meter_webhook_claim *c, size_t n);
/* Readies the delivery thread's connection: its commits (claims and
 * outcomes) do not wait for the WAL's flush to disk, so that they cost
 * ingestion's commits no flush of their own. One lost in a crash of the
 * database is an attempt sent again: at least once, as a lost answer;
 * an account's next event may have been sent meanwhile, so that after
 * such a crash a receiver may see 1, 2, 1, 2 (ids tell them apart). */
enum meter_db_status meter_db_webhook_session(PGconn *db, struct meter_err *e);

/* The outcome of one attempt. */
struct meter_webhook_outcome {
    bool delivered;     /* a 2xx */
    int status;         /* the HTTP status; 0: none (no answer) */
    const char *error;  /* why not delivered */
    int64_t retry_ms;   /* not delivered: try again this much later... */
    int64_t give_up_ms; /* ...unless that is past this much after the
                           event: then given up (failed) */
};
/* Records the attempt on claimed delivery c and lets its lease go: NONE
 * if it was no longer pending (another meterd delivered it), ROWS. */
enum meter_db_status
meter_db_webhook_record(PGconn *db, const struct meter_webhook_claim *c,
                        const struct meter_webhook_outcome *o,
                        struct meter_err *e);

#endif
