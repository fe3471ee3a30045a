/*
 * exec.c - the one statement helper and the one transaction runner, with
 * the layer's status convention: retry what the server says a retry can
 * fix (serialization failures, deadlocks), report the rest.
 */
#include "db_int.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <libpq-events.h>

static meter_db_progress_fn *progress;

void
meter_db_set_progress(meter_db_progress_fn *fn)
{
    progress = fn;
}

/* Whether the last statement answered on a connection failed for want
 * of the server's time or resources (meter_db_unavailable): kept with
 * the connection as libpq's instance data of this event procedure,
 * registered on the first such failure; &busy_mark, or NULL. */
static char busy_mark;

static int
busy_event(PGEventId id, void *info, void *pass)
{
    (void)id;
    (void)info;
    (void)pass;
    return 1; /* nothing to do: the data is a mark, not memory */
}

static void
set_busy(PGconn *db, bool busy)
{
    if (PQsetInstanceData(db, busy_event, busy ? &busy_mark : NULL) || !busy)
        return;
    if (PQregisterEventProc(db, busy_event, "meter_db busy", NULL))
        PQsetInstanceData(db, busy_event, &busy_mark);
}

/* A server's error that says it cannot do the statement now rather than
 * that the statement is wrong: cancelled (a statement or lock timeout,
 * an operator's pg_cancel_backend), a lock not available, or short of
 * resources (class 53: too many connections, out of memory or disk). A
 * lost connection (08, 57P) is meter_db_lost's; a serialization failure
 * or deadlock (40001, 40P01) is SOFT. */
static bool
busy_state(const char *state)
{
    return state &&
           (strcmp(state, "57014") == 0 || strcmp(state, "55P03") == 0 ||
            strncmp(state, "53", 2) == 0);
}

bool
meter_db_unavailable(PGconn *db, enum meter_db_status st)
{
    return st == METER_DB_SHARD_AWAY || !db || meter_db_lost(db) ||
           st == METER_DB_SOFT || PQinstanceData(db, busy_event) == &busy_mark;
}

enum meter_db_status
db_shard_away(struct meter_err *e, int shard, const char *name)
{
    char why[sizeof(e->msg)];
    snprintf(why, sizeof(why), "%s", e->msg);
    if (name)
        meter_fail(e, "shard %d '%s': %s", shard, name, why);
    else
        meter_fail(e, "shard %d: %s", shard, why);
    return METER_DB_SHARD_AWAY;
}

enum meter_db_status
meter_db_shard_failed(PGconn *db, PGconn *usage, int shard, const char *name,
                      enum meter_db_status st, struct meter_err *e)
{
    if (st >= 0 || st == METER_DB_SHARD_AWAY || !usage || usage == db ||
        meter_db_unavailable(db, st) || !meter_db_unavailable(usage, st))
        return st;
    return db_shard_away(e, shard, name);
}

void
meter_db_away_shard(const struct meter_err *e, char out[48])
{
    /* What db_shard_away wrote before the colon: a number and a name of
     * [a-z0-9_-] (migration 0017). After it comes what the server or
     * libpq said, which may name hosts: that stays in the log. */
    out[0] = '\0';
    const char *colon = e ? strchr(e->msg, ':') : NULL;
    if (!colon || strncmp(e->msg, "shard ", 6) != 0 || colon - e->msg > 47)
        return;
    for (const char *p = e->msg + 6; p < colon; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789_-' ", *p))
            return;
    memcpy(out, e->msg, (size_t)(colon - e->msg));
    out[colon - e->msg] = '\0';
}

void
db_answered(PGconn *db)
{
    set_busy(db, false);
    if (progress)
        progress(db);
}

/* A failure of the connection itself (no server error, or the server's
 * connection exception or shutdown) that libpq may not have marked yet
 * (a write that failed before the end of the stream was read): the
 * connection is closed, so that meter_db_lost says so and the caller
 * answers "unavailable", not "error". */
static void
drop_if_gone(PGconn *db, const char *state)
{
    bool gone =
        !state || strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0;
    if (gone && PQstatus(db) == CONNECTION_OK && PQsocket(db) >= 0) {
        shutdown(PQsocket(db), SHUT_RDWR);
        PQconsumeInput(db);
    }
}

enum meter_db_status
db_failed(PGconn *db, PGresult *r, const char *what, struct meter_err *e)
{
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    bool retry =
        state && (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0);
    meter_fail(e, "%s: %s", what, PQerrorMessage(db));
    set_busy(db, busy_state(state));
    drop_if_gone(db, state);
    PQclear(r);
    return retry ? METER_DB_SOFT : METER_DB_HARD;
}

enum meter_db_status
db_hard(struct meter_err *e, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
        va_end(ap);
    }
    return METER_DB_HARD;
}

