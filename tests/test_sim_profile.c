/*
 * test_sim_profile.c - workload profiles: every shipped profile loads,
 * and bad ones are refused with the key path and the value.
 */
#include <dirent.h>
#include <stdlib.h>

#include "sim.h"
#include "testutil.h"

/* Every JSON file of simulator/profiles loads cleanly. */
static void
shipped(void)
{
    DIR *d = opendir(PROFILES_DIR);
    CHECK(d != NULL);
    if (!d)
        return;
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", PROFILES_DIR, de->d_name);
        struct sim_err e = {{0}};
        struct sim_profile *p = sim_profile_load(path, &e);
        if (!p)
            fprintf(stderr, "%s\n", e.msg);
        CHECK(p != NULL);
        /* The file is named after the profile. */
        if (p) {
            char want[80];
            snprintf(want, sizeof(want), "%s.json", p->name);
            CHECK_STR(de->d_name, want);
        }
        sim_profile_free(p);
        n++;
    }
    closedir(d);
    CHECK(n == 5); /* the five shapes of DOMAIN.md */
}

/* A profile's defaults and the exact sizes it turns into. */
static void
sizes(void)
{
    const char *json =
        "{\"name\": \"x\", \"sessions\": {\"per_month\": 10, \"length\": "
        "{\"dist\": \"fixed\", \"value\": 60}}, \"sandbox\": {\"vcpu\": 0.25, "
        "\"memory_gib\": 0.5, \"disk_gib\": 3}}";
    struct sim_err e;
    struct sim_profile *p = sim_profile_parse(json, strlen(json), NULL, &e);
    CHECK(p != NULL);
    if (!p)
        return;
    CHECK(p->arrivals == SIM_EVEN && p->per_month == 10 && p->batch == 1);
    CHECK(p->vcpu == 2500);
    CHECK(p->mem_bytes == 536870912ULL && p->mem_used_bytes == p->mem_bytes);
    CHECK(p->disk_bytes == 3ULL << 30);
    CHECK(!p->has_activity && !p->has_egress && !p->pause);
    sim_profile_free(p);
    /* GB (10^9 bytes) beside GiB, each key on its own; and N sandboxes
     * at once. */
    json = "{\"name\": \"y\", \"sessions\": {\"concurrent\": 7, \"length\": "
           "{\"dist\": \"fixed\", \"value\": 60}}, \"sandbox\": {\"vcpu\": "
           "1, \"memory_gb\": 0.5, \"memory_used_gib\": 0.25, \"disk_gb\": "
           "20}}";
    p = sim_profile_parse(json, strlen(json), NULL, &e);
    CHECK(p != NULL);
    if (!p)
        return;
    CHECK(p->arrivals == SIM_CONCURRENT && p->concurrent == 7);
    CHECK(p->mem_bytes == 500000000ULL && p->mem_used_bytes == 268435456ULL);
    CHECK(p->disk_bytes == 20000000000ULL);
    char names[SIM_PARAMS_MAX][SIM_PARAM_NAME];
    size_t n = sim_params(p, false, names);
    CHECK(n >= 1 && strcmp(names[0], "sessions.concurrent") == 0);
    for (size_t k = 0; k < n; k++)
        CHECK(strcmp(names[k], "sessions.batch") != 0);
    double v, step;
    CHECK(sim_param_set(p, "sessions.concurrent", 9.4, &v, NULL, 0) ==
              SIM_PARAM_SET &&
          v == 9 && p->concurrent == 9);
    CHECK(sim_param_get(p, "sessions.concurrent", &v, &step) == 0 && v == 9 &&
          step == 1);
    CHECK(sim_param_set(p, "sessions.concurrent", 0, &v, NULL, 0) ==
              SIM_PARAM_CLAMPED &&
          p->concurrent == 1);
    sim_profile_free(p);
}

/* A valid profile with one part replaced. */
#define BASE_SESSIONS                                                          \
    "\"sessions\": {\"per_month\": 10, \"length\": {\"dist\": \"fixed\", "     \
    "\"value\": 60}}"
#define BASE_SANDBOX                                                           \
    "\"sandbox\": {\"vcpu\": 2, \"memory_gib\": 4, \"disk_gib\": 1}"
