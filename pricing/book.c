/*
 * book.c - loading and validating price books (docs/pricing.md). Every
 * error names the key path and the offending value; unknown keys, wrong
 * types and impossible values are all refused.
 */
#include "pricing_int.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct loader {
    struct pricing_err *e;
    const char *origin;
};

static int fail(struct loader *l, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
fail(struct loader *l, const char *path, const char *fmt, ...)
{
    char detail[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    if (l->e)
        snprintf(l->e->msg, sizeof(l->e->msg), "%s%s%s: %s",
                 l->origin ? l->origin : "", l->origin ? ": " : "", path,
                 detail);
    return -1;
}

/* The JSON text of v, shortened, for messages. */
static void
show(const json_t *v, char *buf, size_t n)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!s) {
        snprintf(buf, n, "?");
        return;
    }
    if (strlen(s) > 60)
        snprintf(buf, n, "%.57s...", s);
    else
        snprintf(buf, n, "%s", s);
    free(s);
}

static const char *
type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "?";
}

static int
wrong_type(struct loader *l, const char *path, const json_t *v,
           const char *want)
{
    char text[80];
    show(v, text, sizeof(text));
    return fail(l, path, "expected %s, got %s %s", want, type_name(v), text);
}

/* Refuses keys of obj not in the NULL-terminated list allowed. */
static int
only_keys(struct loader *l, const char *path, const json_t *obj,
          const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        bool ok = false;
        for (const char *const *a = allowed; *a; a++)
            ok |= strcmp(*a, key) == 0;
        if (!ok) {
            char p[128];
            snprintf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", key);
            return fail(l, p, "unknown key");
        }
    }
    return 0;
}

static void
join(char *out, size_t n, const char *path, const char *key)
{
    /* A path too long for messages is cut; it stays recognizable. */
    if (snprintf(out, n, "%s%s%s", path, *path ? "." : "", key) >= (int)n)
        out[n - 1] = '\0';
}

/* A decimal string >= 0 with at most 12 decimals. */
static int
get_dec(struct loader *l, const char *path, const json_t *v,
        struct pricing_dec *out)
{
    if (!json_is_string(v))
        return wrong_type(l, path, v, "a decimal string such as \"0.5\"");
    const char *s = json_string_value(v);
    enum pricing_status st = pricing_dec_parse(s, PRICING_SCALE, out);
    if (st != PRICING_OK)
        return fail(l, path, "'%s': %s%s", s, pricing_status_str(st),
                    st == PRICING_EDECIMALS ? " (at most 12)" : "");
    if (out->v < 0)
        return fail(l, path,
                    "'%s' is negative; prices, credits and "
                    "quantities are >= 0",
                    s);
    return 0;
}

/* A required key. */
static const json_t *
need(struct loader *l, const char *path, const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!v) {
        char p[128];
        join(p, sizeof(p), path, key);
        fail(l, p, "missing (required)");
    }
    return v;
}

/* A required price: missing is an error that says what null means. */
static const json_t *
need_price(struct loader *l, const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!v)
        fail(l, key, "missing (required; null if the price is unknown)");
    return v;
}

static int
get_string(struct loader *l, const char *path, const json_t *v,
           const char **out)
{
    if (!json_is_string(v))
        return wrong_type(l, path, v, "a string");
    *out = json_string_value(v);
    return 0;
}

static int
get_uint(struct loader *l, const char *path, const json_t *v, int64_t min,
         int64_t max, int64_t *out)
{
    if (!json_is_integer(v))
        return wrong_type(l, path, v, "an integer");
    json_int_t i = json_integer_value(v);
    if (i < min || i > max)
        return fail(l, path, "%lld is out of range [%lld, %lld]", (long long)i,
                    (long long)min, (long long)max);
    *out = (int64_t)i;
    return 0;
}

static int
get_per(struct loader *l, const char *path, const json_t *v, int64_t *per_s,
        const char **name)
{
    static const struct {
        const char *name;
        int64_t s;
    } units[] = {{"second", 1},
                 {"minute", 60},
                 {"hour", SECONDS_PER_HOUR},
                 {"day", 86400},
                 {"month", SECONDS_PER_STORAGE_MONTH},
                 {"month30", SECONDS_PER_MONTH30}};
    const char *s = NULL;
    if (get_string(l, path, v, &s) < 0)
        return -1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(s, units[i].name) == 0) {
            *per_s = units[i].s;
            *name = units[i].name;
            return 0;
        }
    }
    return fail(l, path,
                "'%s' is not a time unit (second, minute, hour, "
                "day, month, month30)",
                s);
}

