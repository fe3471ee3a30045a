/*
 * param.c - the parameters of a profile that the tornado and the
 * break-even move (sens.c), each named by its key path, read and set on
 * a copy of a loaded profile.
 *
 * A value is set as the loader would have taken it, so that a moved
 * profile is one a user could have written: rounded to what the
 * profile holds, clamped into the key's own range (the bound is what a
 * user moving it would hit), and refused when it breaks a rule between
 * keys, where no single bound is the answer. The location of a
 * distribution scales the whole of it, p95, max and bins with it: "10%
 * longer sessions" keeps their shape. docs/simulator.md has the list.
 */
#include "profile.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

#define GIB 1073741824.0
/* z of the 95th percentile, as the loader uses it. */
#define Z95 1.6448536269514722

enum kind {
    K_PER_MONTH,
    K_PER_HOUR,
    K_CONCURRENT,
    K_BATCH,
    K_LOCATION, /* a distribution's value, median, mean or bins */
    K_P95,      /* a lognormal's p95: its spread */
    K_VCPU,
    K_MEMORY,
    K_MEMORY_USED,
    K_DISK,
    K_CPU, /* a spell kind's fraction of the vCPUs */
    K_PAUSE_AFTER,
    K_PAUSE_PROBABILITY,
    K_IDLE_SHARE,
};

/* The distributions of a profile, the range the loader gives their
 * values (the least a draw may be, the most its max may be), and what
 * a draw is rounded to: whole seconds, whole bytes (in MB). */
enum { D_LENGTH, D_BUSY, D_IDLE, D_EGRESS, ND };
static const struct {
    const char *path;
    double min, cap, step;
} dists[ND] = {
    {"sessions.length", 1, SIM_MAX_SESSION_S, 1},
    {"activity.busy.length", 1, HUGE_VAL, 1},
    {"activity.idle.length", 1, HUGE_VAL, 1},
    {"egress.per_session_mb", 0, HUGE_VAL, 1e-6},
};

struct param {
    char name[SIM_PARAM_NAME];
    enum kind kind;
    int d; /* K_LOCATION, K_P95: which distribution; K_CPU: D_BUSY or
              D_IDLE */
};

static const struct sim_dist *
dist_at(const struct sim_profile *p, int d)
{
    switch (d) {
    case D_BUSY:
        return &p->busy.length;
    case D_IDLE:
        return &p->idle.length;
    case D_EGRESS:
        return &p->egress_mb;
    default:
        return &p->length;
    }
}

static struct sim_dist *
dist_of(struct sim_profile *p, int d)
{
    return (struct sim_dist *)dist_at(p, d);
}

static const char *
location_key(const struct sim_dist *d)
{
    switch (d->kind) {
    case SIM_FIXED:
        return "value";
    case SIM_LOGNORMAL:
        return "median";
    case SIM_EXPONENTIAL:
        return "mean";
    case SIM_HISTOGRAM:
        break;
    }
    return "bins";
}

/* A histogram's mean: each bin's middle by its weight. */
static double
histogram_mean(const struct sim_dist *d)
{
    double sum = 0, w = 0;
    for (size_t i = 0; i < d->nbins; i++) {
        sum += d->bins[i].weight * (d->bins[i].from + d->bins[i].to) / 2;
        w += d->bins[i].weight;
    }
    return w > 0 ? sum / w : 0;
}

static double
location(const struct sim_dist *d)
{
    switch (d->kind) {
    case SIM_FIXED:
        return d->value;
    case SIM_LOGNORMAL:
        return d->median;
    case SIM_EXPONENTIAL:
        return d->mean;
    case SIM_HISTOGRAM:
        break;
    }
    return histogram_mean(d);
}

/* The mean of d's draws, clamped at its max (before they are rounded to
 * whole seconds): E[min(X, max)]. */
