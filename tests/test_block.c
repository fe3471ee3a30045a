/*
 * test_block.c - the storage encoding of (sandbox, minute) blocks: every
 * shape of column round-trips exactly, malformed data is refused, and
 * typical minutes stay small.
 */
#include <stdlib.h>
#include <string.h>

#include "meter_sample.h"
#include "testutil.h"

#define MINUTE 29933333LL

static uint64_t rng = 12345;

static uint64_t
rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Encodes the seconds of mask from s (indexed by second), decodes, and
 * checks that the same seconds come back; returns the encoded size. */
static size_t
round_trip(const struct pricing_second *s, uint64_t mask)
{
    struct pricing_second in[60], out[60];
    uint8_t buf[METER_BLOCK_MAX];
    size_t n = 0, got = 0;
    for (int i = 0; i < 60; i++)
        if (mask & ((uint64_t)1 << i))
            in[n++] = s[i];
    size_t len = meter_block_encode(in, n, buf);
    CHECK(len <= METER_BLOCK_MAX);
    CHECK(meter_block_decode(MINUTE, mask, buf, len, out, &got) == 0);
    CHECK(got == n);
    CHECK(memcmp(in, out, n * sizeof(*in)) == 0);
    /* Every cut of the data is refused, never read past. */
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);
        memcpy(copy, buf, cut);
        if (meter_block_decode(MINUTE, mask, copy, cut, out, &got) == 0) {
            fprintf(stderr, "a block cut to %zu of %zu bytes decoded\n", cut,
                    len);
            test_failures++;
        }
        free(copy);
    }
    return len;
}

static void
fill(struct pricing_second *s, int kind)
{
    for (int i = 0; i < 60; i++) {
        struct pricing_second *x = &s[i];
        memset(x, 0, sizeof(*x));
        x->ts = MINUTE * 60 + i;
        switch (kind) {
        case 0: /* constant */
            x->vcpu = 20000;
            x->cpu_used = 5000;
            x->mem_bytes = x->mem_used_bytes = 1ULL << 31;
            x->disk_bytes = 10ULL << 30;
            break;
        case 1: /* noisy cpu, drifting memory, bursts of egress */
            x->vcpu = 40000;
            x->cpu_used = (uint32_t)(rnd() % 40001);
            x->mem_bytes = 4ULL << 30;
            x->mem_used_bytes = (1ULL << 30) + (uint64_t)(i / 7) * 4096;
            x->disk_bytes = 5ULL << 30;
            x->egress_bytes = i % 13 < 3 ? rnd() % 2000000 : 0;
            break;
        case 2: /* paused and running mixed */
            if (i % 5 != 0) {
                x->vcpu = 10000;
                x->cpu_used = (uint32_t)(rnd() % 10001);
                x->mem_bytes = x->mem_used_bytes = 1ULL << 30;
            }
            x->disk_bytes = 1ULL << 30;
            break;
        case 4: /* a noisy fleet's: every second, CPU by the percent of 8
                   vCPUs, memory in use a few pages up or down */
            x->vcpu = 80000;
            x->cpu_used = (uint32_t)(rnd() % 101 * 800);
            x->mem_bytes = 8ULL << 30;
            x->mem_used_bytes = (i ? s[i - 1].mem_used_bytes : 2ULL << 30) +
                                (rnd() % 2 ? 4096 : -4096) * (1 + rnd() % 8);
            x->disk_bytes = 5ULL << 30;
            x->egress_bytes = i % 20 < 2 ? 1000 + rnd() % 2000000 : 0;
            break;
        case 5: /* CPU anywhere in 4 vCPUs, to the 1/10,000 */
            x->vcpu = 40000;
            x->cpu_used = (uint32_t)(rnd() % 40001);
            x->mem_bytes = x->mem_used_bytes = 1ULL << 30;
            break;
        case 6: /* offsets from the least value past 2^63 (packed) */
            x->mem_bytes = i % 2 ? 0xc000000000000000ULL : 1;
            x->disk_bytes = i % 3 ? UINT64_MAX : 0;
            break;
        default: /* extremes */
            x->vcpu = UINT32_MAX;
            x->cpu_used = i % 2 ? UINT32_MAX : 0;
            x->mem_bytes = UINT64_MAX;
            x->mem_used_bytes = i % 2 ? UINT64_MAX : 0;
            x->disk_bytes = UINT64_MAX - (uint64_t)i;
            x->egress_bytes = i % 2 ? 0 : UINT64_MAX;
        }
    }
}

