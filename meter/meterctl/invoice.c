/*
 * invoice.c - `meterctl invoice run|list|show|void|preview`: the monthly
 * invoice run over stored usage, the documents' lifecycle, and what-if
 * pricing (docs/invoicing.md).
 */
#include "ctl_int.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "billing.h"
#include "report.h"

/* Options shared by the subcommands; each accepts a subset. */
struct inv_args {
    const char *period, *account, *status, *format, *seller, *reason, *book,
        *output;
    bool finalize;
    int year, month;
    uint64_t after, limit, jobs, batch;
};

enum {
    OPT_PERIOD = 1 << 0,
    OPT_ACCOUNT = 1 << 1,
    OPT_STATUS = 1 << 2,
    OPT_FORMAT = 1 << 3,
    OPT_SELLER = 1 << 4,
    OPT_REASON = 1 << 5,
    OPT_BOOK = 1 << 6,
    OPT_FINALIZE = 1 << 7,
    OPT_PAGE = 1 << 8,
    OPT_OUTPUT = 1 << 9,
    OPT_JOBS = 1 << 10,
    OPT_BATCH = 1 << 11,
};

/* Parses the options `allowed` of subcommand cmd; positional arguments
 * are left at argv[optind..]. 0 or CTL_USAGE. */
static int
parse(const char *cmd, int argc, char **argv, unsigned allowed,
      struct inv_args *a)
{
    static const struct option opts[] = {
        {"period", required_argument, NULL, 'p'},
        {"account", required_argument, NULL, 'a'},
        {"status", required_argument, NULL, 's'},
        {"format", required_argument, NULL, 'f'},
        {"seller", required_argument, NULL, 'S'},
        {"reason", required_argument, NULL, 'r'},
        {"price-book", required_argument, NULL, 'b'},
        {"finalize", no_argument, NULL, 'F'},
        {"after", required_argument, NULL, 'A'},
        {"limit", required_argument, NULL, 'l'},
        {"output", required_argument, NULL, 'o'},
        {"jobs", required_argument, NULL, 'j'},
        {"batch", required_argument, NULL, 'B'},
        {NULL, 0, NULL, 0},
    };
    static const unsigned need[128] = {
        ['p'] = OPT_PERIOD, ['a'] = OPT_ACCOUNT,  ['s'] = OPT_STATUS,
        ['f'] = OPT_FORMAT, ['S'] = OPT_SELLER,   ['r'] = OPT_REASON,
        ['b'] = OPT_BOOK,   ['F'] = OPT_FINALIZE, ['A'] = OPT_PAGE,
        ['l'] = OPT_PAGE,   ['o'] = OPT_OUTPUT,   ['j'] = OPT_JOBS,
        ['B'] = OPT_BATCH,
    };
    int opt, index = -1;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, &index)) != -1) {
        if (opt <= 0 || opt >= 128 || !need[opt])
            return ctl_bad_option(cmd, argv);
        if (!(need[opt] & allowed))
            return ctl_usage_error("%s: option '--%s' does not apply", cmd,
                                   opts[index].name);
        switch (opt) {
        case 'p':
            a->period = optarg;
            if (meter_period_parse(optarg, &a->year, &a->month) < 0)
                return ctl_usage_error("%s: --period '%s' is not YYYY-MM", cmd,
                                       optarg);
            break;
        case 'a':
            a->account = optarg;
            if (ctl_check_account(cmd, "--account", optarg))
                return CTL_USAGE;
            break;
        case 's':
            a->status = optarg;
            if (strcmp(optarg, "draft") && strcmp(optarg, "final") &&
                strcmp(optarg, "void"))
                return ctl_usage_error("%s: --status '%s' is not draft, final "
                                       "or void",
                                       cmd, optarg);
            break;
        case 'f':
            a->format = optarg;
            break;
        case 'S':
            a->seller = optarg;
            if (!*optarg || strlen(optarg) > 200)
                return ctl_usage_error("%s: --seller must have 1-200 "
                                       "characters",
                                       cmd);
            break;
        case 'r':
            a->reason = optarg;
            if (!*optarg || strlen(optarg) > 500)
                return ctl_usage_error("%s: --reason must have 1-500 "
                                       "characters",
                                       cmd);
            break;
        case 'b':
            a->book = optarg;
            break;
        case 'F':
            a->finalize = true;
            break;
        case 'A':
            if (meter_parse_uint(optarg, 0, INT64_MAX, &a->after) < 0)
                return ctl_usage_error("%s: --after '%s' is not a document "
                                       "id",
                                       cmd, optarg);
            break;
        case 'l':
            if (meter_parse_uint(optarg, 1, 1000, &a->limit) < 0)
                return ctl_usage_error("%s: --limit '%s' is not 1-1000", cmd,
                                       optarg);
            break;
        case 'o':
            a->output = optarg;
            break;
        case 'j':
            if (meter_parse_uint(optarg, 1, 64, &a->jobs) < 0)
                return ctl_usage_error("%s: --jobs '%s' is not 1-64", cmd,
                                       optarg);
            break;
        case 'B':
            if (meter_parse_uint(optarg, 1, 10000, &a->batch) < 0)
                return ctl_usage_error("%s: --batch '%s' is not 1-10000", cmd,
                                       optarg);
            break;
        }
    }
    return 0;
}

