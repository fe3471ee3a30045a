/*
 * test_books.c - price book validation: every kind of bad book gets an
 * error naming the key path and the value; the shipped books all load.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "pricing.h"
#include "testutil.h"

#ifndef BOOKS_DIR
#define BOOKS_DIR "pricing/books"
#endif

/* A valid book with one key replaced (or added): "%s" is where the
 * variable part goes. */
static const char base[] =
    "{\"id\": \"t\", \"currency\": \"USD\", \"effective_from\": "
    "\"2026-01-01\", %s}";
static const char dims[] =
    "\"cpu\": {\"basis\": \"allocated\", \"rate\": \"1\", \"per\": "
    "\"second\"}, \"memory\": {\"basis\": \"allocated\", \"unit\": \"GiB\", "
    "\"rate\": \"1\", \"per\": \"second\"}, \"storage\": null, \"egress\": "
    "null, \"per_run\": \"0\"";

static void
expect_error(const char *body, const char *want1, const char *want2)
{
    char json[4096];
    struct pricing_err e = {{0}};
    snprintf(json, sizeof(json), base, body);
    struct pricing_book *b =
        pricing_book_parse(json, strlen(json), "b.json", &e);
    if (b) {
        fprintf(stderr, "accepted: %s\n", json);
        test_failures++;
        pricing_book_free(b);
        return;
    }
    if (!strstr(e.msg, want1) || (want2 && !strstr(e.msg, want2)) ||
        strncmp(e.msg, "b.json: ", 8) != 0) {
        fprintf(stderr, "error '%s' lacks '%s'%s%s%s\n", e.msg, want1,
                want2 ? " or '" : "", want2 ? want2 : "", want2 ? "'" : "");
        test_failures++;
    }
}