/* Tiers; timed: their bounds and rates may name a time unit ("per"). */
static int
load_tiers(struct loader *l, const char *path, const json_t *v, bool timed,
           struct price *p)
{
    static const char *const keys[] = {"mode", "bands", "per", NULL};
    char kp[128];
    if (!json_is_object(v))
        return wrong_type(l, path, v, "an object");
    if (only_keys(l, path, v, keys) < 0)
        return -1;
    const json_t *per = json_object_get(v, "per");
    join(kp, sizeof(kp), path, "per");
    if (per && !timed)
        return fail(l, kp, "egress is counted in GB, without a time unit");
    if (per && get_per(l, kp, per, &p->tier_per_s, &p->tier_per_name) < 0)
        return -1;
    const json_t *mode = need(l, path, v, "mode");
    const json_t *bands = need(l, path, v, "bands");
    if (!mode || !bands)
        return -1;
    const char *m = NULL;
    join(kp, sizeof(kp), path, "mode");
    if (get_string(l, kp, mode, &m) < 0)
        return -1;
    if (strcmp(m, "graduated") == 0)
        p->mode = TIERS_GRADUATED;
    else if (strcmp(m, "volume") == 0)
        p->mode = TIERS_VOLUME;
    else
        return fail(l, kp, "'%s' is not a tier mode (graduated, volume)", m);
    join(kp, sizeof(kp), path, "bands");
    if (!json_is_array(bands) || json_array_size(bands) == 0)
        return wrong_type(l, kp, bands, "a non-empty array");
    size_t n = json_array_size(bands);
    p->tiers = calloc(n, sizeof(*p->tiers));
    if (!p->tiers)
        return fail(l, kp, "out of memory");
    p->ntiers = n;
    for (size_t i = 0; i < n; i++) {
        static const char *const tkeys[] = {"up_to", "rate", NULL};
        const json_t *b = json_array_get(bands, i);
        char bp[160], fp[176];
        snprintf(bp, sizeof(bp), "%s[%zu]", kp, i);
        if (!json_is_object(b))
            return wrong_type(l, bp, b, "an object {\"up_to\", \"rate\"}");
        if (only_keys(l, bp, b, tkeys) < 0)
            return -1;
        const json_t *up = need(l, bp, b, "up_to");
        const json_t *rate = need(l, bp, b, "rate");
        if (!up || !rate)
            return -1;
        join(fp, sizeof(fp), bp, "rate");
        if (get_dec(l, fp, rate, &p->tiers[i].rate) < 0)
            return -1;
        join(fp, sizeof(fp), bp, "up_to");
        if (json_is_null(up)) {
            if (i != n - 1)
                return fail(l, fp,
                            "null (unbounded) is only for the last "
                            "tier");
            p->tiers[i].unbounded = true;
            continue;
        }
        if (i == n - 1)
            return fail(l, fp, "the last tier must be unbounded (null)");
        if (get_dec(l, fp, up, &p->tiers[i].up_to) < 0)
            return -1;
        if (i > 0 &&
            pricing_dec_cmp(p->tiers[i].up_to, p->tiers[i - 1].up_to) <= 0) {
            char a[48];
            pricing_dec_format(p->tiers[i].up_to, 12, a, sizeof(a));
            return fail(l, fp, "'%s' is not above the previous tier's bound",
                        json_string_value(up));
        }
        if (i == 0 && p->tiers[0].up_to.v == 0)
            return fail(l, fp, "'0': the first tier's bound must be above 0");
    }
    return 0;
}

/*
 * A dimension: null (unknown) or an object with the given extra keys
 * (handled by the caller) plus either rate (and per, when timed) or tiers.
 */
static int
load_price(struct loader *l, const char *path, const json_t *v, bool timed,
           const char *const *keys, struct price *p)
{
    char kp[128];
    if (json_is_null(v)) {
        p->known = false;
        return 0;
    }
    if (!json_is_object(v))
        return wrong_type(l, path, v, "an object or null (price unknown)");
    if (only_keys(l, path, v, keys) < 0)
        return -1;
    p->known = true;
    const json_t *rate = json_object_get(v, "rate");
    const json_t *tiers = json_object_get(v, "tiers");
    const json_t *per = json_object_get(v, "per");
    if (rate && tiers)
        return fail(l, path, "has both 'rate' and 'tiers'; give one");
    if (tiers) {
        join(kp, sizeof(kp), path, "tiers");
        if (per) {
            join(kp, sizeof(kp), path, "per");
            return fail(l, kp,
                        "applies to 'rate' only; tiers name their own "
                        "time unit in tiers.per");
        }
        return load_tiers(l, kp, tiers, timed, p);
    }
    if (!rate)
        return fail(l, path, "needs 'rate' or 'tiers'");
    p->mode = TIERS_NONE;
    join(kp, sizeof(kp), path, "rate");
    if (get_dec(l, kp, rate, &p->rate) < 0)
        return -1;
    p->per_s = 1;
    p->per_name = NULL;
    if (timed) {
        join(kp, sizeof(kp), path, "per");
        if (!per)
            return fail(l, kp,
                        "missing: the rate's time unit (second, "
                        "minute, hour, day, month, month30)");
        if (get_per(l, kp, per, &p->per_s, &p->per_name) < 0)
            return -1;
    }
    return 0;
}

static int
get_basis(struct loader *l, const char *path, const json_t *obj, bool *used)
{
    char kp[128];
    join(kp, sizeof(kp), path, "basis");
    const json_t *v = json_object_get(obj, "basis");
    const char *s = NULL;
    if (!v)
        return fail(l, kp, "missing: allocated or used");
    if (get_string(l, kp, v, &s) < 0)
        return -1;
    if (strcmp(s, "allocated") != 0 && strcmp(s, "used") != 0)
        return fail(l, kp, "'%s' is not a basis (allocated, used)", s);
    *used = strcmp(s, "used") == 0;
    return 0;
}

/* The "unit" of a dimension: GiB or GB; absent is GiB unless required. */
static int
get_unit(struct loader *l, const char *path, const json_t *obj, bool required,
         enum byte_unit *out)
{
    char kp[128];
    const char *s = NULL;
    join(kp, sizeof(kp), path, "unit");
    const json_t *u = json_object_get(obj, "unit");
    *out = UNIT_GIB;
    if (!u)
        return required ? fail(l, kp, "missing: GiB or GB") : 0;
    if (get_string(l, kp, u, &s) < 0)
        return -1;
    if (strcmp(s, "GB") == 0)
        *out = UNIT_GB;
    else if (strcmp(s, "GiB") != 0)
        return fail(l, kp, "'%s' is not GiB or GB", s);
    return 0;
}

