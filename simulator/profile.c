/*
 * profile.c - loads and validates a workload profile (docs/simulator.md).
 *
 * Every key is checked where it is read, and unknown keys are refused:
 * a typo ("lenght") would otherwise fall back to a default and give a
 * plausible but wrong month. Messages carry the key path and the value,
 * since a profile is edited by hand and the path is what one looks for.
 */
#include "profile.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "pricing.h"

/* Longest session by default: a day, the longest most providers allow. */
#define DEFAULT_MAX_SESSION_S 86400.0
/* Largest profile file read. */
#define PROFILE_MAX_BYTES (1 << 20)

struct ctx {
    const char *origin;
    struct sim_err *e;
};

static int __attribute__((format(printf, 3, 4)))
fail(struct ctx *c, const char *path, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    snprintf(c->e->msg, sizeof(c->e->msg), "%s%s%s: %s",
             c->origin ? c->origin : "", c->origin ? ": " : "", path, what);
    return -1;
}

/* A JSON value as it was written, for messages ("30", "\"x\""). */
static void
show(const json_t *v, char *buf, size_t n)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    snprintf(buf, n, "%s", s ? s : "?");
    if (strlen(buf) == n - 1 && n > 4)
        memcpy(buf + n - 4, "...", 4);
    free(s);
}

static void
join(char *out, size_t n, const char *path, const char *key)
{
    snprintf(out, n, "%s%s%s", path, *path ? "." : "", key);
}

/* Refuses keys of obj not in allowed (NULL-terminated). */
static int
known_keys(struct ctx *c, const json_t *obj, const char *path,
           const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = strcmp(*a, key) == 0;
        if (!ok) {
            char p[256];
            join(p, sizeof(p), path, key);
            return fail(c, p, "unknown key");
        }
    }
    return 0;
}

static int
object_at(struct ctx *c, const json_t *v, const char *path)
{
    if (json_is_object(v))
        return 0;
    char s[64];
    show(v, s, sizeof(s));
    return fail(c, path, "%s is not an object", s);
}

/* obj.key as a finite number >= min; *out unchanged if absent and
 * !required. */
static int
number(struct ctx *c, const json_t *obj, const char *path, const char *key,
       bool required, double min, double *out)
{
    char p[256];
    join(p, sizeof(p), path, key);
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (required)
            return fail(c, p, "missing");
        return 0;
    }
    char s[64];
    show(v, s, sizeof(s));
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return fail(c, p, "%s is not a number", s);
    double d = json_number_value(v);
    if (d < min)
        return fail(c, p, "%s is below %g", s, min);
    *out = d;
    return 0;
}

