/*
 * costsim_limits.c - what costsim says about plan tiers and limits: under
 * each book, the add-ons its months had to buy and every limit they
 * broke, named (limits.c measures and names them); after the books, the
 * tier chosen for each provider, the cheapest of its books whose limits
 * every simulated month fits. A book that breaks a limit keeps its
 * place and its price in the comparison: it is flagged, never dropped.
 */
#include "costsim_int.h"

#include <stdlib.h>
#include <string.h>

static const char limits_note[] =
    "plan limits are checked month by month: sandboxes running at once "
    "(paused ones not counted), the longest stretch running without a "
    "pause, and the caps; an add-on is bought in a month only if it makes "
    "the month fit, and its fee is the simulator's addition to the engine's "
    "total (the addon line); a provider's tier is its cheapest book (mean "
    "monthly total) within every limit in every month; shares of months are "
    "doubles";

/* d as text without trailing zeros: "25", "0.5". */
static const char *
trim(struct pricing_dec d, char *buf, size_t n)
{
    pricing_dec_format(d, PRICING_SCALE, buf, n);
    char *end = buf + strlen(buf);
    while (end > buf && end[-1] == '0')
        *--end = '\0';
    if (end > buf && end[-1] == '.')
        end[-1] = '\0';
    return buf;
}

/* Whether the book has any limit or add-on to report on. */
static bool
has_plan(const struct pricing_book *b)
{
    for (int l = 0; l < SIM_NLIMITS; l++)
        if (sim_limit_of(b, (enum sim_limit)l, NULL, NULL))
            return true;
    return pricing_book_limits(b)->naddons > 0;
}

static bool
bought_addon(const struct sim_book_stats *s)
{
    for (size_t k = 0; k < PRICING_ADDONS_MAX; k++)
        if (s->on_option[1 + k])
            return true;
    return false;
}

void
cs_print_plan_as(FILE *f, const struct cs_run *run, size_t i,
                 const char *indent, const char *end)
{
    const struct pricing_book *b = run->books[i].book;
    const struct sim_book_stats *s = &run->res->books[i];
    const struct pricing_limits *l = pricing_book_limits(b);
    if (s->failed || s->trials == 0 || !has_plan(b))
        return;
    for (size_t k = 0; k < l->naddons; k++) {
        char fee[48];
        if (!s->on_option[1 + k])
            continue;
        pricing_money_format(l->addons[k].monthly_fee, pricing_book_currency(b),
                             fee, sizeof(fee));
        fprintf(f,
                "%sadd-on: %s (%s a month, %u at once) in %llu of %llu "
                "months%s",
                indent, l->addons[k].name, fee, l->addons[k].max_concurrency,
                (unsigned long long)s->on_option[1 + k],
                (unsigned long long)s->months, end);
    }
    for (int lim = 0; lim < SIM_NLIMITS; lim++) {
        char msg[256];
        if (!s->broken[lim])
            continue;
        sim_limit_message(b, (enum sim_limit)lim, s->worst[lim], msg,
                          sizeof(msg));
        fprintf(
            f, "%slimit broken: %s (%llu of %llu months)%s", indent, msg,
            (unsigned long long)s->broken[lim],
            (unsigned long long)sim_book_months_checked(s, (enum sim_limit)lim),
            end);
    }
    if (sim_book_fits(s) && !bought_addon(s))
        fprintf(f, "%slimits: none broken%s", indent, end);
}

void
cs_print_plan(FILE *f, const struct cs_run *run, size_t i)
{
    cs_print_plan_as(f, run, i, "    ", "\n");
}

const char *
cs_pauses(const struct cs_run *run, size_t i, uint32_t *after_s)
{
    const struct sim_profile *p = run->profile;
    if (!p->has_activity)
        return NULL;
    if (p->pause) {
        *after_s = p->pause_after_s;
        return "profile";
    }
    uint32_t cut = sim_book_cut(p, run->books[i].book);
    if (cut == SIM_NO_CUT)
        return NULL;
    *after_s = cut;
    return "book";
}

void
cs_print_pauses(FILE *f, const struct cs_run *run, size_t i)
{
    uint32_t after;
    const char *from = cs_pauses(run, i, &after);
    if (!run->profile->has_activity)
        return;
    if (!from)
        fprintf(f, "    autopause: none (neither the profile nor the book "
                   "gives one)\n");
    else if (strcmp(from, "book") == 0)
        fprintf(f, "    autopause: after %u s idle (the book's default)\n",
                after);
    else if (run->profile->pause_probability < 1)
        fprintf(f,
                "    autopause: after %u s idle, %g%% of the time (the "
                "profile's)\n",
                after, run->profile->pause_probability * 100);
    else
        fprintf(f, "    autopause: after %u s idle (the profile's)\n", after);
}