/* ---- run ----------------------------------------------------------------- */

/* The progress bar on a terminal: accounts done, samples per second,
 * time left. */
static void
progress(size_t done, size_t total, uint64_t samples, double elapsed)
{
    int width = 30, fill = total ? (int)(width * done / total) : width;
    double rate = elapsed > 0 ? (double)samples / elapsed : 0;
    double left = done ? elapsed * (double)(total - done) / (double)done : 0;
    fprintf(stderr,
            "\r[%.*s%*s] %zu/%zu accounts, %.1f M samples/s, %02d:%02d "
            "left ",
            fill, "==============================", width - fill, "", done,
            total, rate / 1e6, (int)left / 60, (int)left % 60);
}

/* The run shared by its workers: each takes the next account. */
struct run {
    const struct ctl *ctl;
    const struct inv_args *a;
    const struct meter_strtab *accounts;
    pthread_mutex_t lock;
    size_t batch; /* accounts a worker takes at once */
    size_t next, done, drafts, finals, already, failed;
    uint64_t samples;
    bool tty;
    double t0;
};

static void *
run_worker(void *arg)
{
    struct run *run = arg;
    struct meter_err e = {{0}};
    char *conninfo = NULL;
    PGconn *db = NULL;
    if (meter_db_conninfo(run->ctl->db, &conninfo, &e) == 0)
        db = meter_db_connect(conninfo, &e);
    free(conninfo);
    if (db && ctl_set_actor(db, &e) < 0) {
        PQfinish(db);
        db = NULL;
    }
    if (!db) {
        pthread_mutex_lock(&run->lock);
        fprintf(stderr, "meterctl: %s\n", e.msg);
        pthread_mutex_unlock(&run->lock);
        return NULL;
    }
    /* This worker's connections to the shards (docs/scale.md), if the
     * usage is on several. */
    struct meter_shards *sh = meter_shards_new();
    struct meter_shard_links *links = sh ? meter_shard_links_new(sh, 0) : NULL;
    struct billing_outcome *outs =
        links ? calloc(run->batch, sizeof(*outs)) : NULL;
    while (outs) {
        pthread_mutex_lock(&run->lock);
        size_t first = run->next, n = run->accounts->n - first < run->batch
                                          ? run->accounts->n - first
                                          : run->batch;
        run->next += n;
        pthread_mutex_unlock(&run->lock);
        if (n == 0)
            break;
        const char *const *ids =
            (const char *const *)run->accounts->str + first;
        int rc = billing_run(db, links, ids, n, run->a->year, run->a->month,
                             run->a->finalize, run->a->seller, outs, &e);
        pthread_mutex_lock(&run->lock);
        run->done += n;
        if (rc < 0) {
            fprintf(stderr, "%smeterctl: accounts %s to %s: %s\n",
                    run->tty ? "\n" : "", ids[0], ids[n - 1], e.msg);
            run->failed += n;
        }
        for (size_t k = 0; k < n && rc >= 0; k++) {
            const struct billing_outcome *o = &outs[k];
            if (o->failed) {
                fprintf(stderr, "%smeterctl: account %s: %s\n",
                        run->tty ? "\n" : "", ids[k], o->error);
                run->failed++;
                continue;
            }
            run->samples += o->samples;
            run->already += o->already_final;
            /* Late usage in another currency is a document of its own. */
            size_t docs = o->written ? 1 + o->nother : 0;
            run->finals += o->number[0] ? docs : 0;
            run->drafts += o->number[0] ? 0 : docs;
        }
        if (run->tty)
            progress(run->done, run->accounts->n, run->samples,
                     ctl_now() - run->t0);
        pthread_mutex_unlock(&run->lock);
        if (rc < 0)
            break;
    }
    free(outs);
    meter_shard_links_free(links);
    meter_shards_free(sh);
    PQfinish(db);
    return NULL;
}