/* A distribution at obj.key; max_default caps it where it gives none. */
static int
dist(struct ctx *c, const json_t *obj, const char *path, const char *key,
     double min, double max_default, struct sim_dist *d)
{
    char p[256], s[64];
    join(p, sizeof(p), path, key);
    json_t *v = json_object_get(obj, key);
    if (!v)
        return fail(c, p, "missing");
    if (object_at(c, v, p) < 0)
        return -1;
    json_t *kind = json_object_get(v, "dist");
    char kp[280];
    join(kp, sizeof(kp), p, "dist");
    if (!kind)
        return fail(c, kp,
                    "missing (fixed, lognormal, exponential or "
                    "histogram)");
    const char *k = json_string_value(kind);
    d->max = max_default;
    if (number(c, v, p, "max", false, min, &d->max) < 0)
        return -1;
    char mp[280];
    join(mp, sizeof(mp), p, "max");
    if (k && strcmp(k, "fixed") == 0) {
        static const char *const keys[] = {"dist", "value", NULL};
        d->kind = SIM_FIXED;
        if (known_keys(c, v, p, keys) < 0 ||
            number(c, v, p, "value", true, min, &d->value) < 0)
            return -1;
        d->max = d->value;
        return 0;
    }
    if (k && strcmp(k, "lognormal") == 0) {
        static const char *const keys[] = {"dist", "median", "p95", "max",
                                           NULL};
        d->kind = SIM_LOGNORMAL;
        if (known_keys(c, v, p, keys) < 0 ||
            number(c, v, p, "median", true, 0, &d->median) < 0 ||
            number(c, v, p, "p95", true, 0, &d->p95) < 0)
            return -1;
        char q[280];
        join(q, sizeof(q), p, "median");
        if (d->median <= 0)
            return fail(c, q, "%g is not above 0", d->median);
        join(q, sizeof(q), p, "p95");
        if (d->p95 < d->median)
            return fail(c, q, "%g is below the median %g", d->p95, d->median);
        if (d->p95 == d->median)
            return fail(c, q, "%g equals the median: use a fixed value",
                        d->p95);
        if (d->max < d->median)
            return fail(c, mp, "%g is below the median %g", d->max, d->median);
        /* The 95th percentile of a lognormal is exp(mu + 1.6449 sigma). */
        d->mu = log(d->median);
        d->sigma = (log(d->p95) - d->mu) / 1.6448536269514722;
        return 0;
    }
    if (k && strcmp(k, "exponential") == 0) {
        static const char *const keys[] = {"dist", "mean", "max", NULL};
        d->kind = SIM_EXPONENTIAL;
        if (known_keys(c, v, p, keys) < 0 ||
            number(c, v, p, "mean", true, 0, &d->mean) < 0)
            return -1;
        char q[280];
        join(q, sizeof(q), p, "mean");
        if (d->mean <= 0)
            return fail(c, q, "%g is not above 0", d->mean);
        if (d->max < min + d->mean / 100)
            return fail(c, mp, "%g leaves no room above %g", d->max, min);
        return 0;
    }
    if (k && strcmp(k, "histogram") == 0) {
        static const char *const keys[] = {"dist", "bins", NULL};
        static const char *const bin_keys[] = {"from", "to", "weight", NULL};
        d->kind = SIM_HISTOGRAM;
        if (known_keys(c, v, p, keys) < 0)
            return -1;
        char bp[280];
        join(bp, sizeof(bp), p, "bins");
        json_t *bins = json_object_get(v, "bins");
        if (!bins)
            return fail(c, bp, "missing");
        if (!json_is_array(bins) || json_array_size(bins) == 0) {
            show(bins, s, sizeof(s));
            return fail(c, bp, "%s is not a non-empty array of bins", s);
        }
        size_t n = json_array_size(bins);
        d->bins = calloc(n, sizeof(*d->bins));
        double *w = calloc(n, sizeof(*w));
        double total = 0;
        int rc = -1;
        if (!d->bins || !w) {
            snprintf(c->e->msg, sizeof(c->e->msg), "out of memory");
            goto hist_out;
        }
        for (size_t i = 0; i < n; i++) {
            char ip[320];
            snprintf(ip, sizeof(ip), "%s[%zu]", bp, i);
            json_t *b = json_array_get(bins, i);
            struct sim_bin *x = &d->bins[i];
            if (object_at(c, b, ip) < 0 || known_keys(c, b, ip, bin_keys) < 0 ||
                number(c, b, ip, "from", true, min, &x->from) < 0 ||
                number(c, b, ip, "to", true, min, &x->to) < 0 ||
                number(c, b, ip, "weight", true, 0, &x->weight) < 0)
                goto hist_out;
            char q[340];
            join(q, sizeof(q), ip, "to");
            if (x->to <= x->from) {
                fail(c, q, "%g is not above from %g", x->to, x->from);
                goto hist_out;
            }
            join(q, sizeof(q), ip, "from");
            if (i > 0 && x->from < d->bins[i - 1].to) {
                fail(c, q, "%g overlaps the bin before, which ends at %g",
                     x->from, d->bins[i - 1].to);
                goto hist_out;
            }
            w[i] = x->weight;
            total += x->weight;
        }
        d->nbins = n;
        if (total <= 0) {
            fail(c, bp, "every weight is 0");
            goto hist_out;
        }
        d->max = d->bins[n - 1].to;
        if (!(d->table = gsl_ran_discrete_preproc(n, w))) {
            fail(c, bp, "weights GSL cannot use");
            goto hist_out;
        }
        rc = 0;
    hist_out:
        free(w);
        return rc;
    }
    show(kind, s, sizeof(s));
    return fail(c, kp, "%s is not fixed, lognormal, exponential or histogram",
                s);
}

static void
dist_release(struct sim_dist *d)
{
    free(d->bins);
    if (d->table)
        gsl_ran_discrete_free(d->table);
}

