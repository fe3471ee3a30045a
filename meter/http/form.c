/*
 * form.c - bodies of HTML forms (application/x-www-form-urlencoded),
 * parsed once, when first asked for, into a decoded copy of the body.
 * A malformed %-escape or a NUL refuses the whole form rather than
 * reading a field otherwise than the browser meant it: a CSRF token or
 * a key misread would be refused anyway, and a value cut at a NUL could
 * be another value than the one checked.
 */
#include "http_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes s in place ('+' a space, %XX a byte; never longer): 0, or -1
 * on a malformed escape or an escaped NUL. */
static int
decode(char *s)
{
    char *out = s;
    for (const char *in = s; *in; in++) {
        if (*in == '+') {
            *out++ = ' ';
        } else if (*in == '%') {
            int hi = hex_value(in[1]), lo = hi < 0 ? -1 : hex_value(in[2]);
            if (lo < 0 || (hi | lo) == 0)
                return -1;
            *out++ = (char)(hi * 16 + lo);
            in += 2;
        } else {
            *out++ = *in;
        }
    }
    *out = '\0';
    return 0;
}

/* Whether a field's name may be shown in a message as it is (ours are
 * short words; anything else is not quoted back). */
static bool
showable(const char *name)
{
    size_t n = strlen(name);
    return n > 0 && n <= 40 &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789_-") == n;
}

/* Refuses the form with status and why: -1. */
static int
refused(struct meter_http_request *rq, unsigned status, const char *why,
        const char *name)
{
    rq->form_status = status;
    if (name && showable(name))
        snprintf(rq->form_error, sizeof(rq->form_error), "form field '%s': %s",
                 name, why);
    else
        snprintf(rq->form_error, sizeof(rq->form_error), "%s", why);
    return -1;
}

/* Splits and decodes f->text, which holds the body, into fields. */
static int
split(struct meter_http_request *rq, struct http_form *f)
{
    char *p = f->text;
    while (*p) {
        char *end = p + strcspn(p, "&");
        bool last = *end == '\0';
        *end = '\0';
        if (*p) { /* "a=1&&b=2": an empty field is nothing */
            char *eq = strchr(p, '=');
            char *value = end; /* "flag": an empty value */
            if (eq) {
                *eq = '\0';
                value = eq + 1;
            }
            if (f->n == HTTP_MAX_FORM_FIELDS)
                return refused(rq, 400, "more than 64 fields", NULL);
            if (decode(p) < 0)
                return refused(rq, 400,
                               "a field's name has a malformed %-escape", NULL);
            if (decode(value) < 0)
                return refused(rq, 400, "a malformed %-escape (or %00)", p);
            f->name[f->n] = p;
            f->value[f->n++] = value;
        }
        p = last ? end : end + 1;
    }
    return 0;
}

/* Parses rq's body as a form, once: 0, or -1 with form_status and
 * form_error set. */
static int
parse(struct meter_http_request *rq)
{
    if (rq->form)
        return 0;
    if (rq->form_status)
        return -1;
    if (!rq->route || !rq->route->body ||
        !meter_http_header_is(rq, "Content-Type",
                              "application/x-www-form-urlencoded"))
        return refused(rq, 415,
                       "the body is not a form: send Content-Type "
                       "application/x-www-form-urlencoded",
                       NULL);
    size_t len;
    const char *body = meter_http_body(rq, &len);
    if (memchr(body, '\0', len))
        return refused(rq, 400, "the form holds a NUL byte", NULL);
    struct http_form *f = calloc(1, sizeof(*f));
    if (!f || !(f->text = malloc(len + 1))) {
        free(f);
        return refused(rq, 503, "no memory for the form; retry later", NULL);
    }
    memcpy(f->text, body, len + 1);
    f->len = len;
    if (split(rq, f) < 0) {
        free(f->text);
        free(f);
        return -1;
    }
    rq->form = f;
    return 0;
}

bool
meter_http_form_or_reply(struct meter_http_request *rq)
{
    if (parse(rq) == 0)
        return true;
    if (rq->form_status == 415)
        meter_http_reply_problem(rq, 415, "unsupported-media-type",
                                 "Not a form", NULL, "%s", rq->form_error);
    else if (rq->form_status == 503)
        meter_http_reply_problem(rq, 503, "saturated", "Out of memory", NULL,
                                 "%s", rq->form_error);
    else
        meter_http_reply_problem(rq, 400, "invalid-form", "Invalid form", NULL,
                                 "%s", rq->form_error);
    return false;
}

const char *
meter_http_form(struct meter_http_request *rq, const char *name)
{
    if (parse(rq) < 0)
        return NULL;
    for (size_t i = 0; i < rq->form->n; i++)
        if (strcmp(rq->form->name[i], name) == 0)
            return rq->form->value[i];
    return NULL;
}

void
http_form_free(struct meter_http_request *rq)
{
    if (!rq->form)
        return;
    /* It may hold a key typed into a sign-in form, and so may the body
     * it was copied from (a form is small: this costs nothing). */
    explicit_bzero(rq->form->text, rq->form->len);
    if (rq->body.p)
        explicit_bzero(rq->body.p, rq->body.len);
    free(rq->form->text);
    free(rq->form);
    rq->form = NULL;
}