/* A decimal quantity of units times unit_bytes, which must come out a
 * whole number of bytes. */
static int
get_bytes(struct loader *l, const char *path, const json_t *v,
          uint64_t unit_bytes, uint64_t *out)
{
    struct pricing_dec d;
    if (get_dec(l, path, v, &d) < 0)
        return -1;
    pricing_u128 scaled;
    if (__builtin_mul_overflow((pricing_u128)d.v, (pricing_u128)unit_bytes,
                               &scaled) ||
        scaled % (pricing_u128)PRICING_ONE != 0 ||
        scaled / (pricing_u128)PRICING_ONE > UINT64_MAX)
        return fail(l, path, "'%s' is not a whole number of bytes below 2^64",
                    json_string_value(v));
    *out = (uint64_t)(scaled / (pricing_u128)PRICING_ONE);
    return 0;
}

/* obj's "unit" (required) and "memory" above 0 in it, as bytes into
 * *bytes and the unit's bytes into *unit_bytes: a size's memory. */
static int
get_memory(struct loader *l, const char *path, const json_t *obj,
           uint64_t *bytes, uint64_t *unit_bytes)
{
    enum byte_unit unit;
    const json_t *m;
    char kp[128];
    join(kp, sizeof(kp), path, "memory");
    if (get_unit(l, path, obj, true, &unit) < 0 ||
        !(m = need(l, path, obj, "memory")) ||
        get_bytes(l, kp, m, UNIT_BYTES(unit), bytes) < 0)
        return -1;
    if (*bytes == 0)
        return fail(l, kp, "'%s' is not above 0", json_string_value(m));
    *unit_bytes = UNIT_BYTES(unit);
    return 0;
}

/* A decimal > 0 with at most `decimals` decimals, times 10^decimals,
 * below 2^32: a vCPU count in 1/10,000 (decimals 4). */
static int
get_fixed(struct loader *l, const char *path, const json_t *v,
          unsigned decimals, uint32_t *out)
{
    struct pricing_dec d;
    if (!json_is_string(v))
        return wrong_type(l, path, v, "a decimal string such as \"0.5\"");
    const char *s = json_string_value(v);
    enum pricing_status st = pricing_dec_parse(s, decimals, &d);
    if (st != PRICING_OK)
        return fail(l, path, "'%s': %s (at most %u decimals)", s,
                    pricing_status_str(st), decimals);
    pricing_i128 unit = PRICING_ONE;
    for (unsigned i = 0; i < decimals; i++)
        unit /= 10;
    if (d.v <= 0 || d.v / unit > UINT32_MAX)
        return fail(l, path, "'%s' is not above 0 and below 2^32 / 10^%u", s,
                    decimals);
    *out = (uint32_t)(d.v / unit);
    return 0;
}

/* An id: 1-64 of A-Za-z0-9._:- */
static int
get_id(struct loader *l, const char *path, const json_t *v, char *out, size_t n)
{
    const char *s = NULL;
    if (get_string(l, path, v, &s) < 0)
        return -1;
    if (!pricing_id_valid(s))
        return fail(l, path, "'%s' is not 1-64 of A-Za-z0-9._:-", s);
    snprintf(out, n, "%s", s);
    return 0;
}

static bool
valid_date(const char *s)
{
    if (strlen(s) != 10 || s[4] != '-' || s[7] != '-')
        return false;
    for (int i = 0; i < 10; i++)
        if (i != 4 && i != 7 && (s[i] < '0' || s[i] > '9'))
            return false;
    int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 +
            (s[3] - '0');
    int m = (s[5] - '0') * 10 + (s[6] - '0');
    int d = (s[8] - '0') * 10 + (s[9] - '0');
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return y >= 1970 && m >= 1 && m <= 12 && d >= 1 &&
           d <= mdays[m - 1] - (m == 2 && !leap);
}

/* An optional decimal; absent means 0. */
static int
opt_dec(struct loader *l, const char *path, const json_t *obj, const char *key,
        struct pricing_dec *out)
{
    char kp[128];
    const json_t *v = json_object_get(obj, key);
    out->v = 0;
    if (!v)
        return 0;
    join(kp, sizeof(kp), path, key);
    return get_dec(l, kp, v, out);
}

/* Element i of the array at path: an object of the allowed keys, or
 * NULL after failing. Its path, "path[i]", goes into ip. */
static const json_t *
item(struct loader *l, const char *path, const json_t *arr, size_t i,
     const char *const *keys, char *ip, size_t n)
{
    const json_t *x = json_array_get(arr, i);
    snprintf(ip, n, "%s[%zu]", path, i);
    if (!json_is_object(x)) {
        wrong_type(l, ip, x, "an object");
        return NULL;
    }
    return only_keys(l, ip, x, keys) < 0 ? NULL : x;
}

/* The id at ip.key, refused if one of the n before it has it. */
static int
unique_id(struct loader *l, const char *ip, const json_t *obj, const char *key,
          char *out, const char *before, size_t stride, size_t n)
{
    char kp[128];
    const json_t *x = need(l, ip, obj, key);
    join(kp, sizeof(kp), ip, key);
    if (!x || get_id(l, kp, x, out, PRICING_ID_MAX + 1) < 0)
        return -1;
    for (size_t k = 0; k < n; k++)
        if (strcmp(before + k * stride, out) == 0)
            return fail(l, kp, "'%s' is already the %s of item %zu", out, key,
                        k);
    return 0;
}

