/*
 * format.c - the canonical text of a sample: the NDJSON line that
 * meterctl export writes and meterctl rate reads, and the shortest
 * decimal of a vCPU count, shared with the columnar writer.
 */
#include "meter_sample.h"

#include <stdio.h>

int
meter_cpu_format(char *buf, size_t n, uint64_t v)
{
    unsigned long long whole = v / PRICING_CPU_UNIT,
                       frac = v % PRICING_CPU_UNIT;
    if (frac == 0)
        return snprintf(buf, n, "%llu", whole);
    int len = snprintf(buf, n, "%llu.%04llu", whole, frac);
    while (len > 0 && (size_t)len < n && buf[len - 1] == '0')
        buf[--len] = '\0';
    return len;
}

int
meter_sample_format(char *buf, size_t n, const char *account,
                    const char *sandbox, const struct pricing_second *s)
{
    if (s->vcpu == 0)
        return snprintf(buf, n,
                        "{\"ts\":%lld,\"account_id\":\"%s\",\"sandbox_id\":"
                        "\"%s\",\"state\":\"paused\",\"disk_bytes\":%llu,"
                        "\"egress_bytes\":%llu}\n",
                        (long long)s->ts, account, sandbox,
                        (unsigned long long)s->disk_bytes,
                        (unsigned long long)s->egress_bytes);
    char vcpu[24], used[24];
    meter_cpu_format(vcpu, sizeof(vcpu), s->vcpu);
    meter_cpu_format(used, sizeof(used), s->cpu_used);
    return snprintf(
        buf, n,
        "{\"ts\":%lld,\"account_id\":\"%s\",\"sandbox_id\":\"%s\","
        "\"state\":\"running\",\"vcpu\":%s,\"cpu_used\":%s,"
        "\"mem_bytes\":%llu,\"mem_used_bytes\":%llu,"
        "\"disk_bytes\":%llu,\"egress_bytes\":%llu}\n",
        (long long)s->ts, account, sandbox, vcpu, used,
        (unsigned long long)s->mem_bytes, (unsigned long long)s->mem_used_bytes,
        (unsigned long long)s->disk_bytes, (unsigned long long)s->egress_bytes);
}