#define ACTIVITY(busy_cpu, idle_len)                                           \
    "\"activity\": {\"busy\": {\"length\": {\"dist\": \"fixed\", \"value\": "  \
    "10}, \"cpu\": " busy_cpu "}, \"idle\": {\"length\": " idle_len            \
    ", \"cpu\": 0}}"

static const struct {
    const char *json, *want;
} bad[] = {
    {"{\"sessions\": {\"per_month\": 10, \"length\": {\"dist\": "
     "\"lognormal\", \"median\": 60, \"p95\": 30}}, " BASE_SANDBOX "}",
     "profile.json: sessions.length.p95: 30 is below the median 60"},
    {"{\"sessions\": {\"per_month\": 10, \"lenght\": 5}, " BASE_SANDBOX "}",
     "profile.json: sessions.lenght: unknown key"},
    {"{" BASE_SESSIONS ", \"sandbox\": {\"vcpu\": \"two\", \"memory_gib\": "
     "4, \"disk_gib\": 1}}",
     "profile.json: sandbox.vcpu: \"two\" is not a number"},
    {"{" BASE_SESSIONS ", \"sandbox\": {\"vcpu\": 2, \"memory_gib\": 0.1, "
     "\"disk_gib\": 1}}",
     "profile.json: sandbox.memory_gib: 0.1 is not a whole number of bytes"},
    {"{" BASE_SESSIONS ", \"sandbox\": {\"vcpu\": 2.00001, \"memory_gib\": 1, "
     "\"disk_gib\": 1}}",
     "profile.json: sandbox.vcpu: 2.00001 is not a whole number of 1/10,000 "
     "vCPU"},
    {"{" BASE_SESSIONS ", \"sandbox\": {\"vcpu\": 2, \"memory_gib\": 4}}",
     "profile.json: sandbox.disk_gib: missing"},
    {"{\"sessions\": {\"per_month\": 10, \"poisson\": {\"per_hour\": 1}, "
     "\"length\": {\"dist\": \"fixed\", \"value\": 60}}, " BASE_SANDBOX "}",
     "profile.json: sessions: needs exactly one of per_month, poisson and "
     "concurrent"},
    {"{\"sessions\": {\"poisson\": {\"per_hour\": 1, \"daily_pattern\": [1, "
     "2]}, \"length\": {\"dist\": \"fixed\", \"value\": 60}}, " BASE_SANDBOX
     "}",
     "profile.json: sessions.poisson.daily_pattern: [1,2] is not an array of "
     "24 numbers"},
    {"{\"sessions\": {\"per_month\": 10.5, \"length\": {\"dist\": \"fixed\", "
     "\"value\": 60}}, " BASE_SANDBOX "}",
     "profile.json: sessions.per_month: 10.5 is not a whole number"},
    {"{\"sessions\": {\"per_month\": 10, \"length\": {\"dist\": \"normal\", "
     "\"mean\": 60}}, " BASE_SANDBOX "}",
     "profile.json: sessions.length.dist: \"normal\" is not fixed, lognormal, "
     "exponential or histogram"},
    {"{\"sessions\": {\"per_month\": 10, \"length\": {\"dist\": \"fixed\", "
     "\"value\": 0}}, " BASE_SANDBOX "}",
     "profile.json: sessions.length.value: 0 is below 1"},
    {"{" BASE_SESSIONS ", " BASE_SANDBOX
     ", " ACTIVITY("1.5", "{\"dist\": \"fixed\", \"value\": 5}") "}",
     "profile.json: activity.busy.cpu: 1.5 is above 1"},
    {"{" BASE_SESSIONS ", " BASE_SANDBOX ", " ACTIVITY(
         "1",
         "{\"dist\": \"histogram\", \"bins\": [{\"from\": 1, \"to\": 30, "
         "\"weight\": 1}, {\"from\": 20, \"to\": 40, \"weight\": 1}]}") "}",
     "profile.json: activity.idle.length.bins[1].from: 20 overlaps the bin "
     "before, which ends at 30"},
    {"{" BASE_SESSIONS ", " BASE_SANDBOX
     ", " ACTIVITY("1", "{\"dist\": \"exponential\", \"mean\": -3}") "}",
     "profile.json: activity.idle.length.mean: -3 is below 0"},
    {"{" BASE_SESSIONS ", " BASE_SANDBOX ", \"pauses\": {\"after_idle_s\": "
     "60}}",
     "profile.json: pauses: needs activity"},
    {"{" BASE_SESSIONS ", " BASE_SANDBOX ", \"egress\": {\"per_session_mb\": "
     "{\"dist\": \"lognormal\", \"median\": 10, \"p95\": 10}}}",
     "profile.json: egress.per_session_mb.p95: 10 equals the median"},
    {"{" BASE_SESSIONS "}", "profile.json: sandbox: missing"},
    {"{\"sessions\": {\"per_month\": 10, \"concurrent\": 3, \"length\": "
     "{\"dist\": \"fixed\", \"value\": 60}}, " BASE_SANDBOX "}",
     "profile.json: sessions: needs exactly one of per_month, poisson and "
     "concurrent"},
    {"{\"sessions\": {\"length\": {\"dist\": \"fixed\", \"value\": "
     "60}}, " BASE_SANDBOX "}",
     "profile.json: sessions: needs exactly one of per_month, poisson and "
     "concurrent"},
    {"{\"sessions\": {\"concurrent\": 2.5, \"length\": {\"dist\": "
     "\"fixed\", \"value\": 60}}, " BASE_SANDBOX "}",
     "profile.json: sessions.concurrent: 2.5 is not a whole number from 1 to "
     "100,000"},
    {"{\"sessions\": {\"concurrent\": 100001, \"length\": {\"dist\": "
     "\"fixed\", \"value\": 60}}, " BASE_SANDBOX "}",
     "profile.json: sessions.concurrent: 100001 is not a whole number"},
    {"{\"sessions\": {\"concurrent\": 0, \"length\": {\"dist\": "
     "\"fixed\", \"value\": 60}}, " BASE_SANDBOX "}",
     "profile.json: sessions.concurrent: 0 is below 1"},
    {"{\"sessions\": {\"concurrent\": 3, \"batch\": 2, \"length\": "
     "{\"dist\": \"fixed\", \"value\": 60}}, " BASE_SANDBOX "}",
     "profile.json: sessions.batch: has no meaning with concurrent"},
    {"{" BASE_SESSIONS ", \"sandbox\": {\"vcpu\": 1, \"memory_gib\": 4, "
     "\"memory_gb\": 4, \"disk_gib\": 1}}",
     "profile.json: sandbox: gives both memory_gib and memory_gb"},
    {"{" BASE_SESSIONS ", \"sandbox\": {\"vcpu\": 1, \"disk_gib\": 1}}",
     "profile.json: sandbox.memory_gib: missing (or memory_gb, in GB)"},
    {"{" BASE_SESSIONS ", \"sandbox\": {\"vcpu\": 1, \"memory_gb\": 2}}",
     "profile.json: sandbox.disk_gib: missing (or disk_gb, in GB)"},
    {"{" BASE_SESSIONS ", \"sandbox\": {\"vcpu\": 1, \"memory_gb\": "
     "1e-10, \"disk_gb\": 1}}",
     "profile.json: sandbox.memory_gb: 1e-10 is not a whole number of bytes"},
    {"{" BASE_SESSIONS ", \"sandbox\": {\"vcpu\": 1, \"memory_gb\": 2, "
     "\"memory_used_gb\": 2.5, \"disk_gb\": 1}}",
     "profile.json: sandbox.memory_used_gb: 2.5 is above the memory, 2 GB"},
    {"{" BASE_SESSIONS ", \"sandbox\": {\"vcpu\": 1, \"memory_gib\": 2, "
     "\"memory_used_gib\": 3, \"disk_gib\": 1}}",
     "profile.json: sandbox.memory_used_gib: 3 is above the memory, 2 GiB"},
    {"[1]", "profile.json: (top): not an object"},
    {"{\"sessions\": ", "profile.json: line 1"},
};

static void
refused(void)
{
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct sim_err e = {{0}};
        struct sim_profile *p = sim_profile_parse(
            bad[i].json, strlen(bad[i].json), "profile.json", &e);
        CHECK(p == NULL);
        sim_profile_free(p);
        if (strncmp(e.msg, bad[i].want, strlen(bad[i].want)) != 0) {
            fprintf(stderr, "case %zu: got '%s', want '%s...'\n", i, e.msg,
                    bad[i].want);
            test_failures++;
        }
    }
}

int
main(void)
{
    shipped();
    sizes();
    refused();
    return test_result();
}