/* Prints what the period leaves unbilled (of account only, if not
 * NULL): usage of hours on no price book, which no run bills, and the
 * accounts whose draft a run could not compute; a line each. */
static int
print_not_billed(const struct ctl *ctl, int year, int month, const char *only,
                 const struct meter_strtab *ran)
{
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    json_t *nb = NULL;
    /* After a run of every account, the failures of those it no longer
     * runs (their book ended) are forgotten first. */
    int rc = ran && meter_db_run_failures_keep(db, year, month,
                                               (const char *const *)ran->str,
                                               ran->n, &e) < 0
                 ? ctl_failed(&e)
                 : 0;
    if (!rc && meter_db_not_billed(db, year, month, &nb, &e) < 0)
        rc = ctl_failed(&e);
    PQfinish(db);
    static const char *const kinds[] = {"no_book", "run_failed"};
    for (size_t k = 0; nb && k < 2; k++) {
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(nb, kinds[k]), i, x)
        {
            const char *id =
                json_string_value(json_object_get(x, "account_id"));
            if (only && strcmp(only, id) != 0)
                continue;
            const char *why = json_string_value(json_object_get(x, "why"));
            if (k == 0)
                printf("not billed: account %s: %" JSON_INTEGER_FORMAT
                       " samples from %s to %s: %s\n",
                       id, json_integer_value(json_object_get(x, "samples")),
                       json_string_value(json_object_get(x, "from")),
                       json_string_value(json_object_get(x, "to")), why);
            else
                printf("not billed: account %s: no draft: %s\n", id, why);
        }
    }
    json_decref(nb);
    return rc;
}

static int
invoice_run(struct ctl *ctl, int argc, char **argv)
{
    struct inv_args a = {0};
    int rc = parse("invoice run", argc, argv,
                   OPT_PERIOD | OPT_ACCOUNT | OPT_FINALIZE | OPT_SELLER |
                       OPT_JOBS | OPT_BATCH,
                   &a);
    if (rc)
        return rc;
    if (optind < argc)
        return ctl_usage_error("invoice run: unexpected argument '%s'",
                               argv[optind]);
    if (!a.period)
        return ctl_usage_error("invoice run needs --period YYYY-MM");
    if (!a.seller)
        a.seller = getenv("METER_SELLER");
    if (!a.seller || !*a.seller)
        a.seller = "Unnamed seller";
    if (!a.batch)
        a.batch = BILLING_BATCH;
    if (!a.jobs) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        a.jobs = cpus > 0 ? (uint64_t)cpus : 1;
    }
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    struct meter_strtab accounts = {0};
    rc = billing_accounts(db, a.year, a.month, a.account, &accounts, &e) < 0
             ? ctl_failed(&e)
             : 0;
    PQfinish(db);
    if (rc) {
        meter_strtab_release(&accounts);
        return rc;
    }
    /* Accounts are independent: a connection per worker. */
    struct run run = {.ctl = ctl,
                      .a = &a,
                      .accounts = &accounts,
                      .tty = isatty(STDERR_FILENO),
                      .t0 = ctl_now()};
    pthread_mutex_init(&run.lock, NULL);
    /* Batches of up to --batch accounts, smaller when there are few, so
     * that every worker has one. */
    size_t n = a.jobs < accounts.n ? (size_t)a.jobs : accounts.n;
    run.batch = n ? (accounts.n + n - 1) / n : 1;
    if (run.batch > a.batch)
        run.batch = a.batch;
    pthread_t *th = calloc(n ? n : 1, sizeof(*th));
    size_t started = 0;
    while (th && started < n &&
           pthread_create(&th[started], NULL, run_worker, &run) == 0)
        started++;
    if (started == 0 && n > 0)
        run_worker(&run); /* no thread could start: do it here */
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    free(th);
    pthread_mutex_destroy(&run.lock);
    double dt = ctl_now() - run.t0;
    if (run.tty)
        fputc('\n', stderr);
    /* Accounts no worker reached (no connection) count as failed. */
    size_t failed = run.failed + (accounts.n - run.done);
    printf("invoice run %04d-%02d: %zu accounts, %zu drafts, %zu finalized, "
           "%zu already final, %zu failed; %" PRIu64
           " samples in %.2f s (%.1f M samples/s)\n",
           a.year, a.month, accounts.n, run.drafts, run.finals, run.already,
           failed, run.samples, dt,
           dt > 0 ? (double)run.samples / dt / 1e6 : 0.0);
    rc = print_not_billed(ctl, a.year, a.month, a.account,
                          !a.account && run.done == accounts.n ? &accounts
                                                               : NULL);
    meter_strtab_release(&accounts);
    return failed ? CTL_FAILED : rc;
}

