/*
 * request.c - what a handler reads of its request: headers, the path's
 * parameters, the query, the body, cookies, who sent it; and its note
 * for the access log.
 */
#include "http_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const char *
meter_http_header(struct meter_http_request *rq, const char *name)
{
    return MHD_lookup_connection_value(rq->c, MHD_HEADER_KIND, name);
}

bool
meter_http_header_is(struct meter_http_request *rq, const char *name,
                     const char *want)
{
    const char *v = meter_http_header(rq, name);
    if (!v)
        return false;
    size_t n = strlen(want);
    return strncasecmp(v, want, n) == 0 &&
           (v[n] == '\0' || v[n] == ';' || v[n] == ' ');
}

const char *
meter_http_path(struct meter_http_request *rq)
{
    return rq->url;
}

const char *
meter_http_param(struct meter_http_request *rq, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < rq->nparams; i++)
        if (strncmp(rq->param_name[i], name, n) == 0 &&
            rq->param_name[i][n] == '}')
            return rq->param_value[i];
    return NULL;
}

const char *
meter_http_query(struct meter_http_request *rq, const char *name)
{
    return MHD_lookup_connection_value(rq->c, MHD_GET_ARGUMENT_KIND, name);
}

const char *
meter_http_body(struct meter_http_request *rq, size_t *len)
{
    *len = rq->body.len;
    if (!rq->route || !rq->route->body)
        return NULL;
    return rq->body.p ? rq->body.p : "";
}

const char *
meter_http_cookie(struct meter_http_request *rq, const char *name)
{
    return MHD_lookup_connection_value(rq->c, MHD_COOKIE_KIND, name);
}

const struct meter_principal *
meter_http_principal(struct meter_http_request *rq)
{
    return rq->route && rq->route->roles ? &rq->who : NULL;
}

const char *
meter_http_csrf(struct meter_http_request *rq)
{
    return rq->by_cookie ? rq->csrf : NULL;
}

bool
meter_http_tls(struct meter_http_request *rq)
{
    return rq->h->cfg.tls != NULL;
}

struct meter_http *
meter_http_server(struct meter_http_request *rq)
{
    return rq->h;
}

void
meter_http_note(struct meter_http_request *rq, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rq->note, sizeof(rq->note), fmt, ap);
    va_end(ap);
}