/* Blocks of values drawn from the edges of the range, each column its
 * own few values: every one round-trips. */
static void
test_edges(void)
{
    static const uint64_t pool[] = {0,
                                    1,
                                    2,
                                    4096,
                                    UINT32_MAX,
                                    (uint64_t)INT64_MAX,
                                    (uint64_t)INT64_MAX + 1,
                                    (uint64_t)INT64_MAX + 2,
                                    0xc000000000000000ULL,
                                    UINT64_MAX - 1,
                                    UINT64_MAX};
    const size_t npool = sizeof(pool) / sizeof(pool[0]);
    size_t bad = 0;
    for (int k = 0; k < 50000; k++) {
        struct pricing_second in[60], out[60];
        uint8_t buf[METER_BLOCK_MAX];
        size_t n = 1 + rnd() % 60, got;
        uint64_t picks[6][3];
        for (int c = 0; c < 6; c++)
            for (int j = 0; j < 3; j++)
                picks[c][j] = pool[rnd() % npool];
        memset(in, 0, sizeof(in));
        for (size_t i = 0; i < n; i++) {
            in[i].ts = MINUTE * 60 + (int64_t)i;
            in[i].vcpu = (uint32_t)picks[0][rnd() % 3];
            in[i].cpu_used = (uint32_t)picks[1][rnd() % 3];
            in[i].mem_bytes = picks[2][rnd() % 3];
            in[i].mem_used_bytes = picks[3][rnd() % 3];
            in[i].disk_bytes = picks[4][rnd() % 3];
            in[i].egress_bytes = picks[5][rnd() % 3];
        }
        size_t len = meter_block_encode(in, n, buf);
        uint64_t mask = n == 64 ? UINT64_MAX : ((uint64_t)1 << n) - 1;
        if (len > METER_BLOCK_MAX ||
            meter_block_decode(MINUTE, mask, buf, len, out, &got) != 0 ||
            got != n || memcmp(in, out, n * sizeof(*in)) != 0)
            bad++;
    }
    CHECK(bad == 0);
}

/* Packs (pack.c): parts of every shape come back as they went in, in
 * their order; a pack cut anywhere decodes to a prefix of its parts or
 * is refused; each malformed field is refused. */