/* ---- list ---------------------------------------------------------------- */

static void
list_row(const struct report_invoice *inv, void *arg)
{
    int64_t *last = arg;
    char total[64], name[32];
    pricing_money_format(inv->total, inv->currency, total, sizeof(total));
    if (inv->number[0])
        snprintf(name, sizeof(name), "%s", inv->number);
    else
        snprintf(name, sizeof(name), "%" PRId64, inv->id);
    printf("%-12s %-12s %-20s %04d-%02d %-6s %14s %s\n", name, inv->kind,
           inv->account_id, inv->year, inv->month, inv->status, total,
           inv->currency);
    *last = inv->id;
}

static int
invoice_list(struct ctl *ctl, int argc, char **argv)
{
    struct inv_args a = {0};
    int rc = parse("invoice list", argc, argv,
                   OPT_PERIOD | OPT_ACCOUNT | OPT_STATUS | OPT_PAGE, &a);
    if (rc)
        return rc;
    if (optind < argc)
        return ctl_usage_error("invoice list: unexpected argument '%s'",
                               argv[optind]);
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    struct meter_invoice_filter f = {a.account,        a.period ? a.year : 0,
                                     a.month,          a.status,
                                     (int64_t)a.after, (int)a.limit};
    int64_t last = 0;
    printf("%-12s %-12s %-20s %-7s %-6s %14s\n", "document", "kind", "account",
           "period", "status", "total");
    rc = meter_db_invoice_list(db, &f, list_row, &last, &e) < 0 ? ctl_failed(&e)
                                                                : 0;
    /* Every list is paged: say how to get the next page. */
    if (rc == 0 && a.limit && last)
        printf("(next page: --after %" PRId64 ")\n", last);
    PQfinish(db);
    return rc;
}

/* ---- show ---------------------------------------------------------------- */

static int
invoice_show(struct ctl *ctl, int argc, char **argv)
{
    struct inv_args a = {.format = "json"};
    int rc = parse("invoice show", argc, argv, OPT_FORMAT | OPT_OUTPUT, &a);
    if (rc)
        return rc;
    if (optind + 1 != argc)
        return ctl_usage_error("invoice show needs one NUMBER or DRAFT-ID");
    if (!report_invoice_media_type(a.format))
        return ctl_usage_error("invoice show: --format '%s' is not json, csv, "
                               "html or pdf",
                               a.format);
    const char *ref = argv[optind];
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    struct report_invoice inv = {0};
    FILE *out = NULL;
    rc = CTL_FAILED;
    switch (billing_document(db, ref, NULL, &inv, NULL, &e)) {
    case METER_DB_ROWS:
        break;
    case METER_DB_NONE:
        fprintf(stderr, "meterctl: no invoice '%s'\n", ref);
        goto out;
    default:
        ctl_failed(&e);
        goto out;
    }
    out = a.output ? fopen(a.output, "wb") : stdout;
    if (!out) {
        meter_fail(&e, "%s: cannot write: %s", a.output, strerror(errno));
        ctl_failed(&e);
        goto out;
    }
    if (report_invoice_write(out, &inv, a.format, &e) < 0) {
        ctl_failed(&e);
        goto out;
    }
    rc = 0;
out:
    if (out && out != stdout && fclose(out) != 0 && rc == 0)
        rc = CTL_FAILED;
    report_invoice_release(&inv);
    PQfinish(db);
    return rc;
}

/* ---- void ---------------------------------------------------------------- */

static int
invoice_void(struct ctl *ctl, int argc, char **argv)
{
    struct inv_args a = {0};
    int rc = parse("invoice void", argc, argv, OPT_REASON, &a);
    if (rc)
        return rc;
    if (optind + 1 != argc || !a.reason)
        return ctl_usage_error("invoice void needs NUMBER and --reason TEXT");
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    char credit[16];
    rc = 0;
    if (billing_void(db, argv[optind], a.reason, credit, &e) < 0)
        rc = ctl_failed(&e);
    else
        printf("invoice %s voided by credit note %s\n", argv[optind], credit);
    PQfinish(db);
    return rc;
}

