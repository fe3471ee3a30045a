/*
 * reply.c - the one way to answer: JSON, text, or an RFC 9457 problem.
 */
#include "http_int.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_AFTER "2"

void
http_queue(struct meter_http_request *rq, unsigned status,
           struct MHD_Response *resp)
{
    if (rq->status) {
        /* A second answer is a handler's bug; the first stands. */
        meter_log(METER_LOG_ERROR, "%s %s: answered twice (%u, then %u)",
                  rq->method, rq->url, rq->status, status);
        if (resp)
            MHD_destroy_response(resp);
        return;
    }
    if (!resp) {
        rq->status = 500;
        rq->result = MHD_NO;
        return;
    }
    if (status == 503)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, RETRY_AFTER);
    if (status == 429) {
        char after[16];
        snprintf(after, sizeof(after), "%u",
                 rq->retry_after ? rq->retry_after : 1);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, after);
    }
    if (status == 401)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                "Bearer");
    if (status == 405 && rq->allow[0])
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, rq->allow);
    rq->status = status;
    rq->result = MHD_queue_response(rq->c, status, resp);
    MHD_destroy_response(resp);
}

void
meter_http_reply_text(struct meter_http_request *rq, unsigned status,
                      const char *type, const char *text, size_t len)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, (void *)(uintptr_t)text, MHD_RESPMEM_MUST_COPY);
    if (resp)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    http_queue(rq, status, resp);
}

static void
reply_json_typed(struct meter_http_request *rq, unsigned status, json_t *body,
                 const char *type)
{
    char *text =
        body ? json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(body);
    if (!text) {
        http_queue(rq, 500, NULL);
        return;
    }
    size_t len = strlen(text);
    /* A newline ends the body, for people reading it with curl. */
    char *t = realloc(text, len + 2);
    if (t) {
        text = t;
        text[len++] = '\n';
        text[len] = '\0';
    }
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        free(text);
    else
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    http_queue(rq, status, resp);
}

void
meter_http_reply_json(struct meter_http_request *rq, unsigned status,
                      json_t *body)
{
    reply_json_typed(rq, status, body, "application/json");
}

void
meter_http_reply_problem(struct meter_http_request *rq, unsigned status,
                         const char *code, const char *title, json_t *errors,
                         const char *detail, ...)
{
    char type[96], text[600];
    va_list ap;
    va_start(ap, detail);
    vsnprintf(text, sizeof(text), detail, ap);
    va_end(ap);
    meter_utf8_cut(text, 511); /* at a character: vsnprintf cuts at a byte */
    snprintf(type, sizeof(type), "urn:meter:problem:%s", code);
    json_t *p = json_object();
    json_object_set_new(p, "type", json_string(type));
    json_object_set_new(p, "title", json_string(title));
    json_object_set_new(p, "status", json_integer(status));
    json_object_set_new(p, "detail", json_string(text));
    if (errors)
        json_object_set_new(p, "errors", errors);
    snprintf(rq->note, sizeof(rq->note), "%s", code);
    reply_json_typed(rq, status, p, "application/problem+json");
}
