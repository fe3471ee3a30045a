/* fuzz_path.c - a request's target as meterd reads it: the path,
 * %-decoded by libmicrohttpd, matched against route patterns
 * (meter_http_path_match), and each segment and query argument checked
 * as text (meter_text_check) and shown percent-encoded
 * (meter_buf_urlencode_n), whatever the bytes. The input is the target,
 * "PATH?QUERY". Checked: a match's segments lie in the path and put back
 * into the pattern give the path again; the text check's answer is a
 * prefix that is itself text; an encoding holds only unreserved
 * characters and %XX, three bytes for each other byte. */
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "meter_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The patterns of meterd's route table (meter/meterd/main.c) with a
 * segment, and some without, plus a few that stress the matcher. */
static const char *const patterns[] = {
    "/v1/invoices/{ref}",
    "/v1/accounts/{id}/credits",
    "/v1/reports/accounts/{id}",
    "/accounts/{id}",
    "/v1/invoices",
    "/sign-in",
    "/",
    "/{a}/{b}/{c}/{d}",
    "/{a}/{b}/{c}/{d}/{e}",
    "/x{a}y",
    "{a}",
    "/{unclosed",
};

static void
check_text(const char *s, size_t len)
{
    size_t ok = meter_text_check(s, len);
    if (ok > len || meter_text_check(s, ok) != ok)
        abort();
    for (size_t i = 0; i < ok; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7F)
            abort();
    struct meter_buf b = {0};
    meter_buf_urlencode_n(&b, s, len);
    size_t plain = 0, escaped = 0;
    for (size_t i = 0; i < b.len; i++) {
        char c = b.p[i];
        if (c == '%') {
            if (i + 2 >= b.len || !strchr("0123456789ABCDEF", b.p[i + 1]) ||
                !strchr("0123456789ABCDEF", b.p[i + 2]))
                abort();
            escaped++;
            i += 2;
        } else if (strchr("-._~", c) || (c >= '0' && c <= '9') ||
                   (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) {
            plain++;
        } else {
            abort();
        }
    }
    if (!b.failed && plain + escaped != len)
        abort();
    meter_buf_release(&b);
}

static void
match_all(const char *path)
{
    for (size_t k = 0; k < sizeof(patterns) / sizeof(patterns[0]); k++) {
        struct meter_http_segment seg[4];
        size_t n = 0;
        if (!meter_http_path_match(patterns[k], path, seg, 4, &n))
            continue;
        /* The pattern with each segment's value in place of its {name}
         * is the path. */
        struct meter_buf back = {0};
        const char *p = patterns[k];
        for (size_t i = 0; i < n; i++) {
            const char *open = seg[i].name - 1;
            if (open < p || *open != '{' || seg[i].name[seg[i].name_len] != '}')
                abort();
            if (seg[i].len == 0 || memchr(seg[i].value, '/', seg[i].len) ||
                seg[i].value < path ||
                seg[i].value + seg[i].len > path + strlen(path))
                abort();
            meter_buf_add(&back, p, (size_t)(open - p));
            meter_buf_add(&back, seg[i].value, seg[i].len);
            p = seg[i].name + seg[i].name_len + 1;
            check_text(seg[i].value, seg[i].len);
        }
        meter_buf_str(&back, p);
        if (!back.failed && strcmp(back.p ? back.p : "", path) != 0)
            abort();
        meter_buf_release(&back);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *target = malloc(size + 1);
    if (!target)
        return 0;
    memcpy(target, data, size);
    target[size] = '\0';
    char *query = strchr(target, '?');
    if (query)
        *query++ = '\0';
    /* libmicrohttpd hands the handler the path decoded, cut at a NUL. */
    MHD_http_unescape(target);
    match_all(target);
    /* Each argument, name=value, decoded as libmicrohttpd does ('+' is
     * a space); a value may hold a NUL. */
    for (char *arg = query; arg && *arg;) {
        char *next = strchr(arg, '&');
        if (next)
            *next++ = '\0';
        for (char *c = arg; *c; c++)
            if (*c == '+')
                *c = ' ';
        char *eq = strchr(arg, '=');
        if (eq)
            *eq++ = '\0';
        check_text(arg, MHD_http_unescape(arg));
        if (eq)
            check_text(eq, MHD_http_unescape(eq));
        arg = next;
    }
    free(target);
    return 0;
}
