/*
 * meterd_int.h - the endpoints of meterd, one file each; private.
 *
 * Adding an endpoint: a file with its handler (and, if it has them, its
 * admission check and metrics), its declaration here, and one row in
 * main.c's route table.
 */
#ifndef METERD_INT_H
#define METERD_INT_H

#include "meter_db.h"
#include "meter_http.h"

/* Process-wide state the endpoints share; set up by main before the
 * server starts. */
struct meterd {
    struct meter_registry *registry;
};
extern struct meterd meterd;

/* POST /v1/samples (samples.c) */
bool meterd_samples_admit(struct meter_http_request *rq);
void meterd_samples(struct meter_http_request *rq);
void meterd_samples_metrics(struct meter_buf *out);

/* GET /healthz, /readyz, /metrics (health.c) */
void meterd_healthz(struct meter_http_request *rq);
void meterd_readyz(struct meter_http_request *rq);
void meterd_metrics(struct meter_http_request *rq);

#endif
