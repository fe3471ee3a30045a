/*
 * test_body.c - the body forms of POST /v1/samples without HTTP: a JSON
 * array, NDJSON and the columnar object, each accepted and refused with
 * the index, field and value of the problem; the batch cap at its
 * boundary; the problems cap; and the columnar writer read back. All of
 * it with the fast path on and off; then bodies mutated at random, read
 * both ways, must give the same samples and the same problems.
 */
#include <stdlib.h>
#include <string.h>

#include "meter_sample.h"
#include "testutil.h"

#define P(ts, sb, disk)                                                        \
    "{\"ts\":" #ts ",\"account_id\":\"a\",\"sandbox_id\":\"" sb                \
    "\",\"state\":\"paused\",\"disk_bytes\":" #disk "}"

struct parsed {
    struct meter_sample *s;
    size_t n;
    struct meter_problems p;
};

static void
parse(const char *body, bool ndjson, size_t max, struct parsed *out)
{
    memset(&out->p, 0, sizeof(out->p));
    CHECK(meter_body_parse(body, strlen(body), ndjson, max, &out->s, &out->n,
                           &out->p) == 0);
}

/* Whether problem i is (index, field, reason substring). */
static bool
problem_is(const struct parsed *x, size_t i, size_t index, const char *field,
           const char *reason)
{
    if (i >= x->p.n) {
        fprintf(stderr, "no problem %zu (of %zu)\n", i, x->p.n);
        return false;
    }
    const struct meter_problem *q = &x->p.items[i];
    bool ok = q->index == index && strcmp(q->err.field, field) == 0 &&
              strstr(q->err.reason, reason) != NULL;
    if (!ok)
        fprintf(stderr,
                "problem %zu: index %zu field '%s' value '%s' "
                "reason '%s'\n",
                i, q->index, q->err.field, q->err.value, q->err.reason);
    return ok;
}

static void
test_array(void)
{
    struct parsed x;
    parse("[" P(1, "s", 5) "," P(2, "s", 6) "]", false, 10, &x);
    CHECK(x.n == 2 && x.p.total == 0);
    CHECK(x.n == 2 && x.s[1].s.ts == 2 && x.s[1].s.disk_bytes == 6);
    free(x.s);
    parse("[" P(1, "s", 5) "," P(2, "s", -6) "," P(3, "s", -1) "]", false, 10,
          &x);
    CHECK(x.n == 3 && x.p.total == 2);
    CHECK(problem_is(&x, 0, 1, "disk_bytes", ">= 0"));
    CHECK(problem_is(&x, 1, 2, "disk_bytes", ">= 0"));
    CHECK_STR(x.p.items[0].err.value, "-6");
    free(x.s);
    parse("[" P(1, "s", 5) ",", false, 10, &x);
    /* At the sample where the text ends, with its place. */
    CHECK(x.p.total == 1 && problem_is(&x, 0, 1, "(json)", ""));
    CHECK(strstr(x.p.items[0].err.value, "line 1 column") != NULL);
    free(x.s);
    parse("[" P(1, "s", 5) "," P(1, "s", 5) "]", false, 10, &x);
    CHECK(x.n == 2 && x.p.total == 0); /* repeats are the store's to judge */
    free(x.s);
    parse("\"samples\"", false, 10, &x);
    CHECK(x.p.total == 1 && problem_is(&x, 0, 0, "(body)", "must be an array"));
    free(x.s);
    parse("[{\"ts\":1,\"ts\":2}]", false, 10, &x); /* duplicate keys */
    CHECK(x.p.total == 1 && problem_is(&x, 0, 0, "(json)", "duplicate"));
    free(x.s);
    parse("{\"ts\":1}", false, 10, &x); /* an object is the columnar form */
    CHECK(x.p.total == 1 && problem_is(&x, 0, 0, "ts", "unknown key"));
    free(x.s);
    parse("[" P(1, "s", 5) "] [", false, 10, &x);
    CHECK(x.p.total == 1 && problem_is(&x, 0, 1, "(json)", "nothing may"));
    free(x.s);
    /* Memory follows the batch, not the body: an element past 64 KiB is
     * refused before it is parsed, whatever it holds. */
    size_t big = 70000;
    char *huge = malloc(big + 8);
    memcpy(huge, "[[", 2);
    for (size_t i = 2; i < big; i += 2)
        memcpy(huge + i, "0,", 2);
    memcpy(huge + big, "0]]", 4);
    parse(huge, false, 10, &x);
    CHECK(x.p.total == 1 &&
          problem_is(&x, 0, 0, "(body)", "larger than 65536"));
    free(x.s);
    /* Many tiny elements stop at the batch's cap. */
    for (size_t i = 1; i < big; i += 3)
        memcpy(huge + i, "{},", 3);
    huge[0] = '[';
    huge[big - big % 3 + 1] = '\0';
    parse(huge, false, 10, &x);
    CHECK(x.n == 10 && problem_is(&x, x.p.n - 1, 10, "(body)", "more samples"));
    free(x.s);
    free(huge);
    parse("[]", false, 10, &x);
    CHECK(x.n == 0 && x.p.total == 0);
    free(x.s);
}

