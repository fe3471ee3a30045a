/*
 * test_sample.c - one sample's validation (docs/pricing.md, "Samples"),
 * without HTTP: every field on both sides of each boundary, required
 * against optional, defaults against explicit values, and the field,
 * value and reason of each refusal.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meter_sample.h"
#include "testutil.h"

/* A running sample with every field; %s is spliced in as more fields or
 * replaces none. */
#define RUN                                                                    \
    "\"account_id\":\"acme\",\"sandbox_id\":\"sb-1\",\"state\":\"running\""
#define PAUSED                                                                 \
    "\"account_id\":\"acme\",\"sandbox_id\":\"sb-1\",\"state\":\"paused\""

/* Parses text as a sample: 0 ok, -1 refused with *err. */
static int
parse(const char *text, struct meter_sample *out, struct meter_sample_err *err)
{
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    if (!v) {
        fprintf(stderr, "bad test JSON %s: %s\n", text, jerr.text);
        exit(1);
    }
    int rc = meter_sample_parse(v, out, err);
    json_decref(v);
    return rc;
}

static void
test_refusals(void)
{
    static const struct {
        const char *json, *field, *value, *reason;
    } cases[] = {
        /* ts */
        {"{" RUN ",\"vcpu\":1,\"cpu_used\":0,\"mem_bytes\":0,\"disk_bytes\":0}",
         "ts", "", "required"},
        {"{\"ts\":-1," RUN ",\"vcpu\":1,\"cpu_used\":0,\"mem_bytes\":0,"
         "\"disk_bytes\":0}",
         "ts", "-1", "out of range"},
        {"{\"ts\":253402300800," RUN ",\"vcpu\":1,\"cpu_used\":0,"
         "\"mem_bytes\":0,\"disk_bytes\":0}",
         "ts", "253402300800", "out of range"},
        {"{\"ts\":1.5," RUN ",\"vcpu\":1,\"cpu_used\":0,\"mem_bytes\":0,"
         "\"disk_bytes\":0}",
         "ts", "1.5", "must be Unix seconds"},
        {"{\"ts\":\"2026-02-29T00:00:00Z\"," RUN ",\"vcpu\":1,\"cpu_used\":0,"
         "\"mem_bytes\":0,\"disk_bytes\":0}",
         "ts", "\"2026-02-29T00:00:00Z\"", "must be Unix seconds"},
        /* ids */
        {"{\"ts\":0,\"sandbox_id\":\"s\",\"state\":\"paused\","
         "\"disk_bytes\":0}",
         "account_id", "", "required"},
        {"{\"ts\":0,\"account_id\":\"a\",\"state\":\"paused\","
         "\"disk_bytes\":0}",
         "sandbox_id", "", "required"},
        {"{\"ts\":0,\"account_id\":\"a b\",\"sandbox_id\":\"s\","
         "\"state\":\"paused\",\"disk_bytes\":0}",
         "account_id", "\"a b\"", "must be a string of 1-64"},
        {"{\"ts\":0,\"account_id\":\"a\",\"sandbox_id\":\"\","
         "\"state\":\"paused\",\"disk_bytes\":0}",
         "sandbox_id", "\"\"", "must be a string of 1-64"},
        {"{\"ts\":0,\"account_id\":7,\"sandbox_id\":\"s\","
         "\"state\":\"paused\",\"disk_bytes\":0}",
         "account_id", "7", "must be a string of 1-64"},
        {"{\"ts\":0,\"account_id\":\"a\",\"sandbox_id\":"
         "\"0123456789012345678901234567890123456789012345678901234567890123"
         "4\",\"state\":\"paused\",\"disk_bytes\":0}",
         "sandbox_id", NULL, "must be a string of 1-64"}, /* 65 characters */
        /* state */
        {"{\"ts\":0,\"account_id\":\"a\",\"sandbox_id\":\"s\","
         "\"disk_bytes\":0}",
         "state", "", "required"},
        {"{\"ts\":0,\"account_id\":\"a\",\"sandbox_id\":\"s\","
         "\"state\":\"RUNNING\",\"disk_bytes\":0}",
         "state", "\"RUNNING\"", "must be \"running\" or \"paused\""},
        /* disk_bytes: required even paused, an integer >= 0 */
        {"{\"ts\":0," PAUSED "}", "disk_bytes", "", "required"},
        {"{\"ts\":0," PAUSED ",\"disk_bytes\":-1}", "disk_bytes", "-1",
         "must be >= 0"},
        {"{\"ts\":0," PAUSED ",\"disk_bytes\":1.0}", "disk_bytes", "1.0",
         "must be an integer"},
        {"{\"ts\":0," PAUSED ",\"disk_bytes\":\"1\"}", "disk_bytes", "\"1\"",
         "must be an integer"},
        {"{\"ts\":0," PAUSED ",\"disk_bytes\":0,\"egress_bytes\":-1}",
         "egress_bytes", "-1", "must be >= 0"},
        /* vcpu: required when running, > 0, at most 4 decimals */
        {"{\"ts\":0," RUN ",\"cpu_used\":0,\"mem_bytes\":0,\"disk_bytes\":0}",
         "vcpu", "", "required when running"},
        {"{\"ts\":0," RUN ",\"vcpu\":0,\"cpu_used\":0,\"mem_bytes\":0,"
         "\"disk_bytes\":0}",
         "vcpu", "0", "must be > 0"},
        {"{\"ts\":0," RUN ",\"vcpu\":0.00001,\"cpu_used\":0,\"mem_bytes\":0,"
         "\"disk_bytes\":0}",
         "vcpu", "1.0000000000000001e-5", "more than 4 decimals"},
        {"{\"ts\":0," RUN ",\"vcpu\":-1,\"cpu_used\":0,\"mem_bytes\":0,"
         "\"disk_bytes\":0}",
         "vcpu", "-1", "out of range"},
        {"{\"ts\":0," RUN ",\"vcpu\":429497,\"cpu_used\":0,\"mem_bytes\":0,"
         "\"disk_bytes\":0}",
         "vcpu", "429497", "out of range"},
        {"{\"ts\":0," RUN ",\"vcpu\":\"2\",\"cpu_used\":0,\"mem_bytes\":0,"
         "\"disk_bytes\":0}",
         "vcpu", "\"2\"", "must be a number"},
        /* cpu_used: required, <= vcpu */
        {"{\"ts\":0," RUN ",\"vcpu\":1,\"mem_bytes\":0,\"disk_bytes\":0}",
         "cpu_used", "", "required when running"},
        {"{\"ts\":0," RUN ",\"vcpu\":1,\"cpu_used\":1.0001,\"mem_bytes\":0,"
         "\"disk_bytes\":0}",
         "cpu_used", "1.0001", "must be <= vcpu"},
        /* memory: mem_bytes required, mem_used_bytes <= mem_bytes */
        {"{\"ts\":0," RUN ",\"vcpu\":1,\"cpu_used\":1,\"disk_bytes\":0}",
         "mem_bytes", "", "required when running"},
        {"{\"ts\":0," RUN ",\"vcpu\":1,\"cpu_used\":1,\"mem_bytes\":10,"
         "\"mem_used_bytes\":11,\"disk_bytes\":0}",
         "mem_used_bytes", "11", "must be <= mem_bytes"},
        /* shape */
        {"{\"ts\":0," PAUSED ",\"disk_bytes\":0,\"gpu\":1}", "gpu", "1",
         "unknown field"},
        {"[1]", "(sample)", "[1]", "must be a JSON object"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct meter_sample m;
        struct meter_sample_err err = {"", "", ""};
        int rc = parse(cases[i].json, &m, &err);
        bool ok = rc == -1 && strcmp(err.field, cases[i].field) == 0 &&
                  (!cases[i].value || strcmp(err.value, cases[i].value) == 0) &&
                  strstr(err.reason, cases[i].reason) != NULL;
        if (!ok) {
            fprintf(stderr,
                    "case %zu %s: rc %d field '%s' value '%s' reason '%s'\n", i,
                    cases[i].json, rc, err.field, err.value, err.reason);
            test_failures++;
        }
    }
}

static void
test_accepted(void)
{
    struct meter_sample m;
    struct meter_sample_err err;
    /* Boundaries on the accepted side, and what is kept. */
    CHECK(parse("{\"ts\":253402300799," RUN ",\"vcpu\":429496,"
                "\"cpu_used\":429496,\"mem_bytes\":5,\"disk_bytes\":0}",
                &m, &err) == 0);
    CHECK(m.s.ts == 253402300799LL && m.s.vcpu == 4294960000u);
    CHECK(m.s.cpu_used == m.s.vcpu);
    CHECK(parse("{\"ts\":\"2026-01-01T00:00:01Z\"," RUN ",\"vcpu\":0.0001,"
                "\"cpu_used\":0.0001,\"mem_bytes\":10,\"mem_used_bytes\":10,"
                "\"disk_bytes\":0,\"egress_bytes\":7}",
                &m, &err) == 0);
    CHECK(m.s.ts == 1767225601 && m.s.vcpu == 1 && m.s.cpu_used == 1);
    CHECK(m.s.mem_used_bytes == 10 && m.s.egress_bytes == 7);
    CHECK_STR(m.account_id, "acme");
    CHECK_STR(m.sandbox_id, "sb-1");
    /* Defaults: mem_used_bytes is mem_bytes, egress 0. */
    CHECK(parse("{\"ts\":0," RUN ",\"vcpu\":2.5,\"cpu_used\":0,"
                "\"mem_bytes\":4096,\"disk_bytes\":3}",
                &m, &err) == 0);
    CHECK(m.s.vcpu == 25000 && m.s.cpu_used == 0);
    CHECK(m.s.mem_bytes == 4096 && m.s.mem_used_bytes == 4096);
    CHECK(m.s.egress_bytes == 0 && m.s.disk_bytes == 3);
    /* Paused: running-only fields ignored, left 0, even if invalid. */
    CHECK(parse("{\"ts\":0," PAUSED ",\"vcpu\":0,\"cpu_used\":9,"
                "\"mem_bytes\":-4,\"disk_bytes\":3,\"egress_bytes\":2}",
                &m, &err) == 0);
    CHECK(m.s.vcpu == 0 && m.s.cpu_used == 0 && m.s.mem_bytes == 0);
    CHECK(m.s.mem_used_bytes == 0 && m.s.disk_bytes == 3);
    CHECK(m.s.egress_bytes == 2);
    /* 64 characters is the longest id. */
    CHECK(parse("{\"ts\":0,\"account_id\":\"a\",\"sandbox_id\":"
                "\"0123456789012345678901234567890123456789012345678901234567"
                "890123\",\"state\":\"paused\",\"disk_bytes\":0}",
                &m, &err) == 0);
    CHECK(strlen(m.sandbox_id) == 64);
}

static void
test_values_shortened(void)
{
    /* A long value is cut in the message, not the whole body echoed. */
    char text[600];
    snprintf(text, sizeof(text),
             "{\"ts\":0," PAUSED ",\"disk_bytes\":\"%0200d\"}", 7);
    struct meter_sample m;
    struct meter_sample_err err;
    CHECK(parse(text, &m, &err) == -1);
    CHECK(strlen(err.value) == 80);
    CHECK(strcmp(err.value + 77, "...") == 0);
}

static void
test_format_round_trip(void)
{
    /* The canonical NDJSON line parses back to the same second. */
    struct pricing_second s = {1767225600,       12345, 1, 1ULL << 40,
                               (1ULL << 40) - 1, 99,    12};
    char line[512];
    int n = meter_sample_format(line, sizeof(line), "acme", "sb-1", &s);
    CHECK(n > 0 && line[n - 1] == '\n');
    struct meter_sample m;
    struct meter_sample_err err;
    CHECK(parse(line, &m, &err) == 0);
    CHECK(memcmp(&m.s, &s, sizeof(s)) == 0);
    CHECK(strstr(line, "\"vcpu\":1.2345,\"cpu_used\":0.0001") != NULL);
    struct pricing_second p = {5, 0, 0, 0, 0, 7, 8};
    meter_sample_format(line, sizeof(line), "a", "b", &p);
    CHECK_STR(line, "{\"ts\":5,\"account_id\":\"a\",\"sandbox_id\":\"b\","
                    "\"state\":\"paused\",\"disk_bytes\":7,"
                    "\"egress_bytes\":8}\n");
    char buf[32];
    meter_cpu_format(buf, sizeof(buf), 20000);
    CHECK_STR(buf, "2");
    meter_cpu_format(buf, sizeof(buf), 2500);
    CHECK_STR(buf, "0.25");
    meter_cpu_format(buf, sizeof(buf), 10001);
    CHECK_STR(buf, "1.0001");
    meter_cpu_format(buf, sizeof(buf), 0);
    CHECK_STR(buf, "0");
}

/* Sample sets: read from files in any order, handed out by (sandbox,
 * ts, input order); refusals leave the set as it was; the byte cap. */
static void
test_set(void)
{
    char path[] = "/tmp/test_set_XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "{\"ts\":3," PAUSED ",\"disk_bytes\":30}\n\n"
               "{\"ts\":1,\"account_id\":\"b\",\"sandbox_id\":\"sb-0\","
               "\"state\":\"paused\",\"disk_bytes\":10}\n"
               "{\"ts\":2," PAUSED ",\"disk_bytes\":20}\n"
               "{\"ts\":3," PAUSED ",\"disk_bytes\":31}\n");
    fclose(f);
    struct meter_err e = {{0}};
    struct meter_sample_set *set = meter_sample_set_new(64 * 5);
    CHECK(meter_sample_set_read(set, path, &e) == 0);
    CHECK(meter_sample_set_count(set) == 4);
    /* The fifth fits in 5 x 64 bytes; the sixth does not. The fifth is
     * sb-1 of another account: another sandbox, not acme's. */
    struct meter_sample fifth = {"x", "sb-1", {9, 0, 0, 0, 0, 5, 0}};
    CHECK(meter_sample_set_add(set, &fifth, "5th", &e) == 0);
    CHECK(meter_sample_set_add(set, &fifth, "6th", &e) == -1);
    CHECK(meter_sample_set_full(set) && meter_sample_set_count(set) == 5);
    CHECK(strstr(e.msg, "6th: more than 5 samples") != NULL);

    struct pricing_source src = meter_sample_set_source(set);
    struct pricing_block b;
    struct pricing_err pe = {{0}};
    /* sb-1 was seen first, so it comes first; in ts order, the first
     * copy of ts 3 (disk 30) before the second (31). */
    CHECK(src.next(src.ctx, &b, &pe) == 1);
    CHECK_STR(b.sandbox_id, "sb-1");
    CHECK_STR(b.account_id, "acme");
    CHECK(b.n == 3 && b.s[0].ts == 2 && b.s[1].disk_bytes == 30 &&
          b.s[2].disk_bytes == 31);
    CHECK(src.next(src.ctx, &b, &pe) == 1);
    CHECK_STR(b.sandbox_id, "sb-0");
    CHECK(b.n == 1 && b.s[0].ts == 1);
    CHECK(src.next(src.ctx, &b, &pe) == 1);
    CHECK_STR(b.sandbox_id, "sb-1");
    CHECK_STR(b.account_id, "x");
    CHECK(b.n == 1 && b.s[0].ts == 9 && b.s[0].disk_bytes == 5);
    CHECK(src.next(src.ctx, &b, &pe) == 0);
    CHECK(meter_sample_set_add(set, &fifth, "late", &e) == -1);
    meter_sample_set_free(set);

    /* A JSON array, and an error naming file, sample, field, value. */
    f = fopen(path, "w");
    fprintf(f, "  [{\"ts\":1," PAUSED ",\"disk_bytes\":1},"
               "{\"ts\":2," PAUSED ",\"disk_bytes\":-1}]");
    fclose(f);
    set = meter_sample_set_new(1 << 20);
    CHECK(meter_sample_set_read(set, path, &e) == -1);
    CHECK(strstr(e.msg, ": sample [1]: field 'disk_bytes' value -1: must be "
                        ">= 0") != NULL);
    CHECK(strstr(e.msg, path) == e.msg);
    CHECK(meter_sample_set_count(set) == 1);
    meter_sample_set_free(set);
    unlink(path);
    set = meter_sample_set_new(1 << 20);
    CHECK(meter_sample_set_read(set, path, &e) == -1);
    CHECK(strstr(e.msg, "cannot open") != NULL);
    meter_sample_set_free(set);
}

/* A repeated second that omits mem_used_bytes beside one that states it
 * (rules section 1): duplicate or conflict is judged after defaults, so
 * the default (mem_bytes) decides. On the JSON-tree path, which files
 * and the body's slow path take (meter_sample_parse): parsed alone, in
 * a body with the fast path off, and from a file through the rater. */
static void
test_repeat_mem_used(void)
{
#define AT                                                                     \
    "{\"ts\":1767225600," RUN ",\"vcpu\":1,\"cpu_used\":1,"                    \
    "\"mem_bytes\":1024,\"disk_bytes\":0"
    static const struct {
        const char *first, *second;
        bool duplicate;
    } cases[] = {
        /* omitted (1024 by default), then stated 1024: a duplicate */
        {AT "}", AT ",\"mem_used_bytes\":1024}", true},
        {AT ",\"mem_used_bytes\":1024}", AT "}", true},
        /* stated one byte below mem_bytes: a conflict */
        {AT "}", AT ",\"mem_used_bytes\":1023}", false},
        {AT ",\"mem_used_bytes\":1023}", AT "}", false},
        {AT "}", AT ",\"mem_used_bytes\":0}", false},
    };
#undef AT
    const char book_json[] =
        "{\"id\": \"t\", \"currency\": \"USD\", \"effective_from\": "
        "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"0\", "
        "\"per\": \"second\"}, \"memory\": {\"basis\": \"used\", \"unit\": "
        "\"GiB\", \"rate\": \"0\", \"per\": \"second\"}, \"storage\": null, "
        "\"egress\": null, \"per_run\": \"0\"}";
    struct pricing_err pe = {{0}};
    struct pricing_book *book =
        pricing_book_parse(book_json, strlen(book_json), "test", &pe);
    CHECK(book != NULL);
    for (size_t i = 0; book && i < sizeof(cases) / sizeof(cases[0]); i++) {
        char body[1024];
        int len = snprintf(body, sizeof(body), "%s\n%s\n", cases[i].first,
                           cases[i].second);
        /* The two samples compare as the rater and ingest compare them. */
        struct meter_sample a, b;
        struct meter_sample_err err;
        CHECK(parse(cases[i].first, &a, &err) == 0 &&
              parse(cases[i].second, &b, &err) == 0);
        CHECK((memcmp(&a.s, &b.s, sizeof(a.s)) == 0) == cases[i].duplicate);
        /* A body read without the fast path. */
        struct meter_sample *s = NULL;
        size_t n = 0;
        struct meter_problems probs = {0};
        meter_body_set_fast(false);
        CHECK(meter_body_parse(body, (size_t)len, true, 10, &s, &n, &probs) ==
              0);
        meter_body_set_fast(true);
        CHECK(n == 2 && probs.total == 0);
        if (n == 2)
            CHECK((memcmp(&s[0].s, &s[1].s, sizeof(s[0].s)) == 0) ==
                  cases[i].duplicate);
        free(s);
        /* A file rated: one duplicate or one conflict. */
        char path[] = "/tmp/test_repeat_XXXXXX";
        int fd = mkstemp(path);
        CHECK(fd >= 0 && write(fd, body, (size_t)len) == len);
        close(fd);
        struct meter_err e = {{0}};
        struct meter_sample_set *set = meter_sample_set_new(1 << 20);
        CHECK(meter_sample_set_read(set, path, &e) == 0);
        struct pricing_statement *st = NULL;
        size_t nst = 0;
        CHECK(pricing_rate(book, meter_sample_set_source(set), NULL, NULL, 0,
                           &st, &nst, &pe) == 0);
        CHECK(nst == 1);
        if (nst == 1 && (st[0].duplicates != cases[i].duplicate ||
                         st[0].conflicts != !cases[i].duplicate)) {
            fprintf(stderr, "%s then %s: %llu duplicates, %llu conflicts\n",
                    cases[i].first, cases[i].second,
                    (unsigned long long)st[0].duplicates,
                    (unsigned long long)st[0].conflicts);
            test_failures++;
        }
        pricing_statements_free(st, nst);
        meter_sample_set_free(set);
        unlink(path);
    }
    pricing_book_free(book);
}

int
main(void)
{
    test_refusals();
    test_accepted();
    test_values_shortened();
    test_format_round_trip();
    test_set();
    test_repeat_mem_used();
    return test_result();
}
