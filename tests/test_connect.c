/*
 * test_connect.c - the database layer against a server that does not
 * answer: connecting gives up after its timeout (5 s unless the
 * conninfo says otherwise), and a ping of a frozen backend gives up
 * after its deadline, leaving the connection broken so that its next
 * user reconnects (what /readyz and the HTTP layer rely on). And which
 * failures are the database away or busy (meter_db_unavailable: a 503
 * over HTTP) and which a statement refused (a 500).
 */
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "meter_db.h"
#include "testdb.h"

static double
now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A TCP socket that listens and never accepts: the kernel completes
 * connections, nothing ever answers. Its port into *port. */
static int
silent_server(int *port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    CHECK(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
          listen(s, 16) == 0 &&
          getsockname(s, (struct sockaddr *)&a, &len) == 0);
    *port = ntohs(a.sin_port);
    return s;
}

int
main(void)
{
    struct testdb t;
    PGconn *db = testdb_create(&t);
    struct meter_err e = {{0}};

    /* Connecting to a server that never answers: 5 s by default, or the
     * conninfo's own connect_timeout. */
    int port, s = silent_server(&port);
    char conninfo[128];
    snprintf(conninfo, sizeof(conninfo),
             "host=127.0.0.1 port=%d dbname=x user=x", port);
    double t0 = now_s();
    PGconn *c = meter_db_connect(conninfo, &e);
    double took = now_s() - t0;
    CHECK(c == NULL && took >= 4 && took < 9);
    CHECK(strstr(e.msg, "cannot connect") != NULL);
    snprintf(conninfo, sizeof(conninfo),
             "host=127.0.0.1 port=%d dbname=x user=x connect_timeout=2", port);
    t0 = now_s();
    c = meter_db_connect(conninfo, &e);
    took = now_s() - t0;
    CHECK(c == NULL && took >= 1 && took < 4);
    close(s);

    /* A frozen backend: the ping gives up at its deadline and leaves the
     * connection broken; a fresh one answers. */
    PGconn *frozen = meter_db_connect(t.conninfo, &e);
    CHECK(frozen != NULL);
    CHECK(meter_db_ping(frozen, 1000, &e) == 0 && !meter_db_lost(frozen));
    pid_t pid = PQbackendPID(frozen);
    CHECK(kill(pid, SIGSTOP) == 0);
    t0 = now_s();
    CHECK(meter_db_ping(frozen, 500, &e) == -1);
    took = now_s() - t0;
    CHECK(took >= 0.4 && took < 3);
    CHECK(strstr(e.msg, "within 500 ms") != NULL);
    CHECK(meter_db_lost(frozen));
    CHECK(meter_db_unavailable(frozen, METER_DB_HARD));
    kill(pid, SIGCONT);
    PQfinish(frozen);
    PGconn *fresh = meter_db_connect(t.conninfo, &e);
    CHECK(fresh && meter_db_ping(fresh, 1000, &e) == 0);
    PQfinish(fresh);

    /* Away or busy, or refused. No connection, a SOFT still failing
     * after its retries: away. */
    CHECK(meter_db_unavailable(NULL, METER_DB_HARD));
    CHECK(meter_db_unavailable(db, METER_DB_SOFT));
    /* A statement the server refuses, the connection alive: refused. */
    enum meter_db_status st = meter_db_exec(db, "divide", "SELECT 1 / 0", 0,
                                            NULL, NULL, NULL, NULL, &e);
    CHECK(st == METER_DB_HARD && !meter_db_lost(db));
    CHECK(!meter_db_unavailable(db, st));
    /* A statement the server gave up on (its statement timeout): busy,
     * the connection alive; forgotten once a statement succeeds. */
    CHECK(meter_db_set_statement_timeout(db, 100, &e) >= 0);
    st = meter_db_exec(db, "sleep", "SELECT pg_sleep(2)", 0, NULL, NULL, NULL,
                       NULL, &e);
    CHECK(st == METER_DB_HARD && !meter_db_lost(db));
    CHECK(strstr(e.msg, "statement timeout") != NULL);
    CHECK(meter_db_unavailable(db, st));
    CHECK(meter_db_set_statement_timeout(db, 0, &e) >= 0);
    CHECK(!meter_db_unavailable(db, METER_DB_HARD));
    st = meter_db_exec(db, "divide", "SELECT 1 / 0", 0, NULL, NULL, NULL, NULL,
                       &e);
    CHECK(!meter_db_unavailable(db, st));

    testdb_drop(&t, db);
    return test_result();
}