/* A count of parameters below 0: a struct db_params given more than it
 * holds (value.c). HARD, before libpq sees it (a NULL result would read
 * as a lost connection). */
static enum meter_db_status
too_many(const char *what, struct meter_err *e)
{
    return db_hard(e, "%s: more than %d parameters", what, DB_PARAMS_MAX);
}

/* The layer's status of result r: ROWS (r to *res, or cleared), NONE,
 * or the failure. */
static enum meter_db_status
outcome(PGconn *db, PGresult *r, const char *what, PGresult **res,
        struct meter_err *e)
{
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        return db_failed(db, r, what, e);
    enum meter_db_status rc = st == PGRES_TUPLES_OK && PQntuples(r) > 0
                                  ? METER_DB_ROWS
                                  : METER_DB_NONE;
    if (res)
        *res = r;
    else
        PQclear(r);
    return rc;
}

enum meter_db_status
meter_db_exec(PGconn *db, const char *what, const char *sql, int n,
              const char *const *values, const int *lengths, const int *formats,
              PGresult **res, struct meter_err *e)
{
    if (res)
        *res = NULL;
    if (n < 0)
        return too_many(what, e);
    PGresult *r = PQexecParams(db, sql, n, NULL, values, lengths, formats, 0);
    db_answered(db);
    return outcome(db, r, what, res, e);
}

enum meter_db_status
db_exec_prepared(PGconn *db, const char *what, const char *name,
                 const char *sql, int n, const char *const *values,
                 const int *lengths, const int *formats, PGresult **res,
                 struct meter_err *e)
{
    if (res)
        *res = NULL;
    if (n < 0)
        return too_many(what, e);
    PGresult *r = PQexecPrepared(db, name, n, values, lengths, formats, 0);
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (state && strcmp(state, "26000") == 0) {
        /* Not prepared on this connection yet (a new one, or one the
         * server restarted): prepare it, then run it. */
        PQclear(r);
        r = PQprepare(db, name, sql, n, NULL);
        db_answered(db);
        if (PQresultStatus(r) != PGRES_COMMAND_OK)
            return db_failed(db, r, what, e);
        PQclear(r);
        r = PQexecPrepared(db, name, n, values, lengths, formats, 0);
    }
    db_answered(db);
    return outcome(db, r, what, res, e);
}

enum meter_db_status
db_strings(PGconn *db, const char *what, const char *sql, int n,
           const char *const *values, struct meter_strtab *out,
           struct meter_err *e)
{
    PGresult *r;
    enum meter_db_status st =
        meter_db_exec(db, what, sql, n, values, NULL, NULL, &r, e);
    if (st < 0)
        return st;
    for (int i = 0; i < PQntuples(r); i++)
        if (meter_strtab_intern(out, PQgetvalue(r, i, 0), NULL) < 0) {
            st = db_hard(e, "%s: out of memory", what);
            break;
        }
    PQclear(r);
    return st;
}

enum meter_db_status
db_exec_binary(PGconn *db, const char *what, const char *sql, int n,
               const char *const *values, PGresult **res, struct meter_err *e)
{
    *res = NULL;
    if (n < 0)
        return too_many(what, e);
    *res = PQexecParams(db, sql, n, NULL, values, NULL, NULL, 1);
    db_answered(db);
    if (PQresultStatus(*res) != PGRES_TUPLES_OK) {
        enum meter_db_status st = db_failed(db, *res, what, e);
        *res = NULL;
        return st;
    }
    return METER_DB_NONE;
}

static void
put_be32(struct meter_buf *b, uint32_t v)
{
    v = htonl(v);
    meter_buf_add(b, &v, 4);
}

void
db_copy_header(struct meter_buf *b)
{
    static const char sig[] = "PGCOPY\n\377\r\n";
    meter_buf_add(b, sig, 11);
    put_be32(b, 0); /* flags */
    put_be32(b, 0); /* header extension */
}

void
db_copy_row(struct meter_buf *b, uint16_t fields)
{
    uint16_t v = htons(fields);
    meter_buf_add(b, &v, 2);
}

void
db_copy_int4(struct meter_buf *b, int32_t v)
{
    put_be32(b, 4);
    put_be32(b, (uint32_t)v);
}

