/*
 * breakeven.c - costsim breakeven: the value of one parameter of a
 * profile at which two books cost the same a month (sens.c finds it),
 * or "never in range", with both books' costs on either side.
 *
 * Its options are the comparison's, and the same words mean the same
 * things: --books is the folder, the two books are named by --between.
 * The base run (the profile as given, adaptive as in the comparison)
 * sets how many trials every value is priced over.
 */
#include "costsim_int.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The simulated month by default, as in costsim.c. */

static const char usage_text[] =
    "usage: costsim breakeven --profile FILE --between A,B --param KEY\n"
    "                         --range LO:HI [--books DIR] [--seed N]\n"
    "                         [--precision X] [--max-trials N]\n"
    "                         [--threads N] [--month YYYY-MM]\n"
    "                         [--memory-limit MIB] [--method "
    "controlled|plain]\n"
    "                         [--format table|json]\n"
    "\n"
    "The value of KEY, a parameter of the profile in FILE (its key path,\n"
    "e.g. sessions.per_month, sessions.length.median, or\n"
    "activity.idle_share), between LO and HI at which books A and B (ids\n"
    "or file names in DIR) cost the same a month, found with GSL's Brent\n"
    "solver, or \"never in range\". Every value is priced over the same\n"
    "trials (the same seed), as many as the profile as given needs to\n"
    "meet --precision (default 0.005), at most --max-trials (default\n"
    "1000).\n";

#define usage_error(...) cs_usage_error("costsim breakeven", __VA_ARGS__)

struct args {
    const char *profile, *books, *format, *between, *param, *range;
    double lo, hi;
    struct sim_mc_opts o;
};

