/*
 * metrics.c - the server's metrics by route, in Prometheus text: requests
 * by route, method and status, a latency histogram by route, handlers
 * in flight, body bytes held, database errors; then each route's own.
 */
#include "http_int.h"

#include <stdio.h>

const unsigned http_statuses[HTTP_NSTATUS] = {200, 201, 204, 303, 400, 401,
                                              403, 404, 405, 409, 413, 415,
                                              422, 429, 500, 503};
const double http_buckets[HTTP_NBUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                            0.5,   1,    2.5,   5,    10};

void
http_observe(struct meter_http_request *rq, double seconds)
{
    struct http_route_metrics *m = &rq->h->metrics[rq->route_index];
    size_t s = 0;
    while (s < HTTP_NSTATUS && http_statuses[s] != rq->status)
        s++;
    atomic_fetch_add(&m->requests[s], 1);
    size_t b = 0;
    while (b < HTTP_NBUCKETS && seconds > http_buckets[b])
        b++;
    atomic_fetch_add(&m->latency_bucket[b], 1);
    atomic_fetch_add(&m->latency_count, 1);
    atomic_fetch_add(&m->latency_us_sum, (unsigned long long)(seconds * 1e6));
}

/* The labels of route i: route and method. */
static void
labels(const struct meter_http *h, size_t i, char *out, size_t n)
{
    if (i == h->cfg.nroutes)
        snprintf(out, n, "route=\"other\",method=\"\"");
    else
        snprintf(out, n, "route=\"%s\",method=\"%s\"", h->cfg.routes[i].path,
                 h->cfg.routes[i].method);
}

void
meter_http_metrics(struct meter_http *h, struct meter_buf *out)
{
    char lbl[160];
    meter_buf_str(out, "# HELP meter_requests_total HTTP requests by route "
                       "and status.\n# TYPE meter_requests_total counter\n");
    for (size_t r = 0; r <= h->cfg.nroutes; r++) {
        labels(h, r, lbl, sizeof(lbl));
        for (size_t s = 0; s <= HTTP_NSTATUS; s++) {
            unsigned long long v = atomic_load(&h->metrics[r].requests[s]);
            if (s == HTTP_NSTATUS)
                meter_buf_printf(out,
                                 "meter_requests_total{%s,status=\"other\"} "
                                 "%llu\n",
                                 lbl, v);
            else
                meter_buf_printf(out,
                                 "meter_requests_total{%s,status=\"%u\"} "
                                 "%llu\n",
                                 lbl, http_statuses[s], v);
        }
    }
    meter_buf_str(out, "# HELP meter_request_seconds Time from a request's "
                       "headers to its answer.\n"
                       "# TYPE meter_request_seconds histogram\n");
    for (size_t r = 0; r <= h->cfg.nroutes; r++) {
        const struct http_route_metrics *m = &h->metrics[r];
        labels(h, r, lbl, sizeof(lbl));
        unsigned long long cum = 0;
        for (size_t b = 0; b <= HTTP_NBUCKETS; b++) {
            cum += atomic_load(&m->latency_bucket[b]);
            if (b < HTTP_NBUCKETS)
                meter_buf_printf(out,
                                 "meter_request_seconds_bucket{%s,le=\"%g\"} "
                                 "%llu\n",
                                 lbl, http_buckets[b], cum);
            else
                meter_buf_printf(out,
                                 "meter_request_seconds_bucket{%s,le=\"+Inf\"}"
                                 " %llu\n",
                                 lbl, cum);
        }
        meter_buf_printf(out,
                         "meter_request_seconds_sum{%s} %.6f\n"
                         "meter_request_seconds_count{%s} %llu\n",
                         lbl, (double)atomic_load(&m->latency_us_sum) / 1e6,
                         lbl, atomic_load(&m->latency_count));
    }
    meter_buf_printf(out,
                     "# HELP meter_requests_in_flight Requests being handled.\n"
                     "# TYPE meter_requests_in_flight gauge\n"
                     "meter_requests_in_flight %lld\n"
                     "# HELP meter_buffered_bytes Request bodies held "
                     "(reserved).\n"
                     "# TYPE meter_buffered_bytes gauge\n"
                     "meter_buffered_bytes %zu\n"
                     "# HELP meter_db_errors_total Database errors.\n"
                     "# TYPE meter_db_errors_total counter\n"
                     "meter_db_errors_total %llu\n",
                     atomic_load(&h->in_flight), atomic_load(&h->buffered),
                     atomic_load(&h->db_errors));
    for (size_t r = 0; r < h->cfg.nroutes; r++)
        if (h->cfg.routes[r].metrics)
            h->cfg.routes[r].metrics(out);
}