double
sim_dist_draw(const struct sim_dist *d, gsl_rng *rng)
{
    double x = 0;
    switch (d->kind) {
    case SIM_FIXED:
        return d->value;
    case SIM_LOGNORMAL:
        x = gsl_ran_lognormal(rng, d->mu, d->sigma);
        break;
    case SIM_EXPONENTIAL:
        x = gsl_ran_exponential(rng, d->mean);
        break;
    case SIM_HISTOGRAM: {
        const struct sim_bin *b = &d->bins[gsl_ran_discrete(rng, d->table)];
        x = b->from + (b->to - b->from) * gsl_rng_uniform(rng);
        break;
    }
    }
    return x > d->max ? d->max : x;
}

double
sim_dist_upper(const struct sim_dist *d)
{
    return d->max;
}

/* A size in units (vCPU, GiB) as an exact integer of units * scale,
 * refused when it is not one (0.1 GiB is not a whole number of bytes). */
static int
exact(struct ctx *c, const json_t *obj, const char *path, const char *key,
      double scale, bool required, double min, uint64_t *out)
{
    double d = -1;
    if (number(c, obj, path, key, required, min, &d) < 0)
        return -1;
    if (d < 0)
        return 0; /* absent, not required */
    char p[256];
    join(p, sizeof(p), path, key);
    double x = d * scale;
    if (x > SIM_MAX_BYTES)
        return fail(c, p, "%g is too large", d);
    double r = round(x);
    if (fabs(x - r) > 1e-3) /* what a decimal in binary may be off by */
        return fail(c, p, "%g is not a whole number of %s", d,
                    scale == 10000 ? "1/10,000 vCPU" : "bytes");
    *out = (uint64_t)r;
    return 0;
}

/* sessions.KEY, a whole number from 1 to max (range says so in the
 * message), into *out. */
static int
count(struct ctx *c, const json_t *s, const char *key, uint32_t max,
      const char *range, uint32_t *out)
{
    double n = 0;
    char p[64];
    if (number(c, s, "sessions", key, true, 1, &n) < 0)
        return -1;
    snprintf(p, sizeof(p), "sessions.%s", key);
    if (n != floor(n) || n > max)
        return fail(c, p, "%g is not a whole number %s", n, range);
    *out = (uint32_t)n;
    return 0;
}

static int
parse_sessions(struct ctx *c, const json_t *root, struct sim_profile *p)
{
    static const char *const keys[] = {"per_month", "poisson", "concurrent",
                                       "batch",     "length",  NULL};
    static const char *const pkeys[] = {"per_hour", "daily_pattern", NULL};
    json_t *s = json_object_get(root, "sessions");
    if (!s)
        return fail(c, "sessions", "missing");
    if (object_at(c, s, "sessions") < 0 ||
        known_keys(c, s, "sessions", keys) < 0)
        return -1;
    json_t *pm = json_object_get(s, "per_month");
    json_t *po = json_object_get(s, "poisson");
    json_t *co = json_object_get(s, "concurrent");
    if ((pm != NULL) + (po != NULL) + (co != NULL) != 1)
        return fail(c, "sessions",
                    "needs exactly one of per_month, poisson and concurrent");
    if (co) {
        if (count(c, s, "concurrent", SIM_MAX_CONCURRENT, "from 1 to 100,000",
                  &p->concurrent) < 0)
            return -1;
        if (json_object_get(s, "batch"))
            return fail(c, "sessions.batch",
                        "has no meaning with concurrent (each sandbox's next "
                        "session starts as the last ends)");
        p->arrivals = SIM_CONCURRENT;
    } else if (pm) {
        if (count(c, s, "per_month", SIM_MAX_PER_MONTH, "up to 10,000,000",
                  &p->per_month) < 0)
            return -1;
        p->arrivals = SIM_EVEN;
    } else {
        p->arrivals = SIM_POISSON;
        if (object_at(c, po, "sessions.poisson") < 0 ||
            known_keys(c, po, "sessions.poisson", pkeys) < 0 ||
            number(c, po, "sessions.poisson", "per_hour", true, 0,
                   &p->per_hour) < 0)
            return -1;
        if (p->per_hour <= 0 || p->per_hour > SIM_MAX_PER_HOUR)
            return fail(c, "sessions.poisson.per_hour",
                        "%g is not above 0 and at most 100,000", p->per_hour);
        for (int h = 0; h < 24; h++)
            p->pattern[h] = 1;
        json_t *pat = json_object_get(po, "daily_pattern");
        if (pat) {
            char sv[64];
            show(pat, sv, sizeof(sv));
            if (!json_is_array(pat) || json_array_size(pat) != 24)
                return fail(c, "sessions.poisson.daily_pattern",
                            "%s is not an array of 24 numbers", sv);
            double sum = 0;
            for (size_t h = 0; h < 24; h++) {
                json_t *x = json_array_get(pat, h);
                char hp[64];
                snprintf(hp, sizeof(hp), "sessions.poisson.daily_pattern[%zu]",
                         h);
                show(x, sv, sizeof(sv));
                if (!json_is_number(x) || !(json_number_value(x) >= 0) ||
                    !isfinite(json_number_value(x)))
                    return fail(c, hp, "%s is not a number >= 0", sv);
                p->pattern[h] = json_number_value(x);
                sum += p->pattern[h];
            }
            if (sum <= 0)
                return fail(c, "sessions.poisson.daily_pattern",
                            "every hour is 0");
            /* Relative weights: the day's mean rate stays per_hour. */
            for (int h = 0; h < 24; h++)
                p->pattern[h] *= 24 / sum;
        }
    }
    double batch = 1;
    if (number(c, s, "sessions", "batch", false, 1, &batch) < 0)
        return -1;
    if (batch != floor(batch) || batch > SIM_MAX_BATCH)
        return fail(c, "sessions.batch",
                    "%g is not a whole number from 1 to 100,000", batch);
    p->batch = (uint32_t)batch;
    if (dist(c, s, "sessions", "length", 1, DEFAULT_MAX_SESSION_S, &p->length) <
        0)
        return -1;
    if (sim_dist_upper(&p->length) > SIM_MAX_SESSION_S)
        return fail(c, "sessions.length.max", "%g is longer than 31 days",
                    sim_dist_upper(&p->length));
    return 0;
}