static void
test_ndjson(void)
{
    struct parsed x;
    parse(P(1, "s", 5) "\n\n  \r\n" P(2, "s", 6) "\n", true, 10, &x);
    CHECK(x.n == 2 && x.p.total == 0);
    free(x.s);
    /* No newline after the last line; the index counts samples, not
     * lines. */
    parse(P(1, "s", 5) "\n\n" P(2, "s", -6), true, 10, &x);
    CHECK(x.n == 2 && x.p.total == 1);
    CHECK(problem_is(&x, 0, 1, "disk_bytes", ">= 0"));
    free(x.s);
    parse(P(1, "s", 5) "\n{\"ts\":\n" P(2, "s", 6), true, 10, &x);
    CHECK(x.p.total == 1 && problem_is(&x, 0, 1, "(json)", ""));
    CHECK(strncmp(x.p.items[0].err.value, "line 2 column", 13) == 0);
    free(x.s);
}

/* vcpu and cpu_used with more than 4 decimals, read from the text: a
 * double would round 1.00000000000000001 to 1. Trailing zeros do not
 * count and an exponent shifts the decimals; strings are not numbers. */
static void
test_decimals(void)
{
#define R(vcpu, used)                                                          \
    "{\"ts\":1,\"account_id\":\"a\",\"sandbox_id\":\"1.000001\","              \
    "\"state\":\"running\",\"vcpu\":" vcpu ",\"cpu_used\":" used               \
    ",\"mem_bytes\":0,\"disk_bytes\":0}"
    static const struct {
        const char *body, *field, *value;
    } cases[] = {
        {"[" R("1.00000000000000001", "0") "]", "vcpu", "1.00000000000000001"},
        {"[" R("2", "0.00001") "]", "cpu_used", "0.00001"},
        {"[" R("2", "1e-5") "]", "cpu_used", "1e-5"},
        {"[" R("2", "0.12345") "]", "cpu_used", "0.12345"},
        {"{\"sandboxes\":[{\"account_id\":\"a\",\"sandbox_id\":\"s\","
         "\"start\":0,\"seconds\":2,\"state\":\"running\",\"vcpu\":2,"
         "\"cpu_used\":[0.5,0.123456],\"mem_bytes\":0,\"disk_bytes\":0}]}",
         "cpu_used", "0.123456"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct parsed x;
        parse(cases[i].body, false, 10, &x);
        CHECK(x.p.total == 1 &&
              problem_is(&x, 0, 0, cases[i].field, "more than 4 decimals"));
        CHECK(x.p.total == 1 &&
              strcmp(x.p.items[0].err.value, cases[i].value) == 0);
        free(x.s);
    }
    /* Exactly 4, trailing zeros (of the fraction or not), an exponent,
     * zero: taken. */
    struct parsed x;
    parse("[" R("1.2345", "0.50000") "," R("1.2345e1", "1.5e-3") "," R(
              "10000e-5", "0e-9") "]",
          false, 10, &x);
    CHECK(x.n == 3 && x.p.total == 0);
    CHECK(x.n == 3 && x.s[0].s.vcpu == 12345 && x.s[0].s.cpu_used == 5000 &&
          x.s[1].s.vcpu == 123450 && x.s[1].s.cpu_used == 15 &&
          x.s[2].s.vcpu == 1000 && x.s[2].s.cpu_used == 0);
    free(x.s);
    /* A refused decimal does not hide the problems after it. */
    parse("[" R("2", "0.123456") ",{\"ts\":-1}]", false, 10, &x);
    CHECK(x.p.total >= 2 &&
          problem_is(&x, 0, 0, "cpu_used", "more than 4 decimals") &&
          x.p.items[1].index == 1);
    free(x.s);
#undef R
}

/* A columnar sandbox holding more values than 86,400 seconds of every
 * field is refused before any tree is built; one of 86,400 seconds with
 * every per-second field an array is taken. */
static void
test_columnar_bounds(void)
{
    struct parsed x;
    struct meter_buf b = {0};
    meter_buf_str(&b, "{\"sandboxes\":[{\"account_id\":\"a\",\"sandbox_id\":"
                      "\"s\",\"start\":0,\"seconds\":1,\"state\":\"paused\","
                      "\"disk_bytes\":[0");
    for (int i = 0; i < 86400 * (METER_NFIELDS + 1) + 100; i++)
        meter_buf_str(&b, ",0");
    meter_buf_str(&b, "]}]}");
    parse(b.p, false, 200000, &x);
    CHECK(x.p.total == 1 && problem_is(&x, 0, 0, "(body)", "more values"));
    free(x.s);
    meter_buf_release(&b);
    /* Nested empty arrays: few commas, a node each; the form nests three
     * deep at most. */
    meter_buf_str(&b, "{\"sandboxes\":[{\"cpu_used\":[[[[]]]]}]}");
    parse(b.p, false, 200000, &x);
    CHECK(x.p.total == 1 && problem_is(&x, 0, 0, "(body)", "nests deeper"));
    free(x.s);
    meter_buf_release(&b);

    static const char *const arrays[] = {"cpu_used", "disk_bytes",
                                         "egress_bytes", "mem_used_bytes"};
    meter_buf_str(&b, "{\"sandboxes\":[{\"account_id\":\"a\",\"sandbox_id\":"
                      "\"s\",\"start\":0,\"seconds\":86400,"
                      "\"state\":\"running\",\"vcpu\":1,"
                      "\"mem_bytes\":9223372036854775807");
    for (size_t f = 0; f < 4; f++) {
        meter_buf_printf(&b, ",\"%s\":[", arrays[f]);
        for (int i = 0; i < 86400; i++)
            meter_buf_str(&b, i ? ",1" : "1");
        meter_buf_str(&b, "]");
    }
    meter_buf_str(&b, "}]}");
    parse(b.p, false, 200000, &x);
    CHECK(x.n == 86400 && x.p.total == 0);
    if (x.p.total)
        fprintf(stderr, "%s: %s %s\n", x.p.items[0].err.field,
                x.p.items[0].err.value, x.p.items[0].err.reason);
    free(x.s);
    meter_buf_release(&b);
}

/* A problem's texts are cut at a character, never inside one. */
static void
test_problem_cut(void)
{
    struct meter_problems p = {0};
    char value[256];
    memset(value, 'a', 300 > sizeof(value) ? sizeof(value) : 300);
    value[sizeof(value) - 1] = '\0';
    size_t kept = sizeof(((struct meter_sample_err *)0)->value) - 1;
    /* A two-byte character astride the cut. */
    memcpy(value + kept - 1, "\xc3\xa9\xc3\xa9", 4);
    meter_problems_add(&p, 0, "f", value, "r");
    size_t n = strlen(p.items[0].err.value);
    CHECK(n == kept - 1); /* the split character left out */
    CHECK((unsigned char)p.items[0].err.value[n - 1] == 'a');
}

static void
test_columnar(void)
{
    struct parsed x;
    parse("{\"sandboxes\":[{\"account_id\":\"a\",\"sandbox_id\":\"s\","
          "\"start\":100,\"seconds\":3,\"state\":[\"running\",\"paused\","
          "\"running\"],\"vcpu\":2,\"cpu_used\":[0.5,0,2],\"mem_bytes\":64,"
          "\"disk_bytes\":[1,2,3],\"egress_bytes\":9},"
          "{\"account_id\":\"b\",\"sandbox_id\":\"t\","
          "\"start\":\"1970-01-01T00:01:00Z\",\"seconds\":1,"
          "\"state\":\"paused\",\"disk_bytes\":0}]}",
          false, 10, &x);
    CHECK(x.n == 4 && x.p.total == 0);
    if (x.n == 4) {
        CHECK(x.s[0].s.ts == 100 && x.s[2].s.ts == 102 && x.s[3].s.ts == 60);
        CHECK(x.s[0].s.vcpu == 20000 && x.s[0].s.cpu_used == 5000);
        CHECK(x.s[1].s.vcpu == 0 && x.s[1].s.disk_bytes == 2);
        CHECK(x.s[2].s.cpu_used == 20000 && x.s[2].s.egress_bytes == 9);
        CHECK_STR(x.s[3].account_id, "b");
    }
    free(x.s);

    static const struct {
        const char *body, *field, *reason;
        size_t index;
    } bad[] = {
        {"{\"sandboxes\":[],\"extra\":1}", "extra", "unknown key", 0},
        {"{\"sandboxes\":{}}", "sandboxes", "must be an array", 0},
        {"{\"sandboxes\":[1]}", "sandboxes[0]", "must be an object", 0},
        {"{\"sandboxes\":[{\"account_id\":\"a\",\"sandbox_id\":\"s\","
         "\"start\":0,\"seconds\":0,\"state\":\"paused\",\"disk_bytes\":0}]}",
         "seconds", "from 1 to 86400", 0},
        {"{\"sandboxes\":[{\"account_id\":\"a\",\"sandbox_id\":\"s\","
         "\"start\":0,\"seconds\":86401,\"state\":\"paused\","
         "\"disk_bytes\":0}]}",
         "seconds", "from 1 to 86400", 0},
        {"{\"sandboxes\":[{\"account_id\":\"a\",\"sandbox_id\":\"s\","
         "\"start\":-1,\"seconds\":1,\"state\":\"paused\",\"disk_bytes\":0}]}",
         "start", "must be Unix seconds", 0},
        {"{\"sandboxes\":[{\"account_id\":\"a\",\"sandbox_id\":\"s\","
         "\"start\":\"1767225600\",\"seconds\":1,\"state\":\"paused\","
         "\"disk_bytes\":0}]}",
         "start", "must be Unix seconds", 0},
        {"{\"sandboxes\":[{\"account_id\":\"a\",\"sandbox_id\":\"s\","
         "\"start\":0,\"seconds\":2,\"state\":\"paused\","
         "\"disk_bytes\":[1,2,3]}]}",
         "disk_bytes", "array length differs", 0},
        {"{\"sandboxes\":[{\"account_id\":\"a\",\"sandbox_id\":\"s\","
         "\"start\":0,\"seconds\":1,\"ts\":5,\"state\":\"paused\","
         "\"disk_bytes\":0}]}",
         "sandboxes[0].ts", "unknown field", 0},
        /* The index of a per-second problem counts every sample before
         * it, across sandboxes. */
        {"{\"sandboxes\":[{\"account_id\":\"a\",\"sandbox_id\":\"s\","
         "\"start\":0,\"seconds\":2,\"state\":\"paused\",\"disk_bytes\":0},"
         "{\"account_id\":\"a\",\"sandbox_id\":\"t\",\"start\":0,"
         "\"seconds\":2,\"state\":\"paused\",\"disk_bytes\":[0,-1]}]}",
         "disk_bytes", ">= 0", 3},
        {"{\"sandboxes\":[{\"account_id\":\"a\",\"sandbox_id\":\"s\","
         "\"start\":253402300799,\"seconds\":2,\"state\":\"paused\","
         "\"disk_bytes\":0}]}",
         "ts", "out of range", 1},
        {"{\"sandboxes\":[]", "(json)", "'}' expected", 0},
        {"{\"samples\":[]}", "samples", "unknown key", 0},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        parse(bad[i].body, false, 200000, &x);
        if (!(x.p.total >= 1 &&
              problem_is(&x, 0, bad[i].index, bad[i].field, bad[i].reason))) {
            fprintf(stderr, "columnar case %zu: %s\n", i, bad[i].body);
            test_failures++;
        }
        free(x.s);
    }
    /* 86400 seconds is allowed. */
    parse("{\"sandboxes\":[{\"account_id\":\"a\",\"sandbox_id\":\"s\","
          "\"start\":0,\"seconds\":86400,\"state\":\"paused\","
          "\"disk_bytes\":0}]}",
          false, 100000, &x);
    CHECK(x.n == 86400 && x.p.total == 0);
    if (x.p.total)
        fprintf(stderr, "%s: %s %s\n", x.p.items[0].err.field,
                x.p.items[0].err.value, x.p.items[0].err.reason);
    free(x.s);
}

static void
test_caps(void)
{
    struct parsed x;
    /* max samples exactly: accepted; one more: refused, at its index. */
    parse("[" P(1, "s", 0) "," P(2, "s", 0) "," P(3, "s", 0) "]", false, 3, &x);
    CHECK(x.n == 3 && x.p.total == 0);
    free(x.s);
    parse("[" P(1, "s", 0) "," P(2, "s", 0) "," P(3, "s", 0) "]", false, 2, &x);
    CHECK(x.p.total == 1 &&
          problem_is(&x, 0, 2, "(body)", "more samples than a batch"));
    CHECK_STR(x.p.items[0].err.value, "2");
    free(x.s);
    parse("{\"sandboxes\":[{\"account_id\":\"a\",\"sandbox_id\":\"s\","
          "\"start\":0,\"seconds\":5,\"state\":\"paused\",\"disk_bytes\":0}]}",
          false, 4, &x);
    CHECK(x.p.total == 1 && problem_is(&x, 0, 4, "(body)", "more samples"));
    free(x.s);
    parse(P(1, "s", 0) "\n" P(2, "s", 0) "\n", true, 1, &x);
    CHECK(x.p.total == 1 && problem_is(&x, 0, 1, "(body)", "more samples"));
    free(x.s);

    /* 25 invalid samples: all counted, the first 20 kept. */
    char body[4096];
    size_t len = 0;
    for (int i = 0; i < 25 && len < sizeof(body); i++)
        len += (size_t)snprintf(body + len, sizeof(body) - len, "%s%s",
                                i ? "," : "[", P(1, "s", -1));
    if (len < sizeof(body))
        len += (size_t)snprintf(body + len, sizeof(body) - len, "]");
    CHECK(len < sizeof(body));
    parse(body, false, 100, &x);
    CHECK(x.p.total == 25 && x.p.n == METER_MAX_PROBLEMS);
    CHECK(x.p.n == METER_MAX_PROBLEMS && x.p.items[19].index == 19);
    free(x.s);
}

/* The columnar writer's output parses back to the seconds written. */
static void
test_columnar_writer(void)
{
    struct pricing_second s[4] = {
        {1000, 20000, 5000, 1 << 20, 1 << 19, 7, 0},
        {1001, 0, 0, 0, 0, 7, 3}, /* paused in between */
        {1002, 20000, 20000, 1 << 20, 1 << 20, 8, 0},
        {1003, 20000, 1, 1 << 20, 1 << 20, 8, 12},
    };
    struct pricing_second p[2] = {{2000, 0, 0, 0, 0, 1, 0},
                                  {2001, 0, 0, 0, 0, 1, 0}};
    struct meter_columnar c = {0};
    meter_columnar_begin(&c);
    meter_columnar_add(&c, "acct-1", "sb-1", s, 4);
    meter_columnar_add(&c, "acct-2", "sb-2", p, 2);
    meter_columnar_end(&c);
    CHECK(!c.body.failed && c.runs == 2);
    struct parsed x;
    parse(c.body.p, false, 100, &x);
    CHECK(x.n == 6 && x.p.total == 0);
    for (size_t i = 0; x.n == 6 && i < 4; i++)
        CHECK(memcmp(&x.s[i].s, &s[i], sizeof(s[i])) == 0);
    CHECK(x.n == 6 && memcmp(&x.s[5].s, &p[1], sizeof(p[1])) == 0);
    CHECK(x.n == 6 && strcmp(x.s[4].account_id, "acct-2") == 0);
    /* All paused: one state, no running-only columns. */
    const char *sb2 = strstr(c.body.p, "\"sandbox_id\":\"sb-2\"");
    CHECK(sb2 && strstr(sb2, "\"state\":\"paused\"") != NULL);
    CHECK(sb2 && strstr(sb2, "vcpu") == NULL && strstr(sb2, "mem_") == NULL);
    CHECK(sb2 && strstr(sb2, "\"disk_bytes\":1") != NULL);
    free(x.s);
    /* begin empties what was there. */
    meter_columnar_begin(&c);
    meter_columnar_end(&c);
    CHECK_STR(c.body.p, "{\"sandboxes\":[]}\n");
    CHECK(c.runs == 0);
    meter_buf_release(&c.body);
}

/* ---- the fast path against the other ------------------------------------ */

static uint64_t rng = 88172645463325252ULL;

static uint64_t
rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Reads body both ways, at most max samples; false (and a line saying
 * how) if they differ. */
static bool
same_both_ways(const char *body, size_t len, bool ndjson, size_t max)
{
    struct parsed x[2];
    for (int fast = 0; fast < 2; fast++) {
        meter_body_set_fast(fast);
        memset(&x[fast].p, 0, sizeof(x[fast].p));
        CHECK(meter_body_parse(body, len, ndjson, max, &x[fast].s, &x[fast].n,
                               &x[fast].p) == 0);
    }
    meter_body_set_fast(true);
    bool same = x[0].n == x[1].n && x[0].p.total == x[1].p.total &&
                x[0].p.n == x[1].p.n;
    /* The samples of a body without problems, and every problem. */
    if (same && x[0].p.total == 0 && x[0].n)
        same = memcmp(x[0].s, x[1].s, x[0].n * sizeof(*x[0].s)) == 0;
    for (size_t i = 0; same && i < x[0].p.n; i++) {
        const struct meter_problem *a = &x[0].p.items[i], *b = &x[1].p.items[i];
        same = a->index == b->index &&
               strcmp(a->err.field, b->err.field) == 0 &&
               strcmp(a->err.value, b->err.value) == 0 &&
               strcmp(a->err.reason, b->err.reason) == 0;
    }
    if (!same)
        fprintf(stderr,
                "the paths differ on: %.*s\n(n %zu/%zu, problems %zu/%zu)\n",
                (int)len, body, x[0].n, x[1].n, x[0].p.total, x[1].p.total);
    free(x[0].s);
    free(x[1].s);
    return same;
}

static void
test_fast_path(void)
{
    static const char *const bases[] = {
        "{\"sandboxes\": [{\"account_id\": \"a-1\", \"sandbox_id\": \"s:1\","
        " \"start\": 1767225600, \"seconds\": 3, \"state\": \"running\","
        " \"vcpu\": 2, \"cpu_used\": [0.5, 1.25, 0.0001],"
        " \"mem_bytes\": 1073741824, \"mem_used_bytes\": [1, 2, 1073741824],"
        " \"disk_bytes\": 5, \"egress_bytes\": [0, 10, 9007199254740993]},"
        " {\"account_id\": \"b\", \"sandbox_id\": \"t\", \"start\": 5,"
        " \"seconds\": 2, \"state\": \"paused\", \"disk_bytes\": [7, 8]}]}",
        "[{\"ts\": 1767225600, \"account_id\": \"a\", \"sandbox_id\": \"s\","
        " \"state\": \"running\", \"vcpu\": 4.0000, \"cpu_used\": 3.99990,"
        " \"mem_bytes\": 10, \"disk_bytes\": 0},"
        " {\"ts\": 1767225601, \"account_id\": \"a\", \"sandbox_id\": \"s\","
        " \"state\": \"paused\", \"disk_bytes\": 3, \"egress_bytes\": 2}]",
        "{\"ts\":7,\"account_id\":\"a\",\"sandbox_id\":\"s\",\"state\":"
        "\"running\",\"vcpu\":429496,\"cpu_used\":0,\"mem_bytes\":2,"
        "\"mem_used_bytes\":2,\"disk_bytes\":1}\n"
        "{\"ts\":8,\"account_id\":\"a\",\"sandbox_id\":\"s\",\"state\":"
        "\"paused\",\"disk_bytes\":1,\"vcpu\":1.5}\n",
    };
    static const char bytes[] = "0123456789.-eE\"\\,:[]{} \nax";
    /* Numbers at the edges of what either path reads. */
    static const char *const numbers[] = {"9223372036854775807",
                                          "9223372036854775808",
                                          "18446744073709551615",
                                          "18446744073709551616",
                                          "429496",
                                          "429497",
                                          "429496.7295",
                                          "429496.7296",
                                          "0.00001",
                                          "0.00010",
                                          "1.",
                                          "-0",
                                          "01",
                                          "1e2",
                                          "0",
                                          "2.5",
                                          "99999999999999999999.5",
                                          "253402300799",
                                          "253402300800"};
    size_t tries = 0, differ = 0;
    for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
        size_t len = strlen(bases[b]);
        bool ndjson = b == 2;
        char *buf = malloc(len * 4 + 64);
        if (!same_both_ways(bases[b], len, ndjson, 1000))
            differ++;
        for (int k = 0; k < 20000; k++, tries++) {
            memcpy(buf, bases[b], len);
            size_t n = len, at = rnd() % len;
            /* Up to three changes; then a cap of 0-7 samples or 1000. */
            for (int m = 1 + (int)(rnd() % 3); m > 0; m--, at = rnd() % n)
                switch (rnd() % 4) {
                case 0: /* a byte replaced */
                    buf[at] = bytes[rnd() % (sizeof(bytes) - 1)];
                    break;
                case 1: /* a byte deleted */
                    memmove(buf + at, buf + at + 1, n - at - 1);
                    n--;
                    break;
                case 2: /* a byte inserted */
                    memmove(buf + at + 1, buf + at, n - at);
                    buf[at] = bytes[rnd() % (sizeof(bytes) - 1)];
                    n++;
                    break;
                default: { /* the number at or after at replaced by an edge */
                    while (at < n && (buf[at] < '0' || buf[at] > '9'))
                        at++;
                    size_t end = at;
                    while (end < n && ((buf[end] >= '0' && buf[end] <= '9') ||
                                       buf[end] == '.'))
                        end++;
                    const char *x =
                        numbers[rnd() % (sizeof(numbers) / sizeof(numbers[0]))];
                    size_t xl = strlen(x);
                    if (n - (end - at) + xl > len * 4 + 32)
                        break;
                    memmove(buf + at + xl, buf + end, n - end);
                    memcpy(buf + at, x, xl);
                    n = n - (end - at) + xl;
                }
                }
            size_t max = rnd() % 2 ? 1000 : rnd() % 8;
            if (!same_both_ways(buf, n, ndjson, max) && ++differ > 5)
                break;
        }
        free(buf);
    }
    CHECK(differ == 0);
    fprintf(stderr, "fast path: %zu mutated bodies read the same both ways\n",
            tries);
}

int
main(void)
{
    for (int fast = 1; fast >= 0; fast--) {
        meter_body_set_fast(fast);
        test_array();
        test_ndjson();
        test_columnar();
        test_columnar_bounds();
        test_decimals();
        test_problem_cut();
        test_caps();
        test_columnar_writer();
    }
    meter_body_set_fast(true);
    test_fast_path();
    return test_result();
}