static void
test_packs(void)
{
    enum { HOUR = MINUTE / 60, N = 40 };
    static uint8_t blob[N][64];
    struct meter_pack_part in[N];
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + rnd() % N;
        for (size_t i = 0; i < n; i++) {
            uint64_t mask = rnd() & ((1ULL << 60) - 1);
            if (rnd() % 2) { /* a run of seconds */
                unsigned first = (unsigned)(rnd() % 60);
                unsigned count = 1 + (unsigned)(rnd() % (60 - first));
                mask = ((count == 64 ? 0 : (1ULL << count)) - 1) << first;
            }
            if (!mask)
                mask = 1ULL << 59;
            size_t len = rnd() % 64;
            for (size_t k = 0; k < len; k++)
                blob[i][k] = (uint8_t)rnd();
            in[i] = (struct meter_pack_part){
                .minute = HOUR * 60 + (int64_t)(rnd() % 60),
                .mask = mask,
                /* Few origins, shared; arrivals back and forth. */
                .key_id = (int64_t)(rnd() % 3) * 1000000007LL,
                .arrived_us = 1767225600000000LL +
                              (int64_t)(rnd() % 4) * 60000000LL -
                              (int64_t)(rnd() % 2) * 999,
                .data = blob[i],
                .len = len,
            };
        }
        uint8_t *buf = malloc(meter_pack_bound(in, n));
        size_t len = meter_pack_encode(HOUR, in, n, buf);
        CHECK(len > 0 && len <= meter_pack_bound(in, n));
        struct meter_pack_part *out;
        size_t got;
        CHECK(meter_pack_decode(HOUR, buf, len, &out, &got) == 0);
        CHECK(got == n);
        for (size_t i = 0; i < n && i < got; i++)
            CHECK(out[i].minute == in[i].minute && out[i].mask == in[i].mask &&
                  out[i].key_id == in[i].key_id &&
                  out[i].arrived_us == in[i].arrived_us &&
                  out[i].len == in[i].len &&
                  memcmp(out[i].data, in[i].data, in[i].len) == 0);
        free(out);
        for (size_t cut = 0; cut < len; cut++) {
            uint8_t *copy = malloc(cut ? cut : 1);
            memcpy(copy, buf, cut);
            if (meter_pack_decode(HOUR, copy, cut, &out, &got) == 0) {
                CHECK(got < n);
                for (size_t i = 0; i < got; i++)
                    CHECK(out[i].mask == in[i].mask && out[i].len == in[i].len);
                free(out);
            }
            free(copy);
        }
        free(buf);
    }

    /* One origin (key 5, arrival 4), then one part; each field broken. */
    struct meter_pack_part *out;
    size_t got;
    const uint8_t good[] = {1, 5, 4, 7, 3, 10, 0, 2, 0xAA, 0xBB};
    CHECK(meter_pack_decode(HOUR, good, sizeof(good), &out, &got) == 0);
    CHECK(got == 1 && out[0].minute == HOUR * 60 + 7 &&
          out[0].mask == 0x3FFULL << 3 && out[0].key_id == 5 &&
          out[0].arrived_us == 4 && out[0].len == 2);
    free(out);
    static const struct {
        size_t at;
        uint8_t v;
    } bad[] = {
        {0, 2},  /* an origin more than there are */
        {3, 60}, /* minute 60 */
        {4, 60}, /* first second 60 */
        {5, 0},  /* a run of no second */
        {5, 58}, /* a run past the minute's end */
        {6, 1},  /* an origin that is not there */
        {7, 3},  /* data longer than what is left */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint8_t b[sizeof(good)];
        memcpy(b, good, sizeof(b));
        b[bad[i].at] = bad[i].v;
        if (meter_pack_decode(HOUR, b, sizeof(b), &out, &got) == 0) {
            fprintf(stderr, "a pack with byte %zu = %u decoded\n", bad[i].at,
                    bad[i].v);
            test_failures++;
            free(out);
        }
    }
    /* The boundaries they break hold: minute 59, second 59, a run of
     * 60, a run to the minute's end. */
    const uint8_t edges[][10] = {
        {1, 5, 4, 59, 3, 10, 0, 2, 0xAA, 0xBB},
        {1, 5, 4, 7, 59, 1, 0, 2, 0xAA, 0xBB},
        {1, 5, 4, 7, 0, 60, 0, 2, 0xAA, 0xBB},
        {1, 5, 4, 7, 3, 57, 0, 2, 0xAA, 0xBB},
    };
    for (size_t i = 0; i < 4; i++) {
        CHECK(meter_pack_decode(HOUR, edges[i], 10, &out, &got) == 0 &&
              got == 1);
        free(out);
    }
    /* A mask of scattered seconds: its first second must be its own. */
    const uint8_t scattered[] = {1, 5, 4, 7, 0x80 | 1, 0x0A, 0, 0};
    CHECK(meter_pack_decode(HOUR, scattered, sizeof(scattered), &out, &got) ==
              0 &&
          got == 1 && out[0].mask == 0x0A);
    free(out);
    uint8_t wrong[sizeof(scattered)];
    memcpy(wrong, scattered, sizeof(wrong));
    wrong[4] = 0x80 | 2;
    CHECK(meter_pack_decode(HOUR, wrong, sizeof(wrong), &out, &got) < 0);
}