/* A size given as NAME_gib (GiB, 2^30 bytes) or NAME_gb (GB, 10^9
 * bytes, as most providers' pages write it), not both, as whole bytes
 * into *out; absent (not required): 0 and *out unchanged. */
static int
size_of(struct ctx *c, const json_t *s, const char *name, bool required,
        uint64_t *out)
{
    char gib[32], gb[32];
    snprintf(gib, sizeof(gib), "%s_gib", name);
    snprintf(gb, sizeof(gb), "%s_gb", name);
    bool has_gib = json_object_get(s, gib), has_gb = json_object_get(s, gb);
    if (has_gib && has_gb)
        return fail(c, "sandbox", "gives both %s and %s: one of them", gib, gb);
    if (!has_gib && !has_gb && required) {
        char p[64];
        snprintf(p, sizeof(p), "sandbox.%s", gib);
        return fail(c, p, "missing (or %s, in GB)", gb);
    }
    if (has_gb)
        return exact(c, s, "sandbox", gb, 1e9, true, 0, out);
    return exact(c, s, "sandbox", gib, 1073741824.0, has_gib, 0, out);
}

static int
parse_sandbox(struct ctx *c, const json_t *root, struct sim_profile *p)
{
    static const char *const keys[] = {
        "vcpu",      "memory_gib",     "memory_used_gib", "disk_gib",
        "memory_gb", "memory_used_gb", "disk_gb",         NULL};
    const json_t *s = json_object_get(root, "sandbox");
    if (!s)
        return fail(c, "sandbox", "missing");
    uint64_t vcpu = 0;
    if (object_at(c, s, "sandbox") < 0 ||
        known_keys(c, s, "sandbox", keys) < 0 ||
        exact(c, s, "sandbox", "vcpu", 10000, true, 0, &vcpu) < 0 ||
        size_of(c, s, "memory", true, &p->mem_bytes) < 0)
        return -1;
    if (vcpu == 0 || vcpu > SIM_MAX_VCPU)
        return fail(c, "sandbox.vcpu", "%g is not above 0 and at most 1000",
                    (double)vcpu / 10000);
    p->vcpu = (uint32_t)vcpu;
    p->mem_used_bytes = p->mem_bytes;
    if (size_of(c, s, "memory_used", false, &p->mem_used_bytes) < 0 ||
        size_of(c, s, "disk", true, &p->disk_bytes) < 0)
        return -1;
    if (p->mem_used_bytes > p->mem_bytes) {
        bool gb = json_object_get(s, "memory_used_gb");
        double unit = gb ? 1e9 : 1073741824.0;
        return fail(
            c, gb ? "sandbox.memory_used_gb" : "sandbox.memory_used_gib",
            "%g is above the memory, %g %s", (double)p->mem_used_bytes / unit,
            (double)p->mem_bytes / unit, gb ? "GB" : "GiB");
    }
    return 0;
}

