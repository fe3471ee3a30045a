/*
 * meter_webhook.h - sending one webhook (docs/webhooks.md): the secret
 * of an endpoint, the body of an event, its signature (Standard
 * Webhooks, as Svix signs: "v1," and the base64 of the HMAC-SHA-256 of
 * "id.timestamp.body" keyed with the secret's bytes), the POST itself,
 * and when to try again. No database: meter/db/webhooks.c keeps the
 * outbox, meterd's delivery thread joins the two.
 *
 * Functions that take a struct meter_err return 0, or -1 with the
 * message. Thread-safe once meter_webhook_global_init has run.
 */
#ifndef METER_WEBHOOK_H
#define METER_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meter_util.h"

/* The event types, as migration 0022's webhook_event_type allows. */
extern const char *const meter_webhook_types[];
extern const size_t meter_webhook_ntypes;
/* Whether every type in list (separated by commas, none empty) is one of
 * meter_webhook_types; if not, the first that is not into bad (cut to
 * its size). "" is all types, and valid. */
bool meter_webhook_types_valid(const char *list, char bad[64]);

/* A secret: "whsec_" and the base64 of 24 to 64 bytes (Standard
 * Webhooks' form); the HMAC key is the bytes. */
#define METER_WEBHOOK_SECRET_MAX 96
/* A new secret of 32 random bytes (getrandom) into out: 0, or -1 when the
 * system gives no random bytes. */
int meter_webhook_secret_new(char out[METER_WEBHOOK_SECRET_MAX]);
/* Whether secret has the form above. */
bool meter_webhook_secret_valid(const char *secret);

/* "v1," and a base64 HMAC-SHA-256: 3 + 44 + NUL. */
#define METER_WEBHOOK_SIG_MAX 48
/* The signature of body (len bytes) sent as event id at Unix time ts
 * with secret, into out: 0, or -1 if the secret is not valid. */
int meter_webhook_sign(const char *secret, const char *id, int64_t ts,
                       const char *body, size_t len,
                       char out[METER_WEBHOOK_SIG_MAX], struct meter_err *e);

/* The body of an event, malloc'd JSON text: {"id", "type", "created"
 * (ISO 8601 UTC), "account" (null for none: account NULL or ""), "data"
 * (data, JSON text of an object)}. NULL with the message if data does
 * not parse, or out of memory. */
char *meter_webhook_body(const char *id, const char *type, const char *created,
                         const char *account, const char *data,
                         struct meter_err *e);

/* Milliseconds to wait after failed attempt number `attempt` (1: the
 * first): 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then every 3 h;
 * divided by divisor (>= 1: tests make retries fast). */
int64_t meter_webhook_retry_ms(int attempt, unsigned divisor);
/* How long after its event a delivery is tried, in ms: a day, divided
 * by divisor. */
int64_t meter_webhook_give_up_ms(unsigned divisor);

/* Once per process, before any thread sends (libcurl's global setup):
 * 0, or -1 with the message. */
int meter_webhook_global_init(struct meter_err *e);

/* What one POST got. */
struct meter_webhook_result {
    bool delivered;  /* a 2xx */
    int status;      /* the HTTP status; 0: no answer */
    char error[256]; /* not delivered: why (the status, or the connection's
                        error); "" if delivered */
};
/*
 * POSTs body (len bytes, JSON) to url with the headers Webhook-Id (id),
 * Webhook-Timestamp (ts) and Webhook-Signature (sig), waiting at most
 * timeout_s seconds in all; redirects are not followed (a 3xx is a
 * failure), only http and https are spoken. The answer's body is read and
 * dropped. The outcome is in *out; never fails otherwise.
 */
void meter_webhook_post(const char *url, const char *id, int64_t ts,
                        const char *sig, const char *body, size_t len,
                        unsigned timeout_s, struct meter_webhook_result *out);

#endif