/* ---- preview ------------------------------------------------------------- */

/* The sum of inv's lines of one kind. */
static struct pricing_dec
kind_sum(const struct report_invoice *inv, const char *kind, bool *found)
{
    struct pricing_dec s = {0};
    for (size_t i = 0; i < inv->nlines; i++)
        if (strcmp(inv->lines[i].kind, kind) == 0) {
            pricing_dec_add(s, inv->lines[i].amount, &s);
            *found = true;
        }
    return s;
}

/* The difference of two invoices kind by kind, in the order the kinds
 * first appear in either. */
static json_t *
difference(const struct report_invoice *now, const struct report_invoice *alt)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < now->nlines + alt->nlines; i++) {
        const char *kind = i < now->nlines ? now->lines[i].kind
                                           : alt->lines[i - now->nlines].kind;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(kind, j < now->nlines
                                    ? now->lines[j].kind
                                    : alt->lines[j - now->nlines].kind) == 0;
        if (seen)
            continue;
        bool f1 = false, f2 = false;
        struct pricing_dec x = kind_sum(now, kind, &f1),
                           y = kind_sum(alt, kind, &f2), d;
        pricing_dec_sub(y, x, &d);
        char bx[64], by[64], bd[64];
        pricing_dec_format(x, 6, bx, sizeof(bx));
        pricing_dec_format(y, 6, by, sizeof(by));
        pricing_dec_format(d, 6, bd, sizeof(bd));
        json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s}", "kind",
                                             kind, "current", bx, "what_if", by,
                                             "difference", bd));
    }
    return arr;
}

static int
invoice_preview(struct ctl *ctl, int argc, char **argv)
{
    struct inv_args a = {0};
    int rc = parse("invoice preview", argc, argv,
                   OPT_PERIOD | OPT_ACCOUNT | OPT_BOOK, &a);
    if (rc)
        return rc;
    if (optind < argc)
        return ctl_usage_error("invoice preview: unexpected argument '%s'",
                               argv[optind]);
    if (!a.period || !a.account || !a.book)
        return ctl_usage_error("invoice preview needs --period YYYY-MM "
                               "--account ID --price-book FILE");
    struct pricing_book *book = ctl_read_book(a.book, NULL);
    if (!book)
        return CTL_FAILED;
    PGconn *db = ctl_connect(ctl);
    struct meter_err e = {{0}};
    struct report_invoice now = {0}, alt = {0};
    rc = CTL_FAILED;
    if (!db)
        goto out;
    if (billing_preview(db, a.account, a.year, a.month, NULL, &now, &e) < 0 ||
        billing_preview(db, a.account, a.year, a.month, book, &alt, &e) < 0) {
        ctl_failed(&e);
        goto out;
    }
    char d[64];
    struct pricing_dec diff;
    pricing_dec_sub(alt.total, now.total, &diff);
    pricing_money_format(diff, alt.currency, d, sizeof(d));
    json_t *o =
        json_pack("{s:o, s:o, s:o, s:s}", "current", report_invoice_json(&now),
                  "what_if", report_invoice_json(&alt), "difference",
                  difference(&now, &alt), "total_difference", d);
    if (!o || json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0) {
        json_decref(o);
        meter_fail(&e, "cannot write the preview");
        ctl_failed(&e);
        goto out;
    }
    json_decref(o);
    putchar('\n');
    rc = 0;
out:
    report_invoice_release(&now);
    report_invoice_release(&alt);
    pricing_book_free(book);
    PQfinish(db);
    return rc;
}

int
ctl_invoice(struct ctl *ctl, int argc, char **argv)
{
    static const struct {
        const char *name;
        ctl_command *run;
    } subs[] = {
        {"run", invoice_run},         {"list", invoice_list},
        {"show", invoice_show},       {"void", invoice_void},
        {"preview", invoice_preview},
    };
    if (argc < 2)
        return ctl_usage_error("invoice needs a subcommand: run, list, show, "
                               "void or preview");
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
        if (strcmp(argv[1], subs[i].name) == 0)
            return subs[i].run(ctl, argc - 1, argv + 1);
    return ctl_usage_error("unknown invoice subcommand '%s'", argv[1]);
}
