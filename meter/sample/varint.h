/*
 * varint.h - LEB128 varints, for the storage encodings (block.c,
 * pack.c); private to meter/sample/.
 */
#ifndef METER_VARINT_H
#define METER_VARINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline size_t
varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline uint8_t *
put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline bool
get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    if (__builtin_expect(*p < end && !(**p & 0x80), 1)) {
        *v = *(*p)++; /* one byte: most values */
        return true;
    }
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end)
            return false;
        uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

#endif
