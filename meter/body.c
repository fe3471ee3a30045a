/*
 * body.c - the bodies of POST /v1/samples: a JSON array of samples,
 * NDJSON, or the columnar form (one object per sandbox with a start
 * second and per-second arrays), optionally gzip-compressed. Every
 * sample is validated; the first problems are listed by sample index.
 */
#include "meter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

int
meter_gunzip(const char *in, size_t len, size_t max, char **out,
             size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        return -1;
    size_t cap = len * 4 < max ? len * 4 + 1024 : max + 1;
    char *buf = malloc(cap);
    int rc = -1;
    if (!buf)
        goto out;
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    for (;;) {
        z.next_out = (Bytef *)buf + z.total_out;
        z.avail_out = (uInt)(cap - z.total_out);
        int st = inflate(&z, Z_NO_FLUSH);
        if (st == Z_STREAM_END) {
            if (z.avail_in == 0)
                break;
            /* Another gzip member follows (RFC 1952 allows several);
             * anything else after the end is an error. */
            if (z.avail_in < 2 || z.next_in[0] != 0x1f || z.next_in[1] != 0x8b)
                goto out;
            uLong done = z.total_out;
            if (inflateReset(&z) != Z_OK)
                goto out;
            z.total_out = done;
            continue;
        }
        if (st != Z_OK && st != Z_BUF_ERROR)
            goto out; /* corrupt */
        if (z.avail_out > 0 && z.avail_in == 0)
            goto out; /* truncated */
        if (z.total_out > max) {
            rc = -2;
            goto out;
        }
        size_t nc = cap * 2 > max + 1 ? max + 1 : cap * 2;
        if (nc <= cap) {
            rc = -2;
            goto out;
        }
        char *p = realloc(buf, nc);
        if (!p)
            goto out;
        buf = p;
        cap = nc;
    }
    if (z.total_out > max) {
        rc = -2;
        goto out;
    }
    *out = buf;
    *out_len = z.total_out;
    buf = NULL;
    rc = 0;
out:
    free(buf);
    inflateEnd(&z);
    return rc;
}

struct samples {
    struct meter_sample *s;
    size_t n, cap, max;
};

static struct meter_sample *
next_slot(struct samples *v)
{
    if (v->n == v->cap) {
        size_t nc = v->cap ? 2 * v->cap : 1024;
        struct meter_sample *p = realloc(v->s, nc * sizeof(*p));
        if (!p)
            return NULL;
        v->s = p;
        v->cap = nc;
    }
    return &v->s[v->n];
}

static void
problem(struct meter_problems *p, size_t index,
        const struct meter_sample_err *err)
{
    meter_problems_add(p, index, err->field, err->value, err->reason);
}

static int
too_many(struct samples *v, struct meter_problems *p)
{
    if (v->n < v->max)
        return 0;
    char max[32];
    snprintf(max, sizeof(max), "%zu", v->max);
    meter_problems_add(p, v->n, "(body)", max,
                       "more samples than a batch may hold");
    return -1;
}

/* One sample object at index. */
static int
add_object(struct samples *v, const json_t *obj, struct meter_problems *p)
{
    struct meter_sample_err err;
    struct meter_sample *slot;
    if (too_many(v, p) < 0)
        return -1;
    if (!(slot = next_slot(v)))
        return -2;
    if (meter_sample_parse(obj, slot, &err) < 0)
        problem(p, v->n, &err);
    v->n++;
    return 0;
}

/* The columnar form:
 *   {"sandboxes": [{"account_id": "a", "sandbox_id": "s",
 *                   "start": 1767225600, "seconds": 60,
 *                   "state": "running", "vcpu": 2,
 *                   "cpu_used": [0.5, 0.25, ...], ...}]}
 * Each per-second field is a scalar (the same every second) or an array
 * of "seconds" values; second i has ts start + i. */
