/*
 * body.c - the bodies of POST /v1/samples: a JSON array of samples,
 * NDJSON, or the columnar form (one object per sandbox with a start
 * second and per-second arrays). Every sample is validated; the first
 * problems are listed by sample index. (Content-Encoding is the HTTP
 * layer's: bodies arrive here inflated.)
 *
 * Memory is bounded by the batch, not by the body's shape: arrays are
 * read one element at a time (jansson parses each element on its own),
 * an element of the array or NDJSON forms may be at most SAMPLE_MAX
 * bytes, and a sandbox of the columnar form at most SANDBOX_MAX bytes
 * and as many values as 86,400 seconds of every field can hold.
 */
#include "meter_sample.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAMPLE_MAX 65536        /* bytes of one sample's object */
#define SANDBOX_MAX (32u << 20) /* bytes of one columnar sandbox */
#define SANDBOX_VALUES (86400 * (METER_NFIELDS + 1) + 64)
#define PARSE_FLAGS                                                            \
    (JSON_REJECT_DUPLICATES | JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY)

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
        /* One byte more than kept, so that the cut sees the character
         * that straddles it. */
        char tmp[512];
        snprintf(tmp, size[i] + 1 < sizeof(tmp) ? size[i] + 1 : sizeof(tmp),
                 "%s", from[i]);
        meter_utf8_cut(tmp, size[i] - 1);
        memcpy(to[i], tmp, strlen(tmp) + 1);
    }
}