int
main(void)
{
    test_edges();
    test_packs();
    struct pricing_second s[60];
    const uint64_t all = (1ULL << 60) - 1;
    static const uint64_t masks[] = {1, 1ULL << 59, 0x5555555555ULL,
                                     (1ULL << 60) - 1, 0x0F0F0F0F0F0F0F0ULL};
    size_t sizes[8];
    for (int kind = 0; kind < 8; kind++) {
        fill(s, kind);
        for (size_t m = 0; m < sizeof(masks) / sizeof(masks[0]); m++)
            round_trip(s, masks[m]);
        sizes[kind] = round_trip(s, all);
    }
    /* A constant minute is a few bytes a column; a noisy one a few bytes
     * a second (cpu_used). The packed modes: a CPU by the percent is 7
     * bits a second (its scale the step; as deltas in varints, 3 bytes),
     * memory moving 1-8 pages 5 (zigzag by the page; 2-3 bytes), so with
     * six seconds of egress, 4 bytes each, 2.8 bytes a second at most; a
     * CPU to the 1/10,000 of 4 vCPUs is 16 bits a second. */
    CHECK(sizes[0] <= 6 * 12);
    CHECK(sizes[1] <= 60 * 5);
    CHECK(sizes[4] <= 170);
    CHECK(sizes[5] <= 60 * 2 + 6 * 8);
    /* Two values far apart, packed at a scale of their distance: a bit
     * a second each. */
    CHECK(sizes[6] <= 2 * (4 + 9 + 9 + 8) + 4 * 3);
    /* One second: each column a mode byte and its value (deltas, one
     * byte shorter than a run of 1): 80000 and 40000 take 3 bytes, the
     * GiBs 5, 1500 2. */
    memset(s, 0, sizeof(s));
    s[0] = (struct pricing_second){.ts = MINUTE * 60,
                                   .vcpu = 80000,
                                   .cpu_used = 40000,
                                   .mem_bytes = 8ULL << 30,
                                   .mem_used_bytes = 2ULL << 30,
                                   .disk_bytes = 5ULL << 30,
                                   .egress_bytes = 1500};
    uint8_t one[METER_BLOCK_MAX];
    CHECK(meter_block_encode(s, 1, one) == 6 + 3 + 3 + 5 + 5 + 5 + 2);
    fprintf(stderr,
            "full minutes: constant %zu bytes, noisy %zu, mixed %zu, "
            "extreme %zu, noisy fleet %zu, fine CPU %zu\n",
            sizes[0], sizes[1], sizes[2], sizes[3], sizes[4], sizes[5]);

    /* Malformed: an unknown mode, trailing bytes, a bad mask, a run
     * longer than the seconds, a value past 32 bits for vcpu. */
    struct pricing_second out[60];
    size_t n;
    uint8_t buf[METER_BLOCK_MAX];
    fill(s, 0);
    size_t len = meter_block_encode(s, 60, buf);
    buf[0] = 7;
    CHECK(meter_block_decode(MINUTE, all, buf, len, out, &n) == -1);
    len = meter_block_encode(s, 60, buf);
    buf[len] = 0;
    CHECK(meter_block_decode(MINUTE, all, buf, len + 1, out, &n) == -1);
    CHECK(meter_block_decode(MINUTE, 0, buf, len, out, &n) == -1);
    CHECK(meter_block_decode(MINUTE, 1ULL << 60, buf, len, out, &n) == -1);
    CHECK(meter_block_decode(MINUTE, 1, buf, len, out, &n) == -1);
    static const uint8_t wide[] = {0, 1, 0x80, 0x80, 0x80, 0x80, 0x10};
    CHECK(meter_block_decode(MINUTE, 1, wide, sizeof(wide), out, &n) == -1);

    /* Packed: two seconds, vcpu 5 and 7 as offsets from 5 by 2 (width 1,
     * code 0 then 1: the byte 0x02), the other columns runs of 0. A
     * width past 64, a width with no scale, or bits left over in the
     * last byte are refused; the well-formed block decodes. */
    const uint64_t two = 3;
    uint8_t packed[] = {3, 5, 2, 1, 0x02, 0, 2, 0, 0, 2,
                        0, 0, 2, 0, 0,    2, 0, 0, 2, 0};
    CHECK(meter_block_decode(MINUTE, two, packed, sizeof(packed), out, &n) ==
          0);
    CHECK(n == 2 && out[0].vcpu == 5 && out[1].vcpu == 7);
    packed[4] = 0x06; /* a bit past the two codes */
    CHECK(meter_block_decode(MINUTE, two, packed, sizeof(packed), out, &n) ==
          -1);
    packed[4] = 0x02;
    packed[3] = 65;
    CHECK(meter_block_decode(MINUTE, two, packed, sizeof(packed), out, &n) ==
          -1);
    packed[3] = 1;
    packed[2] = 0;
    CHECK(meter_block_decode(MINUTE, two, packed, sizeof(packed), out, &n) ==
          -1);
    /* Packed deltas: 7 then 5, the delta -2 by 2 (zigzag code 1). */
    uint8_t pdeltas[] = {2, 7, 2, 1, 0x01, 0, 2, 0, 0, 2,
                         0, 0, 2, 0, 0,    2, 0, 0, 2, 0};
    CHECK(meter_block_decode(MINUTE, two, pdeltas, sizeof(pdeltas), out, &n) ==
          0);
    CHECK(n == 2 && out[0].vcpu == 7 && out[1].vcpu == 5);
    return test_result();
}
