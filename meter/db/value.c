/*
 * value.c - typed access to statements' text values, both ways: a
 * result's fields read into C types with every way a value can be wrong
 * (NULL, not a number, trailing garbage, out of range, too long)
 * reported by column and value rather than read as 0 or cut short; and
 * parameters made from C types in a struct db_params, so that no call
 * site prints a number into a buffer of its own. The binary COPY helpers
 * of exec.c are the model: one helper per type, used everywhere.
 */
#include "db_int.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading results ----------------------------------------------------- */

/* The field (row, col) of r as text into *s: 0, or -1 with e set if there
 * is no such field, it is binary, or (unless null_ok) it is NULL. */
static int
field(const PGresult *r, int row, int col, bool null_ok, const char **s,
      struct meter_err *e)
{
    if (!r || row < 0 || row >= PQntuples(r) || col < 0 ||
        col >= PQnfields(r)) {
        db_hard(e, "cannot read column %d of row %d: no such field", col, row);
        return -1;
    }
    if (PQfformat(r, col) != 0) {
        db_hard(e, "cannot read column %d (%s) of row %d: binary, not text",
                col, PQfname(r, col), row);
        return -1;
    }
    if (!null_ok && PQgetisnull(r, row, col)) {
        db_hard(e, "cannot read column %d (%s) of row %d: NULL", col,
                PQfname(r, col), row);
        return -1;
    }
    *s = PQgetvalue(r, row, col);
    return 0;
}

/* A value of the field that is not what was wanted: -1, with e set. */
static int
bad(const PGresult *r, int row, int col, const char *s, const char *why,
    struct meter_err *e)
{
    db_hard(e, "cannot read column %d (%s) of row %d: '%.64s%s' %s", col,
            PQfname(r, col), row, s, strlen(s) > 64 ? "..." : "", why);
    return -1;
}

/* s as a decimal integer in [min, max], as the server writes one: an
 * optional minus, digits, nothing else (strtoll alone would take
 * leading blanks, a plus, "12abc" and an overflow clamped). */
static int
get_int(const PGresult *r, int row, int col, int64_t min, int64_t max,
        int64_t *out, struct meter_err *e)
{
    const char *s;
    if (field(r, row, col, false, &s, e) < 0)
        return -1;
    const char *d = s[0] == '-' ? s + 1 : s;
    if (*d < '0' || *d > '9')
        return bad(r, row, col, s, "is not an integer", e);
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end)
        return bad(r, row, col, s, "is not an integer", e);
    if (errno == ERANGE || v < min || v > max)
        return bad(r, row, col, s, "is out of range", e);
    *out = v;
    return 0;
}

int
db_get_int64(const PGresult *r, int row, int col, int64_t *out,
             struct meter_err *e)
{
    return get_int(r, row, col, INT64_MIN, INT64_MAX, out, e);
}

int
db_get_int32(const PGresult *r, int row, int col, int32_t *out,
             struct meter_err *e)
{
    int64_t v;
    if (get_int(r, row, col, INT32_MIN, INT32_MAX, &v, e) < 0)
        return -1;
    *out = (int32_t)v;
    return 0;
}

int
db_get_int(const PGresult *r, int row, int col, int *out, struct meter_err *e)
{
    int64_t v;
    if (get_int(r, row, col, INT_MIN, INT_MAX, &v, e) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

int
db_get_uint64(const PGresult *r, int row, int col, uint64_t *out,
              struct meter_err *e)
{
    const char *s;
    if (field(r, row, col, false, &s, e) < 0)
        return -1;
    /* strtoull would take "-1" as UINT64_MAX: digits only. */
    if (*s < '0' || *s > '9')
        return bad(r, row, col, s, "is not an unsigned integer", e);
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end)
        return bad(r, row, col, s, "is not an unsigned integer", e);
    if (errno == ERANGE)
        return bad(r, row, col, s, "is out of range", e);
    *out = v;
    return 0;
}

int
db_get_bool(const PGresult *r, int row, int col, bool *out, struct meter_err *e)
{
    const char *s;
    if (field(r, row, col, false, &s, e) < 0)
        return -1;
    if (strcmp(s, "t") != 0 && strcmp(s, "f") != 0)
        return bad(r, row, col, s, "is not a boolean", e);
    *out = s[0] == 't';
    return 0;
}

int
db_get_dec(const PGresult *r, int row, int col, struct pricing_dec *out,
           struct meter_err *e)
{
    const char *s;
    if (field(r, row, col, false, &s, e) < 0)
        return -1;
    if (db_parse_dec(s, out) < 0)
        return bad(r, row, col, s, "is not a decimal of at most 12 places", e);
    return 0;
}

int
db_get_text(const PGresult *r, int row, int col, char *buf, size_t cap,
            struct meter_err *e)
{
    const char *s;
    if (field(r, row, col, true, &s, e) < 0)
        return -1;
    size_t len = strlen(s);
    if (len >= cap) {
        char why[64];
        snprintf(why, sizeof(why), "is longer than %zu bytes",
                 cap ? cap - 1 : 0);
        return bad(r, row, col, s, why, e);
    }
    memcpy(buf, s, len + 1);
    return 0;
}

/* ---- parameters ------------------------------------------------------------
 */

/* The next parameter's slot, or NULL past DB_PARAMS_MAX (then n is -1
 * for good: the statement runners refuse it). */
static char *
slot(struct db_params *p)
{
    if (p->n < 0 || p->n >= DB_PARAMS_MAX) {
        p->n = -1;
        return NULL;
    }
    return p->num[p->n];
}

void
db_param_text(struct db_params *p, const char *s)
{
    if (slot(p))
        p->v[p->n++] = s;
}

void
db_param_bytes(struct db_params *p, const void *data, int len)
{
    if (slot(p)) {
        p->len[p->n] = len;
        p->fmt[p->n] = 1;
        p->v[p->n++] = data;
    }
}

void
db_param_int64(struct db_params *p, int64_t v)
{
    char *b = slot(p);
    if (b) {
        snprintf(b, sizeof(p->num[0]), "%" PRId64, v);
        p->v[p->n++] = b;
    }
}

void
db_param_int32(struct db_params *p, int32_t v)
{
    db_param_int64(p, v);
}

void
db_param_uint64(struct db_params *p, uint64_t v)
{
    char *b = slot(p);
    if (b) {
        snprintf(b, sizeof(p->num[0]), "%" PRIu64, v);
        p->v[p->n++] = b;
    }
}

void
db_param_bool(struct db_params *p, bool v)
{
    db_param_text(p, v ? "t" : "f");
}

void
db_param_date(struct db_params *p, int year, int month, int day)
{
    char *b = slot(p);
    if (b) {
        snprintf(b, sizeof(p->num[0]), "%04d-%02d-%02d", year, month, day);
        p->v[p->n++] = b;
    }
}

void
db_param_period(struct db_params *p, int year, int month)
{
    db_param_date(p, year, month, 1);
}
