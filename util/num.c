/*
 * num.c - integers from text and from PostgreSQL's binary format.
 */
#include "meter_util.h"

#include <arpa/inet.h>
#include <string.h>

uint32_t
meter_be32(const void *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return ntohl(v);
}

uint64_t
meter_be64(const void *p)
{
    const char *c = p;
    return ((uint64_t)meter_be32(c) << 32) | meter_be32(c + 4);
}

int
meter_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s)
        return -1;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}