static int
load_addons(struct loader *l, const json_t *v, struct pricing_book *b)
{
    static const char *const keys[] = {"name", "max_concurrency", "monthly_fee",
                                       NULL};
    const char *path = "subscription.addons";
    if (!json_is_array(v))
        return wrong_type(l, path, v, "an array");
    size_t n = json_array_size(v);
    if (n > PRICING_ADDONS_MAX)
        return fail(l, path, "%zu add-ons: at most %d", n, PRICING_ADDONS_MAX);
    if (n && !(b->addons = calloc(n, sizeof(*b->addons))))
        return fail(l, path, "out of memory");
    b->limits.addons = b->addons;
    for (size_t i = 0; i < n; i++) {
        const json_t *a, *x;
        struct pricing_addon *ad = &b->addons[i];
        char ap[64], kp[96];
        int64_t c = 0;
        if (!(a = item(l, path, v, i, keys, ap, sizeof(ap))) ||
            unique_id(l, ap, a, "name", ad->name, b->addons[0].name,
                      sizeof(*ad), i) < 0)
            return -1;
        join(kp, sizeof(kp), ap, "max_concurrency");
        if (!(x = need(l, ap, a, "max_concurrency")) ||
            get_uint(l, kp, x, 1, INT32_MAX, &c) < 0)
            return -1;
        ad->max_concurrency = (uint32_t)c;
        join(kp, sizeof(kp), ap, "monthly_fee");
        if (!(x = need(l, ap, a, "monthly_fee")) ||
            get_dec(l, kp, x, &ad->monthly_fee) < 0)
            return -1;
        b->limits.naddons++;
    }
    return 0;
}

static int
load_caps(struct loader *l, const json_t *v, struct pricing_book *b)
{
    /* In the order of enum pricing_cap. */
    static const char *const keys[] = {"max_runs",         "max_cpu_hours",
                                       "max_memory_hours", "max_egress_gb",
                                       "max_storage",      NULL};
    const char *path = "subscription.caps";
    if (!json_is_object(v))
        return wrong_type(l, path, v, "an object");
    if (only_keys(l, path, v, keys) < 0)
        return -1;
    for (int c = 0; c < PRICING_NCAPS; c++) {
        const json_t *x = json_object_get(v, keys[c]);
        char kp[96];
        join(kp, sizeof(kp), path, keys[c]);
        if (!x)
            continue;
        b->limits.has_cap[c] = true;
        if (c == PRICING_CAP_RUNS) {
            int64_t runs = 0;
            if (get_uint(l, kp, x, 0, INT64_MAX, &runs) < 0)
                return -1;
            b->limits.cap[c].v = (pricing_i128)runs * PRICING_ONE;
        } else if (get_dec(l, kp, x, &b->limits.cap[c]) < 0) {
            return -1;
        }
    }
    return 0;
}

static int
load_subscription(struct loader *l, const json_t *v, struct pricing_book *b)
{
    static const char *const keys[] = {"monthly_fee",
                                       "included_credit",
                                       "max_concurrency",
                                       "max_session_s",
                                       "addons",
                                       "caps",
                                       NULL};
    if (!json_is_object(v))
        return wrong_type(l, "subscription", v, "an object");
    if (only_keys(l, "subscription", v, keys) < 0)
        return -1;
    b->has_subscription = true;
    const json_t *fee = json_object_get(v, "monthly_fee");
    if (!fee)
        fail(l, "subscription.monthly_fee",
             "missing (required; null if the price is unknown)");
    if (!fee)
        return -1;
    b->monthly_fee_known = !json_is_null(fee);
    if (b->monthly_fee_known &&
        get_dec(l, "subscription.monthly_fee", fee, &b->monthly_fee) < 0)
        return -1;
    const json_t *inc = json_object_get(v, "included_credit");
    b->included_credit_known = !json_is_null(inc);
    if (inc && b->included_credit_known &&
        get_dec(l, "subscription.included_credit", inc, &b->included_credit) <
            0)
        return -1;
    /* Limits: integers > 0 or null (none); the simulator checks them. */
    const char *limits[] = {"max_concurrency", "max_session_s"};
    uint32_t *out[] = {&b->limits.max_concurrency, &b->limits.max_session_s};
    for (size_t i = 0; i < 2; i++) {
        const json_t *lim = json_object_get(v, limits[i]);
        char kp[64];
        int64_t x = 0;
        snprintf(kp, sizeof(kp), "subscription.%s", limits[i]);
        if (lim && !json_is_null(lim) &&
            get_uint(l, kp, lim, 1, INT32_MAX, &x) < 0)
            return -1;
        *out[i] = (uint32_t)x;
    }
    const json_t *x;
    if ((x = json_object_get(v, "addons")) && load_addons(l, x, b) < 0)
        return -1;
    if ((x = json_object_get(v, "caps")) && load_caps(l, x, b) < 0)
        return -1;
    return 0;
}

