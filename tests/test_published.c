/*
 * test_published.c - the providers' own worked examples through the
 * rater with the shipped book files, the provider's figure expected to
 * the cent (issue 27, item 1). Where a book cannot give the published
 * figure because the format lacks a rule, the test pins what the book
 * gives and the difference, line by line, so that the gap is measured
 * rather than hidden (docs/pricing.md, "Published examples").
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pricing.h"
#include "testutil.h"

#ifndef BOOKS_DIR
#define BOOKS_DIR "pricing/books"
#endif

#define JAN 1767225600LL /* 2026-01-01T00:00:00Z */
#define GIB (1ULL << 30)
#define MIB (1ULL << 20)

/* The shipped book's text, or NULL (the failure counted). */
static char *
book_text(const char *id, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s.json", BOOKS_DIR, id);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        test_failures++;
        return NULL;
    }
    char *text = calloc(1, 1 << 20);
    *len = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    return text;
}

static struct pricing_book *
parse(const char *text, size_t len, const char *origin)
{
    struct pricing_err e = {{0}};
    struct pricing_book *b = pricing_book_parse(text, len, origin, &e);
    if (!b) {
        fprintf(stderr, "%s\n", e.msg);
        test_failures++;
    }
    return b;
}

static struct pricing_book *
shipped(const char *id)
{
    size_t len;
    char *text = book_text(id, &len);
    struct pricing_book *b = text ? parse(text, len, id) : NULL;
    free(text);
    return b;
}

/*
 * An example's usage: count sandboxes of account "acme", each running
 * once for seconds at vcpu (1/10,000) and mem bytes, no disk, the i-th
 * starting at JAN + (i % spread) (sandboxes overlap in time, as requests
 * do). Rated as one pricing_run per sandbox; the one statement in *st.
 */
static int
rate_example(const struct pricing_book *b, uint64_t count, uint32_t seconds,
             uint32_t vcpu, uint64_t mem, int64_t spread,
             struct pricing_statement **st)
{
    struct pricing_err e = {{0}};
    struct pricing_rater *r = pricing_rater_new(b, &e);
    size_t n = 0;
    int rc = -1;
    *st = NULL;
    if (!r)
        goto out;
    for (uint64_t i = 0; i < count; i++) {
        char sandbox[32];
        snprintf(sandbox, sizeof(sandbox), "sb-%" PRIu64, i);
        struct pricing_run run = {.s = {.ts = JAN + (int64_t)(i % spread),
                                        .vcpu = vcpu,
                                        .cpu_used = vcpu,
                                        .mem_bytes = mem,
                                        .mem_used_bytes = mem},
                                  .n = seconds};
        struct pricing_block blk = {.account_id = "acme",
                                    .sandbox_id = sandbox,
                                    .runs = &run,
                                    .nruns = 1};
        if (pricing_rater_add(r, &blk, &e) < 0)
            goto out;
    }
    if (pricing_rater_finish(r, st, &n, &e) < 0)
        goto out;
    rc = n == 1 ? 0 : -1;
out:
    if (rc < 0)
        fprintf(stderr, "rating: %s\n", e.msg);
    pricing_rater_free(r);
    return rc;
}

/* The amount of st's line of kind, 6 decimals; "-" if it has none. */
static const char *
line(const struct pricing_statement *st, const char *kind)
{
    static char buf[4][64];
    static int k;
    char *out = buf[k++ % 4];
    for (size_t l = 0; l < st->nlines; l++)
        if (strcmp(st->lines[l].kind, kind) == 0) {
            pricing_dec_format(st->lines[l].amount, 6, out, 64);
            return out;
        }
    return "-";
}

static const char *
total(const struct pricing_statement *st)
{
    static char buf[64];
    pricing_dec_format(st->total, 2, buf, sizeof(buf));
    return buf;
}

/* E2B (providers.md): 8 vCPU + 4 GB for one hour = $0.468; E2B's "4 GB"
 * is 4 GiB at its per-GiB rate. Grants are not applied: the rater never
 * applies them. */
static void
e2b(void)
{
    struct pricing_book *b = shipped("e2b-hobby");
    struct pricing_statement *st;
    if (b && rate_example(b, 1, 3600, 80000, 4 * GIB, 1, &st) == 0) {
        CHECK_STR(line(st, "cpu"), "0.403200");
        CHECK_STR(line(st, "memory"), "0.064800");
        CHECK_STR(total(st), "0.47");
        pricing_statements_free(st, 1);
    }
    pricing_book_free(b);
}

/* Daytona (providers.json, providers.md): 2 vCPU + 4 GiB for 730 h =
 * $120.89. */
static void
daytona(void)
{
    struct pricing_book *b = shipped("daytona");
    struct pricing_statement *st;
    if (b && rate_example(b, 1, 730 * 3600, 20000, 4 * GIB, 1, &st) == 0) {
        CHECK_STR(line(st, "cpu"), "73.584000");
        CHECK_STR(line(st, "memory"), "47.304000");
        CHECK_STR(total(st), "120.89");
        pricing_statements_free(st, 1);
    }
    pricing_book_free(b);
}