static double
clamped_mean(const struct sim_dist *d)
{
    switch (d->kind) {
    case SIM_FIXED:
        return d->value;
    case SIM_EXPONENTIAL:
        return d->mean * -expm1(-d->max / d->mean);
    case SIM_LOGNORMAL: {
        double lm = log(d->max), s = d->sigma;
        return exp(d->mu + s * s / 2) *
                   gsl_cdf_ugaussian_P((lm - d->mu - s * s) / s) +
               d->max * gsl_cdf_ugaussian_Q((lm - d->mu) / s);
    }
    case SIM_HISTOGRAM:
        break;
    }
    return histogram_mean(d);
}

/* The share of a session's time in idle spells, from the spells' means:
 * what activity.idle_share reads and sets. */
static double
idle_share(const struct sim_profile *p)
{
    double b = clamped_mean(&p->busy.length), i = clamped_mean(&p->idle.length);
    return i / (b + i);
}

/* p's parameters, in the profile's order, into out; their number. */
static size_t
list(const struct sim_profile *p, bool derived, struct param *out)
{
    size_t n = 0;
#define ADD(kd, dd, ...)                                                       \
    do {                                                                       \
        snprintf(out[n].name, sizeof(out[n].name), __VA_ARGS__);               \
        out[n].kind = (kd);                                                    \
        out[n++].d = (dd);                                                     \
    } while (0)
#define ADD_DIST(dd)                                                           \
    do {                                                                       \
        const struct sim_dist *d_ = dist_at(p, dd);                            \
        ADD(K_LOCATION, dd, "%s.%s", dists[dd].path, location_key(d_));        \
        if (d_->kind == SIM_LOGNORMAL)                                         \
            ADD(K_P95, dd, "%s.p95", dists[dd].path);                          \
    } while (0)
    if (p->arrivals == SIM_EVEN)
        ADD(K_PER_MONTH, 0, "sessions.per_month");
    else if (p->arrivals == SIM_POISSON)
        ADD(K_PER_HOUR, 0, "sessions.poisson.per_hour");
    else
        ADD(K_CONCURRENT, 0, "sessions.concurrent");
    if (p->arrivals != SIM_CONCURRENT)
        ADD(K_BATCH, 0, "sessions.batch");
    ADD_DIST(D_LENGTH);
    ADD(K_VCPU, 0, "sandbox.vcpu");
    ADD(K_MEMORY, 0, "sandbox.memory_gib");
    ADD(K_MEMORY_USED, 0, "sandbox.memory_used_gib");
    ADD(K_DISK, 0, "sandbox.disk_gib");
    if (p->has_activity) {
        ADD_DIST(D_BUSY);
        ADD(K_CPU, D_BUSY, "activity.busy.cpu");
        ADD_DIST(D_IDLE);
        ADD(K_CPU, D_IDLE, "activity.idle.cpu");
        if (derived)
            ADD(K_IDLE_SHARE, 0, "activity.idle_share");
    }
    if (p->has_egress)
        ADD_DIST(D_EGRESS);
    if (p->pause) {
        ADD(K_PAUSE_AFTER, 0, "pauses.after_idle_s");
        ADD(K_PAUSE_PROBABILITY, 0, "pauses.probability");
    }
#undef ADD_DIST
#undef ADD
    return n;
}

static int
find(const struct sim_profile *p, const char *name, struct param *out)
{
    struct param all[SIM_PARAMS_MAX];
    size_t n = list(p, true, all);
    for (size_t i = 0; i < n; i++)
        if (strcmp(all[i].name, name) == 0) {
            *out = all[i];
            return 0;
        }
    return -1;
}

size_t
sim_params(const struct sim_profile *p, bool derived,
           char names[][SIM_PARAM_NAME])
{
    struct param all[SIM_PARAMS_MAX];
    size_t n = list(p, derived, all);
    for (size_t i = 0; i < n; i++)
        memcpy(names[i], all[i].name, SIM_PARAM_NAME);
    return n;
}

static const struct sim_spell_kind *
spell_kind(const struct sim_profile *p, int d)
{
    return d == D_IDLE ? &p->idle : &p->busy;
}