/* "instances" (section 11): a memory unit and a list of types. */
static int
load_instances(struct loader *l, const json_t *v, struct pricing_book *b)
{
    static const char *const keys[] = {"unit", "types", NULL};
    static const char *const tkeys[] = {"name", "vcpu", "memory",
                                        "rate", "per",  NULL};
    if (!json_is_object(v))
        return wrong_type(l, "instances", v, "an object");
    if (only_keys(l, "instances", v, keys) < 0)
        return -1;
    enum byte_unit unit;
    if (get_unit(l, "instances", v, true, &unit) < 0)
        return -1;
    const json_t *types = need(l, "instances", v, "types");
    if (!types)
        return -1;
    size_t n = json_array_size(types);
    if (!json_is_array(types) || n == 0)
        return wrong_type(l, "instances.types", types, "a non-empty array");
    if (n > INSTANCE_TYPES_MAX)
        return fail(l, "instances.types", "%zu types: at most %d", n,
                    INSTANCE_TYPES_MAX);
    if (!(b->types = calloc(n, sizeof(*b->types))))
        return fail(l, "instances.types", "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *t, *x;
        struct instance_type *it = &b->types[i];
        char tp[64], kp[96];
        if (!(t = item(l, "instances.types", types, i, tkeys, tp,
                       sizeof(tp))) ||
            unique_id(l, tp, t, "name", it->name, b->types[0].name, sizeof(*it),
                      i) < 0)
            return -1;
        join(kp, sizeof(kp), tp, "vcpu");
        if (!(x = need(l, tp, t, "vcpu")) ||
            get_fixed(l, kp, x, 4, &it->vcpu) < 0)
            return -1;
        join(kp, sizeof(kp), tp, "memory");
        if (!(x = need(l, tp, t, "memory")) ||
            get_bytes(l, kp, x, UNIT_BYTES(unit), &it->mem_bytes) < 0)
            return -1;
        join(kp, sizeof(kp), tp, "rate");
        if (!(x = need(l, tp, t, "rate")))
            return -1;
        if (json_is_null(x))
            return fail(l, kp, "null: an instance type's rate must be known");
        if (get_dec(l, kp, x, &it->rate) < 0)
            return -1;
        /* Bounded so that rates compare exactly in 128 bits (rate.c). */
        if (it->rate.v > (pricing_i128)1 << 100)
            return fail(l, kp, "'%s' is too large", json_string_value(x));
        join(kp, sizeof(kp), tp, "per");
        if (!(x = json_object_get(t, "per")))
            return fail(l, kp,
                        "missing: the rate's time unit (second, "
                        "minute, hour, day, month, month30)");
        if (get_per(l, kp, x, &it->per_s, &it->per_name) < 0)
            return -1;
        b->ntypes++;
    }
    return 0;
}

/* "grants" (section 14). */
static int
load_grants(struct loader *l, const json_t *v, struct pricing_book *b)
{
    static const char *const keys[] = {"id", "amount", "expires_after_periods",
                                       NULL};
    if (!json_is_array(v))
        return wrong_type(l, "grants", v, "an array");
    size_t n = json_array_size(v);
    if (n > PRICING_GRANTS_MAX)
        return fail(l, "grants", "%zu grants: at most %d", n,
                    PRICING_GRANTS_MAX);
    if (n && !(b->grants = calloc(n, sizeof(*b->grants))))
        return fail(l, "grants", "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *g, *x;
        struct book_grant *gr = &b->grants[i];
        char gp[32], kp[64];
        if (!(g = item(l, "grants", v, i, keys, gp, sizeof(gp))) ||
            unique_id(l, gp, g, "id", gr->id, b->grants[0].id, sizeof(*gr), i) <
                0)
            return -1;
        join(kp, sizeof(kp), gp, "amount");
        if (!(x = need(l, gp, g, "amount")))
            return -1;
        if (!json_is_string(x))
            return wrong_type(l, kp, x, "a decimal string such as \"100\"");
        enum pricing_status st =
            pricing_dec_parse(json_string_value(x), 6, &gr->amount);
        if (st != PRICING_OK || gr->amount.v <= 0)
            return fail(l, kp,
                        "'%s' is not an amount above 0 with at most 6 "
                        "decimals",
                        json_string_value(x));
        join(kp, sizeof(kp), gp, "expires_after_periods");
        if (!(x = need(l, gp, g, "expires_after_periods")))
            return -1;
        int64_t k = 0;
        if (!json_is_null(x) &&
            get_uint(l, kp, x, 1, PRICING_GRANT_PERIODS_MAX, &k) < 0)
            return -1;
        gr->expires_after = (int32_t)k;
        b->ngrants++;
    }
    return 0;
}

static int
load_autopause(struct loader *l, const json_t *v, struct pricing_book *b)
{
    static const char *const keys[] = {"idle_below", "after_s", NULL};
    if (!json_is_object(v))
        return wrong_type(l, "autopause", v, "an object");
    if (only_keys(l, "autopause", v, keys) < 0)
        return -1;
    const json_t *idle = need(l, "autopause", v, "idle_below");
    const json_t *after = need(l, "autopause", v, "after_s");
    int64_t x = 0;
    if (!idle || !after ||
        get_dec(l, "autopause.idle_below", idle, &b->idle_below) < 0 ||
        get_uint(l, "autopause.after_s", after, 0, INT32_MAX, &x) < 0)
        return -1;
    if (b->idle_below.v > PRICING_ONE)
        return fail(l, "autopause.idle_below",
                    "'%s' is above 1 (a fraction of the allocated vCPUs)",
                    json_string_value(idle));
    b->autopause = true;
    b->after_s = (uint32_t)x;
    return 0;
}

