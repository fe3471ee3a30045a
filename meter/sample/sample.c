/*
 * sample.c - validating one sample (docs/pricing.md, "Samples") from its
 * JSON object, for the service and for meterctl rate alike.
 *
 * jansson reads JSON numbers with a fraction as doubles (their text is
 * checked first for more than 4 decimals: meter_sample_decimals_ok). vcpu and
 * cpu_used may have up to 4 decimals: such a value is accepted only if
 * it is exactly the double nearest to k/10,000 for an integer k, and k
 * is what is kept; no floating point goes further than this file.
 */
#include "meter_sample.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
invalid(struct meter_sample_err *err, const char *field, const json_t *v,
        const char *reason)
{
    snprintf(err->field, sizeof(err->field), "%s", field);
    err->value[0] = '\0';
    if (v) {
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        /* Long values are cut, at a character, never inside one. */
        if (s && strlen(s) > 80) {
            meter_utf8_cut(s, 77);
            snprintf(err->value, sizeof(err->value), "%s...", s);
        } else if (s) {
            snprintf(err->value, sizeof(err->value), "%s", s);
        }
        free(s);
    }
    snprintf(err->reason, sizeof(err->reason), "%s", reason);
    return -1;
}

/* A vCPU count with at most 4 decimals, in 1/10,000. */
static int
get_cpu(const json_t *v, const char *field, uint32_t *out,
        struct meter_sample_err *err)
{
    const double max = (double)UINT32_MAX / PRICING_CPU_UNIT;
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0 || i > (json_int_t)max)
            return invalid(err, field, v, "out of range");
        *out = (uint32_t)i * PRICING_CPU_UNIT;
        return 0;
    }
    if (!json_is_real(v))
        return invalid(err, field, v, "must be a number");
    double x = json_real_value(v);
    if (!(x >= 0) || x > max)
        return invalid(err, field, v, "out of range");
    long long k = llround(x * PRICING_CPU_UNIT);
    if ((double)k / PRICING_CPU_UNIT != x)
        return invalid(err, field, v, "more than 4 decimals");
    *out = (uint32_t)k;
    return 0;
}

static int
get_bytes(const json_t *v, const char *field, uint64_t *out,
          struct meter_sample_err *err)
{
    if (!json_is_integer(v))
        return invalid(err, field, v,
                       "must be an integer (no fraction, no exponent)");
    json_int_t i = json_integer_value(v);
    if (i < 0)
        return invalid(err, field, v, "must be >= 0");
    *out = (uint64_t)i;
    return 0;
}

static int
get_id(const json_t *v, const char *field, char *out,
       struct meter_sample_err *err)
{
    if (!v)
        return invalid(err, field, NULL, "required");
    if (!json_is_string(v) || !pricing_id_valid(json_string_value(v)))
        return invalid(err, field, v,
                       "must be a string of 1-64 of A-Za-z0-9._:-");
    memcpy(out, json_string_value(v), strlen(json_string_value(v)) + 1);
    return 0;
}

const char *const meter_sample_fields[METER_NFIELDS] = {
    "ts",       "account_id", "sandbox_id",     "state",      "vcpu",
    "cpu_used", "mem_bytes",  "mem_used_bytes", "disk_bytes", "egress_bytes"};

int
meter_sample_field(const char *name)
{
    for (int i = 0; i < METER_NFIELDS; i++)
        if (strcmp(meter_sample_fields[i], name) == 0)
            return i;
    return -1;
}

int
meter_sample_from_fields(const json_t *const v[METER_NFIELDS],
                         struct meter_sample *out, struct meter_sample_err *err)
{
    const json_t *ts = v[METER_F_TS];
    memset(out, 0, sizeof(*out));
    if (!ts)
        return invalid(err, "ts", NULL, "required");
    if (json_is_integer(ts)) {
        json_int_t t = json_integer_value(ts);
        if (t < 0 || t > METER_TS_MAX)
            return invalid(err, "ts", ts,
                           "out of range (1970 to 9999, Unix seconds)");
        out->s.ts = t;
    } else if (!json_is_string(ts) ||
               meter_time_parse_rfc3339(json_string_value(ts), &out->s.ts) <
                   0) {
        return invalid(err, "ts", ts,
                       "must be Unix seconds or \"YYYY-MM-DDTHH:MM:SSZ\"");
    }
    if (get_id(v[METER_F_ACCOUNT], "account_id", out->account_id, err) < 0 ||
        get_id(v[METER_F_SANDBOX], "sandbox_id", out->sandbox_id, err) < 0)
        return -1;

    const json_t *state = v[METER_F_STATE];
    if (!state)
        return invalid(err, "state", NULL, "required");
    const char *st = json_is_string(state) ? json_string_value(state) : "";
    bool running = strcmp(st, "running") == 0;
    if (!running && strcmp(st, "paused") != 0)
        return invalid(err, "state", state,
                       "must be \"running\" or \"paused\"");

    if (!v[METER_F_DISK])
        return invalid(err, "disk_bytes", NULL, "required");
    if (get_bytes(v[METER_F_DISK], "disk_bytes", &out->s.disk_bytes, err) < 0)
        return -1;
    if (v[METER_F_EGRESS] && get_bytes(v[METER_F_EGRESS], "egress_bytes",
                                       &out->s.egress_bytes, err) < 0)
        return -1;
    if (!running)
        return 0;

    const json_t *vcpu = v[METER_F_VCPU], *used = v[METER_F_CPU_USED];
    const json_t *mem = v[METER_F_MEM], *mem_used = v[METER_F_MEM_USED];
    if (!vcpu)
        return invalid(err, "vcpu", NULL, "required when running");
    if (get_cpu(vcpu, "vcpu", &out->s.vcpu, err) < 0)
        return -1;
    if (out->s.vcpu == 0)
        return invalid(err, "vcpu", vcpu, "must be > 0");
    if (!used)
        return invalid(err, "cpu_used", NULL, "required when running");
    if (get_cpu(used, "cpu_used", &out->s.cpu_used, err) < 0)
        return -1;
    if (out->s.cpu_used > out->s.vcpu)
        return invalid(err, "cpu_used", used, "must be <= vcpu");
    if (!mem)
        return invalid(err, "mem_bytes", NULL, "required when running");
    if (get_bytes(mem, "mem_bytes", &out->s.mem_bytes, err) < 0)
        return -1;
    out->s.mem_used_bytes = out->s.mem_bytes;
    if (mem_used) {
        if (get_bytes(mem_used, "mem_used_bytes", &out->s.mem_used_bytes, err) <
            0)
            return -1;
        if (out->s.mem_used_bytes > out->s.mem_bytes)
            return invalid(err, "mem_used_bytes", mem_used,
                           "must be <= mem_bytes");
    }
    return 0;
}

int
meter_sample_parse(const json_t *obj, struct meter_sample *out,
                   struct meter_sample_err *err)
{
    const json_t *v[METER_NFIELDS] = {0};
    const char *key;
    json_t *x;
    if (!json_is_object(obj))
        return invalid(err, "(sample)", obj, "must be a JSON object");
    json_object_foreach((json_t *)obj, key, x)
    {
        int f = meter_sample_field(key);
        if (f < 0)
            return invalid(err, key, x, "unknown field");
        v[f] = x;
    }
    return meter_sample_from_fields(v, out, err);
}
