/*
 * db.c - the database connection of each request thread: opened on the
 * thread's first request, opened again when the watchdog broke it or
 * the server went away (seen before the request uses it), and armed
 * under the watchdog (guard.c) each time a request takes it.
 */
#include "http_int.h"

#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* Each pool thread keeps its connection in slot tl_slot of h->conns, so
 * that the stopping thread can close them all. One server a process:
 * the_server is it, for the database layer's progress calls. */
static _Thread_local int tl_slot = -1;
static struct meter_http *the_server;

int
http_db_slot(void)
{
    return tl_slot;
}

/* The database answered a statement of this thread's request: its wait
 * starts again (meter_db_set_progress). */
static void
db_progress(PGconn *db)
{
    struct meter_http *h = the_server;
    if (h && tl_slot >= 0 && h->conns[tl_slot] == db)
        http_watch_progress(h, tl_slot);
}

/* Whether the server of db, an idle connection that libpq believes
 * fine, has gone since its last statement. An idle connection has
 * nothing to read but the server's farewell (a restart's "terminating
 * connection" error) or the end of the stream (a crash, a killed
 * backend), which libpq would only find at the next statement: the
 * request's own, then answered 503 (issue 26: after a PostgreSQL
 * restart each thread's first request was). One poll that does not
 * wait, and reads only when there is something. */
static bool
server_gone(PGconn *db)
{
    struct pollfd p = {.fd = PQsocket(db), .events = POLLIN};
    if (p.fd < 0)
        return true;
    /* The farewell and the end of the stream may take a read each. */
    for (int i = 0; i < 4; i++) {
        if (poll(&p, 1, 0) <= 0)
            return false;
        if (!PQconsumeInput(db) || PQstatus(db) != CONNECTION_OK)
            return true;
    }
    return false;
}

PGconn *
meter_http_db(struct meter_http_request *rq)
{
    struct meter_http *h = rq->h;
    if (tl_slot < 0) {
        tl_slot = atomic_fetch_add(&h->nconns, 1);
        if (tl_slot >= HTTP_MAX_THREADS)
            abort(); /* more threads than meter_http_start allows */
    }
    PGconn **db = &h->conns[tl_slot];
    /* Broken by the watchdog, or closed by a server that restarted:
     * libpq may not know it yet. Connected again here, once, before
     * the request uses it: it gets 503 only if that fails. */
    bool broken = http_watch_broken(h, tl_slot);
    if (!*db || broken || PQstatus(*db) != CONNECTION_OK || server_gone(*db)) {
        if (*db)
            meter_log(METER_LOG_INFO,
                      "database connection lost: connecting again");
        PQfinish(*db);
        struct meter_err e = {{0}};
        *db = meter_db_connect(h->conninfo, &e);
        /* A statement the server runs on past the deadline (a lock wait
         * whose client is gone) ends itself a second later, rather than
         * hold its locks and its connection until it next writes. */
        if (*db && meter_db_set_statement_timeout(
                       *db, (h->cfg.db_timeout_s + 1) * 1000, &e) < 0) {
            PQfinish(*db);
            *db = NULL;
        }
        if (!*db) {
            atomic_fetch_add(&h->db_errors, 1);
            meter_log(METER_LOG_WARN, "database unreachable: %s", e.msg);
            return NULL;
        }
    }
    /* A transaction an earlier request left open would make this one's
     * transactions savepoints of it (meter_db_transaction), committed
     * never: it is rolled back, and said. */
    if (PQtransactionStatus(*db) != PQTRANS_IDLE) {
        meter_log(METER_LOG_WARN, "database connection left in a "
                                  "transaction by an earlier request: rolled "
                                  "back");
        PQclear(PQexec(*db, "ROLLBACK"));
    }
    /* From here the request waits on it, under the watchdog. */
    http_watch_arm(h, tl_slot, PQsocket(*db));
    return *db;
}

void
meter_http_reply_db_error(struct meter_http_request *rq, PGconn *db,
                          enum meter_db_status st, const struct meter_err *e,
                          const char *what, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, what);
    vsnprintf(text, sizeof(text), what, ap);
    va_end(ap);
    meter_utf8_cut(text, 400); /* at a character */
    bool away = meter_db_unavailable(db, st);
    /* No connection: meter_http_db counted and logged it. */
    if (db) {
        atomic_fetch_add(&rq->h->db_errors, 1);
        /* The server's message on one line (it may have a LINE and a
         * DETAIL, and quote what the client sent). */
        char msg[sizeof(e->msg)];
        snprintf(msg, sizeof(msg), "%s",
                 e && e->msg[0] ? e->msg : "no message");
        for (char *p = msg; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = ' ';
        meter_log(away ? METER_LOG_WARN : METER_LOG_ERROR, "%s %s: %s: %s",
                  rq->method, rq->url, text, msg);
    }
    char shard[48] = "";
    if (st == METER_DB_SHARD_AWAY)
        meter_db_away_shard(e, shard);
    if (away)
        meter_http_reply_problem(rq, 503, "unavailable", "Database unavailable",
                                 NULL,
                                 "%s: %s cannot be reached or is busy; retry "
                                 "later",
                                 text,
                                 shard[0]                    ? shard
                                 : st == METER_DB_SHARD_AWAY ? "a shard"
                                                             : "the database");
    else
        meter_http_reply_problem(rq, 500, "internal", "Database error", NULL,
                                 "%s: the database refused a statement; the "
                                 "error is in the service's log",
                                 text);
}

void
http_db_start(struct meter_http *h)
{
    the_server = h;
    meter_db_set_progress(db_progress);
}

void
http_db_stop(void)
{
    meter_db_set_progress(NULL);
    the_server = NULL;
}