/* The providers of the run's books, each once, sorted; *n of them. NULL
 * with *n 0 when there are none or out of memory (*oom says which). */
static const char **
providers(const struct cs_run *run, size_t *n, bool *oom)
{
    const char **p = malloc((run->nbooks ? run->nbooks : 1) * sizeof(*p));
    *n = 0;
    *oom = !p;
    for (size_t i = 0; p && i < run->nbooks; i++) {
        const char *x = pricing_book_provider(run->books[i].book);
        bool seen = !*x;
        for (size_t k = 0; k < *n && !seen; k++)
            seen = strcmp(p[k], x) == 0;
        if (!seen)
            p[(*n)++] = x;
    }
    /* Few providers: insertion sort. */
    for (size_t i = 1; i < *n; i++)
        for (size_t k = i; k > 0 && strcmp(p[k - 1], p[k]) > 0; k--) {
            const char *t = p[k];
            p[k] = p[k - 1];
            p[k - 1] = t;
        }
    return p;
}

/* The engine's books of the run, as sim_tier_choose takes them. */
static const struct pricing_book **
book_list(const struct cs_run *run)
{
    const struct pricing_book **l =
        malloc((run->nbooks ? run->nbooks : 1) * sizeof(*l));
    for (size_t i = 0; l && i < run->nbooks; i++)
        l[i] = run->books[i].book;
    return l;
}

/* How many limits book i broke in some month. */
static int
limits_broken(const struct sim_book_stats *s)
{
    int n = 0;
    for (int l = 0; l < SIM_NLIMITS; l++)
        n += s->broken[l] != 0;
    return n;
}

/* The tier of provider p, after its name: the book chosen (its mean and
 * add-ons), or "none fits" and why each of its books does not. */
static void
tier_text(FILE *f, const struct cs_run *run, const struct pricing_book **list,
          const char *p)
{
    int c = sim_tier_choose(list, run->res->books, run->nbooks, p);
    if (c >= 0) {
        const struct sim_book_stats *s = &run->res->books[c];
        const struct pricing_limits *l = pricing_book_limits(list[c]);
        const char *cur = pricing_book_currency(list[c]);
        char mean[48];
        pricing_money_format(sim_book_mean(s), cur, mean, sizeof(mean));
        fprintf(f, "%s (mean %s %s", pricing_book_id(list[c]), mean, cur);
        for (size_t a = 0; a < l->naddons; a++)
            if (s->on_option[1 + a])
                fprintf(f, "; add-on %s in %llu of %llu months",
                        l->addons[a].name,
                        (unsigned long long)s->on_option[1 + a],
                        (unsigned long long)s->months);
        fputc(')', f);
        return;
    }
    fprintf(f, "none fits (");
    bool first = true;
    for (size_t i = 0; i < run->nbooks; i++) {
        const struct sim_book_stats *s = &run->res->books[i];
        if (strcmp(pricing_book_provider(list[i]), p) != 0)
            continue;
        int n = limits_broken(s);
        fprintf(f, "%s%s: ", first ? "" : "; ", pricing_book_id(list[i]));
        if (s->failed || s->trials == 0)
            fprintf(f, "cannot price");
        else if (n == 0 && sim_book_lower_bound(s))
            fprintf(f, "lower bound only, a price unknown");
        else
            fprintf(f, "%d limit%s broken", n, n == 1 ? "" : "s");
        first = false;
    }
    fputc(')', f);
}

int
cs_tiers_each(const struct cs_run *run,
              void (*line)(const char *provider, const char *text, void *arg),
              void *arg)
{
    size_t np;
    bool oom;
    const char **p = providers(run, &np, &oom);
    const struct pricing_book **list = book_list(run);
    int rc = oom || !list ? -1 : 0;
    for (size_t k = 0; rc == 0 && k < np; k++) {
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        if (!m) {
            rc = -1;
            break;
        }
        tier_text(m, run, list, p[k]);
        if (fclose(m) != 0 || !text)
            rc = -1;
        else
            line(p[k], text, arg);
        free(text);
    }
    free(p);
    free(list);
    return rc;
}

static void
print_tier(const char *provider, const char *text, void *arg)
{
    fprintf(arg, "  %-16s %s\n", provider, text);
}

int
cs_print_tiers(FILE *f, const struct cs_run *run)
{
    fprintf(f, "\ntier chosen per provider (the cheapest book within its "
               "limits in every month):\n");
    if (cs_tiers_each(run, print_tier, f) < 0)
        return -1;
    fprintf(f, "note: %s\n", limits_note);
    return 0;
}

/* One limit of a book: its value and unit, how many months broke it,
 * the worst value measured and, if broken, the message. */