static int
load(struct loader *l, const json_t *root, struct pricing_book *b)
{
    static const char *const top[] = {"id",
                                      "provider",
                                      "name",
                                      "currency",
                                      "effective_from",
                                      "source",
                                      "as_of",
                                      "notes",
                                      "unsupported",
                                      "cpu",
                                      "memory",
                                      "storage",
                                      "egress",
                                      "per_run",
                                      "per_run_free",
                                      "limits",
                                      "pauses",
                                      "fixed_size",
                                      "memory_per_vcpu",
                                      "granularity_s",
                                      "min_billed_s",
                                      "subscription",
                                      "promotional_credit",
                                      "minimum_commit",
                                      "autopause",
                                      "instances",
                                      "grants",
                                      NULL};
    static const char *const cpu_keys[] = {"basis", "rate", "per",
                                           "tiers", "step", NULL};
    static const char *const mem_keys[] = {"basis", "unit", "rate", "per",
                                           "tiers", "step", NULL};
    static const char *const storage_keys[] = {"unit",
                                               "rate",
                                               "per",
                                               "tiers",
                                               "included_gib",
                                               "included_per_sandbox",
                                               "billed_when",
                                               "included_per_account",
                                               NULL};
    static const char *const egress_keys[] = {"rate", "tiers", "free_gb", NULL};
    const json_t *v;
    const char *s = NULL;
    int64_t x = 0;

    if (!json_is_object(root))
        return wrong_type(l, "(top)", root, "an object");
    if (only_keys(l, "", root, top) < 0)
        return -1;

    if (!(v = need(l, "", root, "id")) || get_string(l, "id", v, &s) < 0)
        return -1;
    if (!pricing_id_valid(s))
        return fail(l, "id", "'%s' is not 1-64 of A-Za-z0-9._:-", s);
    snprintf(b->id, sizeof(b->id), "%s", s);
    if ((v = json_object_get(root, "provider")) &&
        get_id(l, "provider", v, b->provider, sizeof(b->provider)) < 0)
        return -1;

    if (!(v = need(l, "", root, "currency")) ||
        get_string(l, "currency", v, &s) < 0)
        return -1;
    b->minor_unit = pricing_currency_minor_unit(s);
    if (b->minor_unit < 0)
        return fail(l, "currency",
                    "'%s' is not a currency this project "
                    "accepts (ISO 4217, such as USD)",
                    s);
    snprintf(b->currency, sizeof(b->currency), "%s", s);

    if (!(v = need(l, "", root, "effective_from")) ||
        get_string(l, "effective_from", v, &s) < 0)
        return -1;
    if (!valid_date(s))
        return fail(l, "effective_from", "'%s' is not a date YYYY-MM-DD", s);

    static const char *const texts[] = {"name", "source", "as_of", "notes"};
    for (size_t i = 0; i < 4; i++)
        if ((v = json_object_get(root, texts[i])) &&
            get_string(l, texts[i], v, &s) < 0)
            return -1;
    if ((v = json_object_get(root, "unsupported"))) {
        if (!json_is_array(v))
            return wrong_type(l, "unsupported", v, "an array of strings");
        for (size_t i = 0; i < json_array_size(v); i++) {
            char kp[64];
            snprintf(kp, sizeof(kp), "unsupported[%zu]", i);
            if (get_string(l, kp, json_array_get(v, i), &s) < 0)
                return -1;
        }
    }

    if (!(v = need_price(l, root, "cpu")) ||
        load_price(l, "cpu", v, true, cpu_keys, &b->cpu) < 0)
        return -1;
    const json_t *step;
    if (b->cpu.known && (get_basis(l, "cpu", v, &b->cpu_used) < 0 ||
                         ((step = json_object_get(v, "step")) &&
                          get_fixed(l, "cpu.step", step, 4, &b->cpu_step) < 0)))
        return -1;

    if (!(v = need_price(l, root, "memory")) ||
        load_price(l, "memory", v, true, mem_keys, &b->memory) < 0)
        return -1;
    if (b->memory.known &&
        (get_basis(l, "memory", v, &b->memory_used) < 0 ||
         get_unit(l, "memory", v, true, &b->memory_unit) < 0))
        return -1;
    if (b->memory.known && (step = json_object_get(v, "step")) &&
        get_bytes(l, "memory.step", step, UNIT_BYTES(b->memory_unit),
                  &b->memory_step) < 0)
        return -1;
    if (b->memory.known && json_object_get(v, "step") && !b->memory_step)
        return fail(l, "memory.step", "'0': a step must be above 0");

    if ((v = json_object_get(root, "instances"))) {
        if (load_instances(l, v, b) < 0)
            return -1;
        /* The types price cpu and memory; the dimensions stay at 0. */
        const struct price *dims[] = {&b->cpu, &b->memory};
        const char *names[] = {"cpu", "memory"};
        bool steps[] = {b->cpu_step != 0, b->memory_step != 0};
        for (int i = 0; i < 2; i++)
            if (!dims[i]->known || dims[i]->mode != TIERS_NONE ||
                dims[i]->rate.v != 0 || steps[i])
                return fail(l, names[i],
                            "with 'instances', must be an object with rate "
                            "\"0\", no tiers and no step");
    }

    if (!(v = need_price(l, root, "storage")) ||
        load_price(l, "storage", v, true, storage_keys, &b->storage) < 0)
        return -1;
    b->storage_unit = UNIT_GIB;
    const json_t *inc, *per_sandbox, *when, *pool;
    /* A running sandbox's allowance: in GiB, or in the book's unit (20
     * GB is no whole number of GiB to 12 decimals). */
    if (b->storage.known && json_object_get(v, "included_gib") &&
        json_object_get(v, "included_per_sandbox"))
        return fail(l, "storage",
                    "has both 'included_gib' and 'included_per_sandbox'; "
                    "give one");
    if (b->storage.known &&
        (get_unit(l, "storage", v, false, &b->storage_unit) < 0 ||
         ((inc = json_object_get(v, "included_gib")) &&
          get_bytes(l, "storage.included_gib", inc, (uint64_t)1 << 30,
                    &b->included_bytes) < 0) ||
         ((per_sandbox = json_object_get(v, "included_per_sandbox")) &&
          get_bytes(l, "storage.included_per_sandbox", per_sandbox,
                    UNIT_BYTES(b->storage_unit), &b->included_bytes) < 0) ||
         ((pool = json_object_get(v, "included_per_account")) &&
          get_bytes(l, "storage.included_per_account", pool,
                    UNIT_BYTES(b->storage_unit), &b->pool_bytes) < 0)))
        return -1;
    if (b->storage.known && (when = json_object_get(v, "billed_when"))) {
        if (get_string(l, "storage.billed_when", when, &s) < 0)
            return -1;
        if (strcmp(s, "running") == 0)
            b->storage_running_only = true;
        else if (strcmp(s, "always") != 0)
            return fail(l, "storage.billed_when",
                        "'%s' is not always or running", s);
    }

    if (!(v = need_price(l, root, "egress")) ||
        load_price(l, "egress", v, false, egress_keys, &b->egress) < 0)
        return -1;
    const json_t *free_gb;
    if (b->egress.known && (free_gb = json_object_get(v, "free_gb")) &&
        get_bytes(l, "egress.free_gb", free_gb, 1000000000, &b->free_bytes) < 0)
        return -1;

    if (!(v = need_price(l, root, "per_run")))
        return -1;
    b->per_run_known = !json_is_null(v);
    if (b->per_run_known && get_dec(l, "per_run", v, &b->per_run) < 0)
        return -1;
    /* The largest sandbox the provider runs: the simulator's limits,
     * which billing does not read. */
    if ((v = json_object_get(root, "limits"))) {
        static const char *const keys[] = {"max_vcpu", "max_memory", "max_disk",
                                           NULL};
        if (!json_is_object(v))
            return wrong_type(l, "limits", v, "an object");
        if (only_keys(l, "limits", v, keys) < 0)
            return -1;
        for (int i = 0; i < 3; i++) {
            const json_t *m = json_object_get(v, keys[i]);
            char kp[32];
            join(kp, sizeof(kp), "limits", keys[i]);
            if (!m)
                continue;
            if (get_dec(l, kp, m, &b->limits.sandbox_max[i]) < 0)
                return -1;
            if (b->limits.sandbox_max[i].v <= 0)
                return fail(l, kp, "'%s' is not above 0", json_string_value(m));
            b->limits.has_sandbox_max[i] = true;
        }
    }
    /* The provider's autopause: it pauses a sandbox idle this long
     * unless told otherwise (the simulator's default; billing does not
     * read it, and the autopause credit is "autopause"). */
    if ((v = json_object_get(root, "pauses"))) {
        static const char *const keys[] = {"after_idle_s", NULL};
        if (!json_is_object(v))
            return wrong_type(l, "pauses", v, "an object");
        const json_t *after;
        if (only_keys(l, "pauses", v, keys) < 0 ||
            !(after = need(l, "pauses", v, "after_idle_s")) ||
            get_uint(l, "pauses.after_idle_s", after, 0, 86400, &x) < 0)
            return -1;
        b->limits.pauses = true;
        b->limits.pause_after_s = (uint32_t)x;
    }
    /* The one size the provider runs (the simulator's; billing rates
     * the samples' own). */
    if ((v = json_object_get(root, "fixed_size"))) {
        static const char *const keys[] = {"unit", "vcpu", "memory", NULL};
        const json_t *f;
        if (!json_is_object(v))
            return wrong_type(l, "fixed_size", v, "an object");
        if (only_keys(l, "fixed_size", v, keys) < 0 ||
            !(f = need(l, "fixed_size", v, "vcpu")) ||
            get_fixed(l, "fixed_size.vcpu", f, 4, &b->limits.fixed_vcpu) < 0 ||
            get_memory(l, "fixed_size", v, &b->limits.fixed_mem_bytes,
                       &b->limits.fixed_unit_bytes) < 0)
            return -1;
        b->limits.has_fixed_size = true;
    }
    /* Memory that comes only with whole vCPUs (the simulator's, like
     * the fixed size). */
    if ((v = json_object_get(root, "memory_per_vcpu"))) {
        static const char *const keys[] = {"unit", "memory", NULL};
        if (!json_is_object(v))
            return wrong_type(l, "memory_per_vcpu", v, "an object");
        if (b->limits.has_fixed_size)
            return fail(l, "memory_per_vcpu",
                        "given with fixed_size, which sets the one size");
        if (only_keys(l, "memory_per_vcpu", v, keys) < 0 ||
            get_memory(l, "memory_per_vcpu", v,
                       &b->limits.memory_per_vcpu_bytes,
                       &b->limits.memory_per_vcpu_unit_bytes) < 0)
            return -1;
    }
    /* Runs free each period, before per_run applies (AWS Lambda's 1M
     * requests a month); with per_run null, a period within them needs
     * no price. */
    if ((v = json_object_get(root, "per_run_free"))) {
        if (get_uint(l, "per_run_free", v, 0, INT64_MAX, &x) < 0)
            return -1;
        b->runs_free = (uint64_t)x;
    }

    b->granularity_s = 1;
    if ((v = json_object_get(root, "granularity_s"))) {
        if (get_uint(l, "granularity_s", v, 1, 86400, &x) < 0)
            return -1;
        b->granularity_s = (uint32_t)x;
    }
    if ((v = json_object_get(root, "min_billed_s"))) {
        if (get_uint(l, "min_billed_s", v, 0, 86400, &x) < 0)
            return -1;
        b->min_billed_s = (uint32_t)x;
    }
    if ((v = json_object_get(root, "subscription")) &&
        load_subscription(l, v, b) < 0)
        return -1;
    if (opt_dec(l, "", root, "promotional_credit", &b->promotional_credit) <
            0 ||
        opt_dec(l, "", root, "minimum_commit", &b->minimum_commit) < 0)
        return -1;
    if ((v = json_object_get(root, "autopause")) && load_autopause(l, v, b) < 0)
        return -1;
    if ((v = json_object_get(root, "grants")) && load_grants(l, v, b) < 0)
        return -1;
    /* The units the memory and storage caps count in. */
    b->limits.memory_unit_bytes = UNIT_BYTES(b->memory_unit);
    b->limits.storage_unit_bytes = UNIT_BYTES(b->storage_unit);
    return 0;
}

