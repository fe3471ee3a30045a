/*
 * block.c - the storage encoding of one (sandbox, minute) block: the
 * values of the seconds present, column by column, each column as
 * run-lengths of values or as zigzag deltas, whichever is shorter, in
 * LEB128 varints.
 *
 * Layout: for each of the six columns (vcpu, cpu_used, mem_bytes,
 * mem_used_bytes, disk_bytes, egress_bytes) one mode byte, then
 *   mode 0 (runs):   pairs (count, value) until the seconds are covered
 *   mode 1 (deltas): the first value, then n - 1 zigzag deltas.
 * The seconds present are the block's 60-bit mask, kept beside the data.
 * Constant columns cost 3-11 bytes a minute; a column that changes every
 * second (cpu_used) 1-3 bytes a second.
 */
#include "meter_sample.h"

#include <string.h>

enum { MODE_RUNS = 0, MODE_DELTAS = 1, NCOLS = 6 };

static uint64_t
column(const struct pricing_second *s, int c)
{
    switch (c) {
    case 0:
        return s->vcpu;
    case 1:
        return s->cpu_used;
    case 2:
        return s->mem_bytes;
    case 3:
        return s->mem_used_bytes;
    case 4:
        return s->disk_bytes;
    default:
        return s->egress_bytes;
    }
}

static size_t
varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *
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

static uint64_t
zigzag(uint64_t cur, uint64_t prev)
{
    uint64_t d = cur - prev; /* two's complement difference */
    return (d << 1) ^ (uint64_t) - (int64_t)(d >> 63);
}

static uint64_t
unzigzag(uint64_t z)
{
    return (z >> 1) ^ (uint64_t) - (int64_t)(z & 1);
}

size_t
meter_block_encode(const struct pricing_second *s, size_t n, uint8_t *buf)
{
    uint8_t *p = buf;
    for (int c = 0; c < NCOLS; c++) {
        size_t runs = 0, deltas = varint_len(column(&s[0], c));
        for (size_t i = 0; i < n;) {
            size_t j = i + 1;
            while (j < n && column(&s[j], c) == column(&s[i], c))
                j++;
            runs += varint_len(j - i) + varint_len(column(&s[i], c));
            i = j;
        }
        for (size_t i = 1; i < n; i++)
            deltas +=
                varint_len(zigzag(column(&s[i], c), column(&s[i - 1], c)));
        if (runs <= deltas) {
            *p++ = MODE_RUNS;
            for (size_t i = 0; i < n;) {
                size_t j = i + 1;
                while (j < n && column(&s[j], c) == column(&s[i], c))
                    j++;
                p = put_varint(p, j - i);
                p = put_varint(p, column(&s[i], c));
                i = j;
            }
        } else {
            *p++ = MODE_DELTAS;
            p = put_varint(p, column(&s[0], c));
            for (size_t i = 1; i < n; i++)
                p = put_varint(p,
                               zigzag(column(&s[i], c), column(&s[i - 1], c)));
        }
    }
    return (size_t)(p - buf);
}

/* Stores the count values of column c into out's seconds; false if a
 * value does not fit its field. One loop per field, no branch inside. */
static bool
scatter(struct pricing_second *out, size_t count, int c, const uint64_t *v)
{
    uint64_t high = 0;
    switch (c) {
    case 0:
        for (size_t i = 0; i < count; i++) {
            out[i].vcpu = (uint32_t)v[i];
            high |= v[i] >> 32;
        }
        return high == 0;
    case 1:
        for (size_t i = 0; i < count; i++) {
            out[i].cpu_used = (uint32_t)v[i];
            high |= v[i] >> 32;
        }
        return high == 0;
    case 2:
        for (size_t i = 0; i < count; i++)
            out[i].mem_bytes = v[i];
        return true;
    case 3:
        for (size_t i = 0; i < count; i++)
            out[i].mem_used_bytes = v[i];
        return true;
    case 4:
        for (size_t i = 0; i < count; i++)
            out[i].disk_bytes = v[i];
        return true;
    default:
        for (size_t i = 0; i < count; i++)
            out[i].egress_bytes = v[i];
        return true;
    }
}

int
meter_block_decode(int64_t minute, uint64_t mask, const uint8_t *data,
                   size_t len, struct pricing_second *out, size_t *n)
{
    const uint8_t *p = data, *end = data + len;
    size_t count = 0;
    uint64_t v[60];
    if (mask == 0 || (mask >> 60) != 0)
        return -1;
    for (uint64_t m = mask; m; m &= m - 1)
        out[count++].ts = minute * 60 + __builtin_ctzll(m);
    for (int c = 0; c < NCOLS; c++) {
        if (p >= end)
            return -1;
        uint8_t mode = *p++;
        if (mode == MODE_RUNS) {
            for (size_t i = 0; i < count;) {
                uint64_t run, x;
                if (!get_varint(&p, end, &run) || !get_varint(&p, end, &x) ||
                    run == 0 || run > count - i)
                    return -1;
                for (uint64_t k = 0; k < run; k++)
                    v[i++] = x;
            }
        } else if (mode == MODE_DELTAS) {
            uint64_t x, z;
            if (!get_varint(&p, end, &x))
                return -1;
            v[0] = x;
            for (size_t i = 1; i < count; i++) {
                if (!get_varint(&p, end, &z))
                    return -1;
                x += unzigzag(z);
                v[i] = x;
            }
        } else {
            return -1;
        }
        if (!scatter(out, count, c, v))
            return -1;
    }
    if (p != end)
        return -1;
    *n = count;
    return 0;
}
