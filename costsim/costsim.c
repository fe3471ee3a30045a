/*
 * costsim.c - what a workload profile costs a month on every price book:
 * loads the profile and the books, runs the Monte Carlo (montecarlo.c)
 * with a progress bar on a terminal (progress.c) and prints the
 * comparison (costsim_out.c, out_csv.c, out_html.c).
 *
 * Exit status: 0 done, 1 failed (the message says why), 2 usage error.
 * Books that cannot price the workload are listed with the reason; that
 * is a result, not a failure.
 */
#include "costsim_int.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>

static const char usage_text[] =
    "usage: costsim --profile FILE [--books DIR] [--seed N]\n"
    "               [--precision X] [--max-trials N] [--threads N]\n"
    "               [--month YYYY-MM [--first-month]] [--memory-limit MIB]\n"
    "               [--months N [--growth PCT]] [--method controlled|plain]\n"
    "               [--format table|json|csv|html]\n"
    "               [--html REPORT] [--tornado PCT [--tornado-trials N]]\n"
    "       costsim --version | --commands\n"
    "       costsim replay --account ID --period YYYY-MM [--books DIR]\n"
    "               [--db CONNINFO] [--format table|json]\n"
    "       costsim breakeven --profile FILE --between A,B --param KEY\n"
    "               --range LO:HI [...]\n"
    "\n"
    "Prices simulated months of the workload in FILE (docs/simulator.md;\n"
    "a bare name, such as coding-agent, is an installed profile)\n"
    "on every price book of DIR (default: the installed books) through\n"
    "the pricing engine, until each book's mean monthly cost is known to\n"
    "within X of itself (95% interval half-width; default 0.005), after\n"
    "at least 30 trials, or N trials (default 1000). The mean is\n"
    "estimated by regression on the month's control variates (--method\n"
    "controlled, the default: far fewer trials), or is the trials' plain\n"
    "mean, exact (--method plain). A book with a price\n"
    "unknown (null) is shown as a lower bound, naming what it leaves\n"
    "unpriced. --seed (default 1) makes the run\n"
    "reproducible; --threads (default: every core) changes its speed,\n"
    "not its output. --month (default 2026-11) is the calendar month\n"
    "simulated; --first-month makes it the account's first (no session\n"
    "before it; the books' credit grants received in it). --months N\n"
    "(default 1, at most 36) makes each trial N months from it, their\n"
    "total the figure compared, each month's mean shown too; --growth PCT\n"
    "grows the arrivals by PCT% a month; with --first-month, the grants\n"
    "are spent month after month until they run out. --memory-limit\n"
    "(default 4096) bounds the MiB the run holds: past it, it stops and\n"
    "names what needs more. --format prints the comparison on stdout;\n"
    "--html also writes the HTML report (charts) to REPORT. --tornado PCT\n"
    "also moves each parameter of the profile by -PCT% and +PCT% (same\n"
    "seed) and gives each book's swings, largest first, each over the\n"
    "book's trials (at most N with --tornado-trials).\n"
    "\n"
    "costsim replay prices an account's stored usage of a month on every\n"
    "book instead (costsim replay --help); costsim breakeven finds where\n"
    "two books cost the same as one parameter moves (costsim breakeven\n"
    "--help). --commands lists the commands; --version prints the\n"
    "version.\n";

#define usage_error(...) cs_usage_error("costsim", __VA_ARGS__)

struct args {
    const char *profile, *books, *format, *html;
    struct sim_mc_opts o;
    double tornado;          /* percent; 0: no tornado */
    uint64_t tornado_trials; /* 0: the base run's */
};