static int
spell_kind(struct ctx *c, const json_t *a, const char *key, uint32_t vcpu,
           struct sim_spell_kind *k)
{
    static const char *const keys[] = {"length", "cpu", NULL};
    char p[64];
    snprintf(p, sizeof(p), "activity.%s", key);
    json_t *v = json_object_get(a, key);
    if (!v)
        return fail(c, p, "missing");
    double cpu = 0;
    if (object_at(c, v, p) < 0 || known_keys(c, v, p, keys) < 0 ||
        dist(c, v, p, "length", 1, DEFAULT_MAX_SESSION_S, &k->length) < 0 ||
        number(c, v, p, "cpu", true, 0, &cpu) < 0)
        return -1;
    if (cpu > 1) {
        char q[80];
        snprintf(q, sizeof(q), "%s.cpu", p);
        return fail(c, q, "%g is above 1 (a fraction of the vCPUs)", cpu);
    }
    /* The fraction of the allocation used, to the engine's 1/10,000. */
    k->cpu = cpu;
    k->cpu_used = (uint32_t)llround(cpu * vcpu);
    return 0;
}

static int
parse_rest(struct ctx *c, const json_t *root, struct sim_profile *p)
{
    json_t *a = json_object_get(root, "activity");
    if (a) {
        static const char *const keys[] = {"busy", "idle", "start", NULL};
        if (object_at(c, a, "activity") < 0 ||
            known_keys(c, a, "activity", keys) < 0 ||
            spell_kind(c, a, "busy", p->vcpu, &p->busy) < 0 ||
            spell_kind(c, a, "idle", p->vcpu, &p->idle) < 0)
            return -1;
        p->has_activity = true;
        json_t *st = json_object_get(a, "start");
        const char *sv = json_string_value(st);
        if (st && (!sv || (strcmp(sv, "busy") && strcmp(sv, "idle")))) {
            char s[64];
            show(st, s, sizeof(s));
            return fail(c, "activity.start", "%s is not \"busy\" or \"idle\"",
                        s);
        }
        p->start_idle = sv && strcmp(sv, "idle") == 0;
    }
    json_t *eg = json_object_get(root, "egress");
    if (eg) {
        static const char *const keys[] = {"per_session_mb", NULL};
        if (object_at(c, eg, "egress") < 0 ||
            known_keys(c, eg, "egress", keys) < 0 ||
            dist(c, eg, "egress", "per_session_mb", 0, 1e9, &p->egress_mb) < 0)
            return -1;
        p->has_egress = true;
    }
    json_t *pa = json_object_get(root, "pauses");
    if (pa) {
        static const char *const keys[] = {"after_idle_s", "probability", NULL};
        double after = -1, prob = 1;
        if (object_at(c, pa, "pauses") < 0 ||
            known_keys(c, pa, "pauses", keys) < 0 ||
            number(c, pa, "pauses", "after_idle_s", true, 0, &after) < 0 ||
            number(c, pa, "pauses", "probability", false, 0, &prob) < 0)
            return -1;
        if (!a)
            return fail(c, "pauses",
                        "needs activity (pauses come in idle "
                        "spells)");
        if (after != floor(after) || after > SIM_MAX_PAUSE_AFTER_S)
            return fail(c, "pauses.after_idle_s",
                        "%g is not a whole number of seconds up to 86,400",
                        after);
        if (prob > 1)
            return fail(c, "pauses.probability", "%g is above 1", prob);
        p->pause = true;
        p->pause_after_s = (uint32_t)after;
        p->pause_probability = prob;
    }
    return 0;
}

