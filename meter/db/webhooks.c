/*
 * webhooks.c - events out (migration 0022, docs/webhooks.md): an event
 * written to the outbox in its caller's transaction with a delivery for
 * each endpoint that listens; endpoints registered, listed and removed;
 * and what meterd's delivery thread does to the deliveries: claim the
 * due ones under a lease, record each attempt's outcome.
 *
 * The claim and the record are two short statements, each its own
 * transaction, and the sending happens between them with nothing held:
 * a slow receiver never holds a lock that ingestion, a run or another
 * meterd waits for.
 */
#include "db_int.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

enum meter_db_status
meter_db_event_add(PGconn *db, const char *type, const char *account,
                   json_t *payload, struct meter_err *e)
{
    char *data = json_dumps(payload, JSON_COMPACT);
    if (!data)
        return db_hard(e, "cannot write the %s event: out of memory", type);
    const char *v[] = {type, account, data};
    /* The endpoints live now get it; one registered later does not. */
    enum meter_db_status st = meter_db_exec(
        db, "cannot write the event",
        "WITH ev AS (INSERT INTO webhook_events (type, account_id, payload)"
        "  VALUES ($1, $2, $3::jsonb) RETURNING event_pk)"
        " INSERT INTO webhook_deliveries (endpoint_id, event_pk, account_id)"
        " SELECT w.endpoint_id, ev.event_pk, coalesce($2, '') FROM ev,"
        " webhook_endpoints w WHERE w.disabled_at IS NULL"
        " AND (w.event_types = '{}' OR $1 = ANY (w.event_types::text[]))",
        3, v, NULL, NULL, NULL, e);
    free(data);
    return st < 0 ? st : METER_DB_ROWS;
}