static int
parse_args(int argc, char **argv, struct args *a)
{
    static const struct option opts[] = {
        {"profile", required_argument, NULL, 'p'},
        {"books", required_argument, NULL, 'b'},
        {"between", required_argument, NULL, 'w'},
        {"param", required_argument, NULL, 'k'},
        {"range", required_argument, NULL, 'g'},
        CS_MC_OPTIONS,
        {"format", required_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    a->format = "table";
    cs_mc_defaults(&a->o);
    int c, rc;
    const char *rest;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'p':
            a->profile = optarg;
            break;
        case 'b':
            a->books = optarg;
            break;
        case 'w':
            a->between = optarg;
            break;
        case 'k':
            a->param = optarg;
            break;
        case 'g':
            a->range = optarg;
            if (!cs_parse_double(optarg, ':', &a->lo, &rest) ||
                !cs_parse_double(rest, '\0', &a->hi, NULL) || !(a->lo < a->hi))
                return usage_error("--range '%s' is not LO:HI, two numbers "
                                   "with LO below HI",
                                   optarg);
            break;
        case 'f':
            if (strcmp(optarg, "table") && strcmp(optarg, "json"))
                return usage_error("--format '%s' is not table or json",
                                   optarg);
            a->format = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
            exit(0);
        default:
            if ((rc = cs_mc_option("costsim breakeven", c, optarg, &a->o)) >=
                0) {
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
    if (!a->between)
        return usage_error("--between A,B is required");
    if (!a->param)
        return usage_error("--param KEY is required");
    if (!a->range)
        return usage_error("--range LO:HI is required");
    if (a->o.months > 1)
        return usage_error("--months is the comparison's: breakeven compares "
                           "one month");
    return cs_mc_check("costsim breakeven", &a->o);
}

/* The book named by id or file name (with or without .json). */
static int
find_book(const struct cs_book *books, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        const char *id = pricing_book_id(books[i].book);
        size_t flen = strlen(books[i].file);
        if ((strlen(id) == len && strncmp(id, name, len) == 0) ||
            (flen == len && strncmp(books[i].file, name, len) == 0) ||
            (flen == len + 5 && strncmp(books[i].file, name, len) == 0))
            return (int)i;
    }
    return -1;
}

/* --between A,B into two books of the folder: an exit status. */
static int
pick_books(const struct args *a, const struct cs_book *books, size_t n,
           size_t pick[2])
{
    const char *comma = strchr(a->between, ',');
    if (!comma || comma == a->between || !comma[1] || strchr(comma + 1, ','))
        return usage_error("--between '%s' is not two books A,B", a->between);
    const char *name[2] = {a->between, comma + 1};
    size_t len[2] = {(size_t)(comma - a->between), strlen(comma + 1)};
    for (int k = 0; k < 2; k++) {
        int i = find_book(books, n, name[k], len[k]);
        if (i < 0 && a->books)
            return usage_error("--between: '%.*s' is not a book of '%s'",
                               (int)len[k], name[k], a->books);
        if (i < 0)
            return usage_error("--between: '%.*s' is not an installed book",
                               (int)len[k], name[k]);
        pick[k] = (size_t)i;
    }
    if (pick[0] == pick[1])
        return usage_error("--between '%s' names one book twice", a->between);
    const char *c0 = pricing_book_currency(books[pick[0]].book),
               *c1 = pricing_book_currency(books[pick[1]].book);
    if (strcmp(c0, c1) != 0)
        return usage_error("--between '%s': the books bill in %s and %s, "
                           "which no break-even compares",
                           a->between, c0, c1);
    return 0;
}

/* --param and --range against the profile: an exit status. */
static int
check_param(const struct args *a, const struct sim_profile *p)
{
    char names[SIM_PARAMS_MAX][SIM_PARAM_NAME];
    if (sim_param_get(p, a->param, NULL, NULL) < 0) {
        size_t n = sim_params(p, true, names);
        char list[SIM_PARAMS_MAX * SIM_PARAM_NAME] = "";
        size_t len = 0;
        for (size_t i = 0; i < n && len < sizeof(list); i++)
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
                                    i ? ", " : "", names[i]);
        return usage_error("--param '%s' is not a parameter of this "
                           "profile; parameters: %s",
                           a->param, list);
    }
    for (int i = 0; i < 2; i++) {
        struct sim_profile *q = sim_profile_copy(p);
        char why[256] = "";
        if (!q) {
            fprintf(stderr, "costsim: out of memory\n");
            return 1;
        }
        double end = i ? a->hi : a->lo, held = end, step = 0;
        enum sim_param_status st =
            sim_param_set(q, a->param, end, NULL, why, sizeof(why));
        if (st == SIM_PARAM_SET &&
            sim_param_get(q, a->param, &held, &step) == 0 && step > 0 &&
            held != end) {
            snprintf(why, sizeof(why), "%s: %.10g is held as %.10g", a->param,
                     end, held);
            st = SIM_PARAM_REFUSED;
        }
        sim_profile_free(q);
        if (st != SIM_PARAM_SET)
            return usage_error("--range '%s': %s (the range's ends must be "
                               "values the profile takes as they are)",
                               a->range, why);
    }
    return 0;
}

/* An exact amount: its minor unit's decimals, more if it has them. */
static const char *
money(struct pricing_dec d, int minor, char *buf, size_t n)
{
    pricing_dec_format(d, PRICING_SCALE, buf, n);
    char *dot = strchr(buf, '.');
    if (!dot)
        return buf;
    size_t keep = (size_t)(minor < 0 ? 0 : minor);
    char *end = buf + strlen(buf);
    while (end > dot + 1 + keep && end[-1] == '0')
        end--;
    if (end == dot + 1)
        end = dot;
    *end = '\0';
    return buf;
}

static const char be_note[] =
    "costs are exact mean monthly totals (the engine's decimals over the "
    "same trials at every value: common random numbers); the break-even "
    "value is a double, from GSL's Brent solver on their difference";

struct view {
    const struct args *a;
    const struct sim_profile *p;
    const struct cs_book *bk[2];
    const struct sim_breakeven *r;
    int minor;
};

static const char *
cheaper(const struct view *v, int i)
{
    int c = pricing_dec_cmp(v->r->cost[i][0], v->r->cost[i][1]);
    return c == 0 ? "equal" : pricing_book_id(v->bk[c < 0 ? 0 : 1]->book);
}

static void
print_table(FILE *f, const struct view *v)
{
    const struct sim_breakeven *r = v->r;
    const char *id0 = pricing_book_id(v->bk[0]->book),
               *id1 = pricing_book_id(v->bk[1]->book),
               *cur = pricing_book_currency(v->bk[0]->book);
    fprintf(f,
            "profile %s (%s), month %04d-%02d, seed %llu, %zu trials at "
            "every value\n",
            v->p->name[0] ? v->p->name : "-", v->a->profile, v->a->o.year,
            v->a->o.month, (unsigned long long)v->a->o.seed, r->trials);
    fprintf(f, "note: %s\n\n", be_note);
    fprintf(f, "break-even of %s between %s and %s, in [%.10g, %.10g]: ",
            v->a->param, id0, id1, v->a->lo, v->a->hi);
    if (!r->found)
        fprintf(f, "never in range (no crossing at the 9 values scanned)\n");
    else if (r->whole && r->at[0] != r->at[1])
        fprintf(f,
                "%.10g\n    (%s is a whole number: the cheaper book "
                "changes between %.10g and %.10g)\n",
                r->root, v->a->param, r->at[0], r->at[1]);
    else
        fprintf(f, "%.10g%s\n", r->root,
                r->converged ? ""
                             : " (not converged: the last bracket "
                               "below)");
    for (int i = 0; i < 2; i++) {
        if (i == 1 && r->at[1] == r->at[0])
            break;
        char m0[64], m1[64];
        fprintf(
            f, "    at %.10g: %s %s %s, %s %s %s (%s%s)\n", r->at[i], id0,
            money(r->cost[i][0], v->minor, m0, sizeof(m0)), cur, id1,
            money(r->cost[i][1], v->minor, m1, sizeof(m1)), cur, cheaper(v, i),
            pricing_dec_cmp(r->cost[i][0], r->cost[i][1]) ? " cheaper" : "");
    }
    if (r->crossings > 1)
        fprintf(f,
                "note: the scan saw %d crossings; this is the first from "
                "%.10g\n",
                r->crossings, v->a->lo);
}

static int
print_json(FILE *f, const struct view *v)
{
    const struct sim_breakeven *r = v->r;
    json_t *root = json_object(), *books = json_array(), *at = json_array();
    char month[16], m[64];
    int rc = -1;
    snprintf(month, sizeof(month), "%04d-%02d", v->a->o.year, v->a->o.month);
    if (!root || !books || !at)
        goto out;
    for (int k = 0; k < 2; k++) {
        json_t *b = json_object();
        if (!b || json_array_append_new(books, b) ||
            json_object_set_new(b, "id",
                                json_string(pricing_book_id(v->bk[k]->book))) ||
            json_object_set_new(b, "file", json_string(v->bk[k]->file)) ||
            json_object_set_new(
                b, "currency",
                json_string(pricing_book_currency(v->bk[k]->book))))
            goto out;
    }
    for (int i = 0; i < 2; i++) {
        json_t *pt = json_object(), *costs = json_object();
        if (!pt || json_array_append_new(at, pt) || !costs ||
            json_object_set_new(pt, "value", json_real(r->at[i])) ||
            json_object_set_new(pt, "costs", costs))
            goto out;
        for (int k = 0; k < 2; k++)
            if (json_object_set_new(
                    costs, pricing_book_id(v->bk[k]->book),
                    json_string(money(r->cost[i][k], v->minor, m, sizeof(m)))))
                goto out;
    }
    json_t *b = books, *a = at;
    books = at = NULL;
    if (json_object_set_new(root, "profile", json_string(v->a->profile)) ||
        json_object_set_new(root, "name", json_string(v->p->name)) ||
        json_object_set_new(root, "month", json_string(month)) ||
        json_object_set_new(root, "seed",
                            json_integer((json_int_t)v->a->o.seed)) ||
        json_object_set_new(root, "trials",
                            json_integer((json_int_t)r->trials)) ||
        json_object_set_new(root, "param", json_string(v->a->param)) ||
        json_object_set_new(root, "whole", json_boolean(r->whole)) ||
        json_object_set_new(root, "range",
                            json_pack("[ff]", v->a->lo, v->a->hi)) ||
        json_object_set_new(root, "books", b) ||
        json_object_set_new(root, "found", json_boolean(r->found)) ||
        json_object_set_new(root, "value",
                            r->found ? json_real(r->root) : json_null()) ||
        json_object_set_new(root, "converged", json_boolean(r->converged)) ||
        json_object_set_new(root, "crossings_seen",
                            json_integer(r->crossings)) ||
        json_object_set_new(root, "at", a) ||
        json_object_set_new(root, "note", json_string(be_note)) ||
        json_dumpf(root, f, JSON_INDENT(2)) < 0)
        goto out;
    fputc('\n', f);
    rc = 0;
out:
    json_decref(books);
    json_decref(at);
    json_decref(root);
    return rc;
}

int
cs_breakeven_main(int argc, char **argv)
{
    struct args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    struct sim_err e;
    char profile[4096];
    struct sim_profile *p = sim_profile_load(
        cs_profile_path(a.profile, profile, sizeof(profile)), &e);
    struct cs_book *books = NULL;
    struct sim_mc_result base = {0};
    size_t n = 0, pick[2];
    rc = 1;
    if (!p) {
        fprintf(stderr, "costsim: %s\n", e.msg);
        goto out;
    }
    if (cs_load_books(a.books, &books, &n) < 0)
        goto out;
    if ((rc = pick_books(&a, books, n, pick)) != 0 ||
        (rc = check_param(&a, p)) != 0)
        goto out;
    rc = 1;
    const struct pricing_book *two[2] = {books[pick[0]].book,
                                         books[pick[1]].book};
    /* The profile as given sets the trials: as many as its means need. */
    if (sim_monte_carlo(p, two, 2, &a.o, &base, &e) < 0) {
        fprintf(stderr, "costsim: %s\n", e.msg);
        goto out;
    }
    size_t trials = 0;
    for (int k = 0; k < 2; k++) {
        if (base.books[k].failed) {
            fprintf(stderr,
                    "costsim: price book '%s' cannot price the profile as "
                    "given: %s\n",
                    pricing_book_id(two[k]), base.books[k].reason);
            goto out;
        }
        if (base.books[k].trials > trials)
            trials = base.books[k].trials;
    }
    struct sim_breakeven r;
    if (sim_breakeven(p, two, &a.o, trials, a.param, a.lo, a.hi, &r, &e) < 0) {
        fprintf(stderr, "costsim: %s\n", e.msg);
        goto out;
    }
    struct view v = {
        &a,
        p,
        {&books[pick[0]], &books[pick[1]]},
        &r,
        (int)pricing_money_decimals(pricing_book_currency(two[0]))};
    if (strcmp(a.format, "json") == 0) {
        if (print_json(stdout, &v) < 0) {
            fprintf(stderr, "costsim: out of memory\n");
            goto out;
        }
    } else {
        print_table(stdout, &v);
    }
    rc = fflush(stdout) == 0 ? 0 : 1;
out:
    sim_mc_result_release(&base);
    cs_books_free(books, n);
    sim_profile_free(p);
    return rc;
}