/* The key, as written, of the JSON string that ends at byte end of
 * text, into buf (cut at a character); "" if no string ends there. */
static const char *
dup_key(const char *text, size_t end, char *buf, size_t n)
{
    buf[0] = '\0';
    if (end < 2 || text[end - 1] != '"')
        return buf;
    /* Back to the opening quote: the one not escaped, i.e. after an
     * even number of backslashes (inside, a quote is always escaped). */
    size_t open = end - 1;
    for (;;) {
        if (open == 0)
            return buf;
        open--;
        if (text[open] != '"')
            continue;
        size_t bs = 0;
        while (bs < open && text[open - 1 - bs] == '\\')
            bs++;
        if (bs % 2 == 0)
            break;
    }
    size_t len = end - 1 - (open + 1), k = len < n - 1 ? len : n - 1;
    /* Never inside a character (what jansson read is UTF-8). */
    while (k > 0 && k < len &&
           ((unsigned char)text[open + 1 + k] & 0xC0) == 0x80)
        k--;
    memcpy(buf, text + open + 1, k);
    buf[k] = '\0';
    return buf;
}

const char *
pricing_json_reason(const char *why, bool dup, const char *text, size_t pos,
                    char *buf, size_t n)
{
    if (!n)
        return buf;
    char key[512];
    int w = dup && *dup_key(text, pos, key, sizeof(key))
                ? snprintf(buf, n, "duplicate key '%s'", key)
                : snprintf(buf, n, "%s", why);
    if (w < 0 || (size_t)w < n)
        return buf;
    /* Cut short: never inside a character. The last lead byte's
     * sequence must be whole, else it goes. */
    size_t len = n - 1, i = len;
    while (i > 0 && ((unsigned char)buf[i - 1] & 0xC0) == 0x80)
        i--;
    if (i > 0) {
        unsigned char lead = (unsigned char)buf[i - 1];
        size_t need = lead >= 0xF0   ? 4
                      : lead >= 0xE0 ? 3
                      : lead >= 0xC0 ? 2
                                     : 1;
        if (len - (i - 1) < need)
            buf[i - 1] = '\0';
    }
    return buf;
}