static json_t *
limit_json(const struct pricing_book *b, const struct sim_book_stats *s,
           enum sim_limit lim)
{
    struct pricing_dec value;
    const char *unit;
    char v[64], w[64], msg[256];
    sim_limit_of(b, lim, &value, &unit);
    json_t *j = json_object();
    bool ok =
        j &&
        !json_object_set_new(j, "limit", json_string(sim_limit_names[lim])) &&
        !json_object_set_new(j, "value",
                             json_string(trim(value, v, sizeof(v)))) &&
        !json_object_set_new(j, "unit", json_string(unit)) &&
        !json_object_set_new(j, "worst",
                             json_string(trim(s->worst[lim], w, sizeof(w)))) &&
        !json_object_set_new(j, "months_broken",
                             json_integer((json_int_t)s->broken[lim])) &&
        !json_object_set_new(
            j, "months_checked",
            json_integer((json_int_t)sim_book_months_checked(s, lim))) &&
        !json_object_set_new(
            j, "share_broken",
            json_real((double)s->broken[lim] /
                      (double)sim_book_months_checked(s, lim)));
    if (ok && s->broken[lim]) {
        sim_limit_message(b, lim, s->worst[lim], msg, sizeof(msg));
        ok = !json_object_set_new(j, "message", json_string(msg));
    }
    if (!ok) {
        json_decref(j);
        return NULL;
    }
    return j;
}

/* jansson's *_set_new and *_append_new take the value even when they
 * fail, so each new value is handed over at once and filled after. */
int
cs_plan_json(json_t *book, const struct cs_run *run, size_t i)
{
    const struct pricing_book *b = run->books[i].book;
    const struct sim_book_stats *s = &run->res->books[i];
    const struct pricing_limits *l = pricing_book_limits(b);
    const char *prov = pricing_book_provider(b);
    if (json_object_set_new(book, "provider",
                            *prov ? json_string(prov) : json_null()))
        return -1;
    if (s->failed || s->trials == 0)
        return 0;
    json_t *plan = json_object(), *addons, *limits;
    bool ok =
        !json_object_set_new(book, "plan", plan) &&
        !json_object_set_new(plan, "fits", json_boolean(sim_book_fits(s))) &&
        !json_object_set_new(plan, "months_checked",
                             json_integer((json_int_t)s->checked)) &&
        !json_object_set_new(plan, "addons", addons = json_array()) &&
        !json_object_set_new(plan, "limits", limits = json_array());
    for (size_t k = 0; ok && k < l->naddons; k++) {
        char fee[48];
        json_t *a;
        if (!s->on_option[1 + k])
            continue;
        pricing_dec_format(l->addons[k].monthly_fee, 6, fee, sizeof(fee));
        ok = !json_array_append_new(addons, a = json_object()) &&
             !json_object_set_new(a, "name", json_string(l->addons[k].name)) &&
             !json_object_set_new(
                 a, "max_concurrency",
                 json_integer((json_int_t)l->addons[k].max_concurrency)) &&
             !json_object_set_new(a, "monthly_fee", json_string(fee)) &&
             !json_object_set_new(
                 a, "months", json_integer((json_int_t)s->on_option[1 + k])) &&
             !json_object_set_new(
                 a, "share",
                 json_real((double)s->on_option[1 + k] / (double)s->months));
    }
    for (int lim = 0; ok && lim < SIM_NLIMITS; lim++)
        if (sim_limit_of(b, (enum sim_limit)lim, NULL, NULL))
            ok = !json_array_append_new(limits,
                                        limit_json(b, s, (enum sim_limit)lim));
    return ok ? 0 : -1;
}

int
cs_tiers_json(json_t *root, const struct cs_run *run)
{
    size_t np;
    bool oom;
    const char **p = providers(run, &np, &oom);
    const struct pricing_book **list = book_list(run);
    json_t *tiers;
    bool ok =
        !oom && list &&
        !json_object_set_new(root, "tiers", tiers = json_array()) &&
        !json_object_set_new(root, "limits_note", json_string(limits_note));
    for (size_t k = 0; ok && k < np; k++) {
        int c = sim_tier_choose(list, run->res->books, run->nbooks, p[k]);
        json_t *t, *books;
        ok = !json_array_append_new(tiers, t = json_object()) &&
             !json_object_set_new(t, "provider", json_string(p[k])) &&
             !json_object_set_new(t, "books", books = json_array()) &&
             !json_object_set_new(t, "chosen",
                                  c >= 0 ? json_string(pricing_book_id(list[c]))
                                         : json_null());
        for (size_t i = 0; ok && i < run->nbooks; i++)
            if (strcmp(pricing_book_provider(list[i]), p[k]) == 0)
                ok = !json_array_append_new(
                    books, json_string(pricing_book_id(list[i])));
    }
    free(p);
    free(list);
    return ok ? 0 : -1;
}