void
db_copy_int8(struct meter_buf *b, int64_t v)
{
    put_be32(b, 8);
    put_be32(b, (uint32_t)((uint64_t)v >> 32));
    put_be32(b, (uint32_t)v);
}

void
db_copy_bytes(struct meter_buf *b, const void *p, size_t len)
{
    put_be32(b, (uint32_t)len);
    meter_buf_add(b, p, len);
}

void
db_copy_null(struct meter_buf *b)
{
    put_be32(b, UINT32_MAX);
}

void
db_copy_int8_array(struct meter_buf *b, const int64_t *v, size_t n)
{
    /* array_recv: dimensions, has-nulls, element type (int8, OID 20),
     * then each dimension's length and lower bound, then the elements. */
    put_be32(b, (uint32_t)(n ? 20 + 12 * n : 12));
    put_be32(b, n ? 1 : 0);
    put_be32(b, 0);
    put_be32(b, 20);
    if (!n)
        return;
    put_be32(b, (uint32_t)n);
    put_be32(b, 1);
    for (size_t i = 0; i < n; i++)
        db_copy_int8(b, v[i]);
}

void
db_copy_end(struct meter_buf *b)
{
    db_copy_row(b, 0xffff);
}

enum meter_db_status
db_copy_in(PGconn *db, const char *sql, const char *data, size_t len,
           const char *what, struct meter_err *e)
{
    if (len > INT_MAX)
        return db_hard(e, "%s: %zu bytes is more than one COPY takes", what,
                       len);
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_COPY_IN)
        return db_failed(db, r, what, e);
    PQclear(r);
    if (PQputCopyData(db, data, (int)len) != 1 || PQputCopyEnd(db, NULL) != 1) {
        db_hard(e, "%s: %s", what, PQerrorMessage(db));
        drop_if_gone(db, NULL);
        return METER_DB_HARD;
    }
    r = PQgetResult(db);
    db_answered(db);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    /* The COPY's result is followed by the end of results: read it, or
     * the connection stays busy, its failed transaction never rolled
     * back (every later statement on it would fail). */
    PGresult *rest;
    while ((rest = PQgetResult(db)))
        PQclear(rest);
    if (!ok)
        return db_failed(db, r, what, e);
    PQclear(r);
    return METER_DB_NONE;
}

/* Whether gid is a part's name as ingest.c makes them: it goes into the
 * statement's text, since PREPARE TRANSACTION takes no parameter. */
