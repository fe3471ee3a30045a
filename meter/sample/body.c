/*
 * body.c - the bodies of POST /v1/samples: a JSON array of samples,
 * NDJSON, or the columnar form (one object per sandbox with a start
 * second and per-second arrays). Every sample is validated; the first
 * problems are listed by sample index. (Content-Encoding is the HTTP
 * layer's: bodies arrive here inflated.)
 */
#include "meter_sample.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
meter_problems_add(struct meter_problems *p, size_t index, const char *field,
                   const char *value, const char *reason)
{
    p->total++;
    if (p->n == METER_MAX_PROBLEMS)
        return;
    struct meter_problem *x = &p->items[p->n++];
    x->index = index;
    /* Cut to the fields' sizes (these are messages, not data), never
     * inside a character. */
    const char *from[] = {field, value, reason};
    char *to[] = {x->err.field, x->err.value, x->err.reason};
    size_t size[] = {sizeof(x->err.field), sizeof(x->err.value),
                     sizeof(x->err.reason)};
    for (int i = 0; i < 3; i++) {
        snprintf(to[i], size[i], "%.*s", (int)size[i] - 1, from[i]);
        meter_utf8_cut(to[i], size[i] - 1);
    }
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
                 meter_time_parse_rfc3339(json_string_value(start), &t0) < 0) {
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
        json_t *root = json_loadb(
            body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
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
