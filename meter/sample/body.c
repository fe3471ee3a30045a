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

/* Room for n more samples in v->s; false when out of memory. */
static bool
reserve(struct samples *v, size_t n)
{
    if (v->n + n <= v->cap)
        return true;
    size_t nc = v->cap ? v->cap : 1024;
    while (nc < v->n + n)
        nc *= 2;
    struct meter_sample *p = realloc(v->s, nc * sizeof(*p));
    if (!p)
        return false;
    v->s = p;
    v->cap = nc;
    return true;
}

static struct meter_sample *
next_slot(struct samples *v)
{
    return reserve(v, 1) ? &v->s[v->n] : NULL;
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
            char why[160];
            place_at(body, (size_t)(c->p - body) + (size_t)jerr.position, at,
                     sizeof(at));
            meter_problems_add(p, index, "(json)", at,
                               pricing_json_reason(jerr.text,
                                                   json_error_code(&jerr) ==
                                                       json_error_duplicate_key,
                                                   c->p, (size_t)jerr.position,
                                                   why, sizeof(why)));
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

/* ---- the fast path ---------------------------------------------------------
 *
 * Most bodies are what hosts' agents write: objects of known keys, ids as
 * plain strings, numbers in plain decimal. Such an element (a sandbox of
 * the columnar form, or a sample of the row forms) is read here without
 * a tree, each value converted as meter_sample_from_fields converts it.
 * On anything else (an escape, an exponent, a negative number, null, a
 * duplicate or unknown key, a value any check would refuse, an element
 * past its size) it gives up, and the element is read again by the path
 * above, which names the problem: an element's samples are the same
 * either way (tests/test_body.c compares both paths), and so are the
 * messages, which only the path above writes.
 */

static bool fast_on = true;

void
meter_body_set_fast(bool on)
{
    fast_on = on;
}

/* A number of the fast path: ip and, when not is_int, frac 1/10,000s. */
struct fnum {
    uint64_t ip;
    uint32_t frac;
    bool is_int;
};

/* One key's value: a string, a number, or an array of count numbers from
 * nums[off]. */
struct fval {
    bool seen, array, is_str;
    const char *s;
    size_t slen;
    struct fnum num;
    size_t off, count;
};

/* The keys of the two fast forms: the fields' numbers, then those of the
 * columnar form's own keys. */
enum { K_START = METER_NFIELDS, K_SECONDS, NKEYS };

/* The fast path's reading of one element: where it reads, each key's
 * value, and the numbers of its arrays. */
struct fast {
    struct cursor c;
    struct fval val[NKEYS];
    struct fnum *nums;
    size_t nnums, cap;
};

/* A string of printable ASCII without escapes: its text and length. */
static bool
fstring(struct fast *f, const char **s, size_t *len)
{
    if (!take(&f->c, '"'))
        return false;
    const char *q = f->c.p;
    while (q < f->c.end && *q != '"') {
        if (*q == '\\' || (unsigned char)*q < 0x20 || (unsigned char)*q > 0x7e)
            return false;
        q++;
    }
    if (q >= f->c.end)
        return false;
    *s = f->c.p;
    *len = (size_t)(q - f->c.p);
    f->c.p = q + 1;
    return true;
}

/* A number without sign or exponent; more than 4 decimals only if the
 * rest are zeros (meter_sample_decimals_ok's rule). */
static bool
fnumber(struct fast *f, struct fnum *x)
{
    skip_ws(&f->c);
    const char *p = f->c.p, *end = f->c.end;
    if (p >= end || *p < '0' || *p > '9')
        return false;
    uint64_t ip = 0;
    if (*p == '0') {
        if (++p < end && *p >= '0' && *p <= '9')
            return false;
    } else {
        for (; p < end && *p >= '0' && *p <= '9'; p++) {
            if (ip > UINT64_MAX / 10 - 1)
                return false;
            ip = ip * 10 + (uint64_t)(*p - '0');
        }
    }
    x->ip = ip;
    x->frac = 0;
    x->is_int = true;
    if (p < end && *p == '.') {
        x->is_int = false;
        if (++p >= end || *p < '0' || *p > '9')
            return false;
        int d = 0;
        for (; p < end && *p >= '0' && *p <= '9'; p++, d++) {
            if (d < 4)
                x->frac = x->frac * 10 + (uint32_t)(*p - '0');
            else if (*p != '0')
                return false;
        }
        for (; d < 4; d++)
            x->frac *= 10;
    }
    if (p < end && (*p == 'e' || *p == 'E'))
        return false;
    if (x->is_int && x->ip > INT64_MAX)
        return false; /* jansson refuses it, even where it is ignored */
    f->c.p = p;
    return true;
}

static bool
fpush(struct fast *f, const struct fnum *x)
{
    if (f->nnums == f->cap) {
        size_t nc = f->cap ? 2 * f->cap : 4096;
        struct fnum *n = realloc(f->nums, nc * sizeof(*n));
        if (!n)
            return false;
        f->nums = n;
        f->cap = nc;
    }
    f->nums[f->nnums++] = *x;
    return true;
}

/* The object at f->c into f->val: each key once, one of a sample's
 * fields (columnar: but ts, and start and seconds too), each value a
 * string, a number or (columnar) an array of numbers. */
static bool
fobject(struct fast *f, bool columnar)
{
    memset(f->val, 0, sizeof(f->val));
    f->nnums = 0;
    if (!take(&f->c, '{'))
        return false;
    if (take(&f->c, '}'))
        return true;
    do {
        const char *k;
        size_t klen;
        if (!fstring(f, &k, &klen) || !take(&f->c, ':'))
            return false;
        int key = -1;
        for (int i = columnar ? 1 : 0; i < (columnar ? NKEYS : METER_NFIELDS);
             i++) {
            const char *name = i == K_START     ? "start"
                               : i == K_SECONDS ? "seconds"
                                                : meter_sample_fields[i];
            if (strlen(name) == klen && memcmp(name, k, klen) == 0) {
                key = i;
                break;
            }
        }
        if (key < 0 || f->val[key].seen)
            return false;
        struct fval *x = &f->val[key];
        x->seen = true;
        skip_ws(&f->c);
        if (f->c.p < f->c.end && *f->c.p == '"') {
            x->is_str = true;
            if (!fstring(f, &x->s, &x->slen))
                return false;
        } else if (f->c.p < f->c.end && *f->c.p == '[') {
            if (!columnar)
                return false;
            f->c.p++;
            x->array = true;
            x->off = f->nnums;
            if (!take(&f->c, ']')) {
                do {
                    struct fnum n;
                    if (!fnumber(f, &n) || !fpush(f, &n) ||
                        f->nnums - x->off > 86400)
                        return false;
                } while (take(&f->c, ','));
                if (!take(&f->c, ']'))
                    return false;
            }
            x->count = f->nnums - x->off;
        } else if (!fnumber(f, &x->num)) {
            return false;
        }
    } while (take(&f->c, ','));
    return take(&f->c, '}');
}

/* As get_bytes and get_cpu accept a value. */
static bool
fbytes(const struct fnum *x, uint64_t *out)
{
    if (!x->is_int || x->ip > INT64_MAX)
        return false;
    *out = x->ip;
    return true;
}

static bool
fcpu(const struct fnum *x, uint32_t *out)
{
    if (x->ip > UINT32_MAX / PRICING_CPU_UNIT)
        return false;
    uint64_t k = x->ip * PRICING_CPU_UNIT + x->frac;
    if (k > UINT32_MAX)
        return false;
    *out = (uint32_t)k;
    return true;
}

/* Key k's value at second i (a scalar's at every second), or NULL. */
static const struct fnum *
fat(const struct fast *f, int k, size_t i)
{
    const struct fval *x = &f->val[k];
    if (!x->seen || x->is_str)
        return NULL;
    return x->array ? &f->nums[x->off + i] : &x->num;
}

/* An id of the sample: false unless it is a valid one. */
static bool
fid(const struct fval *x, char out[PRICING_ID_MAX + 1])
{
    if (!x->seen || !x->is_str || x->slen > PRICING_ID_MAX)
        return false;
    memcpy(out, x->s, x->slen);
    out[x->slen] = '\0';
    return pricing_id_valid(out);
}

/* Second i's sample at ts into out, as meter_sample_from_fields would
 * make it; false where it would refuse it. */
static bool
fsample(const struct fast *f, size_t i, int64_t ts, bool running,
        struct pricing_second *out)
{
    const struct fnum *disk = fat(f, METER_F_DISK, i),
                      *egress = fat(f, METER_F_EGRESS, i);
    out->ts = ts;
    if (!disk || !fbytes(disk, &out->disk_bytes) ||
        (f->val[METER_F_EGRESS].seen &&
         (!egress || !fbytes(egress, &out->egress_bytes))))
        return false;
    if (!running)
        return true;
    const struct fnum *vcpu = fat(f, METER_F_VCPU, i),
                      *used = fat(f, METER_F_CPU_USED, i),
                      *mem = fat(f, METER_F_MEM, i),
                      *mem_used = fat(f, METER_F_MEM_USED, i);
    if (!vcpu || !fcpu(vcpu, &out->vcpu) || out->vcpu == 0 || !used ||
        !fcpu(used, &out->cpu_used) || out->cpu_used > out->vcpu || !mem ||
        !fbytes(mem, &out->mem_bytes))
        return false;
    out->mem_used_bytes = out->mem_bytes;
    if (f->val[METER_F_MEM_USED].seen &&
        (!mem_used || !fbytes(mem_used, &out->mem_used_bytes) ||
         out->mem_used_bytes > out->mem_bytes))
        return false;
    return true;
}

/* The state of the sample: false unless "running" or "paused". */
static bool
fstate(const struct fval *x, bool *running)
{
    if (!x->seen || !x->is_str)
        return false;
    *running = x->slen == 7 && memcmp(x->s, "running", 7) == 0;
    return *running || (x->slen == 6 && memcmp(x->s, "paused", 6) == 0);
}

/* One element at c, at most max bytes: a sandbox of the columnar form
 * (columnar) or a sample; its samples added and c moved past it, or
 * false with nothing added. */
static bool
fast_element(struct fast *f, struct cursor *c, size_t max, bool columnar,
             struct samples *v)
{
    if (!fast_on)
        return false;
    skip_ws(c);
    f->c.p = c->p;
    f->c.end = (size_t)(c->end - c->p) > max ? c->p + max : c->end;
    if (!fobject(f, columnar))
        return false;
    char account[PRICING_ID_MAX + 1] = "", sandbox[PRICING_ID_MAX + 1] = "";
    bool running;
    int64_t t0;
    uint64_t n = 1;
    const struct fval *ts = &f->val[columnar ? K_START : METER_F_TS];
    if (!ts->seen || ts->is_str || ts->array || !ts->num.is_int ||
        ts->num.ip > METER_TS_MAX || !fid(&f->val[METER_F_ACCOUNT], account) ||
        !fid(&f->val[METER_F_SANDBOX], sandbox) ||
        !fstate(&f->val[METER_F_STATE], &running))
        return false;
    t0 = (int64_t)ts->num.ip;
    if (columnar) {
        const struct fval *s = &f->val[K_SECONDS];
        if (!s->seen || s->is_str || s->array || !s->num.is_int ||
            s->num.ip < 1 || s->num.ip > 86400 ||
            (uint64_t)t0 + s->num.ip - 1 > (uint64_t)METER_TS_MAX)
            return false;
        n = s->num.ip;
        for (int k = 0; k < METER_NFIELDS; k++)
            if (f->val[k].array && f->val[k].count != n)
                return false;
    }
    /* Past the batch's bound, the path above says "more samples than". */
    if (n > v->max - v->n || !reserve(v, n))
        return false;
    for (uint64_t i = 0; i < n; i++) {
        struct meter_sample *m = &v->s[v->n + i];
        memset(m, 0, sizeof(*m)); /* as meter_sample_from_fields does */
        if (!fsample(f, i, t0 + (int64_t)i, running, &m->s))
            return false;
        memcpy(m->account_id, account, sizeof(account));
        memcpy(m->sandbox_id, sandbox, sizeof(sandbox));
    }
    v->n += n;
    v->refused = false;
    c->p = f->c.p;
    return true;
}

/*
 * The elements of the array at c, one at a time: each (at most max
 * bytes, values commas) read by the fast path f (of the columnar form's
 * sandboxes or not), else it goes to add, which returns 0 to go on, -1
 * (a problem added) or -2 (out of memory) to stop. Syntax errors are
 * problems; returns add's stop, else 0.
 */
static int
each_element(const char *body, struct cursor *c, size_t max, size_t values,
             struct fast *f, bool columnar, struct samples *v,
             struct meter_problems *p,
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
        if (!fast_element(f, c, max, columnar, v)) {
            json_t *x = next_value(body, c, max, values, v, p);
            if (!x)
                return -1;
            int rc = add(v, x, i, p);
            json_decref(x);
            if (rc != 0)
                return rc;
        }
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
add_columnar(const char *body, struct cursor *c, struct fast *f,
             struct samples *v, struct meter_problems *p)
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
    int rc = each_element(body, c, SANDBOX_MAX, SANDBOX_VALUES, f, true, v, p,
                          add_sandbox);
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
    struct fast f = {0};
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
            struct cursor fc = c;
            if (c.p < stop && fast_element(&f, &fc, SAMPLE_MAX, false, &v)) {
                skip_ws(&fc);
                if (fc.p == stop) { /* else read again, for the message */
                    line = stop + 1;
                    continue;
                }
                v.n--;
            }
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
            rc = each_element(body, &c, SAMPLE_MAX, 0, &f, false, &v, p,
                              add_element);
        } else if (c.p < c.end && *c.p == '{') {
            rc = add_columnar(body, &c, &f, &v, p);
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
    free(f.nums);
    if (rc == -2) {
        free(v.s);
        return -1; /* out of memory */
    }
    *out = v.s;
    *n = v.n;
    return 0;
}
