/*
 * rate_bench.c - how fast the rating engine consumes samples, on one
 * core, beside a plain memcpy of the same bytes in the same run.
 *
 * The input is a generated day of a fleet (default 1,000 sandboxes x
 * 86,400 s = 86.4 million samples), already sorted in memory as struct
 * pricing_second, so the figure is the engine's alone. Parsing JSON
 * samples is measured separately, on a slice, because it is a different
 * cost paid once at ingestion. Books of rules version 2 that take the
 * engine's general loop (steps, instance types, an allowance per
 * account) are rated in the same runs and reported beside it.
 *
 * usage: rate_bench [SANDBOXES] [REPEATS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "meter_sample.h"
#include "pricing.h"

#define DAY 86400
#define T0 1795996800LL /* 2026-11-30T00:00:00Z */

/* Keeps the compiler from dropping a memcpy whose result is unread. */
static void
barrier(void *p)
{
    __asm__ volatile("" : : "r"(p) : "memory");
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t
next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/*
 * One sandbox's day: a shape (idle coding agent, bursty evaluation run,
 * short code runs, browser agent with egress), pauses, idle streaks and
 * per-second noise, so the engine's branches are exercised as in a
 * real fleet.
 */
static void
generate(struct pricing_second *s, int k)
{
    int shape = k % 4;
    uint32_t vcpu = (uint32_t)(1 + k % 8) * 10000;
    uint64_t mem = (uint64_t)(1 + k % 4) << 30;
    uint64_t used_mem = mem / 2;
    bool paused = false;
    for (int i = 0; i < DAY; i++) {
        uint64_t r = next_rand();
        if (r % 1000 == 0)
            paused = !paused; /* pause and resume now and then */
        struct pricing_second *x = &s[i];
        x->ts = T0 + i;
        x->disk_bytes = (uint64_t)(5 + k % 20) << 30;
        x->egress_bytes = shape == 3 ? (r >> 20) % 200000 : 0;
        if (paused) {
            x->vcpu = x->cpu_used = 0;
            x->mem_bytes = x->mem_used_bytes = 0;
            continue;
        }
        uint32_t busy;
        switch (shape) {
        case 0: /* coding agent: mostly idle between LLM turns */
            busy = (r >> 32) % 100 < 10 ? vcpu : vcpu / 100;
            break;
        case 1: /* evaluation run: bursts at full load */
            busy = (i / 600) % 2 ? vcpu : vcpu / 50;
            break;
        case 2: /* short code runs */
            busy = (uint32_t)((r >> 32) % vcpu);
            break;
        default: /* browser agent */
            busy = vcpu / 4 + (uint32_t)((r >> 32) % (vcpu / 4));
        }
        x->vcpu = vcpu;
        x->cpu_used = busy;
        used_mem += (r & 0xff) == 0 ? 4096 : 0; /* drifts page by page */
        if (used_mem > mem)
            used_mem = mem / 2;
        x->mem_bytes = mem;
        x->mem_used_bytes = used_mem;
    }
}

static const char book_json[] =
    "{\"id\": \"bench\", \"currency\": \"USD\", \"effective_from\": "
    "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
    "\"0.000014\", \"per\": \"second\"}, \"memory\": {\"basis\": "
    "\"allocated\", \"unit\": \"GiB\", \"rate\": \"0.0000045\", \"per\": "
    "\"second\"}, \"storage\": {\"rate\": \"0.000108\", \"per\": \"hour\", "
    "\"included_gib\": \"10\"}, \"egress\": {\"rate\": \"0.05\"}, "
    "\"per_run\": \"0\", \"granularity_s\": 1, \"autopause\": "
    "{\"idle_below\": \"0.05\", \"after_s\": 600}}";

/* Books of rules version 2, rated second by second on the general loop:
 * allocation steps, paused storage free and an allowance per account;
 * instance types (no steps with them) and the same allowance. */
static const char steps_json[] =
    "{\"id\": \"bench-steps\", \"currency\": \"USD\", \"effective_from\": "
    "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
    "\"0.000014\", \"per\": \"second\", \"step\": \"0.25\"}, \"memory\": "
    "{\"basis\": \"used\", \"unit\": \"GiB\", \"rate\": \"0.0000045\", "
    "\"per\": \"second\", \"step\": \"0.5\"}, \"storage\": {\"rate\": "
    "\"0.000108\", \"per\": \"hour\", \"billed_when\": \"running\", "
    "\"included_per_account\": \"100\"}, \"egress\": {\"rate\": \"0.05\"}, "
    "\"per_run\": \"0\", \"autopause\": {\"idle_below\": \"0.05\", "
    "\"after_s\": 600}}";
static const char instances_json[] =
    "{\"id\": \"bench-instances\", \"currency\": \"USD\", "
    "\"effective_from\": \"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", "
    "\"rate\": \"0\", \"per\": \"second\"}, \"memory\": {\"basis\": "
    "\"allocated\", \"unit\": \"GiB\", \"rate\": \"0\", \"per\": \"second\"}, "
    "\"instances\": {\"unit\": \"GiB\", \"types\": [{\"name\": \"s\", "
    "\"vcpu\": \"2\", \"memory\": \"4\", \"rate\": \"0.0743\", \"per\": "
    "\"hour\"}, {\"name\": \"m\", \"vcpu\": \"4\", \"memory\": \"8\", "
    "\"rate\": \"0.1486\", \"per\": \"hour\"}, {\"name\": \"l\", \"vcpu\": "
    "\"8\", \"memory\": \"16\", \"rate\": \"0.2972\", \"per\": \"hour\"}]}, "
    "\"storage\": {\"rate\": \"0.000108\", \"per\": \"hour\", "
    "\"included_per_account\": \"100\"}, \"egress\": {\"rate\": \"0.05\"}, "
    "\"per_run\": \"0\", \"autopause\": {\"idle_below\": \"0.05\", "
    "\"after_s\": 600}}";

static struct pricing_book *
load_book(const char *json)
{
    struct pricing_err e = {{0}};
    struct pricing_book *book =
        pricing_book_parse(json, strlen(json), "bench", &e);
    if (!book) {
        fprintf(stderr, "rate_bench: %s\n", e.msg);
        exit(1);
    }
    return book;
}

static double
run_engine(const struct pricing_book *book, const struct pricing_second *all,
           int n, char *total, size_t total_len)
{
    struct pricing_err e = {{0}};
    struct pricing_rater *r = pricing_rater_new(book, &e);
    struct pricing_statement *inv = NULL;
    size_t ninv;
    char sandbox[32], account[32];
    double t = bench_now();
    for (int k = 0; k < n; k++) {
        snprintf(sandbox, sizeof(sandbox), "sb-%d", k);
        snprintf(account, sizeof(account), "acct-%d", k % 100);
        struct pricing_block b = {.account_id = account,
                                  .sandbox_id = sandbox,
                                  .s = all + (size_t)k * DAY,
                                  .n = DAY};
        if (pricing_rater_add(r, &b, &e) < 0) {
            fprintf(stderr, "rate_bench: %s\n", e.msg);
            exit(1);
        }
    }
    if (pricing_rater_finish(r, &inv, &ninv, &e) < 0) {
        fprintf(stderr, "rate_bench: %s\n", e.msg);
        exit(1);
    }
    t = bench_now() - t;
    struct pricing_dec sum = {0};
    for (size_t i = 0; i < ninv; i++)
        pricing_dec_add(sum, inv[i].total, &sum);
    pricing_dec_format(sum, 2, total, total_len);
    pricing_statements_free(inv, ninv);
    pricing_rater_free(r);
    return t;
}

/* JSON parsing and validation of a slice, one object per sample. */
static void
bench_parse(const struct pricing_second *all, size_t n)
{
    size_t cap = n * 200, len = 0;
    char *text = malloc(cap);
    for (size_t i = 0; i < n; i++) {
        const struct pricing_second *s = &all[i];
        if (s->vcpu)
            len += (size_t)snprintf(
                text + len, cap - len,
                "{\"ts\":%lld,\"account_id\":\"acct-1\",\"sandbox_id\":"
                "\"sb-1\",\"state\":\"running\",\"vcpu\":%u.%04u,"
                "\"cpu_used\":%u.%04u,\"mem_bytes\":%llu,"
                "\"mem_used_bytes\":%llu,\"disk_bytes\":%llu,"
                "\"egress_bytes\":%llu}\n",
                (long long)s->ts, s->vcpu / 10000, s->vcpu % 10000,
                s->cpu_used / 10000, s->cpu_used % 10000,
                (unsigned long long)s->mem_bytes,
                (unsigned long long)s->mem_used_bytes,
                (unsigned long long)s->disk_bytes,
                (unsigned long long)s->egress_bytes);
        else
            len += (size_t)snprintf(
                text + len, cap - len,
                "{\"ts\":%lld,\"account_id\":\"acct-1\",\"sandbox_id\":"
                "\"sb-1\",\"state\":\"paused\",\"disk_bytes\":%llu}\n",
                (long long)s->ts, (unsigned long long)s->disk_bytes);
    }
    double t = bench_now();
    size_t ok = 0;
    for (char *p = text, *end; p < text + len; p = end + 1) {
        end = memchr(p, '\n', (size_t)(text + len - p));
        json_error_t jerr;
        json_t *v = json_loadb(p, (size_t)(end - p), 0, &jerr);
        struct meter_sample m;
        struct meter_sample_err err;
        if (v && meter_sample_parse(v, &m, &err) == 0)
            ok++;
        json_decref(v);
    }
    t = bench_now() - t;
    printf("parse (NDJSON, jansson + validation): %zu of %zu samples in "
           "%.3f s = %.0f samples/s (%.1f MB/s)\n",
           ok, n, t, (double)n / t, (double)len / t / 1e6);
    free(text);
}

int
main(int argc, char **argv)
{
    int sandboxes = (int)bench_arg(argc, argv, 1, 1000, 10000000);
    int repeats = (int)bench_arg(argc, argv, 2, 3, 20);
    if (sandboxes < 1 || repeats < 1 || repeats > 20) {
        fprintf(stderr, "usage: rate_bench [SANDBOXES] [REPEATS]\n");
        return 2;
    }
    size_t n = (size_t)sandboxes * DAY;
    size_t bytes = n * sizeof(struct pricing_second);
    struct pricing_second *all = malloc(bytes);
    struct pricing_second *copy = malloc(bytes);
    if (!all || !copy) {
        fprintf(stderr, "rate_bench: cannot allocate 2 x %zu bytes\n", bytes);
        return 1;
    }
    printf("rate_bench: %d sandboxes x 86,400 s = %zu samples, %zu bytes "
           "each, %.2f GB in memory\n",
           sandboxes, n, sizeof(struct pricing_second), (double)bytes / 1e9);
    double t = bench_now();
    for (int k = 0; k < sandboxes; k++)
        generate(all + (size_t)k * DAY, k);
    printf("generated in %.1f s\n", bench_now() - t);

    struct pricing_book *book = load_book(book_json);
    struct pricing_book *v2[2] = {load_book(steps_json),
                                  load_book(instances_json)};
    static const char *const v2_name[2] = {
        "steps, paused storage free, allowance per account",
        "instance types, allowance per account"};
    double eng[20], cpy[20], eng2[2][20];
    char total[64] = "", total2[2][64] = {"", ""};
    /* Warm-up, untimed: the first pass over fresh pages is the kernel's
     * cost of faulting them in, not the engine's or memcpy's. */
    memcpy(copy, all, bytes);
    barrier(copy);
    run_engine(book, all, sandboxes, total, sizeof(total));
    for (int i = 0; i < repeats; i++) {
        t = bench_now();
        memcpy(copy, all, bytes);
        barrier(copy);
        cpy[i] = bench_now() - t;
        eng[i] = run_engine(book, all, sandboxes, total, sizeof(total));
        printf("run %d: memcpy %.3f s (%.0f M samples/s, %.2f GB/s); engine "
               "%.3f s (%.1f M samples/s, %.2f GB/s); invoices total %s\n",
               i + 1, cpy[i], (double)n / cpy[i] / 1e6,
               (double)bytes / cpy[i] / 1e9, eng[i], (double)n / eng[i] / 1e6,
               (double)bytes / eng[i] / 1e9, total);
        for (int b = 0; b < 2; b++) {
            eng2[b][i] =
                run_engine(v2[b], all, sandboxes, total2[b], sizeof(total2[b]));
            printf("       v2 book (%s): %.3f s (%.1f M samples/s); "
                   "invoices total %s\n",
                   v2_name[b], eng2[b][i], (double)n / eng2[b][i] / 1e6,
                   total2[b]);
        }
    }
    double me = bench_quantile(eng, (size_t)repeats, 0.5);
    double mc = bench_quantile(cpy, (size_t)repeats, 0.5);
    printf("median: engine %.1f M samples/s on one core; memcpy of the same "
           "bytes %.1f M samples/s; engine/memcpy %.2f; target 50 M "
           "samples/s\n",
           (double)n / me / 1e6, (double)n / mc / 1e6, mc / me);
    for (int b = 0; b < 2; b++) {
        double m2 = bench_quantile(eng2[b], (size_t)repeats, 0.5);
        printf("median, v2 book (%s): %.1f M samples/s; /memcpy %.2f\n",
               v2_name[b], (double)n / m2 / 1e6, mc / m2);
        pricing_book_free(v2[b]);
    }
    free(copy);

    bench_parse(all, n < 200000 ? n : 200000);
    pricing_book_free(book);
    free(all);
    return 0;
}
