/*
 * ctl_export.c - `meterctl export`: stored samples back out as NDJSON,
 * the input format of `meterctl rate`.
 */
#include "ctl_int.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

int
ctl_export(const char *conninfo, int argc, char **argv)
{
    static const struct option opts[] = {
        {"account", required_argument, NULL, 'a'},
        {"from", required_argument, NULL, 'f'},
        {"to", required_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    const char *account = NULL, *from_s = NULL, *to_s = NULL;
    int64_t from, to;
    int opt;
    optind = 0; /* 0: glibc re-initializes, permuting again */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'a':
            account = optarg;
            break;
        case 'f':
            from_s = optarg;
            break;
        case 't':
            to_s = optarg;
            break;
        default:
            return ctl_usage_error("export: unknown or incomplete option '%s'",
                                   argv[optind - 1]);
        }
    }
    if (optind < argc)
        return ctl_usage_error("export: unexpected argument '%s'",
                               argv[optind]);
    if (!from_s || !to_s)
        return ctl_usage_error("export needs --from and --to");
    if (ctl_parse_time(from_s, &from) < 0)
        return ctl_usage_error("export: --from '%s' is not Unix seconds or "
                               "YYYY-MM-DDTHH:MM:SSZ",
                               from_s);
    if (ctl_parse_time(to_s, &to) < 0)
        return ctl_usage_error("export: --to '%s' is not Unix seconds or "
                               "YYYY-MM-DDTHH:MM:SSZ",
                               to_s);
    if (account && !pricing_id_valid(account))
        return ctl_usage_error("export: --account '%s' is not 1-64 of "
                               "A-Za-z0-9._:-",
                               account);

    struct meter_err e = {{0}};
    struct pricing_err pe = {{0}};
    PGconn *db = meter_db_connect(conninfo, &e);
    struct meter_store_reader *r = NULL;
    int rc = CTL_FAILED, got;
    if (!db || !(r = meter_store_reader_new(db, account, from, to, &e))) {
        fprintf(stderr, "meterctl: %s\n", e.msg);
        goto out;
    }
    struct pricing_source src = meter_store_source(r);
    struct pricing_block b;
    char line[1024];
    while ((got = src.next(src.ctx, &b, &pe)) > 0)
        for (size_t i = 0; i < b.n; i++) {
            meter_sample_format(line, sizeof(line), b.account_id, b.sandbox_id,
                                &b.s[i]);
            fputs(line, stdout);
        }
    if (got < 0) {
        fprintf(stderr, "meterctl: %s\n", pe.msg);
        goto out;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "meterctl: cannot write the samples\n");
        goto out;
    }
    rc = 0;
out:
    meter_store_reader_free(r);
    PQfinish(db);
    return rc;
}