static int
add_columnar(struct samples *v, const json_t *root, struct meter_problems *p)
{
    const json_t *list = json_object_get(root, "sandboxes");
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)root, key, x)
    {
        if (strcmp(key, "sandboxes") != 0) {
            meter_problems_add(p, 0, key, "",
                               "unknown key of the columnar "
                               "form (only \"sandboxes\")");
            return 0;
        }
    }
    if (!json_is_array(list)) {
        meter_problems_add(p, 0, "sandboxes", "",
                           "must be an array of per-sandbox objects");
        return 0;
    }
    size_t si;
    const json_t *sb;
    json_array_foreach(list, si, sb)
    {
        char where[64];
        snprintf(where, sizeof(where), "sandboxes[%zu]", si);
        if (!json_is_object(sb)) {
            meter_problems_add(p, v->n, where, "", "must be an object");
            return 0;
        }
        const json_t *fields[METER_NFIELDS] = {0};
        const json_t *start = NULL, *count = NULL;
        json_object_foreach((json_t *)sb, key, x)
        {
            int f = meter_sample_field(key);
            if (strcmp(key, "start") == 0)
                start = x;
            else if (strcmp(key, "seconds") == 0)
                count = x;
            else if (f < 0 || f == METER_F_TS) {
                char field[96];
                snprintf(field, sizeof(field), "%s.%s", where, key);
                meter_problems_add(p, v->n, field, "", "unknown field");
                return 0;
            } else
                fields[f] = x;
        }
        json_int_t n = json_is_integer(count) ? json_integer_value(count) : -1;
        int64_t t0;
        if (n < 1 || n > 86400) {
            meter_problems_add(p, v->n, "seconds", "",
                               "must be an integer from 1 to 86400");
            return 0;
        }
        if (json_is_integer(start) && json_integer_value(start) >= 0 &&
            json_integer_value(start) <= METER_TS_MAX)
            t0 = json_integer_value(start);
        else if (!json_is_string(start) ||
                 meter_parse_rfc3339(json_string_value(start), &t0) < 0) {
            meter_problems_add(p, v->n, "start", "",
                               "must be Unix seconds or "
                               "\"YYYY-MM-DDTHH:MM:SSZ\"");
            return 0;
        }
        for (int f = 0; f < METER_NFIELDS; f++) {
            if (json_is_array(fields[f]) &&
                json_array_size(fields[f]) != (size_t)n) {
                char len[32];
                snprintf(len, sizeof(len), "%zu", json_array_size(fields[f]));
                meter_problems_add(p, v->n, meter_sample_fields[f], len,
                                   "array length differs from \"seconds\"");
                return 0;
            }
        }
        /* Each second: its values, then the checks of any sample. */
        json_t *ts = json_integer(0);
        const json_t *vals[METER_NFIELDS];
        for (json_int_t i = 0; i < n; i++) {
            struct meter_sample_err err;
            struct meter_sample *slot;
            if (too_many(v, p) < 0) {
                json_decref(ts);
                return -1;
            }
            if (!(slot = next_slot(v))) {
                json_decref(ts);
                return -2;
            }
            for (int f = 0; f < METER_NFIELDS; f++)
                vals[f] = json_is_array(fields[f])
                              ? json_array_get(fields[f], (size_t)i)
                              : fields[f];
            json_integer_set(ts, t0 + i);
            vals[METER_F_TS] = ts;
            if (meter_sample_from_fields(vals, slot, &err) < 0)
                problem(p, v->n, &err);
            v->n++;
        }
        json_decref(ts);
    }
    return 0;
}

int
meter_body_parse(const char *body, size_t len, bool ndjson, size_t max,
                 struct meter_sample **out, size_t *n, struct meter_problems *p)
{
    struct samples v = {.max = max};
    json_error_t jerr;
    int rc = 0;
    *out = NULL;
    *n = 0;
    if (ndjson) {
        const char *line = body, *end = body + len;
        while (line < end && rc == 0) {
            const char *nl = memchr(line, '\n', (size_t)(end - line));
            const char *stop = nl ? nl : end;
            const char *q = line;
            while (q < stop && (*q == ' ' || *q == '\t' || *q == '\r'))
                q++;
            if (q < stop) {
                json_t *obj = json_loadb(line, (size_t)(stop - line),
                                         JSON_REJECT_DUPLICATES, &jerr);
                if (!obj) {
                    char where[32];
                    snprintf(where, sizeof(where), "column %d", jerr.column);
                    meter_problems_add(p, v.n, "(json)", where, jerr.text);
                    break;
                }
                rc = add_object(&v, obj, p);
                json_decref(obj);
            }
            line = stop + 1;
        }
    } else {
        json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root) {
            char where[48];
            snprintf(where, sizeof(where), "line %d column %d", jerr.line,
                     jerr.column);
            meter_problems_add(p, 0, "(json)", where, jerr.text);
        } else if (json_is_array(root)) {
            size_t i;
            json_t *obj;
            json_array_foreach(root, i, obj)
            {
                if ((rc = add_object(&v, obj, p)) != 0)
                    break;
            }
        } else if (json_is_object(root)) {
            rc = add_columnar(&v, root, p);
        } else {
            meter_problems_add(p, 0, "(body)", "",
                               "must be an array of samples or a columnar "
                               "object");
        }
        json_decref(root);
    }
    if (rc == -2) {
        free(v.s);
        return -1; /* out of memory */
    }
    *out = v.s;
    *n = v.n;
    return 0;
}