/*
 * AWS Lambda's example 1 (the book's source, the AWS pricing
 * whitepaper; issue 27): 512 MB, 3M requests of 1 s in a month is
 * 1,500,000 GB-s (512 MB / 1024 = 0.5 GB: MiB and GiB), less the free
 * 400,000, 1,100,000 x $0.00001667 = $18.34; 3M requests less the free
 * 1M, 2M x $0.20 / M = $0.40; $18.74 in all.
 *
 * The book writes both allowances (400,000 GiB-s as a zero-rate first
 * tier, the 1M requests as per_run_free), so its runs line is 2M x
 * 0.0000002 = 0.40. One difference stays, pinned here: the example
 * rounds the published rate, $0.0000166667 (the book's, providers.json's),
 * to $0.00001667: 1,100,000 GiB-s x 0.0000166667 = 18.33337 where the
 * example says 18.34 (18.337). So the shipped book gives 18.73, and the
 * same book with the example's rounded rate gives 18.74: the provider's
 * figure to the cent.
 */
static void
aws_lambda(void)
{
    size_t len;
    char *text = book_text("aws-lambda", &len);
    struct pricing_book *b = text ? parse(text, len, "aws-lambda") : NULL;
    struct pricing_statement *st;
    if (b &&
        rate_example(b, 3000000, 1, 10000, 512 * MIB, 28 * 86400, &st) == 0) {
        CHECK(st->q.runs == 3000000);
        CHECK(st->q.mem_gross == (pricing_u128)1500000 * GIB);
        CHECK_STR(line(st, "memory"), "18.333370");
        CHECK_STR(line(st, "runs"), "0.400000");
        CHECK_STR(line(st, "cpu"), "-");
        CHECK_STR(total(st), "18.73");
        pricing_statements_free(st, 1);
    }
    pricing_book_free(b);

    /* The example's own rate: the shipped text with the rate replaced. */
    char *rate = text ? strstr(text, "\"0.0000166667\"") : NULL;
    CHECK(rate != NULL);
    if (rate) {
        memcpy(rate, "\"0.00001667\"  ", 14);
        b = parse(text, len, "aws-lambda (example's rate)");
        if (b && rate_example(b, 3000000, 1, 10000, 512 * MIB, 28 * 86400,
                              &st) == 0) {
            CHECK_STR(line(st, "memory"), "18.337000");
            CHECK_STR(line(st, "runs"), "0.400000");
            CHECK_STR(total(st), "18.74");
            pricing_statements_free(st, 1);
        }
        pricing_book_free(b);
    }
    free(text);
}

/*
 * CodeSandbox's published estimate (the SDK pricing page, "Estimating
 * your bill"): 80 Nano VMs x 3 h a day x 30 days = 72,000 credits; the
 * Scale plan includes 1,100, so 70,900 x $0.01486 = $1,053.57, plus the
 * $170 fee: $1,223.57. The Scale book gives it to the cent (its 1,100
 * credits are $16.346 of usage); the same month on the Build book is
 * 7,200 Nano-hours less Build's 400 credits ($5.944): 1,063.98, with 80
 * VMs at once past Build's 10.
 */
static void
codesandbox(void)
{
    const char *plan[] = {"codesandbox-scale", "codesandbox-build"};
    const char *want[] = {"1223.57", "1063.98"};
    for (int i = 0; i < 2; i++) {
        struct pricing_book *b = shipped(plan[i]);
        struct pricing_statement *st;
        /* 2,400 sessions of 3 h (80 VMs x 30 days); rating counts the
         * hours, not when in the month they fall. */
        if (b && rate_example(b, 2400, 3 * 3600, 20000, 4 * GIB, 30 * 86400,
                              &st) == 0) {
            CHECK(st->q.runs == 2400);
            CHECK_STR(line(st, "instance"), "1069.920000");
            CHECK_STR(total(st), want[i]);
            pricing_statements_free(st, 1);
        }
        pricing_book_free(b);
    }
}

/*
 * The size table (the credits page): each VM size is the smallest type
 * that fits a sandbox of its cores and memory, an hour at its credits x
 * $0.01486; one more GiB takes the next size.
 */
static void
codesandbox_sizes(void)
{
    static const struct {
        uint32_t cores;
        uint64_t gib;
        const char *hour;
    } size[] = {
        {2, 1, "0.074300"},    {2, 4, "0.148600"},   {4, 8, "0.297200"},
        {8, 16, "0.594400"},   {16, 32, "1.188800"}, {32, 64, "2.377600"},
        {64, 128, "4.755200"}, {2, 5, "0.297200"},   {33, 64, "4.755200"},
    };
    struct pricing_book *b = shipped("codesandbox-scale");
    for (size_t i = 0; b && i < sizeof(size) / sizeof(size[0]); i++) {
        struct pricing_statement *st;
        if (rate_example(b, 1, 3600, size[i].cores * 10000, size[i].gib * GIB,
                         1, &st) == 0) {
            CHECK_STR(line(st, "instance"), size[i].hour);
            pricing_statements_free(st, 1);
        }
    }
    pricing_book_free(b);
}

int
main(void)
{
    e2b();
    daytona();
    aws_lambda();
    codesandbox();
    codesandbox_sizes();
    return test_result();
}
