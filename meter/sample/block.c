/*
 * block.c - the storage encoding of one (sandbox, minute) block: the
 * values of the seconds present, column by column, each column in
 * whichever of four modes is shortest for it.
 *
 * Layout: for each of the six columns (vcpu, cpu_used, mem_bytes,
 * mem_used_bytes, disk_bytes, egress_bytes) one mode byte, then
 *   mode 0 (runs):   pairs (count, value) until the seconds are covered;
 *   mode 1 (deltas): the first value, then n - 1 zigzag deltas;
 *   mode 2 (packed deltas): the first value, a scale, a width w, then
 *                    the n - 1 zigzag deltas divided by the scale, w
 *                    bits each;
 *   mode 3 (packed): the least value, a scale, a width w, then the n
 *                    values less the least, divided by the scale, w
 *                    bits each.
 * Numbers are LEB128 varints but the width (a byte, 0-64); the scale is
 * the greatest common divisor of what it divides (0 when all are 0, and
 * then w is 0). Bits are packed from the least significant of each byte
 * on, and the bits left over in the last byte are 0.
 * The seconds present are the block's 60-bit mask, kept beside the data.
 * Constant columns cost 3-11 bytes a minute. Memory in use moving a few
 * pages a second is a few bits a second (the scale takes the page
 * size); a CPU use anywhere between 0 and 8 vCPUs every second, 17 bits.
 */
#include "meter_sample.h"
#include "varint.h"

#include <string.h>

enum {
    MODE_RUNS = 0,
    MODE_DELTAS = 1,
    MODE_PACKED_DELTAS = 2,
    MODE_PACKED = 3,
    NCOLS = 6
};
__extension__ typedef unsigned __int128 u128;

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

static uint64_t
gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The magnitude of d, a two's complement difference. */
static uint64_t
magnitude(uint64_t d)
{
    return d >> 63 ? -d : d;
}

static unsigned
bit_width(uint64_t v)
{
    return v ? 64 - (unsigned)__builtin_clzll(v) : 0;
}

/* Appends the n codes of width bits each, least significant first. */
static uint8_t *
put_bits(uint8_t *p, const uint64_t *code, size_t n, unsigned width)
{
    u128 acc = 0;
    unsigned have = 0;
    for (size_t i = 0; i < n; i++) {
        acc |= (u128)code[i] << have;
        for (have += width; have >= 8; have -= 8) {
            *p++ = (uint8_t)acc;
            acc >>= 8;
        }
    }
    if (have)
        *p++ = (uint8_t)acc;
    return p;
}

/* A column's packed form: the base (first or least value), the scale,
 * the width and the codes; its length in bytes. */
struct packed {
    uint64_t base, scale;
    unsigned width;
    size_t ncodes;
    uint64_t code[60];
};

static size_t
packed_len(const struct packed *k)
{
    return 1 + varint_len(k->base) + varint_len(k->scale) + 1 +
           (k->ncodes * k->width + 7) / 8;
}

/* The n values v as packed deltas (deltas) or as offsets from the least
 * value. */
static void
pack(const uint64_t *v, size_t n, bool deltas, struct packed *k)
{
    uint64_t base = v[0], scale = 0, top = 0;
    if (!deltas)
        for (size_t i = 1; i < n; i++)
            base = v[i] < base ? v[i] : base;
    size_t from = deltas ? 1 : 0;
    for (size_t i = from; i < n; i++)
        scale = gcd(scale, deltas ? magnitude(v[i] - v[i - 1]) : v[i] - base);
    k->ncodes = 0;
    for (size_t i = from; i < n; i++) {
        uint64_t d = v[i] - (deltas ? v[i - 1] : base), c;
        if (!scale) {
            c = 0;
        } else if (!deltas) {
            c = d / scale;
        } else {
            /* zigzag of the signed quotient */
            uint64_t q = magnitude(d) / scale;
            c = d >> 63 ? 2 * q - 1 : 2 * q;
        }
        k->code[k->ncodes++] = c;
        top |= c;
    }
    k->base = base;
    k->scale = scale;
    k->width = bit_width(top);
}

