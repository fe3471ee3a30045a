/*
 * pack.c - the storage encoding of one (sandbox, hour) pack: the blocks
 * (block.c) that batches stored for the sandbox in that hour, kept as
 * they were, each with its minute, its seconds and where it came from
 * (the API key and the commit time of its batch), in one value. A
 * quarantine can then give a batch's blocks back exactly, and the pack
 * costs one row where the blocks cost one row each (meter/README.md).
 *
 * Layout:
 *   varint nprov, then nprov origins, by arrival, each
 *     varint key_id (0: none), varint arrived_us - the previous one's
 *     (the first's against 0);
 *   then the parts, until the end, each
 *     byte  minute within the hour (0-59),
 *     byte  first second present (0-59), with 0x80 set when the seconds
 *           are not one run: then a varint of the 60-bit mask follows,
 *           else a byte of how many seconds the run holds (1-60),
 *     varint origin (index into the origins),
 *     varint length, then the block's bytes.
 */
#include "meter_sample.h"
#include "varint.h"

#include <stdlib.h>
#include <string.h>

#define MASK60 ((UINT64_C(1) << 60) - 1)

/* The origins of the parts, each once, ordered by (arrival, key). */
struct origin {
    int64_t arrived_us, key_id;
};

static int
origin_cmp(const void *a, const void *b)
{
    const struct origin *x = a, *y = b;
    if (x->arrived_us != y->arrived_us)
        return x->arrived_us < y->arrived_us ? -1 : 1;
    return (x->key_id > y->key_id) - (x->key_id < y->key_id);
}

size_t
meter_pack_bound(const struct meter_pack_part *p, size_t n)
{
    /* 10 bytes a varint at most; an origin per part at most. */
    size_t bytes = 10;
    for (size_t i = 0; i < n; i++)
        bytes += 20 + 2 + 10 + 10 + 10 + p[i].len;
    return bytes;
}

size_t
meter_pack_encode(int64_t hour, const struct meter_pack_part *p, size_t n,
                  uint8_t *out)
{
    struct origin *o = malloc((n ? n : 1) * sizeof(*o));
    if (!o)
        return 0;
    for (size_t i = 0; i < n; i++)
        o[i] = (struct origin){p[i].arrived_us, p[i].key_id};
    qsort(o, n, sizeof(*o), origin_cmp);
    size_t no = 0;
    for (size_t i = 0; i < n; i++)
        if (no == 0 || origin_cmp(&o[no - 1], &o[i]) != 0)
            o[no++] = o[i];
    uint8_t *q = put_varint(out, no);
    int64_t prev = 0;
    for (size_t i = 0; i < no; i++) {
        q = put_varint(q, (uint64_t)o[i].key_id);
        q = put_varint(q, (uint64_t)o[i].arrived_us - (uint64_t)prev);
        prev = o[i].arrived_us;
    }
    for (size_t i = 0; i < n; i++) {
        const struct meter_pack_part *x = &p[i];
        struct origin key = {x->arrived_us, x->key_id};
        const struct origin *at = bsearch(&key, o, no, sizeof(*o), origin_cmp);
        unsigned first = (unsigned)__builtin_ctzll(x->mask);
        unsigned count = (unsigned)__builtin_popcountll(x->mask);
        *q++ = (uint8_t)(x->minute - hour * 60);
        if (x->mask >> first == (UINT64_C(1) << count) - 1) {
            *q++ = (uint8_t)first;
            *q++ = (uint8_t)count;
        } else {
            *q++ = (uint8_t)(first | 0x80);
            q = put_varint(q, x->mask);
        }
        q = put_varint(q, (uint64_t)(at - o));
        q = put_varint(q, x->len);
        memcpy(q, x->data, x->len);
        q += x->len;
    }
    free(o);
    return (size_t)(q - out);
}

int
meter_pack_decode(int64_t hour, const uint8_t *data, size_t len,
                  struct meter_pack_part **out, size_t *n)
{
    const uint8_t *p = data, *end = data + len;
    struct origin *o = NULL;
    struct meter_pack_part *parts = NULL;
    size_t np = 0, cap = 0;
    uint64_t no, v;
    *out = NULL;
    *n = 0;
    /* Each origin takes 2 bytes at least. */
    if (!get_varint(&p, end, &no) || no > (size_t)(end - p) / 2)
        return -1;
    o = malloc((no ? no : 1) * sizeof(*o));
    if (!o)
        return -1;
    int64_t prev = 0;
    for (uint64_t i = 0; i < no; i++) {
        uint64_t key, d;
        if (!get_varint(&p, end, &key) || key > INT64_MAX ||
            !get_varint(&p, end, &d))
            goto bad;
        prev = (int64_t)((uint64_t)prev + d);
        o[i] = (struct origin){prev, (int64_t)key};
    }
    while (p < end) {
        /* A first second past 59 fails the checks of the run or mask. */
        if (end - p < 3 || p[0] >= 60)
            goto bad;
        int64_t minute = hour * 60 + p[0];
        unsigned first = p[1] & 0x7f;
        uint64_t mask;
        bool run = !(p[1] & 0x80);
        p += 2;
        if (run) {
            unsigned count = *p++;
            if (count == 0 || first + count > 60)
                goto bad;
            mask = ((UINT64_C(1) << count) - 1) << first;
        } else if (!get_varint(&p, end, &mask) || !mask || mask & ~MASK60 ||
                   (unsigned)__builtin_ctzll(mask) != first) {
            goto bad;
        }
        uint64_t at;
        if (!get_varint(&p, end, &at) || at >= no || !get_varint(&p, end, &v) ||
            v > (uint64_t)(end - p) || v > METER_BLOCK_MAX)
            goto bad;
        if (np == cap) {
            size_t c = cap ? cap * 2 : 64;
            struct meter_pack_part *grown = realloc(parts, c * sizeof(*parts));
            if (!grown)
                goto bad;
            parts = grown;
            cap = c;
        }
        parts[np++] = (struct meter_pack_part){
            .minute = minute,
            .mask = mask,
            .key_id = o[at].key_id,
            .arrived_us = o[at].arrived_us,
            .data = p,
            .len = (size_t)v,
        };
        p += v;
    }
    free(o);
    *out = parts;
    *n = np;
    return 0;
bad:
    free(o);
    free(parts);
    return -1;
}