struct samples {
    struct meter_sample *s;
    size_t n, cap, max;
    bool refused; /* the element just read is refused already */
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
    if (!v->refused && meter_sample_parse(obj, slot, &err) < 0)
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
 * of "seconds" values; second i has ts start + i. One sandbox sb, the
 * si-th: its samples, or a problem. */
static int
add_sandbox(struct samples *v, const json_t *sb, size_t si,
            struct meter_problems *p)
{
    const char *key;
    json_t *x;
    char where[64];
    snprintf(where, sizeof(where), "sandboxes[%zu]", si);
    if (v->refused)
        return 0; /* its decimals are refused already */
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
    return 0;
}

/* ---- reading arrays one element at a time --------------------------------
 */

struct cursor {
    const char *p, *end;
};

static void
skip_ws(struct cursor *c)
{
    while (c->p < c->end &&
           (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

/* Whether the next character, after whitespace, is ch (then taken). */
static bool
take(struct cursor *c, char ch)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* "line L column C" of the byte at offset into body, for messages. */
static void
place_at(const char *body, size_t offset, char *buf, size_t n)
{
    size_t line = 1, col = 1;
    for (size_t i = 0; i < offset; i++, col++)
        if (body[i] == '\n') {
            line++;
            col = 0;
        }
    snprintf(buf, n, "line %zu column %zu", line, col);
}

static void
place(const char *body, const struct cursor *c, char *buf, size_t n)
{
    place_at(body, (size_t)(c->p - body), buf, n);
}

bool
meter_sample_decimals_ok(const char *text, size_t len, char key[16],
                         char number[48])
{
    const char *q = text, *end = text + len;
    bool cpu = false; /* the last key was vcpu or cpu_used */
    while (q < end) {
        if (*q == '"') {
            const char *s = ++q;
            while (q < end && *q != '"')
                q += *q == '\\' ? 2 : 1;
            size_t n = (size_t)(q - s);
            const char *after = q + 1;
            while (after < end && (*after == ' ' || *after == '\t' ||
                                   *after == '\n' || *after == '\r'))
                after++;
            if (after < end && *after == ':') {
                cpu = (n == 4 && memcmp(s, "vcpu", 4) == 0) ||
                      (n == 8 && memcmp(s, "cpu_used", 8) == 0);
                if (cpu)
                    snprintf(key, 16, "%.*s", (int)n, s);
            }
            q++;
            continue;
        }
        if (!(*q == '-' || (*q >= '0' && *q <= '9'))) {
            q++;
            continue;
        }
        const char *s = q;
        if (*q == '-')
            q++;
        /* value = digits x 10^(exp - fraction digits); decimals are what
         * is left after the digits' trailing zeros. */
        long fdigits = 0, zeros = 0, exp = 0;
        bool nonzero = false;
        for (bool in_frac = false; q < end; q++) {
            if (*q == '.' && !in_frac) {
                in_frac = true;
                continue;
            }
            if (*q < '0' || *q > '9')
                break;
            fdigits += in_frac;
            zeros = *q == '0' ? zeros + 1 : 0;
            nonzero |= *q != '0';
        }
        if (q < end && (*q == 'e' || *q == 'E')) {
            q++;
            bool neg = q < end && *q == '-';
            if (q < end && (*q == '-' || *q == '+'))
                q++;
            for (; q < end && *q >= '0' && *q <= '9'; q++)
                if (exp < 100000)
                    exp = exp * 10 + (*q - '0');
            exp = neg ? -exp : exp;
        }
        long frac = nonzero ? fdigits - zeros : 0;
        if (cpu && nonzero && frac - exp > 4) {
            snprintf(number, 48, "%.*s", (int)(q - s < 47 ? q - s : 47), s);
            return false;
        }
    }
    return true;
}

/*
 * The value at c, parsed on its own and at most max bytes long (longer
 * is a problem naming the index), c advanced past it. With values, it
 * must also hold at most that many commas outside strings (a count
 * taken before any tree is built). NULL after adding a problem.
 */
static json_t *
next_value(const char *body, struct cursor *c, size_t max, size_t values,
           struct samples *v, struct meter_problems *p)
{
    char at[48];
    size_t index = v->n;
    skip_ws(c);
    size_t room = (size_t)(c->end - c->p), len = room < max ? room : max;
    if (values) {
        /* Count the commas of the value's extent within len bytes. */
        size_t commas = 0;
        int depth = 0;
        for (const char *q = c->p; q < c->p + len; q++) {
            if (*q == '"') {
                for (q++; q < c->p + len && *q != '"'; q++)
                    q += *q == '\\';
            } else if (*q == '[' || *q == '{') {
                /* Containers cost a node each too, and the form nests
                 * three deep at most (sandbox, field, value). */
                if (++depth > 3 || ++commas > values) {
                    place(body, c, at, sizeof(at));
                    meter_problems_add(p, index, "(body)", at,
                                       depth > 3
                                           ? "a sandbox nests deeper than "
                                             "its fields' arrays"
                                           : "a sandbox holds more values "
                                             "than 86,400 seconds of every "
                                             "field");
                    return NULL;
                }
            } else if (*q == ']' || *q == '}') {
                if (--depth <= 0)
                    break;
            } else if (*q == ',' && depth > 0 && ++commas > values) {
                place(body, c, at, sizeof(at));
                meter_problems_add(p, index, "(body)", at,
                                   "a sandbox holds more values than 86,400 "
                                   "seconds of every field");
                return NULL;
            }
        }
    }
    json_error_t jerr;
    json_t *x = json_loadb(c->p, len, PARSE_FLAGS, &jerr);
    if (!x) {
        bool cut = len < room && (size_t)jerr.position >= len;
        if (cut) {
            char why[96];
            place(body, c, at, sizeof(at));
            snprintf(why, sizeof(why), "an element is larger than %zu bytes",
                     max);
            meter_problems_add(p, index, "(body)", at, why);
        } else {
            place_at(body, (size_t)(c->p - body) + (size_t)jerr.position, at,
                     sizeof(at));
            meter_problems_add(p, index, "(json)", at, jerr.text);
        }
        return NULL;
    }
    char key[16], number[48];
    v->refused = false;
    if (!meter_sample_decimals_ok(c->p, (size_t)jerr.position, key, number)) {
        /* Refused, and the elements after it still checked. */
        meter_problems_add(p, index, key, number, "more than 4 decimals");
        v->refused = true;
    }
    c->p += jerr.position;
    return x;
}

/*
 * The elements of the array at c, one at a time: each (at most max
 * bytes, values commas) goes to add, which returns 0 to go on, -1 (a
 * problem added) or -2 (out of memory) to stop. Syntax errors are
 * problems; returns add's stop, else 0.
 */
static int
each_element(const char *body, struct cursor *c, size_t max, size_t values,
             struct samples *v, struct meter_problems *p,
             int (*add)(struct samples *, const json_t *, size_t,
                        struct meter_problems *))
{
    char at[48];
    if (!take(c, '[')) {
        place(body, c, at, sizeof(at));
        meter_problems_add(p, v->n, "(json)", at, "'[' expected");
        return -1;
    }
    if (take(c, ']'))
        return 0;
    for (size_t i = 0;; i++) {
        json_t *x = next_value(body, c, max, values, v, p);
        if (!x)
            return -1;
        int rc = add(v, x, i, p);
        json_decref(x);
        if (rc != 0)
            return rc;
        if (take(c, ']'))
            return 0;
        if (!take(c, ',')) {
            place(body, c, at, sizeof(at));
            meter_problems_add(p, v->n, "(json)", at, "',' or ']' expected");
            return -1;
        }
    }
}

/* add_object for each_element. */
static int
add_element(struct samples *v, const json_t *obj, size_t i,
            struct meter_problems *p)
{
    (void)i;
    return add_object(v, obj, p);
}

/* The columnar body at c: {"sandboxes": [...]}, nothing else. */
static int
add_columnar(const char *body, struct cursor *c, struct samples *v,
             struct meter_problems *p)
{
    char at[48];
    take(c, '{');
    json_t *key = next_value(body, c, 256, 0, v, p);
    if (!key)
        return -1;
    bool ok =
        json_is_string(key) && strcmp(json_string_value(key), "sandboxes") == 0;
    if (!ok)
        meter_problems_add(
            p, 0, json_is_string(key) ? json_string_value(key) : "(key)", "",
            "unknown key of the columnar form (only "
            "\"sandboxes\")");
    json_decref(key);
    if (!ok)
        return -1;
    if (!take(c, ':')) {
        place(body, c, at, sizeof(at));
        meter_problems_add(p, 0, "(json)", at, "':' expected");
        return -1;
    }
    skip_ws(c);
    if (c->p >= c->end || *c->p != '[') {
        meter_problems_add(p, 0, "sandboxes", "",
                           "must be an array of per-sandbox objects");
        return -1;
    }
    int rc =
        each_element(body, c, SANDBOX_MAX, SANDBOX_VALUES, v, p, add_sandbox);
    if (rc == 0 && take(c, ',')) {
        /* Another key: only "sandboxes" is known. */
        json_t *k = next_value(body, c, 256, 0, v, p);
        meter_problems_add(
            p, 0, json_is_string(k) ? json_string_value(k) : "(key)", "",
            "unknown key of the columnar form (only "
            "\"sandboxes\")");
        json_decref(k);
        return -1;
    }
    if (rc == 0 && !take(c, '}')) {
        place(body, c, at, sizeof(at));
        meter_problems_add(p, 0, "(json)", at, "'}' expected");
        return -1;
    }
    return rc;
}

int
meter_body_parse(const char *body, size_t len, bool ndjson, size_t max,
                 struct meter_sample **out, size_t *n, struct meter_problems *p)
{
    struct samples v = {.max = max};
    int rc = 0;
    *out = NULL;
    *n = 0;
    if (ndjson) {
        const char *line = body, *end = body + len;
        while (line < end && rc == 0) {
            const char *nl = memchr(line, '\n', (size_t)(end - line));
            const char *stop = nl ? nl : end;
            struct cursor c = {line, stop};
            skip_ws(&c);
            if (c.p < stop) {
                json_t *obj = next_value(body, &c, SAMPLE_MAX, 0, &v, p);
                if (obj && (skip_ws(&c), c.p < stop)) {
                    char at[48];
                    place(body, &c, at, sizeof(at));
                    meter_problems_add(p, v.n, "(json)", at,
                                       "one sample a line");
                    json_decref(obj);
                    obj = NULL;
                }
                if (!obj)
                    break;
                rc = add_object(&v, obj, p);
                json_decref(obj);
            }
            line = stop + 1;
        }
    } else {
        struct cursor c = {body, body + len};
        skip_ws(&c);
        if (c.p < c.end && *c.p == '[') {
            rc = each_element(body, &c, SAMPLE_MAX, 0, &v, p, add_element);
        } else if (c.p < c.end && *c.p == '{') {
            rc = add_columnar(body, &c, &v, p);
        } else {
            meter_problems_add(p, 0, "(body)", "",
                               "must be an array of samples or a columnar "
                               "object");
            rc = -1;
        }
        if (rc == 0 && (skip_ws(&c), c.p < c.end)) {
            char at[48];
            place(body, &c, at, sizeof(at));
            meter_problems_add(p, v.n, "(json)", at,
                               "nothing may follow the body's value");
        }
    }
    if (rc == -2) {
        free(v.s);
        return -1; /* out of memory */
    }
    *out = v.s;
    *n = v.n;
    return 0;
}