enum meter_db_status
meter_db_webhook_add(PGconn *db, const char *url, const char *event_types,
                     const char *secret, int64_t *id, struct meter_err *e)
{
    const char *v[] = {url, event_types ? event_types : "", secret};
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot add the webhook",
        "INSERT INTO webhook_endpoints (url, event_types, secret)"
        " VALUES ($1, coalesce(string_to_array(nullif($2, ''), ','), '{}'),"
        " $3) RETURNING endpoint_id",
        3, v, NULL, NULL, &r, e);
    if (st == METER_DB_ROWS && db_get_int64(r, 0, 0, id, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_webhook_list(PGconn *db, meter_webhook_cb *cb, void *arg,
                      struct meter_err *e)
{
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot list the webhooks",
        "SELECT w.endpoint_id, w.url, array_to_string(w.event_types, ','),"
        " to_char(w.created_at AT TIME ZONE 'UTC',"
        "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
        " coalesce(to_char(w.disabled_at AT TIME ZONE 'UTC',"
        "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), ''),"
        " count(d.*) FILTER (WHERE d.delivered_at IS NULL"
        "  AND d.failed_at IS NULL),"
        " count(d.delivered_at), count(d.failed_at)"
        " FROM webhook_endpoints w LEFT JOIN webhook_deliveries d"
        " USING (endpoint_id) GROUP BY w.endpoint_id ORDER BY w.endpoint_id",
        0, NULL, NULL, NULL, &r, e);
    for (int i = 0; st == METER_DB_ROWS && i < PQntuples(r); i++) {
        struct meter_webhook w = {
            .url = PQgetvalue(r, i, 1),
            .event_types = PQgetvalue(r, i, 2),
            .created_at = PQgetvalue(r, i, 3),
            .disabled_at = PQgetvalue(r, i, 4),
        };
        if (db_get_int64(r, i, 0, &w.id, e) < 0 ||
            db_get_int64(r, i, 5, &w.pending, e) < 0 ||
            db_get_int64(r, i, 6, &w.delivered, e) < 0 ||
            db_get_int64(r, i, 7, &w.failed, e) < 0) {
            st = METER_DB_HARD;
            break;
        }
        cb(&w, arg);
    }
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_webhook_remove(PGconn *db, int64_t id, struct meter_err *e)
{
    struct db_params p = {0};
    db_param_int64(&p, id);
    /* Its pending deliveries are given up with it: nothing would send
     * them, and they would hold back nothing else (each endpoint's
     * order is its own). */
    return meter_db_exec(
        db, "cannot remove the webhook",
        "WITH w AS (UPDATE webhook_endpoints SET disabled_at = now()"
        "  WHERE endpoint_id = $1::bigint AND disabled_at IS NULL"
        "  RETURNING endpoint_id),"
        " d AS (UPDATE webhook_deliveries d SET failed_at = now(),"
        "  locked_until = NULL, last_error = 'endpoint removed' FROM w"
        "  WHERE d.endpoint_id = w.endpoint_id AND d.delivered_at IS NULL"
        "  AND d.failed_at IS NULL)"
        " SELECT endpoint_id FROM w",
        p.n, p.v, NULL, NULL, NULL, e);
}

enum meter_db_status
meter_db_webhook_deliveries(PGconn *db, const struct meter_webhook_filter *f,
                            meter_webhook_delivery_cb *cb, void *arg,
                            struct meter_err *e)
{
    struct db_params p = {0};
    db_param_text(&p, f->event_id);
    if (f->endpoint_id > 0)
        db_param_int64(&p, f->endpoint_id);
    else
        db_param_text(&p, NULL);
    db_param_bool(&p, f->failed);
    db_param_int64(&p, f->after);
    db_param_int32(&p, f->limit > 0 ? f->limit : 100);
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot list the deliveries",
        "SELECT d.endpoint_id, ev.event_pk, ev.event_id, ev.type,"
        " coalesce(ev.account_id, ''), to_char(ev.created_at AT TIME ZONE "
        "'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
        " d.attempts, coalesce(d.last_status, 0), coalesce(d.last_error, ''),"
        " CASE WHEN d.delivered_at IS NOT NULL THEN 'delivered'"
        "  WHEN d.failed_at IS NOT NULL THEN 'failed' ELSE 'pending' END,"
        " coalesce(to_char(d.last_attempt_at AT TIME ZONE 'UTC', "
        "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), ''),"
        " CASE WHEN d.delivered_at IS NULL AND d.failed_at IS NULL THEN"
        "  to_char(greatest(d.next_attempt_at, d.locked_until) AT TIME ZONE "
        "'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') ELSE ''"
        " END,"
        " coalesce(to_char(coalesce(d.delivered_at, d.failed_at) AT TIME ZONE "
        "'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), '')"
        " FROM webhook_deliveries d JOIN webhook_events ev USING (event_pk)"
        " WHERE ($1::text IS NULL OR ev.event_id = $1)"
        " AND ($2::bigint IS NULL OR d.endpoint_id = $2::bigint)"
        " AND (NOT $3::boolean OR d.failed_at IS NOT NULL)"
        " AND d.event_pk > $4::bigint"
        " ORDER BY d.event_pk, d.endpoint_id LIMIT $5::int",
        p.n, p.v, NULL, NULL, &r, e);
    for (int i = 0; st == METER_DB_ROWS && i < PQntuples(r); i++) {
        struct meter_webhook_delivery x = {
            .event_id = PQgetvalue(r, i, 2),
            .type = PQgetvalue(r, i, 3),
            .account = PQgetvalue(r, i, 4),
            .created_at = PQgetvalue(r, i, 5),
            .last_error = PQgetvalue(r, i, 8),
            .state = PQgetvalue(r, i, 9),
            .last_attempt_at = PQgetvalue(r, i, 10),
            .next_attempt_at = PQgetvalue(r, i, 11),
            .done_at = PQgetvalue(r, i, 12),
        };
        if (db_get_int64(r, i, 0, &x.endpoint_id, e) < 0 ||
            db_get_int64(r, i, 1, &x.seq, e) < 0 ||
            db_get_int(r, i, 6, &x.attempts, e) < 0 ||
            db_get_int(r, i, 7, &x.last_status, e) < 0) {
            st = METER_DB_HARD;
            break;
        }
        cb(&x, arg);
    }
    PQclear(r);
    return st;
}

void
meter_db_webhook_claims_free(struct meter_webhook_claim *c, size_t n)
{
    for (size_t i = 0; c && i < n; i++) {
        free(c[i].url);
        if (c[i].secret)
            explicit_bzero(c[i].secret, strlen(c[i].secret));
        free(c[i].secret);
        free(c[i].event_id);
        free(c[i].type);
        free(c[i].created);
        free(c[i].account);
        free(c[i].data);
    }
    free(c);
}

/* Field (row, col) of r, copied; "" for NULL. */
static char *
copy_field(const PGresult *r, int row, int col, bool *failed)
{
    char *s = strdup(PQgetvalue(r, row, col));
    if (!s)
        *failed = true;
    return s;
}

enum meter_db_status
meter_db_webhook_session(PGconn *db, struct meter_err *e)
{
    return meter_db_exec(db, "cannot set up the delivery connection",
                         "SET synchronous_commit = off", 0, NULL, NULL, NULL,
                         NULL, e);
}

enum meter_db_status
meter_db_webhook_claim(PGconn *db, int max, int lease_s,
                       struct meter_webhook_claim **out, size_t *n,
                       struct meter_err *e)
{
    *out = NULL;
    *n = 0;
    struct db_params p = {0};
    db_param_int32(&p, max);
    db_param_int32(&p, lease_s);
    PGresult *r = NULL;
    /* A delivery is due once its time has come and no meterd holds its
     * lease; and not while an earlier event of its account to its
     * endpoint is pending (per account order): the earlier one, claimed
     * or not, holds it back. SKIP LOCKED: what another meterd is
     * claiming at this instant is its own. */
    enum meter_db_status st = meter_db_exec(
        db, "cannot claim deliveries",
        "WITH due AS (SELECT d.endpoint_id, d.event_pk"
        "  FROM webhook_deliveries d"
        "  WHERE d.delivered_at IS NULL AND d.failed_at IS NULL"
        "  AND d.next_attempt_at <= now()"
        "  AND (d.locked_until IS NULL OR d.locked_until <= now())"
        "  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries b"
        "   WHERE b.endpoint_id = d.endpoint_id"
        "   AND b.account_id = d.account_id AND b.event_pk < d.event_pk"
        "   AND b.delivered_at IS NULL AND b.failed_at IS NULL)"
        "  ORDER BY d.next_attempt_at, d.event_pk LIMIT $1::int"
        "  FOR UPDATE OF d SKIP LOCKED),"
        " c AS (UPDATE webhook_deliveries d"
        "  SET locked_until = now() + $2::int * interval '1 second'"
        "  FROM due WHERE d.endpoint_id = due.endpoint_id"
        "  AND d.event_pk = due.event_pk"
        "  RETURNING d.endpoint_id, d.event_pk, d.attempts)"
        " SELECT c.endpoint_id, c.event_pk, c.attempts, w.url, w.secret,"
        " ev.event_id, ev.type, to_char(ev.created_at AT TIME ZONE 'UTC', "
        "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
        " coalesce(ev.account_id, ''), ev.payload::text"
        " FROM c JOIN webhook_endpoints w USING (endpoint_id)"
        " JOIN webhook_events ev USING (event_pk) ORDER BY c.event_pk",
        p.n, p.v, NULL, NULL, &r, e);
    if (st != METER_DB_ROWS) {
        PQclear(r); /* NONE gives the empty result too */
        return st;
    }
    int rows = PQntuples(r);
    struct meter_webhook_claim *c = calloc((size_t)rows, sizeof(*c));
    bool failed = !c;
    for (int i = 0; c && i < rows && !failed; i++) {
        if (db_get_int64(r, i, 0, &c[i].endpoint_id, e) < 0 ||
            db_get_int64(r, i, 1, &c[i].event_pk, e) < 0 ||
            db_get_int(r, i, 2, &c[i].attempts, e) < 0) {
            meter_db_webhook_claims_free(c, (size_t)rows);
            PQclear(r);
            return METER_DB_HARD;
        }
        c[i].url = copy_field(r, i, 3, &failed);
        c[i].secret = copy_field(r, i, 4, &failed);
        c[i].event_id = copy_field(r, i, 5, &failed);
        c[i].type = copy_field(r, i, 6, &failed);
        c[i].created = copy_field(r, i, 7, &failed);
        c[i].account = copy_field(r, i, 8, &failed);
        c[i].data = copy_field(r, i, 9, &failed);
    }
    PQclear(r);
    /* The leases run out: another pass claims them again. */
    if (failed) {
        meter_db_webhook_claims_free(c, (size_t)rows);
        return db_hard(e, "cannot claim deliveries: out of memory");
    }
    *out = c;
    *n = (size_t)rows;
    return METER_DB_ROWS;
}

enum meter_db_status
meter_db_webhook_record(PGconn *db, const struct meter_webhook_claim *c,
                        const struct meter_webhook_outcome *o,
                        struct meter_err *e)
{
    struct db_params p = {0};
    db_param_int64(&p, c->endpoint_id);
    db_param_int64(&p, c->event_pk);
    if (o->status)
        db_param_int32(&p, o->status);
    else
        db_param_text(&p, NULL);
    db_param_text(&p, o->delivered ? NULL : o->error);
    db_param_bool(&p, o->delivered);
    db_param_int64(&p, o->retry_ms);
    db_param_int64(&p, o->give_up_ms);
    /* Only a pending delivery: another meterd that took it over after
     * this one's lease ran out may have delivered it already. Past the
     * last time to try (give_up_ms after the event), it is given up.
     * One to be tried again holds back the later events of its account
     * to its endpoint (the claim's order): they wait till then too, so
     * that a claim's scan by due time does not walk them meanwhile. */
    return meter_db_exec(
        db, "cannot record the delivery",
        "WITH r AS (UPDATE webhook_deliveries d SET attempts = d.attempts + 1,"
        " last_attempt_at = now(), last_status = $3::int,"
        " last_error = left($4, 500), locked_until = NULL,"
        " delivered_at = CASE WHEN $5::boolean THEN now() END,"
        " next_attempt_at = CASE WHEN $5::boolean THEN d.next_attempt_at"
        "  ELSE now() + $6::bigint * interval '1 millisecond' END,"
        " failed_at = CASE WHEN NOT $5::boolean"
        "  AND now() + $6::bigint * interval '1 millisecond'"
        "  > ev.created_at + $7::bigint * interval '1 millisecond'"
        "  THEN now() END"
        " FROM webhook_events ev WHERE ev.event_pk = d.event_pk"
        " AND d.endpoint_id = $1::bigint AND d.event_pk = $2::bigint"
        " AND d.delivered_at IS NULL AND d.failed_at IS NULL"
        " RETURNING d.endpoint_id, d.account_id, d.event_pk,"
        " d.next_attempt_at, d.delivered_at, d.failed_at)"
        " UPDATE webhook_deliveries s SET next_attempt_at = r.next_attempt_at"
        " FROM r WHERE r.delivered_at IS NULL AND r.failed_at IS NULL"
        " AND s.endpoint_id = r.endpoint_id AND s.account_id = r.account_id"
        " AND s.event_pk > r.event_pk AND s.delivered_at IS NULL"
        " AND s.failed_at IS NULL AND s.next_attempt_at < r.next_attempt_at",
        p.n, p.v, NULL, NULL, NULL, e);
}
