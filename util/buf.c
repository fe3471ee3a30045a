/*
 * buf.c - the growable byte buffer with a cap (curl's dynbuf is the
 * model): request bodies, SQL arrays, COPY data and reply text all grow
 * through it, so that no caller does its own realloc arithmetic.
 */
#include "meter_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Makes room for n more bytes and the NUL; false (and failed) if the cap
 * or memory says no. */
static bool
reserve(struct meter_buf *b, size_t n)
{
    if (b->failed)
        return false;
    if (n > SIZE_MAX - b->len - 1 || (b->max && b->len + n > b->max)) {
        b->failed = true;
        return false;
    }
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return true;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < need)
        nc = nc > SIZE_MAX / 2 ? need : nc * 2;
    char *p = realloc(b->p, nc);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->p = p;
    b->cap = nc;
    return true;
}

void
meter_buf_add(struct meter_buf *b, const void *data, size_t n)
{
    if (!reserve(b, n))
        return;
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void
meter_buf_str(struct meter_buf *b, const char *s)
{
    meter_buf_add(b, s, strlen(s));
}

void
meter_buf_printf(struct meter_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof(small)) {
        meter_buf_add(b, small, (size_t)n);
        return;
    }
    if (!reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void
meter_buf_reset(struct meter_buf *b)
{
    b->len = 0;
    b->failed = false;
    if (b->p)
        b->p[0] = '\0';
}

void
meter_buf_release(struct meter_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->failed = false;
}

char *
meter_buf_detach(struct meter_buf *b, size_t *len)
{
    if (b->failed)
        return NULL;
    if (!b->p) {
        if (!reserve(b, 0))
            return NULL;
        b->p[0] = '\0';
    }
    char *p = b->p;
    if (len)
        *len = b->len;
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}
