/*
 * export.c - `meterctl export`: stored samples back out as NDJSON,
 * the input format of `meterctl rate`.
 */
#include "ctl_int.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "meter_sample.h"

int
ctl_export(struct ctl *ctl, int argc, char **argv)
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
    ctl_getopt_reset();
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
            return ctl_bad_option("export", argv);
        }
    }
    if (optind < argc)
        return ctl_usage_error("export: unexpected argument '%s'",
                               argv[optind]);
    if (!from_s || !to_s)
        return ctl_usage_error("export needs --from and --to");
    if (ctl_parse_time("export", "--from", from_s, &from) ||
        ctl_parse_time("export", "--to", to_s, &to) ||
        (account && ctl_check_account("export", "--account", account)))
        return CTL_USAGE;

    struct meter_err e = {{0}};
    struct pricing_err pe = {{0}};
    PGconn *db = ctl_connect(ctl);
    struct meter_usage_reader *r = NULL;
    int rc = CTL_FAILED, got;
    if (!db)
        goto out;
    if (!(r = meter_usage_reader_new(db, account, from, to, &e))) {
        ctl_failed(&e);
        goto out;
    }
    struct pricing_source src = meter_usage_source(r);
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
    meter_usage_reader_free(r);
    PQfinish(db);
    return rc;
}
