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

/* The one escaper: n bytes of s to put(arg, bytes, len), the five
 * characters that can end a text node or an attribute value, quoted
 * with either quote, as entities; everything else in runs, so that
 * plain text costs one call. */
static void
html_escape(const char *s, size_t n, void (*put)(void *, const char *, size_t),
            void *arg)
{
    const char *end = s + n;
    while (s < end) {
        const char *run = s;
        while (s < end && *s != '&' && *s != '<' && *s != '>' && *s != '"' &&
               *s != '\'')
            s++;
        if (s > run)
            put(arg, run, (size_t)(s - run));
        if (s == end)
            break;
        const char *entity;
        switch (*s++) {
        case '&':
            entity = "&amp;";
            break;
        case '<':
            entity = "&lt;";
            break;
        case '>':
            entity = "&gt;";
            break;
        case '"':
            entity = "&quot;";
            break;
        default:
            entity = "&#39;";
            break;
        }
        put(arg, entity, strlen(entity));
    }
}

static void
put_buf(void *arg, const char *p, size_t n)
{
    meter_buf_add(arg, p, n);
}

static void
put_file(void *arg, const char *p, size_t n)
{
    fwrite(p, 1, n, arg);
}

void
meter_buf_html(struct meter_buf *b, const char *s)
{
    html_escape(s, strlen(s), put_buf, b);
}

void
meter_html_fputs(FILE *f, const char *s)
{
    html_escape(s, strlen(s), put_file, f);
}

void
meter_html_fwrite(FILE *f, const char *s, size_t n)
{
    html_escape(s, n, put_file, f);
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
