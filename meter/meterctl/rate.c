/*
 * rate.c - `meterctl rate`: rates usage with a price book and prints the
 * statements. The usage is files of samples (a sample set, with no
 * database) or the stored samples of a time range; either way it goes
 * through pricing_rate, the one rating pipeline.
 */
#include "ctl_int.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "meter_sample.h"
#include "pricing.h"
#include "report.h"

struct rate_args {
    const char *book, *period, *format, *from, *to, *account;
    const char **usage;
    size_t nusage;
    uint64_t memory_mib;
    bool no_grants;
    int year, month;
    int64_t t_from, t_to;
};

/* Parses and checks the options; 0 or CTL_USAGE. */
static int
parse_args(int argc, char **argv, struct rate_args *a)
{
    static const struct option opts[] = {
        {"price-book", required_argument, NULL, 'b'},
        {"usage", required_argument, NULL, 'u'},
        {"from", required_argument, NULL, 'F'},
        {"to", required_argument, NULL, 'T'},
        {"account", required_argument, NULL, 'a'},
        {"period", required_argument, NULL, 'p'},
        {"format", required_argument, NULL, 'f'},
        {"memory-limit", required_argument, NULL, 'm'},
        {"no-grants", no_argument, NULL, 'G'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'b':
            if (a->book)
                return ctl_usage_error("rate: one --price-book only");
            a->book = optarg;
            break;
        case 'u':
            a->usage[a->nusage++] = optarg;
            break;
        case 'F':
            a->from = optarg;
            break;
        case 'T':
            a->to = optarg;
            break;
        case 'a':
            a->account = optarg;
            break;
        case 'p':
            a->period = optarg;
            if (meter_period_parse(a->period, &a->year, &a->month) < 0)
                return ctl_usage_error("rate: --period '%s' is not YYYY-MM",
                                       a->period);
            break;
        case 'f':
            a->format = optarg;
            if (strcmp(a->format, "json") != 0 &&
                strcmp(a->format, "table") != 0)
                return ctl_usage_error("rate: --format '%s' is not json or "
                                       "table",
                                       a->format);
            break;
        case 'm':
            if (meter_parse_uint(optarg, 1, (uint64_t)1 << 40, &a->memory_mib) <
                0)
                return ctl_usage_error("rate: --memory-limit '%s' is not a "
                                       "number of MiB",
                                       optarg);
            break;
        case 'G':
            a->no_grants = true;
            break;
        default:
            return ctl_bad_option("rate", argv);
        }
    }
    if (optind < argc)
        return ctl_usage_error("rate: unexpected argument '%s'", argv[optind]);
    bool stored = a->from || a->to || a->account;
    if (!a->book || (a->nusage == 0) == !stored || (stored && a->nusage))
        return ctl_usage_error("rate needs --price-book FILE and either "
                               "--usage FILE ... or --from T --to T (stored "
                               "usage)");
    if (stored &&
        (!a->from || !a->to || meter_time_parse(a->from, &a->t_from) ||
         meter_time_parse(a->to, &a->t_to)))
        return ctl_usage_error("rate: --from and --to must both be Unix "
                               "seconds or YYYY-MM-DDTHH:MM:SSZ");
    if (a->account && ctl_check_account("rate", "--account", a->account))
        return CTL_USAGE;
    return 0;
}

/* Reads the usage files into a sample set of at most memory_mib. */
static struct meter_sample_set *
read_usage(const struct rate_args *a, struct meter_err *e)
{
    struct meter_sample_set *set =
        meter_sample_set_new((size_t)(a->memory_mib << 20));
    if (!set) {
        meter_fail(e, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < a->nusage; i++) {
        if (meter_sample_set_read(set, a->usage[i], e) < 0) {
            if (meter_sample_set_full(set))
                meter_fail(e,
                           "%s: more than %zu samples, the limit of the "
                           "in-memory sort (--memory-limit %llu MiB); raise "
                           "it, or rate the accounts in separate runs",
                           a->usage[i], meter_sample_set_count(set),
                           (unsigned long long)a->memory_mib);
            meter_sample_set_free(set);
            return NULL;
        }
    }
    return set;
}

/* Keeps the statements of (year, month) only, releasing the others. */
static void
keep_period(struct pricing_statement *st, size_t *n, int year, int month)
{
    size_t k = 0;
    for (size_t i = 0; i < *n; i++) {
        if (st[i].year == year && st[i].month == month)
            st[k++] = st[i];
        else
            free(st[i].lines);
    }
    *n = k;
}

int
ctl_rate(struct ctl *ctl, int argc, char **argv)
{
    struct rate_args a = {.format = "json", .memory_mib = 4096};
    struct meter_err e = {{0}};
    struct pricing_err pe = {{0}};
    struct pricing_book *book = NULL;
    struct meter_sample_set *set = NULL;
    struct meter_usage_reader *stored = NULL;
    struct pricing_statement *st = NULL;
    PGconn *db = NULL;
    size_t n = 0;
    int rc;

    if (!(a.usage = calloc((size_t)argc + 1, sizeof(*a.usage))))
        return CTL_FAILED;
    if ((rc = parse_args(argc, argv, &a)) != 0)
        goto out;
    rc = CTL_FAILED;
    if (!(book = ctl_read_book(a.book, NULL)))
        goto out;
    struct pricing_source src;
    if (a.nusage == 0) {
        if (!(db = ctl_connect(ctl)))
            goto out;
        if (!(stored = meter_usage_reader_new(db, a.account, a.t_from, a.t_to,
                                              &e))) {
            ctl_failed(&e);
            goto out;
        }
        src = meter_usage_source(stored);
    } else {
        if (!(set = read_usage(&a, &e))) {
            ctl_failed(&e);
            goto out;
        }
        src = meter_sample_set_source(set);
    }
    /* --period prices one period; all samples still count for runs.
     * Files are rated with the book's grants (stored usage without: its
     * balances are the invoices'), and then the periods before it are
     * priced too, in order, for the balances they leave it. */
    bool grants =
        !a.no_grants && set && pricing_book_grants(book, 0, 0, NULL, 0);
    struct pricing_scope scope = {a.period ? a.year : 0, a.month, 0, NULL,
                                  grants};
    if (pricing_rate(book, src, &scope, NULL, 0, &st, &n, &pe) < 0 ||
        (grants && pricing_statements_grant(book, st, n, &pe) < 0)) {
        fprintf(stderr, "meterctl: %s\n", pe.msg);
        goto out;
    }
    if (a.period && grants)
        keep_period(st, &n, a.year, a.month);
    int written = strcmp(a.format, "table") == 0
                      ? report_statements_table(stdout, st, n, &e)
                      : report_statements_json(stdout, st, n, &e);
    if (written < 0) {
        ctl_failed(&e);
        goto out;
    }
    rc = 0;
out:
    meter_usage_reader_free(stored);
    PQfinish(db);
    meter_sample_set_free(set);
    pricing_statements_free(st, n);
    pricing_book_free(book);
    free(a.usage);
    return rc;
}
