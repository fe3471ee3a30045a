/*
 * web.c - text for the web, where a missed escape is a vulnerability:
 * HTML-escaping (every page writes request and database values through
 * it), percent-encoding for URLs, CSV fields with the one formula guard
 * of every CSV the project writes, and comparing secrets in constant time
 * (a comparison that stops at the first difference tells an attacker,
 * by its timing, how much of a guessed token was right).
 */
#include "meter_util.h"

#include <stdio.h>
#include <string.h>

void
meter_buf_html(struct meter_buf *b, const char *s)
{
    /* The five characters that can end a text node or an attribute
     * value, quoted with either quote; everything else is copied in
     * runs, so that plain text costs one append. */
    while (*s) {
        size_t run = strcspn(s, "&<>\"'");
        meter_buf_add(b, s, run);
        s += run;
        if (!*s)
            break;
        switch (*s++) {
        case '&':
            meter_buf_str(b, "&amp;");
            break;
        case '<':
            meter_buf_str(b, "&lt;");
            break;
        case '>':
            meter_buf_str(b, "&gt;");
            break;
        case '"':
            meter_buf_str(b, "&quot;");
            break;
        default:
            meter_buf_str(b, "&#39;");
            break;
        }
    }
}

void
meter_buf_urlencode(struct meter_buf *b, const char *s)
{
    meter_buf_urlencode_n(b, s, strlen(s));
}

void
meter_buf_urlencode_n(struct meter_buf *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    /* RFC 3986's unreserved characters pass; every other byte is
     * %XX, so the result is safe as a query value, a path segment and
     * inside a header. */
    for (const char *end = s + len; s < end; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
            c == '~') {
            meter_buf_add(b, s, 1);
        } else {
            char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
            meter_buf_add(b, esc, 3);
        }
    }
}

/* Whether v is a plain decimal number, "-?[0-9]+(.[0-9]+)?": a
 * spreadsheet reads it as a number, never as a formula. */
static bool
is_number(const char *v)
{
    const char *p = v + (*v == '-');
    size_t whole = strspn(p, "0123456789");
    if (!whole)
        return false;
    p += whole;
    if (*p == '.') {
        size_t frac = strspn(p + 1, "0123456789");
        if (!frac)
            return false;
        p += 1 + frac;
    }
    return *p == '\0';
}

void
meter_buf_csv(struct meter_buf *b, const char *v)
{
    bool formula = *v && strchr("=+-@\t\r", *v) && !is_number(v);
    if (!formula && !strpbrk(v, ",\"\r\n")) {
        meter_buf_str(b, v);
        return;
    }
    meter_buf_str(b, formula ? "\"'" : "\"");
    while (*v) {
        size_t run = strcspn(v, "\"");
        meter_buf_add(b, v, run);
        v += run;
        if (*v) {
            meter_buf_str(b, "\"\"");
            v++;
        }
    }
    meter_buf_str(b, "\"");
}

int
meter_csv_write(FILE *f, const char *v)
{
    struct meter_buf b = {0};
    int rc = 0;
    meter_buf_csv(&b, v);
    if (b.failed)
        rc = -1;
    else if (b.len && fwrite(b.p, 1, b.len, f) != b.len)
        rc = -1;
    meter_buf_release(&b);
    return rc;
}

bool
meter_secret_equal(const char *a, const char *b)
{
    /* The lengths are not secret (tokens have one fixed length); the
     * bytes are: every byte is compared whatever the earlier ones. */
    size_t n = strlen(a);
    if (n != strlen(b))
        return false;
    volatile unsigned char diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}
