/*
 * gzip.c - Content-Encoding: gzip of request bodies, inflated with a cap
 * (several members allowed, as RFC 1952 does; trailing bytes refused).
 * Every byte of the output buffer is asked of the caller's budget
 * before it is allocated, so that a small body inflating to a large one
 * counts against --max-buffered as it grows, not once it is whole.
 */
#include "http_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int
http_gunzip(const char *in, size_t len, size_t max, http_gunzip_grow *grow,
            void *cls, char **out, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        return -1;
    size_t cap = len * 4 < max ? len * 4 + 1024 : max + 1;
    char *buf = NULL;
    int rc = -3;
    if (!grow(cls, cap))
        goto out;
    rc = -1;
    if (!(buf = malloc(cap)))
        goto out;
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    for (;;) {
        z.next_out = (Bytef *)buf + z.total_out;
        z.avail_out = (uInt)(cap - z.total_out);
        int st = inflate(&z, Z_NO_FLUSH);
        if (st == Z_STREAM_END) {
            if (z.avail_in == 0)
                break;
            /* Another gzip member follows (RFC 1952 allows several);
             * anything else after the end is an error. */
            if (z.avail_in < 2 || z.next_in[0] != 0x1f || z.next_in[1] != 0x8b)
                goto out;
            uLong done = z.total_out;
            if (inflateReset(&z) != Z_OK)
                goto out;
            z.total_out = done;
            continue;
        }
        if (st != Z_OK && st != Z_BUF_ERROR)
            goto out; /* corrupt */
        if (z.avail_out > 0 && z.avail_in == 0)
            goto out; /* truncated */
        if (z.total_out > max) {
            rc = -2;
            goto out;
        }
        size_t nc = cap * 2 > max + 1 ? max + 1 : cap * 2;
        if (nc <= cap) {
            rc = -2;
            goto out;
        }
        if (!grow(cls, nc - cap)) {
            rc = -3;
            goto out;
        }
        char *p = realloc(buf, nc);
        if (!p)
            goto out;
        buf = p;
        cap = nc;
    }
    if (z.total_out > max) {
        rc = -2;
        goto out;
    }
    if (z.total_out == cap) { /* room for the NUL */
        if (!grow(cls, 1)) {
            rc = -3;
            goto out;
        }
        char *p = realloc(buf, cap + 1);
        if (!p)
            goto out;
        buf = p;
    }
    buf[z.total_out] = '\0';
    *out = buf;
    *out_len = z.total_out;
    buf = NULL;
    rc = 0;
out:
    free(buf);
    inflateEnd(&z);
    return rc;
}