static void
test_errors(void)
{
    char body[2048];
#define WITH(extra) (snprintf(body, sizeof(body), "%s, %s", dims, extra), body)
    /* unknown keys, at any depth */
    expect_error(WITH("\"colour\": \"red\""), "colour: unknown key", NULL);
    expect_error("\"cpu\": {\"basis\": \"allocated\", \"rate\": \"1\", "
                 "\"per\": \"second\", \"burst\": \"2\"}, \"memory\": null, "
                 "\"storage\": null, \"egress\": null, \"per_run\": \"0\"",
                 "cpu.burst: unknown key", NULL);
    expect_error(WITH("\"autopause\": {\"idle_below\": \"0.1\", \"after_s\": "
                      "60, \"x\": 1}"),
                 "autopause.x: unknown key", NULL);
    /* wrong types: the value is shown */
    expect_error("\"cpu\": {\"basis\": \"allocated\", \"rate\": 0.5, "
                 "\"per\": \"second\"}, \"memory\": null, \"storage\": null, "
                 "\"egress\": null, \"per_run\": \"0\"",
                 "cpu.rate: expected a decimal string", "a number 0.5");
    expect_error(WITH("\"granularity_s\": \"60\""),
                 "granularity_s: expected an integer", "\"60\"");
    expect_error(WITH("\"granularity_s\": 1.5"), "granularity_s", "1.5");
    expect_error(WITH("\"unsupported\": \"one\""), "unsupported", "an array");
    expect_error(WITH("\"unsupported\": [\"a\", 2]"), "unsupported[1]",
                 "a string");
    expect_error("\"cpu\": 7, \"memory\": null, \"storage\": null, "
                 "\"egress\": null, \"per_run\": \"0\"",
                 "cpu: expected an object or null", NULL);
    /* impossible values */
    expect_error("\"cpu\": {\"basis\": \"allocated\", \"rate\": \"-1\", "
                 "\"per\": \"second\"}, \"memory\": null, \"storage\": null, "
                 "\"egress\": null, \"per_run\": \"0\"",
                 "cpu.rate", "'-1' is negative");
    expect_error("\"cpu\": {\"basis\": \"allocated\", \"rate\": "
                 "\"0.0000000000001\", \"per\": \"second\"}, \"memory\": "
                 "null, \"storage\": null, \"egress\": null, \"per_run\": "
                 "\"0\"",
                 "cpu.rate", "too many decimals");
    expect_error("\"cpu\": {\"basis\": \"allocated\", \"rate\": \"1e-5\", "
                 "\"per\": \"second\"}, \"memory\": null, \"storage\": null, "
                 "\"egress\": null, \"per_run\": \"0\"",
                 "cpu.rate", "'1e-5'");
    expect_error("\"cpu\": {\"basis\": \"allocated\", \"rate\": \"1\", "
                 "\"per\": \"fortnight\"}, \"memory\": null, \"storage\": "
                 "null, \"egress\": null, \"per_run\": \"0\"",
                 "cpu.per", "'fortnight'");
    expect_error("\"cpu\": {\"basis\": \"allocated\", \"rate\": \"1\"}, "
                 "\"memory\": null, \"storage\": null, \"egress\": null, "
                 "\"per_run\": \"0\"",
                 "cpu.per", "missing");
    expect_error("\"cpu\": {\"basis\": \"reserved\", \"rate\": \"1\", "
                 "\"per\": \"second\"}, \"memory\": null, \"storage\": null, "
                 "\"egress\": null, \"per_run\": \"0\"",
                 "cpu.basis", "'reserved'");
    expect_error("\"cpu\": null, \"memory\": {\"basis\": \"allocated\", "
                 "\"unit\": \"MB\", \"rate\": \"1\", \"per\": \"second\"}, "
                 "\"storage\": null, \"egress\": null, \"per_run\": \"0\"",
                 "memory.unit", "'MB'");
    expect_error("\"cpu\": {\"basis\": \"allocated\", \"rate\": \"1\", "
                 "\"tiers\": {\"mode\": \"volume\", \"bands\": [{\"up_to\": "
                 "null, \"rate\": \"1\"}]}, \"per\": \"second\"}, \"memory\": "
                 "null, \"storage\": null, \"egress\": null, \"per_run\": "
                 "\"0\"",
                 "cpu", "both 'rate' and 'tiers'");
    /* tiers */
    expect_error("\"cpu\": {\"basis\": \"allocated\", \"tiers\": {\"mode\": "
                 "\"graduated\", \"bands\": [{\"up_to\": \"5\", \"rate\": "
                 "\"1\"}, {\"up_to\": \"5\", \"rate\": \"2\"}, {\"up_to\": "
                 "null, \"rate\": \"3\"}]}}, \"memory\": null, \"storage\": "
                 "null, \"egress\": null, \"per_run\": \"0\"",
                 "cpu.tiers.bands[1].up_to", "not above");
    expect_error("\"cpu\": {\"basis\": \"allocated\", \"tiers\": {\"mode\": "
                 "\"graduated\", \"bands\": [{\"up_to\": \"5\", \"rate\": "
                 "\"1\"}]}}, \"memory\": null, \"storage\": null, \"egress\": "
                 "null, \"per_run\": \"0\"",
                 "cpu.tiers.bands[0].up_to", "unbounded");
    expect_error("\"cpu\": {\"basis\": \"allocated\", \"tiers\": {\"mode\": "
                 "\"graduated\", \"bands\": [{\"up_to\": null, \"rate\": "
                 "\"1\"}, {\"up_to\": null, \"rate\": \"2\"}]}}, \"memory\": "
                 "null, \"storage\": null, \"egress\": null, \"per_run\": "
                 "\"0\"",
                 "cpu.tiers.bands[0].up_to", "last tier");
    expect_error("\"cpu\": {\"basis\": \"allocated\", \"tiers\": {\"mode\": "
                 "\"stepped\", \"bands\": [{\"up_to\": null, \"rate\": "
                 "\"1\"}]}}, \"memory\": null, \"storage\": null, \"egress\": "
                 "null, \"per_run\": \"0\"",
                 "cpu.tiers.mode", "'stepped'");
    expect_error("\"cpu\": {\"basis\": \"allocated\", \"tiers\": {\"mode\": "
                 "\"volume\", \"bands\": []}}, \"memory\": null, \"storage\": "
                 "null, \"egress\": null, \"per_run\": \"0\"",
                 "cpu.tiers.bands", "non-empty");
    /* missing dimensions: null says unknown, it is never implied */
    expect_error("\"cpu\": null, \"memory\": null, \"egress\": null, "
                 "\"per_run\": \"0\"",
                 "storage: missing", "null if the price is unknown");
    expect_error(WITH("\"autopause\": {\"idle_below\": \"1.5\", \"after_s\": "
                      "60}"),
                 "autopause.idle_below", "'1.5' is above 1");
    expect_error(WITH("\"autopause\": {\"idle_below\": \"0.1\", \"after_s\": "
                      "-1}"),
                 "autopause.after_s", "-1");
    expect_error(WITH("\"autopause\": {\"idle_below\": \"0.1\"}"),
                 "autopause.after_s: missing", NULL);
    expect_error(WITH("\"granularity_s\": 0"), "granularity_s",
                 "0 is out of range");
    expect_error(WITH("\"min_billed_s\": -5"), "min_billed_s", "-5");
    expect_error(WITH("\"subscription\": {\"monthly_fee\": \"10\", "
                      "\"seats\": 3}"),
                 "subscription.seats: unknown key", NULL);
    expect_error(WITH("\"subscription\": {\"included_credit\": \"10\"}"),
                 "subscription.monthly_fee: missing", NULL);
    expect_error(WITH("\"subscription\": {\"monthly_fee\": \"10\", "
                      "\"max_concurrency\": 0}"),
                 "subscription.max_concurrency", "0 is out of range");
    expect_error(WITH("\"promotional_credit\": \"-3\""), "promotional_credit",
                 "negative");
    expect_error("\"cpu\": null, \"memory\": null, \"storage\": {\"rate\": "
                 "\"1\", \"per\": \"month\", \"included_gib\": \"0.1\"}, "
                 "\"egress\": null, \"per_run\": \"0\"",
                 "storage.included_gib", "whole number of bytes");
    expect_error("\"cpu\": null, \"memory\": null, \"storage\": null, "
                 "\"egress\": {\"rate\": \"1\", \"per\": \"second\"}, "
                 "\"per_run\": \"0\"",
                 "egress.per: unknown key", NULL);
#undef WITH

    /* top-level fields */
    struct pricing_err e = {{0}};
    static const struct {
        const char *json, *want;
    } top[] = {
        {"{\"id\": \"has space\"}", "id: 'has space'"},
        {"{\"id\": \"t\", \"currency\": \"XYZ\"}", "currency: 'XYZ'"},
        {"{\"id\": \"t\", \"currency\": \"USD\", \"effective_from\": "
         "\"2026-02-30\"}",
         "effective_from: '2026-02-30'"},
        {"{\"id\": \"t\", \"id\": \"u\"}", "duplicate"},
        {"{\"id\": \"t\",", "line 1"},
        {"[1, 2]", "expected an object"},
    };
    for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++) {
        struct pricing_book *b =
            pricing_book_parse(top[i].json, strlen(top[i].json), NULL, &e);
        CHECK(b == NULL);
        if (!strstr(e.msg, top[i].want)) {
            fprintf(stderr, "error '%s' lacks '%s'\n", e.msg, top[i].want);
            test_failures++;
        }
        pricing_book_free(b);
    }
}