struct sim_profile *
sim_profile_parse(const char *text, size_t len, const char *origin,
                  struct sim_err *e)
{
    static const char *const keys[] = {"name",    "description", "sessions",
                                       "sandbox", "activity",    "egress",
                                       "pauses",  NULL};
    struct ctx c = {origin, e};
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    struct sim_profile *p = NULL;
    if (!root) {
        char why[160];
        snprintf(e->msg, sizeof(e->msg), "%s%sline %d: %s",
                 origin ? origin : "", origin ? ": " : "", je.line,
                 pricing_json_reason(
                     je.text, json_error_code(&je) == json_error_duplicate_key,
                     text, (size_t)je.position, why, sizeof(why)));
        return NULL;
    }
    if (!json_is_object(root)) {
        fail(&c, "(top)", "not an object");
        goto out;
    }
    if (!(p = calloc(1, sizeof(*p)))) {
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        goto out;
    }
    json_t *name = json_object_get(root, "name");
    if (name && !json_is_string(name)) {
        char s[64];
        show(name, s, sizeof(s));
        fail(&c, "name", "%s is not a string", s);
        goto fail;
    }
    snprintf(p->name, sizeof(p->name), "%s",
             name ? json_string_value(name) : "");
    json_t *desc = json_object_get(root, "description");
    if (desc && !json_is_string(desc)) {
        fail(&c, "description", "not a string");
        goto fail;
    }
    if (known_keys(&c, root, "", keys) < 0 || parse_sessions(&c, root, p) < 0 ||
        parse_sandbox(&c, root, p) < 0 || parse_rest(&c, root, p) < 0)
        goto fail;
    goto out;
fail:
    sim_profile_free(p);
    p = NULL;
out:
    json_decref(root);
    return p;
}

struct sim_profile *
sim_profile_load(const char *path, struct sim_err *e)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(e->msg, sizeof(e->msg), "cannot open '%s': %s", path,
                 strerror(errno));
        return NULL;
    }
    char *buf = malloc(PROFILE_MAX_BYTES);
    size_t n = buf ? fread(buf, 1, PROFILE_MAX_BYTES, f) : 0;
    bool err = ferror(f) != 0;
    fclose(f);
    struct sim_profile *p = NULL;
    if (!buf)
        snprintf(e->msg, sizeof(e->msg), "out of memory");
    else if (err)
        snprintf(e->msg, sizeof(e->msg), "cannot read '%s'", path);
    else if (n == PROFILE_MAX_BYTES)
        snprintf(e->msg, sizeof(e->msg), "'%s' is larger than %d bytes", path,
                 PROFILE_MAX_BYTES);
    else
        p = sim_profile_parse(buf, n, path, e);
    free(buf);
    return p;
}

/* d's bins and table, copied from src's: d owns its own. */
static int
dist_copy(struct sim_dist *d, const struct sim_dist *src)
{
    if (src->kind != SIM_HISTOGRAM)
        return 0;
    double *w = malloc(src->nbins * sizeof(*w));
    d->bins = malloc(src->nbins * sizeof(*d->bins));
    if (w && d->bins) {
        memcpy(d->bins, src->bins, src->nbins * sizeof(*d->bins));
        for (size_t i = 0; i < src->nbins; i++)
            w[i] = src->bins[i].weight;
        d->table = gsl_ran_discrete_preproc(src->nbins, w);
    }
    free(w);
    return d->table ? 0 : -1;
}

struct sim_profile *
sim_profile_copy(const struct sim_profile *p)
{
    struct sim_profile *q = malloc(sizeof(*q));
    if (!q)
        return NULL;
    *q = *p;
    /* Each copy must be released alone, whatever fails. */
    q->length.bins = q->busy.length.bins = q->idle.length.bins =
        q->egress_mb.bins = NULL;
    q->length.table = q->busy.length.table = q->idle.length.table =
        q->egress_mb.table = NULL;
    if (dist_copy(&q->length, &p->length) < 0 ||
        dist_copy(&q->busy.length, &p->busy.length) < 0 ||
        dist_copy(&q->idle.length, &p->idle.length) < 0 ||
        dist_copy(&q->egress_mb, &p->egress_mb) < 0) {
        sim_profile_free(q);
        return NULL;
    }
    return q;
}

void
sim_profile_free(struct sim_profile *p)
{
    if (!p)
        return;
    dist_release(&p->length);
    dist_release(&p->busy.length);
    dist_release(&p->idle.length);
    dist_release(&p->egress_mb);
    free(p);
}
