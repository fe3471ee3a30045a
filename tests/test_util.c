/*
 * test_util.c - the shared helpers of util/: the buffer's cap and
 * failure, the string table, the time parser at its boundaries, the
 * capped file reader, counts, big-endian integers, HTML and URL escaping,
 * comparing secrets.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meter_util.h"
#include "testutil.h"

static void
test_buf(void)
{
    struct meter_buf b = {.max = 8};
    meter_buf_str(&b, "abc");
    meter_buf_printf(&b, "%d%s", 42, "x");
    CHECK(!b.failed && b.len == 6);
    CHECK_STR(b.p, "abc42x");
    meter_buf_add(&b, "de", 2); /* exactly the cap */
    CHECK(!b.failed && b.len == 8);
    meter_buf_add(&b, "f", 1); /* one past: refused, nothing added */
    CHECK(b.failed && b.len == 8);
    CHECK_STR(b.p, "abc42xde");
    meter_buf_str(&b, ""); /* ignored once failed */
    CHECK(b.failed);
    CHECK(meter_buf_detach(&b, NULL) == NULL);
    meter_buf_reset(&b);
    CHECK(!b.failed && b.len == 0 && b.max == 8);
    meter_buf_printf(&b, "%s", "0123456789"); /* longer than the cap */
    CHECK(b.failed && b.len == 0);
    meter_buf_add(&b, "x", 1); /* room left, but failed: ignored */
    CHECK(b.failed && b.len == 0);
    meter_buf_release(&b);

    struct meter_buf big = {0}; /* no cap: grows past the small buffer */
    for (int i = 0; i < 1000; i++)
        meter_buf_printf(&big, "%04d,", i);
    CHECK(!big.failed && big.len == 5000);
    size_t len;
    char *p = meter_buf_detach(&big, &len);
    CHECK(p && len == 5000 && p[4999] == ',' && p[5000] == '\0');
    CHECK(big.p == NULL && big.len == 0);
    free(p);
    struct meter_buf empty = {0};
    p = meter_buf_detach(&empty, &len);
    CHECK(p && len == 0 && p[0] == '\0');
    free(p);
}

static void
test_strtab(void)
{
    struct meter_strtab t = {0};
    bool added;
    CHECK(meter_strtab_find(&t, "a") == -1);
    CHECK(meter_strtab_intern(&t, "a", &added) == 0 && added);
    CHECK(meter_strtab_intern(&t, "b", &added) == 1 && added);
    CHECK(meter_strtab_intern(&t, "a", &added) == 0 && !added);
    char name[32];
    for (int i = 0; i < 5000; i++) { /* through several rehashes */
        snprintf(name, sizeof(name), "sb-%d", i);
        CHECK(meter_strtab_intern(&t, name, NULL) == i + 2);
    }
    CHECK(meter_strtab_find(&t, "sb-4999") == 5001);
    CHECK(meter_strtab_find(&t, "b") == 1);
    CHECK_STR(t.str[3], "sb-1");
    meter_strtab_clear(&t);
    CHECK(t.n == 0 && meter_strtab_find(&t, "a") == -1);
    CHECK(meter_strtab_intern(&t, "z", &added) == 0 && added);
    meter_strtab_release(&t);
    /* FNV-1a's published values. */
    CHECK(meter_hash("") == 14695981039346656037ULL);
    CHECK(meter_hash("a") == 0xaf63dc4c8601ec8cULL);
}