size_t
meter_block_encode(const struct pricing_second *s, size_t n, uint8_t *buf)
{
    uint8_t *p = buf;
    uint64_t v[60];
    struct packed pd, po;
    for (int c = 0; c < NCOLS; c++) {
        for (size_t i = 0; i < n; i++)
            v[i] = column(&s[i], c);
        size_t runs = 1, deltas = 1 + varint_len(v[0]);
        for (size_t i = 0; i < n;) {
            size_t j = i + 1;
            while (j < n && v[j] == v[i])
                j++;
            runs += varint_len(j - i) + varint_len(v[i]);
            i = j;
        }
        for (size_t i = 1; i < n; i++)
            deltas += varint_len(zigzag(v[i], v[i - 1]));
        /* A packed mode takes 4 bytes at least: a column of one short run
         * (most are) is not tried in them. */
        size_t best = runs < deltas ? runs : deltas, lpd = SIZE_MAX,
               lpo = SIZE_MAX;
        if (best > 4) {
            pack(v, n, true, &pd);
            pack(v, n, false, &po);
            lpd = packed_len(&pd);
            lpo = packed_len(&po);
            best = lpd < best ? lpd : best;
            best = lpo < best ? lpo : best;
        }
        if (best == runs) {
            *p++ = MODE_RUNS;
            for (size_t i = 0; i < n;) {
                size_t j = i + 1;
                while (j < n && v[j] == v[i])
                    j++;
                p = put_varint(p, j - i);
                p = put_varint(p, v[i]);
                i = j;
            }
        } else if (best == deltas) {
            *p++ = MODE_DELTAS;
            p = put_varint(p, v[0]);
            for (size_t i = 1; i < n; i++)
                p = put_varint(p, zigzag(v[i], v[i - 1]));
        } else {
            const struct packed *k = best == lpd ? &pd : &po;
            *p++ = best == lpd ? MODE_PACKED_DELTAS : MODE_PACKED;
            p = put_varint(p, k->base);
            p = put_varint(p, k->scale);
            *p++ = (uint8_t)k->width;
            p = put_bits(p, k->code, k->ncodes, k->width);
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

/* Reads n codes of width bits each into code; false if the data ends
 * first or the last byte's bits left over are not 0. */
static bool
get_bits(const uint8_t **p, const uint8_t *end, uint64_t *code, size_t n,
         unsigned width)
{
    size_t bytes = (n * width + 7) / 8;
    if ((size_t)(end - *p) < bytes)
        return false;
    const uint8_t *q = *p;
    uint64_t mask = width == 64 ? UINT64_MAX : ((uint64_t)1 << width) - 1;
    u128 acc = 0;
    unsigned have = 0;
    for (size_t i = 0; i < n; i++) {
        for (; have < width; have += 8)
            acc |= (u128)*q++ << have;
        code[i] = (uint64_t)acc & mask;
        acc >>= width;
        have -= width;
    }
    *p = q;
    return acc == 0;
}

/* A column in a packed mode into v[0..count). */
static bool
unpack(const uint8_t **p, const uint8_t *end, bool deltas, size_t count,
       uint64_t *v)
{
    uint64_t base, scale, code[60];
    if (!get_varint(p, end, &base) || !get_varint(p, end, &scale) || *p >= end)
        return false;
    unsigned width = *(*p)++;
    size_t from = deltas ? 1 : 0;
    if (width > 64 || (width && !scale) ||
        !get_bits(p, end, code, count - from, width))
        return false;
    v[0] = base;
    for (size_t i = from; i < count; i++) {
        uint64_t c = code[i - from];
        if (!deltas) {
            v[i] = base + c * scale;
        } else if (c & 1) { /* zigzag: a negative quotient */
            v[i] = v[i - 1] - (c / 2 + 1) * scale;
        } else {
            v[i] = v[i - 1] + c / 2 * scale;
        }
    }
    return true;
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
        } else if (mode == MODE_PACKED_DELTAS || mode == MODE_PACKED) {
            if (!unpack(&p, end, mode == MODE_PACKED_DELTAS, count, v))
                return -1;
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