static int
parse_args(int argc, char **argv, struct args *a)
{
    static const struct option opts[] = {
        {"profile", required_argument, NULL, 'p'},
        {"books", required_argument, NULL, 'b'},
        CS_MC_OPTIONS,
        {"format", required_argument, NULL, 'f'},
        {"html", required_argument, NULL, 'o'},
        {"tornado", required_argument, NULL, 'T'},
        {"tornado-trials", required_argument, NULL, 'N'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    a->format = "table";
    cs_mc_defaults(&a->o);
    /* A book with a price unknown is shown as a lower bound, not
     * dropped (breakeven keeps refusing it: a root of bounds is none). */
    a->o.partial = true;
    int c, rc;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            a->profile = optarg;
            break;
        case 'b':
            a->books = optarg;
            break;
        case 'f':
            if (strcmp(optarg, "table") && strcmp(optarg, "json") &&
                strcmp(optarg, "csv") && strcmp(optarg, "html"))
                return usage_error("--format '%s' is not table, json, csv "
                                   "or html",
                                   optarg);
            a->format = optarg;
            break;
        case 'o':
            a->html = optarg;
            break;
        case 'T':
            if (!cs_parse_double(optarg, '\0', &a->tornado, NULL) ||
                !(a->tornado > 0 && a->tornado < 100))
                return usage_error("--tornado '%s' is not a percentage "
                                   "above 0 and below 100",
                                   optarg);
            break;
        case 'N':
            if (!cs_parse_u64(optarg, 1000000, &a->tornado_trials) ||
                a->tornado_trials < 2)
                return usage_error("--tornado-trials '%s' is not a whole "
                                   "number from 2 to 1,000,000",
                                   optarg);
            break;
        case 'h':
            fputs(usage_text, stdout);
            exit(0);
        default:
            if ((rc = cs_mc_option("costsim", c, optarg, &a->o)) >= 0) {
                if (rc)
                    return rc;
                break;
            }
            return usage_error("unknown or incomplete option '%s'",
                               argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if (!a->profile)
        return usage_error("--profile FILE is required");
    if (a->tornado_trials && !a->tornado)
        return usage_error("--tornado-trials needs --tornado PCT");
    if (a->o.months > 1 &&
        (a->tornado || a->html || strcmp(a->format, "html") == 0))
        return usage_error("--months %u: the HTML report and --tornado are "
                           "of one month; use --format table, json or csv",
                           a->o.months);
    return cs_mc_check("costsim", &a->o);
}

static int
breakeven_main(int argc, char **argv)
{
    gsl_set_error_handler_off();
    return cs_breakeven_main(argc, argv);
}

/* The subcommands besides the comparison (costsim with no command):
 * main dispatches through this table, `costsim --commands` lists it,
 * and each answers --help. */
static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"replay", cs_replay_main},
    {"breakeven", breakeven_main},
};

/* --version and --commands, alone: true after printing. */
static bool
print_info(int argc, char **argv)
{
    if (argc != 2)
        return false;
    if (strcmp(argv[1], "--version") == 0) {
        printf("costsim %s\n", METER_VERSION);
        return true;
    }
    if (strcmp(argv[1], "--commands") == 0) {
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
            printf("%s\n", commands[i].name);
        return true;
    }
    return false;
}

int
main(int argc, char **argv)
{
    if (print_info(argc, argv))
        return fflush(stdout) == 0 ? 0 : 1;
    for (size_t i = 0; argc > 1 && i < sizeof(commands) / sizeof(commands[0]);
         i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    struct args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    /* GSL's default handler aborts; every call's result is checked. */
    gsl_set_error_handler_off();
    struct sim_err e;
    char profile[4096];
    struct sim_profile *p = sim_profile_load(
        cs_profile_path(a.profile, profile, sizeof(profile)), &e);
    struct cs_book *books = NULL;
    const struct pricing_book **list = NULL;
    struct sim_mc_result res = {0};
    struct sim_tornado tornado = {0};
    struct cs_progress bar;
    FILE *html = NULL;
    size_t n = 0;
    rc = 1;
    if (!p) {
        fprintf(stderr, "costsim: %s\n", e.msg);
        goto out;
    }
    if (cs_load_books(a.books, &books, &n) < 0)
        goto out;
    if (!(list = calloc(n, sizeof(*list)))) {
        fprintf(stderr, "costsim: out of memory\n");
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        list[i] = books[i].book;
    /* Opened before the run, so that a path it cannot write fails now,
     * not after minutes of trials. */
    if (a.html && !(html = fopen(a.html, "w"))) {
        fprintf(stderr, "costsim: cannot write '%s': %s\n", a.html,
                strerror(errno));
        goto out;
    }
    cs_progress_init(&bar, stderr, n);
    a.o.progress = cs_progress_update;
    a.o.progress_arg = &bar;
    /* The first batch of a long profile takes seconds: show the bar. */
    cs_progress_update(0, a.o.max_trials, n, &bar);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int mc = sim_monte_carlo(p, list, n, &a.o, &res, &e);
    cs_progress_end(&bar);
    if (mc < 0) {
        fprintf(stderr, "costsim: %s\n", e.msg);
        goto out;
    }
    if (a.tornado > 0 && sim_tornado(p, list, n, &a.o, &res, a.tornado,
                                     a.tornado_trials, &tornado, &e) < 0) {
        fprintf(stderr, "costsim: %s\n", e.msg);
        goto out;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    struct cs_run run = {
        a.profile, p, books, n, &a.o, &res, a.tornado > 0 ? &tornado : NULL};
    int (*print)(FILE *, const struct cs_run *) =
        strcmp(a.format, "json") == 0   ? cs_print_json
        : strcmp(a.format, "csv") == 0  ? cs_print_csv
        : strcmp(a.format, "html") == 0 ? cs_print_html
                                        : cs_print_table;
    if (print(stdout, &run) < 0 || (html && cs_print_html(html, &run) < 0)) {
        fprintf(stderr, "costsim: out of memory\n");
        goto out;
    }
    if (html) {
        FILE *h = html;
        html = NULL;
        if (fclose(h) != 0) {
            fprintf(stderr, "costsim: cannot write '%s': %s\n", a.html,
                    strerror(errno));
            unlink(a.html);
            goto out;
        }
    }
    /* Timing goes to stderr: stdout is the same for any --threads. */
    fprintf(stderr, "costsim: %zu trials, %zu books, %.2f s on %u thread%s\n",
            res.trials, n,
            (double)(t1.tv_sec - t0.tv_sec) +
                (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
            a.o.threads, a.o.threads == 1 ? "" : "s");
    if (a.html)
        fprintf(stderr, "costsim: the HTML report is in %s\n", a.html);
    rc = fflush(stdout) == 0 ? 0 : 1;
out:
    if (html) {
        /* The run failed: no half-written report is left behind. */
        fclose(html);
        unlink(a.html);
    }
    sim_tornado_release(&tornado);
    sim_mc_result_release(&res);
    cs_books_free(books, n);
    free(list);
    sim_profile_free(p);
    return rc;
}