int
sim_param_get(const struct sim_profile *p, const char *param, double *value,
              double *step)
{
    struct param k;
    double v = 0, s = 0;
    if (find(p, param, &k) < 0)
        return -1;
    switch (k.kind) {
    case K_PER_MONTH:
        v = p->per_month;
        s = 1;
        break;
    case K_PER_HOUR:
        v = p->per_hour;
        break;
    case K_CONCURRENT:
        v = p->concurrent;
        s = 1;
        break;
    case K_BATCH:
        v = p->batch;
        s = 1;
        break;
    case K_LOCATION:
        v = location(dist_at(p, k.d));
        /* A fixed value is every draw: whole seconds or bytes. */
        s = dist_at(p, k.d)->kind == SIM_FIXED ? dists[k.d].step : 0;
        break;
    case K_P95:
        v = dist_at(p, k.d)->p95;
        break;
    case K_VCPU:
        v = p->vcpu / 10000.0;
        s = 1 / 10000.0;
        break;
    case K_MEMORY:
        v = (double)p->mem_bytes / GIB;
        s = 1 / GIB;
        break;
    case K_MEMORY_USED:
        v = (double)p->mem_used_bytes / GIB;
        s = 1 / GIB;
        break;
    case K_DISK:
        v = (double)p->disk_bytes / GIB;
        s = 1 / GIB;
        break;
    case K_CPU:
        v = spell_kind(p, k.d)->cpu;
        s = 1.0 / p->vcpu; /* cpu_used is in 1/10,000 vCPU */
        break;
    case K_PAUSE_AFTER:
        v = p->pause_after_s;
        s = 1;
        break;
    case K_PAUSE_PROBABILITY:
        v = p->pause_probability;
        break;
    case K_IDLE_SHARE:
        v = idle_share(p);
        break;
    }
    if (value)
        *value = v;
    if (step)
        *step = s;
    return 0;
}

struct why {
    char *buf;
    size_t n;
};