static void
test_time(void)
{
    static const struct {
        const char *s;
        int ok;
        int64_t want;
    } cases[] = {
        {"0", 1, 0},
        {"1767225600", 1, 1767225600},
        {"253402300799", 1, 253402300799LL}, /* the last second */
        {"253402300800", 0, 0},
        {"-1", 0, 0},
        {"", 0, 0},
        {"12a", 0, 0},
        {" 1", 0, 0},
        {"1970-01-01T00:00:00Z", 1, 0},
        {"2026-01-01T00:00:00Z", 1, 1767225600},
        {"2028-02-29T23:59:59Z", 1, 1835481599}, /* leap day */
        {"2026-02-29T00:00:00Z", 0, 0},          /* not a leap year */
        {"2100-02-29T00:00:00Z", 0, 0},          /* century, not leap */
        {"2000-02-29T00:00:00Z", 1, 951782400},  /* 400th year, leap */
        {"9999-12-31T23:59:59Z", 1, 253402300799LL},
        {"1969-12-31T23:59:59Z", 0, 0},
        {"2026-13-01T00:00:00Z", 0, 0},
        {"2026-00-01T00:00:00Z", 0, 0},
        {"2026-04-31T00:00:00Z", 0, 0},
        {"2026-01-01T24:00:00Z", 0, 0},
        {"2026-01-01T23:60:00Z", 0, 0},
        {"2026-01-01T23:59:60Z", 0, 0}, /* no leap seconds */
        {"2026-01-01T00:00:00", 0, 0},
        {"2026-01-01T00:00:00+00:00", 0, 0},
        {"2026-01-01 00:00:00Z", 0, 0},
        {"2026-01-01T00:00:00.5Z", 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t ts = -42;
        int rc = meter_time_parse(cases[i].s, &ts);
        if ((rc == 0) != cases[i].ok || (cases[i].ok && ts != cases[i].want)) {
            fprintf(stderr, "time '%s': rc %d ts %lld\n", cases[i].s, rc,
                    (long long)ts);
            test_failures++;
        }
    }
    int64_t ts;
    CHECK(meter_time_parse_rfc3339("1767225600", &ts) == -1);
    int y, m;
    CHECK(meter_period_parse("2026-01", &y, &m) == 0 && y == 2026 && m == 1);
    CHECK(meter_period_parse("1970-12", &y, &m) == 0 && y == 1970 && m == 12);
    CHECK(meter_period_parse("1969-12", &y, &m) == -1);
    CHECK(meter_period_parse("2026-13", &y, &m) == -1);
    CHECK(meter_period_parse("2026-00", &y, &m) == -1);
    CHECK(meter_period_parse("2026-1", &y, &m) == -1);
    CHECK(meter_period_parse("2026/01", &y, &m) == -1);
}

static void
test_files(void)
{
    char path[] = "/tmp/test_util_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, "0123456789", 10) == 10);
    close(fd);
    struct meter_err e = {{0}};
    char *text = NULL;
    size_t len = 0;
    CHECK(meter_file_read(path, 10, &text, &len, &e) == 0); /* at the cap */
    CHECK(len == 10 && text && text[10] == '\0');
    CHECK_STR(text, "0123456789");
    free(text);
    text = NULL;
    CHECK(meter_file_read(path, 9, &text, &len, &e) == -1); /* one over */
    CHECK(text == NULL && strstr(e.msg, "larger than 9 bytes"));
    CHECK(strstr(e.msg, path) != NULL);
    unlink(path);
    CHECK(meter_file_read(path, 10, &text, &len, &e) == -1);
    CHECK(strstr(e.msg, "cannot open") && strstr(e.msg, path));

    char dir[4096];
    setenv("METER_DATA_DIR", "/opt/meter-data", 1);
    CHECK(meter_data_dir("books", dir, sizeof(dir), &e) == 0);
    CHECK_STR(dir, "/opt/meter-data/books");
    CHECK(meter_data_dir("books", dir, 10, &e) == -1);
    unsetenv("METER_DATA_DIR");
    CHECK(meter_data_dir("migrations", dir, sizeof(dir), &e) == 0);
    CHECK(strstr(dir, "/../share/meter/migrations") != NULL);
}

static void
test_numbers(void)
{
    uint64_t v = 7;
    CHECK(meter_parse_uint("1", 1, 10, &v) == 0 && v == 1);
    CHECK(meter_parse_uint("10", 1, 10, &v) == 0 && v == 10);
    v = 7;
    CHECK(meter_parse_uint("11", 1, 10, &v) == -1 && v == 7);
    CHECK(meter_parse_uint("0", 1, 10, &v) == -1);
    CHECK(meter_parse_uint("0", 0, 10, &v) == 0 && v == 0);
    CHECK(meter_parse_uint("4", 5, 10, &v) == -1);
    CHECK(meter_parse_uint("5", 5, 10, &v) == 0 && v == 5);
    CHECK(meter_parse_uint("", 1, 10, &v) == -1);
    CHECK(meter_parse_uint("-1", 1, 10, &v) == -1);
    CHECK(meter_parse_uint("+1", 1, 10, &v) == -1);
    CHECK(meter_parse_uint("1 ", 1, 10, &v) == -1);
    CHECK(meter_parse_uint("18446744073709551615", 1, UINT64_MAX, &v) == 0 &&
          v == UINT64_MAX);
    CHECK(meter_parse_uint("18446744073709551616", 1, UINT64_MAX, &v) == -1);
    const unsigned char be[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
    CHECK(meter_be32(be) == 0x01020304u);
    CHECK(meter_be64(be) == 0x0102030405060708ULL);
}

static void
test_fail(void)
{
    struct meter_err e = {{0}};
    CHECK(meter_fail(&e, "cannot %s '%s'\n ", "open", "x") == -1);
    CHECK_STR(e.msg, "cannot open 'x'");
    CHECK(meter_fail(NULL, "ignored") == -1);
}

/* Cutting never splits a UTF-8 character: at each cut of a text of one-,
 * two-, three- and four-byte characters, the result is that text's
 * prefix ending at the last whole character. */
static void
test_utf8_cut(void)
{
    /* "a" 1 byte, "é" 2, "€" 3, "😀" 4: ends at 1, 3, 6, 10. */
    static const char text[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
    static const size_t want[] = {0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 10};
    for (size_t max = 0; max < sizeof(want) / sizeof(want[0]); max++) {
        char s[32];
        snprintf(s, sizeof(s), "%s", text);
        size_t n = meter_utf8_cut(s, max);
        if (n != want[max] || strlen(s) != n || memcmp(s, text, n) != 0) {
            fprintf(stderr, "cut at %zu: %zu bytes, want %zu\n", max, n,
                    want[max]);
            test_failures++;
        }
    }
    /* Shorter than max: unchanged; invalid bytes are cut like text. */
    char s[8] = "ab";
    CHECK(meter_utf8_cut(s, 5) == 2 && strcmp(s, "ab") == 0);
    char t[8] = "a\x80\x80"
                "b";
    CHECK(meter_utf8_cut(t, 3) == 3);
}

/* Text a client may send: valid UTF-8 without control characters. Each
 * case gives where it stops being text (its length if it does not), at
 * each boundary of RFC 3629's table, one byte inside and one outside. */
static void
test_text_check(void)
{
    static const struct {
        const char *s;
        size_t len, want;
    } cases[] = {
        {"", 0, 0},
        {"2026-000001", 11, 11},
        {" ~", 2, 2},                    /* U+0020 and U+007E: text */
        {"a\x1f", 2, 1},                 /* U+001F: a control */
        {"a\x7f", 2, 1},                 /* DEL */
        {"a\tb", 3, 1},                  /* a tab */
        {"a\0b", 3, 1},                  /* a NUL inside the value */
        {"\xff-000001", 10, 0},          /* %FF */
        {"\xc0\xaf", 2, 0},              /* overlong '/' */
        {"\xc1\xbf", 2, 0},              /* overlong U+007F */
        {"\xc2\x80", 2, 2},              /* U+0080, the first of two bytes */
        {"\xdf\xbf", 2, 2},              /* U+07FF */
        {"\xc3", 1, 0},                  /* cut short */
        {"\xc3(", 2, 0},                 /* not a continuation */
        {"\xe0\x9f\xbf", 3, 0},          /* overlong U+07FF */
        {"\xe0\xa0\x80", 3, 3},          /* U+0800 */
        {"\xed\x9f\xbf", 3, 3},          /* U+D7FF */
        {"\xed\xa0\x80", 3, 0},          /* U+D800, a surrogate */
        {"\xed\xbf\xbf", 3, 0},          /* U+DFFF */
        {"\xee\x80\x80", 3, 3},          /* U+E000 */
        {"\xe2\x82\xac", 3, 3},          /* the euro sign */
        {"\xe2\x82", 2, 0},              /* cut short */
        {"\xe2\x82(", 3, 0},             /* third byte not a continuation */
        {"\xf0\x8f\xbf\xbf", 4, 0},      /* overlong U+FFFF */
        {"\xf0\x90\x80\x80", 4, 4},      /* U+10000 */
        {"\xf4\x8f\xbf\xbf", 4, 4},      /* U+10FFFF */
        {"\xf4\x90\x80\x80", 4, 0},      /* U+110000 */
        {"\xf5\x80\x80\x80", 4, 0},      /* F5: never */
        {"\xf0\x9f\x98\x80x\x80", 6, 5}, /* a stray continuation */
        {"ok\xc3\xa9\xff", 5, 4},        /* the offset of the bad byte */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t got = meter_text_check(cases[i].s, cases[i].len);
        if (got != cases[i].want) {
            fprintf(stderr, "text check of case %zu: %zu, want %zu\n", i, got,
                    cases[i].want);
            test_failures++;
        }
    }
}

/* Escaping by hand-written cases: each character that matters, text
 * around it kept, bytes past ASCII passed (HTML) or encoded (URL). */
static void
test_web(void)
{
    static const struct {
        const char *in, *html, *url;
    } cases[] = {
        {"", "", ""},
        {"plain", "plain", "plain"},
        {"a&b", "a&amp;b", "a%26b"},
        {"<script>\"x\"</script>", "&lt;script&gt;&quot;x&quot;&lt;/script&gt;",
         "%3Cscript%3E%22x%22%3C%2Fscript%3E"},
        {"it's", "it&#39;s", "it%27s"},
        {"/overview?from=1&to=2", "/overview?from=1&amp;to=2",
         "%2Foverview%3Ffrom%3D1%26to%3D2"},
        {"a b+c%", "a b+c%", "a%20b%2Bc%25"},
        {"-._~", "-._~", "-._~"},
        {"\xc3\xa9\r\n", "\xc3\xa9\r\n", "%C3%A9%0D%0A"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct meter_buf h = {0}, u = {0};
        meter_buf_html(&h, cases[i].in);
        meter_buf_urlencode(&u, cases[i].in);
        CHECK_STR(h.p ? h.p : "", cases[i].html);
        CHECK_STR(u.p ? u.p : "", cases[i].url);
        meter_buf_release(&h);
        meter_buf_release(&u);
        /* The same escaper to a file (reports/, costsim/). */
        char out[128] = "";
        FILE *f = fmemopen(out, sizeof(out), "w");
        CHECK(f != NULL);
        if (f) {
            meter_html_fputs(f, cases[i].in);
            fclose(f);
        }
        CHECK_STR(out, cases[i].html);
    }
    /* Of a length, to a file: a NUL inside is written, not an end. */
    char nul[16];
    memset(nul, 'x', sizeof(nul));
    FILE *nf = fmemopen(nul, sizeof(nul), "w");
    CHECK(nf != NULL);
    if (nf) {
        meter_html_fwrite(nf, "a\0<b", 4);
        fclose(nf);
    }
    CHECK(memcmp(nul, "a\0&lt;b", 8) == 0);
    /* CSV: the one formula guard of every CSV, and RFC 4180 quoting. A
     * plain decimal number, negative too, is a number, not a formula. */
    static const struct {
        const char *in, *csv;
    } csv[] = {
        {"", ""},
        {"acme", "acme"},
        {"-1.50", "-1.50"},
        {"-38400", "-38400"},
        {"0.001", "0.001"},
        {"=1+1", "\"'=1+1\""},
        {"+1", "\"'+1\""},
        {"-", "\"'-\""},
        {"-1.", "\"'-1.\""},
        {"-1.5e3", "\"'-1.5e3\""},
        {"--1", "\"'--1\""},
        {"-A1", "\"'-A1\""},
        {"@SUM(A1)", "\"'@SUM(A1)\""},
        {"\tx", "\"'\tx\""},
        {"\rx", "\"'\rx\""},
        {"=HYPERLINK(\"http://x\",\"y\")",
         "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\""},
        {"a,b", "\"a,b\""},
        {"say \"hi\"", "\"say \"\"hi\"\"\""},
        {"two\nlines", "\"two\nlines\""},
        {"a=b", "a=b"},
    };
    for (size_t i = 0; i < sizeof(csv) / sizeof(csv[0]); i++) {
        struct meter_buf c = {0};
        meter_buf_csv(&c, csv[i].in);
        CHECK_STR(c.p ? c.p : "", csv[i].csv);
        meter_buf_release(&c);
    }
    /* Of a length: a NUL inside is encoded, not an end. */
    struct meter_buf z = {0};
    meter_buf_urlencode_n(&z, "a\0\xff/", 4);
    CHECK_STR(z.p ? z.p : "", "a%00%FF%2F");
    meter_buf_release(&z);
    /* Under a cap: fails as any append does, never writes past it. */
    struct meter_buf b = {.max = 6};
    meter_buf_html(&b, "a<b");
    CHECK(!b.failed && b.len == 6); /* "a&lt;b": exactly the cap */
    meter_buf_html(&b, "&");
    CHECK(b.failed && b.len == 6);
    meter_buf_release(&b);

    CHECK(meter_secret_equal("", ""));
    CHECK(meter_secret_equal("abc123", "abc123"));
    CHECK(!meter_secret_equal("abc123", "abc124"));
    CHECK(!meter_secret_equal("abc123", "xbc123"));
    CHECK(!meter_secret_equal("abc", "abc1"));
    CHECK(!meter_secret_equal("abc1", "abc"));
    CHECK(!meter_secret_equal("", "a"));
}

int
main(void)
{
    test_buf();
    test_web();
    test_utf8_cut();
    test_text_check();
    test_strtab();
    test_time();
    test_files();
    test_numbers();
    test_fail();
    return test_result();
}