/* A book that must load. */
static void
expect_ok(const char *body)
{
    char json[4096];
    struct pricing_err e = {{0}};
    snprintf(json, sizeof(json), base, body);
    struct pricing_book *b = pricing_book_parse(json, strlen(json), "b", &e);
    if (!b) {
        fprintf(stderr, "refused: %s\n  %s\n", e.msg, json);
        test_failures++;
    }
    pricing_book_free(b);
}

/* The keys of rules version 2 (sections 10 to 15). */
static void
test_errors_v2(void)
{
    char body[3072];
#define CPU(extra)                                                             \
    "\"cpu\": {\"basis\": \"allocated\", \"rate\": \"1\", \"per\": "           \
    "\"second\"" extra "}"
#define MEM(extra)                                                             \
    "\"memory\": {\"basis\": \"allocated\", \"unit\": \"GiB\", \"rate\": "     \
    "\"1\", \"per\": \"second\"" extra "}"
#define REST "\"storage\": null, \"egress\": null, \"per_run\": \"0\""
#define WITH(extra) (snprintf(body, sizeof(body), "%s, %s", dims, extra), body)
    /* steps */
    expect_ok(CPU(", \"step\": \"0.25\"") ", " MEM(", \"step\": \"0.5\"") ", " REST);
    expect_error(CPU(", \"step\": \"0.00001\"") ", \"memory\": null, " REST,
                 "cpu.step", "'0.00001'");
    expect_error(CPU(", \"step\": \"0\"") ", \"memory\": null, " REST,
                 "cpu.step", "'0' is not above 0");
    expect_error("\"cpu\": null, " MEM(", \"step\": \"0.1\"") ", " REST,
                 "memory.step", "whole number of bytes");
    expect_error("\"cpu\": null, " MEM(", \"step\": \"0\"") ", " REST,
                 "memory.step", "above 0");
    /* instance types */
    static const char zero[] =
        "\"cpu\": {\"basis\": \"allocated\", \"rate\": \"0\", \"per\": "
        "\"second\"}, \"memory\": {\"basis\": \"allocated\", \"unit\": "
        "\"GiB\", \"rate\": \"0\", \"per\": \"second\"}, " REST;
    const char *type = "{\"name\": \"s\", \"vcpu\": \"2\", \"memory\": "
                       "\"4\", \"rate\": \"0.1\", \"per\": \"hour\"}";
    snprintf(body, sizeof(body),
             "%s, \"instances\": {\"unit\": \"GiB\", \"types\": [%s]}", zero,
             type);
    expect_ok(body);
    snprintf(body, sizeof(body),
             "%s, \"instances\": {\"unit\": \"GiB\", \"types\": [%s]}", dims,
             type);
    expect_error(body, "cpu: with 'instances'", "rate \"0\"");
    snprintf(body, sizeof(body),
             "%s, \"instances\": {\"unit\": \"GiB\", \"types\": [%s, %s]}",
             zero, type, type);
    expect_error(body, "instances.types[1].name", "'s' is already");
    snprintf(body, sizeof(body),
             "%s, \"instances\": {\"unit\": \"GiB\", \"types\": [{\"name\": "
             "\"n\", \"vcpu\": \"1\", \"memory\": \"1\", \"rate\": null, "
             "\"per\": \"hour\"}]}",
             zero);
    expect_error(body, "instances.types[0].rate", "null");
    snprintf(body, sizeof(body),
             "%s, \"instances\": {\"unit\": \"GiB\", \"types\": [{\"name\": "
             "\"n\", \"vcpu\": \"1\", \"memory\": \"0.0000000001\", "
             "\"rate\": \"1\", \"per\": \"hour\"}]}",
             zero);
    expect_error(body, "instances.types[0].memory", "whole number of bytes");
    snprintf(body, sizeof(body),
             "%s, \"instances\": {\"types\": [%s]}", zero, type);
    expect_error(body, "instances.unit", "missing");
    snprintf(body, sizeof(body),
             "%s, \"instances\": {\"unit\": \"GiB\", \"types\": []}", zero);
    expect_error(body, "instances.types", "non-empty");
    /* storage by state, allowance per account, tier units, month30 */
    expect_ok("\"cpu\": null, \"memory\": null, \"storage\": {\"unit\": "
              "\"GB\", \"rate\": \"1\", \"per\": \"month30\", "
              "\"billed_when\": \"running\", \"included_per_account\": "
              "\"0.5\"}, \"egress\": null, \"per_run\": \"0\"");
    expect_error("\"cpu\": null, \"memory\": null, \"storage\": {\"rate\": "
                 "\"1\", \"per\": \"month\", \"billed_when\": \"paused\"}, "
                 "\"egress\": null, \"per_run\": \"0\"",
                 "storage.billed_when", "'paused'");
    expect_error("\"cpu\": null, \"memory\": null, \"storage\": {\"rate\": "
                 "\"1\", \"per\": \"month\", \"included_per_account\": "
                 "\"0.1\"}, \"egress\": null, \"per_run\": \"0\"",
                 "storage.included_per_account", "whole number of bytes");
    expect_error("\"cpu\": null, \"memory\": null, \"storage\": {\"rate\": "
                 "\"1\", \"per\": \"fortnight\"}, \"egress\": null, "
                 "\"per_run\": \"0\"",
                 "storage.per", "month30");
    expect_ok("\"cpu\": null, \"memory\": null, \"storage\": {\"tiers\": "
              "{\"mode\": \"graduated\", \"per\": \"hour\", \"bands\": "
              "[{\"up_to\": \"200\", \"rate\": \"0\"}, {\"up_to\": null, "
              "\"rate\": \"1\"}]}}, \"egress\": null, \"per_run\": \"0\"");
    expect_error("\"cpu\": null, \"memory\": null, \"storage\": {\"tiers\": "
                 "{\"mode\": \"graduated\", \"per\": \"week\", \"bands\": "
                 "[{\"up_to\": null, \"rate\": \"1\"}]}}, \"egress\": null, "
                 "\"per_run\": \"0\"",
                 "storage.tiers.per", "'week'");
    expect_error("\"cpu\": null, \"memory\": null, \"storage\": null, "
                 "\"egress\": {\"tiers\": {\"mode\": \"graduated\", \"per\": "
                 "\"hour\", \"bands\": [{\"up_to\": null, \"rate\": "
                 "\"1\"}]}}, \"per_run\": \"0\"",
                 "egress.tiers.per", "without a time unit");
    /* grants */
    expect_ok(WITH("\"grants\": [{\"id\": \"signup\", \"amount\": \"100\", "
                   "\"expires_after_periods\": 3}, {\"id\": \"b\", "
                   "\"amount\": \"0.000001\", \"expires_after_periods\": "
                   "null}]"));
    expect_error(WITH("\"grants\": [{\"id\": \"g\", \"amount\": \"1\", "
                      "\"expires_after_periods\": 1}, {\"id\": \"g\", "
                      "\"amount\": \"2\", \"expires_after_periods\": 1}]"),
                 "grants[1].id", "'g' is already");
    expect_error(WITH("\"grants\": [{\"id\": \"g\", \"amount\": "
                      "\"0.0000001\", \"expires_after_periods\": 1}]"),
                 "grants[0].amount", "at most 6 decimals");
    expect_error(WITH("\"grants\": [{\"id\": \"g\", \"amount\": \"0\", "
                      "\"expires_after_periods\": 1}]"),
                 "grants[0].amount", "'0'");
    expect_error(WITH("\"grants\": [{\"id\": \"g\", \"amount\": \"1\", "
                      "\"expires_after_periods\": 0}]"),
                 "grants[0].expires_after_periods", "0 is out of range");
    expect_error(WITH("\"grants\": [{\"id\": \"g\", \"amount\": \"1\"}]"),
                 "grants[0].expires_after_periods: missing", NULL);
    /* add-ons and caps */
    expect_ok(WITH("\"subscription\": {\"monthly_fee\": \"150\", "
                   "\"max_concurrency\": 100, \"addons\": [{\"name\": "
                   "\"c500\", \"max_concurrency\": 500, \"monthly_fee\": "
                   "\"500\"}], \"caps\": {\"max_runs\": 1000, "
                   "\"max_cpu_hours\": \"100\", \"max_memory_hours\": "
                   "\"360\", \"max_egress_gb\": \"10\", \"max_storage\": "
                   "\"1\"}}"));
    expect_error(WITH("\"subscription\": {\"monthly_fee\": \"1\", "
                      "\"addons\": [{\"max_concurrency\": 5, "
                      "\"monthly_fee\": \"1\"}]}"),
                 "subscription.addons[0].name: missing", NULL);
    expect_error(WITH("\"subscription\": {\"monthly_fee\": \"1\", "
                      "\"addons\": [{\"name\": \"a\", \"max_concurrency\": 0, "
                      "\"monthly_fee\": \"1\"}]}"),
                 "subscription.addons[0].max_concurrency", "out of range");
    expect_error(WITH("\"subscription\": {\"monthly_fee\": \"1\", \"caps\": "
                      "{\"max_gpu_hours\": \"1\"}}"),
                 "subscription.caps.max_gpu_hours: unknown key", NULL);
    expect_error(WITH("\"subscription\": {\"monthly_fee\": \"1\", \"caps\": "
                      "{\"max_runs\": \"10\"}}"),
                 "subscription.caps.max_runs", "an integer");
#undef WITH
#undef CPU
#undef MEM
#undef REST
}

