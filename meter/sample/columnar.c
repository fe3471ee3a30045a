/*
 * columnar.c - writing the columnar body form (meter/README.md): what
 * meterctl gen pushes and the benchmarks send. A column the same every
 * second is written once, as a scalar.
 */
#include "meter_sample.h"

#include <stdio.h>
#include <string.h>

void
meter_columnar_begin(struct meter_columnar *c)
{
    meter_buf_reset(&c->body);
    c->runs = 0;
    meter_buf_str(&c->body, "{\"sandboxes\":[");
}

void
meter_columnar_end(struct meter_columnar *c)
{
    meter_buf_str(&c->body, "]}\n");
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
meter_columnar_add(struct meter_columnar *c, const char *account,
                   const char *sandbox, const struct pricing_second *s,
                   size_t n)
{
    struct meter_buf *t = &c->body;
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
    if (c->runs++)
        meter_buf_str(t, ",");
    meter_buf_str(t, "{\"account_id\":\"");
    meter_buf_str(t, account);
    meter_buf_str(t, "\",\"sandbox_id\":\"");
    meter_buf_str(t, sandbox);
    len = snprintf(num, sizeof(num), "\",\"start\":%lld,\"seconds\":%zu",
                   (long long)s[0].ts, n);
    meter_buf_add(t, num, (size_t)len);
    if (!any_paused || all_paused) {
        meter_buf_str(t, all_paused ? ",\"state\":\"paused\""
                                    : ",\"state\":\"running\"");
    } else {
        meter_buf_str(t, ",\"state\":[");
        for (size_t i = 0; i < n; i++)
            meter_buf_str(t, s[i].vcpu ? (i ? ",\"running\"" : "\"running\"")
                                       : (i ? ",\"paused\"" : "\"paused\""));
        meter_buf_str(t, "]");
    }
    for (size_t k = 0; k < sizeof(cols) / sizeof(cols[0]); k++) {
        int f = cols[k];
        bool cpu = f == METER_F_VCPU || f == METER_F_CPU_USED;
        if (all_paused && f != METER_F_DISK && f != METER_F_EGRESS)
            continue; /* ignored on paused seconds */
        bool same = true;
        for (size_t i = 1; i < n && same; i++)
            same = col_value(&s[i], f) == col_value(&s[0], f);
        meter_buf_str(t, ",\"");
        meter_buf_str(t, meter_sample_fields[f]);
        meter_buf_str(t, same ? "\":" : "\":[");
        for (size_t i = 0; i < (same ? 1 : n); i++) {
            uint64_t v = col_value(&s[i], f);
            /* A paused second's running-only values are written as 0:
             * the parser ignores them on paused seconds. */
            if (!s[i].vcpu && !same && f != METER_F_DISK && f != METER_F_EGRESS)
                v = 0;
            len =
                cpu ? meter_cpu_format(num, sizeof(num), v)
                    : snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
            if (i)
                meter_buf_str(t, ",");
            meter_buf_add(t, num, (size_t)len);
        }
        if (!same)
            meter_buf_str(t, "]");
    }
    meter_buf_str(t, "}");
}