static enum sim_param_status __attribute__((format(printf, 3, 4)))
say(struct why *w, enum sim_param_status st, const char *fmt, ...)
{
    if (w->n > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->buf, w->n, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* Clamps *v into [lo, hi]. The message says it in the profile's units:
 * what was asked, and the bound over scale (*v is in the profile's
 * own units: 1/10,000 vCPU, bytes). */
static enum sim_param_status
clamp(struct why *w, const char *what, double asked, double *v, double lo,
      double hi, double scale)
{
    if (*v >= lo && *v <= hi)
        return SIM_PARAM_SET;
    bool below = *v < lo;
    *v = below ? lo : hi;
    return say(w, SIM_PARAM_CLAMPED, "%s %.10g is %s %.10g: clamped to it",
               what, asked, below ? "below" : "above", *v / scale);
}

/* A size in GiB as whole bytes, clamped into [0, hi] bytes. */
static enum sim_param_status
bytes_of(struct why *w, const char *what, double gib, double hi, uint64_t *out)
{
    double b = round(gib * GIB);
    enum sim_param_status st = clamp(w, what, gib, &b, 0, hi, GIB);
    *out = (uint64_t)b;
    return st;
}

/* A fixed distribution's value, as every draw of it is taken: rounded to
 * whole seconds or bytes, and clamped into the loader's range. */
static enum sim_param_status
set_fixed(struct why *w, int which, const char *what, struct sim_dist *d,
          double x)
{
    double step = dists[which].step, v = round(x / step) * step;
    enum sim_param_status st =
        clamp(w, what, x, &v, dists[which].min, dists[which].cap, 1);
    d->value = d->max = v;
    return st;
}

/*
 * Multiplies every value of d by k: the same shape, k times the scale.
 * max is clamped into what the loader allows (at least a draw's min, at
 * most cap), and so is a fixed value or a histogram's ends; a scale
 * that then breaks a rule (max below the median) is refused, d
 * unchanged.
 */
static enum sim_param_status
scale(struct why *w, int which, struct sim_dist *d, double k)
{
    const char *path = dists[which].path;
    double min = dists[which].min, cap = dists[which].cap;
    char what[SIM_PARAM_NAME + 8];
    enum sim_param_status st = SIM_PARAM_SET;
    double max = d->max * k;
    snprintf(what, sizeof(what), "%s.max", path);
    if (d->kind != SIM_FIXED && d->kind != SIM_HISTOGRAM)
        st = clamp(w, what, max, &max, min, cap, 1);
    switch (d->kind) {
    case SIM_FIXED:
        snprintf(what, sizeof(what), "%s.value", path);
        return set_fixed(w, which, what, d, d->value * k);
    case SIM_LOGNORMAL: {
        double median = d->median * k;
        if (max < median)
            return say(w, SIM_PARAM_REFUSED,
                       "%s.median %.10g would be above its max %.10g", path,
                       median, max);
        d->median = median;
        d->p95 *= k;
        d->mu = log(median); /* sigma, the shape, stays */
        d->max = max;
        return st;
    }
    case SIM_EXPONENTIAL: {
        double mean = d->mean * k;
        if (max < min + mean / 100)
            return say(w, SIM_PARAM_REFUSED,
                       "%s.max %.10g would leave no room above %.10g", path,
                       max, min);
        d->mean = mean;
        d->max = max;
        return st;
    }
    case SIM_HISTOGRAM:
        break;
    }
    /* The first bin starts no lower than min, the last ends no higher
     * than cap; every bin must keep some width. */
    size_t last = d->nbins - 1;
    double first_from = d->bins[0].from * k, last_to = d->bins[last].to * k;
    if (first_from < min)
        st = say(w, SIM_PARAM_CLAMPED,
                 "%s.bins[0].from %.10g is below %.10g: clamped to it", path,
                 first_from, min);
    if (last_to > cap)
        st = say(w, SIM_PARAM_CLAMPED,
                 "%s.bins[%zu].to %.10g is above %.10g: clamped to it", path,
                 last, last_to, cap);
    for (size_t i = 0; i < d->nbins; i++) {
        double from = i == 0 && first_from < min ? min : d->bins[i].from * k;
        double to = i == last && last_to > cap ? cap : d->bins[i].to * k;
        if (to <= from)
            return say(w, SIM_PARAM_REFUSED,
                       "%s.bins[%zu] would be empty ([%.10g, %.10g))", path, i,
                       from, to);
    }
    for (size_t i = 0; i < d->nbins; i++) {
        d->bins[i].from *= k;
        d->bins[i].to *= k;
    }
    if (first_from < min)
        d->bins[0].from = min;
    if (last_to > cap)
        d->bins[last].to = cap;
    d->max = d->bins[last].to;
    return st;
}

/* The CPU each spell kind uses follows the vCPUs: the fraction stays. */
static void
carry_cpu(struct sim_profile *p)
{
    p->busy.cpu_used = (uint32_t)llround(p->busy.cpu * p->vcpu);
    p->idle.cpu_used = (uint32_t)llround(p->idle.cpu * p->vcpu);
}

static enum sim_param_status
set(struct sim_profile *p, const struct param *k, double x, struct why *w)
{
    const char *name = k->name;
    enum sim_param_status st = SIM_PARAM_SET;
    double v = x;
    switch (k->kind) {
    case K_PER_MONTH:
        v = round(x);
        st = clamp(w, name, x, &v, 1, SIM_MAX_PER_MONTH, 1);
        p->per_month = (uint32_t)v;
        return st;
    case K_CONCURRENT:
        v = round(x);
        st = clamp(w, name, x, &v, 1, SIM_MAX_CONCURRENT, 1);
        p->concurrent = (uint32_t)v;
        return st;
    case K_PER_HOUR:
        if (!(x > 0))
            return say(w, SIM_PARAM_REFUSED, "%s %.10g is not above 0", name,
                       x);
        st = clamp(w, name, x, &v, 0, SIM_MAX_PER_HOUR, 1);
        p->per_hour = v;
        return st;
    case K_BATCH:
        v = round(x);
        st = clamp(w, name, x, &v, 1, SIM_MAX_BATCH, 1);
        p->batch = (uint32_t)v;
        return st;
    case K_LOCATION: {
        struct sim_dist *d = dist_of(p, k->d);
        if (d->kind == SIM_FIXED) /* set: a fixed 0 (no egress) moves */
            return set_fixed(w, k->d, name, d, x);
        if (!(x > 0))
            return say(w, SIM_PARAM_REFUSED, "%s %.10g is not above 0", name,
                       x);
        return scale(w, k->d, d, x / location(d));
    }
    case K_P95: {
        struct sim_dist *d = dist_of(p, k->d);
        if (!(x > d->median))
            return say(w, SIM_PARAM_REFUSED,
                       "%s %.10g is not above the median %.10g", name, x,
                       d->median);
        d->p95 = x;
        d->sigma = (log(x) - d->mu) / Z95;
        return st;
    }
    case K_VCPU:
        v = round(x * 10000);
        st = clamp(w, name, x, &v, 1, SIM_MAX_VCPU, 10000);
        p->vcpu = (uint32_t)v;
        carry_cpu(p);
        return st;
    case K_MEMORY: {
        uint64_t old = p->mem_bytes;
        st = bytes_of(w, name, x, SIM_MAX_BYTES, &p->mem_bytes);
        /* What is used keeps its share of what is allocated. */
        double used = old ? round((double)p->mem_used_bytes *
                                  ((double)p->mem_bytes / (double)old))
                          : (double)p->mem_bytes;
        p->mem_used_bytes =
            used > (double)p->mem_bytes ? p->mem_bytes : (uint64_t)used;
        return st;
    }
    case K_MEMORY_USED:
        return bytes_of(w, name, x, (double)p->mem_bytes, &p->mem_used_bytes);
    case K_DISK:
        return bytes_of(w, name, x, SIM_MAX_BYTES, &p->disk_bytes);
    case K_CPU: {
        struct sim_spell_kind *sk = k->d == D_IDLE ? &p->idle : &p->busy;
        st = clamp(w, name, x, &v, 0, 1, 1);
        sk->cpu = v;
        carry_cpu(p);
        return st;
    }
    case K_PAUSE_AFTER:
        v = round(x);
        st = clamp(w, name, x, &v, 0, SIM_MAX_PAUSE_AFTER_S, 1);
        p->pause_after_s = (uint32_t)v;
        return st;
    case K_PAUSE_PROBABILITY:
        st = clamp(w, name, x, &v, 0, 1, 1);
        p->pause_probability = v;
        return st;
    case K_IDLE_SHARE: {
        if (!(x > 0 && x < 1))
            return say(w, SIM_PARAM_REFUSED, "%s %.10g is not between 0 and 1",
                       name, x);
        /* Idle spells k times as long: share = kI / (B + kI). */
        double b = clamped_mean(&p->busy.length),
               i = clamped_mean(&p->idle.length);
        st = scale(w, D_IDLE, &p->idle.length, x * b / ((1 - x) * i));
        if (st == SIM_PARAM_CLAMPED)
            say(w, st,
                "%s %.10g: the idle spells cannot be that long or "
                "short (%s clamped); the share is %.10g",
                name, x, dists[D_IDLE].path, idle_share(p));
        return st;
    }
    }
    return st;
}

enum sim_param_status
sim_param_set(struct sim_profile *p, const char *param, double value,
              double *used, char *why, size_t n)
{
    struct why w = {why, why ? n : 0};
    struct param k;
    if (w.n > 0)
        w.buf[0] = '\0';
    if (find(p, param, &k) < 0)
        return say(&w, SIM_PARAM_REFUSED,
                   "'%s' is not a parameter of this profile", param);
    if (!isfinite(value))
        return say(&w, SIM_PARAM_REFUSED, "%s %g is not a number", param,
                   value);
    enum sim_param_status st = set(p, &k, value, &w);
    if (st != SIM_PARAM_REFUSED && used)
        sim_param_get(p, param, used, NULL);
    return st;
}