static bool
part_name(const char *gid)
{
    size_t n = strlen(gid), hex = 0;
    if (strncmp(gid, "meter:", 6) != 0 || n < 6 + 32 + 2 || n > 6 + 32 + 4)
        return false;
    for (const char *p = gid + 6; hex < 32; p++, hex++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    if (gid[38] != ':')
        return false;
    for (const char *p = gid + 39; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    return true;
}

enum meter_db_status
db_two_phase(PGconn *db, enum db_two_phase_op op, const char *gid, bool *gone,
             struct meter_err *e)
{
    static const char *const verb[] = {"PREPARE TRANSACTION", "COMMIT PREPARED",
                                       "ROLLBACK PREPARED"};
    static const char *const tag[] = {"PREPARE TRANSACTION", "COMMIT PREPARED",
                                      "ROLLBACK PREPARED"};
    if (gone)
        *gone = false;
    if (!part_name(gid))
        return db_hard(e, "'%s' is not a part's name", gid);
    char sql[96];
    snprintf(sql, sizeof(sql), "%s '%s'", verb[op], gid);
    PGresult *r = PQexec(db, sql);
    db_answered(db);
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (op != DB_PREPARE && gone && state && strcmp(state, "42704") == 0) {
        /* Settled already, by another process: what it did stands. */
        PQclear(r);
        *gone = true;
        return METER_DB_NONE;
    }
    /* PREPARE TRANSACTION of a failed transaction rolls it back, and
     * says so only in its tag. */
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        return db_failed(db, r, verb[op], e);
    bool done = strcmp(PQcmdStatus(r), tag[op]) == 0;
    PQclear(r);
    return done
               ? METER_DB_NONE
               : db_hard(e, "%s %s: the transaction failed and was rolled back",
                         verb[op], gid);
}

enum meter_db_status
db_transaction_ends(PGconn *db, const char *begin, int attempts,
                    meter_db_tx_fn *fn, void *arg, const char *gid,
                    struct meter_err *e)
{
    /* Inside another transaction (an idempotent request's, admin.c): a
     * savepoint of it. */
    bool nested = PQtransactionStatus(db) == PQTRANS_INTRANS;
    if (nested && gid)
        return db_hard(e, "a two-phase transaction cannot be nested");
    enum meter_db_status rc = METER_DB_SOFT;
    for (int i = 0; i < attempts && rc == METER_DB_SOFT; i++) {
        rc = nested ? meter_db_exec(db, "cannot begin a transaction",
                                    "SAVEPOINT meter_nested", 0, NULL, NULL,
                                    NULL, NULL, e)
                    : meter_db_exec(db, "cannot begin a transaction", begin, 0,
                                    NULL, NULL, NULL, NULL, e);
        if (rc < 0)
            return rc;
        rc = fn(db, arg, e);
        /* A COMMIT of a failed transaction rolls back and says OK: a
         * function that reports success over a failed statement is an
         * error, not a commit. */
        if (rc >= 0 && PQtransactionStatus(db) != PQTRANS_INTRANS)
            rc = db_hard(e, "the transaction failed and was not committed");
        if (rc >= 0) {
            enum meter_db_status done =
                gid ? db_two_phase(db, DB_PREPARE, gid, NULL, e)
                    : meter_db_exec(db, "cannot commit",
                                    nested ? "RELEASE SAVEPOINT meter_nested"
                                           : "COMMIT",
                                    0, NULL, NULL, NULL, NULL, e);
            if (done >= 0)
                return rc;
            rc = done;
        }
        /* A failed COMMIT has ended the transaction already. Results
         * left unread would keep it active: read them first. Nested, the
         * outer transaction goes on without what fn did. */
        PGresult *left;
        while ((left = PQgetResult(db)))
            PQclear(left);
        PGTransactionStatusType ts = PQtransactionStatus(db);
        if (ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR)
            PQclear(PQexec(db, nested ? "ROLLBACK TO SAVEPOINT meter_nested;"
                                        " RELEASE SAVEPOINT meter_nested"
                                      : "ROLLBACK"));
    }
    return rc;
}

enum meter_db_status
meter_db_transaction(PGconn *db, const char *begin, int attempts,
                     meter_db_tx_fn *fn, void *arg, struct meter_err *e)
{
    return db_transaction_ends(db, begin, attempts, fn, arg, NULL, e);
}

/* ---- array parameters and text COPY rows ------------------------------- */

/* Whether b is just past an array's opening brace. */
static bool
first_of(const struct meter_buf *b, char start)
{
    return b->len == 0 || b->p[b->len - 1] == start;
}

void
db_array_text(struct meter_buf *b, const char *s)
{
    if (!first_of(b, '{'))
        meter_buf_add(b, ",", 1);
    if (!s) {
        meter_buf_str(b, "NULL");
        return;
    }
    meter_buf_add(b, "\"", 1);
    for (const char *p = s; *p; p++) {
        if (*p == '"' || *p == '\\')
            meter_buf_add(b, "\\", 1);
        meter_buf_add(b, p, 1);
    }
    meter_buf_add(b, "\"", 1);
}

void
db_array_int(struct meter_buf *b, int64_t v)
{
    if (!first_of(b, '{'))
        meter_buf_add(b, ",", 1);
    meter_buf_printf(b, "%lld", (long long)v);
}

void
db_int4_array(struct meter_buf *b, const int32_t *v, size_t n)
{
    meter_buf_str(b, "{");
    for (size_t i = 0; i < n; i++)
        db_array_int(b, v[i]);
    meter_buf_str(b, "}");
}

/* Each field ends with a tab, which the row's end makes its newline. */
void
db_tsv_text(struct meter_buf *b, const char *s)
{
    if (!s) {
        meter_buf_str(b, "\\N\t");
        return;
    }
    for (const char *p = s; *p; p++) {
        const char *esc = *p == '\\'   ? "\\\\"
                          : *p == '\t' ? "\\t"
                          : *p == '\n' ? "\\n"
                          : *p == '\r' ? "\\r"
                                       : NULL;
        if (esc)
            meter_buf_str(b, esc);
        else
            meter_buf_add(b, p, 1);
    }
    meter_buf_add(b, "\t", 1);
}

void
db_tsv_int(struct meter_buf *b, int64_t v)
{
    meter_buf_printf(b, "%lld\t", (long long)v);
}

void
db_tsv_end(struct meter_buf *b)
{
    if (!b->failed && b->len && b->p[b->len - 1] == '\t')
        b->p[b->len - 1] = '\n';
}