/* ---- writing the columnar form ------------------------------------------ */

void
meter_text_add(struct meter_text *t, const void *s, size_t n)
{
    if (t->oom)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t nc = t->cap ? t->cap : 65536;
        while (nc < t->len + n + 1)
            nc *= 2;
        char *p = realloc(t->p, nc);
        if (!p) {
            t->oom = true;
            return;
        }
        t->p = p;
        t->cap = nc;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

void
meter_text_str(struct meter_text *t, const char *s)
{
    meter_text_add(t, s, strlen(s));
}

void
meter_text_free(struct meter_text *t)
{
    free(t->p);
    memset(t, 0, sizeof(*t));
}

void
meter_columnar_begin(struct meter_text *t)
{
    t->len = 0;
    t->items = 0;
    meter_text_str(t, "{\"sandboxes\":[");
}

void
meter_columnar_end(struct meter_text *t)
{
    meter_text_str(t, "]}\n");
}

/* Writes 1/10,000 units as the shortest decimal. */
static int
cpu_decimal(char *buf, size_t n, uint64_t v)
{
    if (v % 10000 == 0)
        return snprintf(buf, n, "%llu", (unsigned long long)(v / 10000));
    int len = snprintf(buf, n, "%llu.%04llu", (unsigned long long)(v / 10000),
                       (unsigned long long)(v % 10000));
    while (len > 0 && buf[len - 1] == '0')
        buf[--len] = '\0';
    return len;
}

static uint64_t
col_value(const struct pricing_second *s, int f)
{
    switch (f) {
    case METER_F_VCPU:
        return s->vcpu;
    case METER_F_CPU_USED:
        return s->cpu_used;
    case METER_F_MEM:
        return s->mem_bytes;
    case METER_F_MEM_USED:
        return s->mem_used_bytes;
    case METER_F_DISK:
        return s->disk_bytes;
    default:
        return s->egress_bytes;
    }
}

void
meter_columnar_add(struct meter_text *t, const char *account,
                   const char *sandbox, const struct pricing_second *s,
                   size_t n)
{
    static const int cols[] = {METER_F_VCPU, METER_F_CPU_USED,
                               METER_F_MEM,  METER_F_MEM_USED,
                               METER_F_DISK, METER_F_EGRESS};
    char num[48];
    int len;
    bool any_paused = false, all_paused = true;
    for (size_t i = 0; i < n; i++) {
        any_paused |= s[i].vcpu == 0;
        all_paused &= s[i].vcpu == 0;
    }
    if (t->items++)
        meter_text_str(t, ",");
    meter_text_str(t, "{\"account_id\":\"");
    meter_text_str(t, account);
    meter_text_str(t, "\",\"sandbox_id\":\"");
    meter_text_str(t, sandbox);
    len = snprintf(num, sizeof(num), "\",\"start\":%lld,\"seconds\":%zu",
                   (long long)s[0].ts, n);
    meter_text_add(t, num, (size_t)len);
    if (!any_paused || all_paused) {
        meter_text_str(t, all_paused ? ",\"state\":\"paused\""
                                     : ",\"state\":\"running\"");
    } else {
        meter_text_str(t, ",\"state\":[");
        for (size_t i = 0; i < n; i++)
            meter_text_str(t, s[i].vcpu ? (i ? ",\"running\"" : "\"running\"")
                                        : (i ? ",\"paused\"" : "\"paused\""));
        meter_text_str(t, "]");
    }
    for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
        int f = cols[c];
        bool cpu = f == METER_F_VCPU || f == METER_F_CPU_USED;
        if (all_paused && f != METER_F_DISK && f != METER_F_EGRESS)
            continue; /* ignored on paused seconds */
        bool same = true;
        for (size_t i = 1; i < n && same; i++)
            same = col_value(&s[i], f) == col_value(&s[0], f);
        meter_text_str(t, ",\"");
        meter_text_str(t, meter_sample_fields[f]);
        meter_text_str(t, same ? "\":" : "\":[");
        for (size_t i = 0; i < (same ? 1 : n); i++) {
            uint64_t v = col_value(&s[i], f);
            /* A paused second's running-only values are ignored; an
             * allocation it lacks is written as the run's first, so the
             * array stays valid (vcpu > 0, used <= vcpu). */
            if (!s[i].vcpu && !same && f != METER_F_DISK && f != METER_F_EGRESS)
                v = 0;
            len =
                cpu ? cpu_decimal(num, sizeof(num), v)
                    : snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
            if (i)
                meter_text_str(t, ",");
            meter_text_add(t, num, (size_t)len);
        }
        if (!same)
            meter_text_str(t, "]");
    }
    meter_text_str(t, "}");
}
