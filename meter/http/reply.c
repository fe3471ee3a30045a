/*
 * reply.c - the one way to answer: JSON, text, an RFC 9457 problem, an
 * HTML page or a redirect, with the headers the handler added.
 */
#include "http_int.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RETRY_AFTER "2"

/* Adds the handler's headers to resp: false if one is refused. */
static bool
add_reply_headers(struct meter_http_request *rq, struct MHD_Response *resp)
{
    if (rq->reply_failed)
        return false;
    for (size_t i = 0; i < rq->nreply; i++)
        if (MHD_add_response_header(resp, rq->reply_name[i],
                                    rq->reply_value[i]) != MHD_YES)
            return false;
    return true;
}

void
http_reply_headers_clear(struct meter_http_request *rq)
{
    for (size_t i = 0; i < rq->nreply; i++) {
        /* A Set-Cookie holds a session's token. */
        explicit_bzero(rq->reply_value[i], strlen(rq->reply_value[i]));
        free(rq->reply_name[i]);
        free(rq->reply_value[i]);
    }
    rq->nreply = 0;
    rq->reply_failed = false;
}

void
meter_http_reply_header(struct meter_http_request *rq, const char *name,
                        const char *value)
{
    /* Refused here rather than by libmicrohttpd, to say which; the
     * value is never logged (it may be a cookie's token). */
    if (rq->nreply == HTTP_MAX_REPLY_HEADERS || !*name ||
        strpbrk(name, "\r\n\t :") || strpbrk(value, "\r\n")) {
        meter_log(METER_LOG_ERROR, "%s %s: reply header '%s' refused",
                  rq->method, rq->url, name);
        rq->reply_failed = true;
        return;
    }
    char *n = strdup(name), *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        rq->reply_failed = true;
        return;
    }
    rq->reply_name[rq->nreply] = n;
    rq->reply_value[rq->nreply++] = v;
}

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
    /* Every answer names its request, as the log line does. */
    if (rq->request_id[0])
        MHD_add_response_header(resp, "X-Request-Id", rq->request_id);
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
    if (!add_reply_headers(rq, resp)) {
        /* A Set-Cookie that clears a session, say, must not be lost
         * silently: the reply is refused as a whole. (One refused by
         * meter_http_reply_header was logged there.) */
        MHD_destroy_response(resp);
        if (!rq->reply_failed)
            meter_log(METER_LOG_ERROR,
                      "%s %s: libmicrohttpd refused the reply's headers",
                      rq->method, rq->url);
        http_reply_headers_clear(rq);
        meter_http_reply_problem(rq, 500, "internal", "Internal error", NULL,
                                 "the reply could not be made");
        return;
    }
    /* What a session sees is its own: no cache keeps it for another. */
    if (rq->by_cookie &&
        !MHD_get_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
                                "no-store");
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

void
meter_http_reply_redirect(struct meter_http_request *rq, unsigned status,
                          const char *location)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        0, (void *)(uintptr_t) "", MHD_RESPMEM_PERSISTENT);
    if (resp && (MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION,
                                         location) != MHD_YES ||
                 MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
                                         "no-store") != MHD_YES)) {
        MHD_destroy_response(resp);
        resp = NULL;
    }
    http_queue(rq, status, resp);
}

/* What every page may load and do: its stylesheets and images from this
 * server (images also inline, for charts), no script at all, forms
 * posted only here, never framed (clickjacking), no <base> to redirect
 * its relative links. %s: more sources of stylesheets (an inline one's
 * hash). */
#define HTML_CSP                                                               \
    "default-src 'none'; style-src 'self'%s%s; img-src 'self' data:; "         \
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

void
meter_http_reply_html(struct meter_http_request *rq, unsigned status,
                      const char *html, size_t len)
{
    meter_http_reply_html_style(rq, status, html, len, NULL);
}

void
meter_http_reply_html_style(struct meter_http_request *rq, unsigned status,
                            const char *html, size_t len, const char *style)
{
    char csp[512];
    int n = snprintf(csp, sizeof(csp), HTML_CSP, style ? " " : "",
                     style ? style : "");
    const char *const headers[][2] = {
        {MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8"},
        {MHD_HTTP_HEADER_CONTENT_SECURITY_POLICY, csp},
        {MHD_HTTP_HEADER_X_CONTENT_TYPE_OPTIONS, "nosniff"},
        {"Referrer-Policy", "same-origin"},
        {MHD_HTTP_HEADER_X_FRAME_OPTIONS, "DENY"},
        {MHD_HTTP_HEADER_CACHE_CONTROL, "no-store"},
    };
    struct MHD_Response *resp =
        n > 0 && (size_t)n < sizeof(csp) && !strpbrk(csp, "\r\n")
            ? MHD_create_response_from_buffer(len, (void *)(uintptr_t)html,
                                              MHD_RESPMEM_MUST_COPY)
            : NULL;
    for (size_t i = 0; resp && i < sizeof(headers) / sizeof(headers[0]); i++)
        if (MHD_add_response_header(resp, headers[i][0], headers[i][1]) !=
            MHD_YES) {
            MHD_destroy_response(resp);
            resp = NULL;
        }
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

/* A problem answered on a page for people (a route whose page is set):
 * its title and detail as a small HTML page with the way home and to
 * the sign-in page, rather than JSON a person would read raw. No
 * stylesheet: the layer knows none of the service's files. False if
 * it could not be built (the caller answers JSON instead). */
static bool
reply_problem_page(struct meter_http_request *rq, unsigned status,
                   const char *title, const char *detail)
{
    struct meter_buf b = {0};
    meter_buf_str(&b, "<!doctype html>\n<html lang=\"en\"><head>"
                      "<meta charset=\"utf-8\"><meta name=\"viewport\" "
                      "content=\"width=device-width, initial-scale=1\">"
                      "<title>");
    meter_buf_html(&b, title);
    meter_buf_str(&b, "</title></head>\n<body><main><h1>");
    meter_buf_html(&b, title);
    meter_buf_str(&b, "</h1>\n<p>");
    meter_buf_html(&b, detail);
    meter_buf_str(&b, "</p>\n<p><a href=\"/\">Home</a> &middot; <a "
                      "href=\"/sign-in\">Sign in with another key</a></p>"
                      "</main></body></html>\n");
    bool ok = !b.failed;
    if (ok)
        meter_http_reply_html(rq, status, b.p, b.len);
    meter_buf_release(&b);
    return ok;
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
    snprintf(rq->note, sizeof(rq->note), "%s", code);
    if (rq->route && rq->route->page &&
        reply_problem_page(rq, status, title, text)) {
        json_decref(errors);
        return;
    }
    snprintf(type, sizeof(type), "urn:meter:problem:%s", code);
    json_t *p = json_object();
    json_object_set_new(p, "type", json_string(type));
    json_object_set_new(p, "title", json_string(title));
    json_object_set_new(p, "status", json_integer(status));
    json_object_set_new(p, "detail", json_string(text));
    if (errors)
        json_object_set_new(p, "errors", errors);
    reply_json_typed(rq, status, p, "application/problem+json");
}