struct pricing_book *
pricing_book_parse(const char *json, size_t len, const char *origin,
                   struct pricing_err *e)
{
    struct loader l = {e, origin};
    json_error_t jerr;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        char why[256];
        if (e)
            snprintf(e->msg, sizeof(e->msg), "%s%sline %d column %d: %s",
                     origin ? origin : "", origin ? ": " : "", jerr.line,
                     jerr.column,
                     pricing_json_reason(
                         jerr.text,
                         json_error_code(&jerr) == json_error_duplicate_key,
                         json, (size_t)jerr.position, why, sizeof(why)));
        return NULL;
    }
    struct pricing_book *b = calloc(1, sizeof(*b));
    if (!b) {
        fail(&l, "(top)", "out of memory");
    } else if (load(&l, root, b) < 0) {
        pricing_book_free(b);
        b = NULL;
    }
    json_decref(root);
    return b;
}

void
pricing_book_free(struct pricing_book *b)
{
    if (!b)
        return;
    free(b->cpu.tiers);
    free(b->memory.tiers);
    free(b->storage.tiers);
    free(b->egress.tiers);
    free(b->types);
    free(b->addons);
    free(b->grants);
    free(b);
}

const char *
pricing_book_id(const struct pricing_book *b)
{
    return b->id;
}

const char *
pricing_book_currency(const struct pricing_book *b)
{
    return b->currency;
}

const char *
pricing_book_provider(const struct pricing_book *b)
{
    return b->provider;
}

const struct pricing_limits *
pricing_book_limits(const struct pricing_book *b)
{
    return &b->limits;
}

bool
pricing_id_valid(const char *s)
{
    size_t n = 0;
    if (!s)
        return false;
    for (; s[n]; n++) {
        char c = s[n];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' ||
              c == '-'))
            return false;
    }
    return n >= 1 && n <= PRICING_ID_MAX;
}