/* Every book the project ships loads, and its id is its file name. */
static void
test_shipped_books(void)
{
    DIR *d = opendir(BOOKS_DIR);
    struct dirent *de;
    int count = 0;
    CHECK(d != NULL);
    while (d && (de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
            continue;
        char path[1024], *text = NULL;
        snprintf(path, sizeof(path), "%s/%s", BOOKS_DIR, de->d_name);
        FILE *f = fopen(path, "rb");
        CHECK(f != NULL);
        if (!f)
            continue;
        text = calloc(1, 1 << 20);
        size_t len = fread(text, 1, (1 << 20) - 1, f);
        fclose(f);
        struct pricing_err e = {{0}};
        struct pricing_book *b = pricing_book_parse(text, len, path, &e);
        if (!b) {
            fprintf(stderr, "%s\n", e.msg);
            test_failures++;
        } else {
            char id[256];
            snprintf(id, sizeof(id), "%.*s", (int)(n - 5), de->d_name);
            CHECK_STR(pricing_book_id(b), id);
            CHECK(strstr(text, "\"source\"") && strstr(text, "\"as_of\""));
        }
        pricing_book_free(b);
        free(text);
        count++;
    }
    if (d)
        closedir(d);
    CHECK(count >= 15);
}

int
main(void)
{
    test_errors();
    test_errors_v2();
    test_shipped_books();
    return test_result();
}
