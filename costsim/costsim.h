/*
 * costsim.h - the costsim program's parts that tests drive directly:
 * the books it compares, a run's results, and its outputs (the table,
 * JSON, CSV and the HTML report). Everything else of the program is in
 * costsim_int.h. Renderers only read the run; its owner frees it.
 */
#ifndef COSTSIM_H
#define COSTSIM_H

#include <stdio.h>

#include <jansson.h>

#include "sim.h"

/* A book as costsim shows it: the engine's book and what the file says
 * about where its prices come from. */
struct cs_book {
    char file[256];
    struct pricing_book *book;
    char source[1024];
    char as_of[256];
    char name[128];
};

/* Every *.json of dir, in name order, into *out (*n of them), released
 * with cs_books_free; dir NULL: the installed books (meter_data_dir's
 * "books"). -1, the reason on stderr, if one is bad. */
int cs_load_books(const char *dir, struct cs_book **out, size_t *n);
void cs_books_free(struct cs_book *b, size_t n);

/* One comparison, as every output reads it: books[i], res->books[i]
 * and tornado->books[i] are the same book. */
struct cs_run {
    const char *profile_path;
    const struct sim_profile *profile;
    const struct cs_book *books;
    size_t nbooks;
    const struct sim_mc_opts *opts; /* seed, month, precision, cap */
    const struct sim_mc_result *res;
    const struct sim_tornado *tornado; /* NULL when not asked for */
};

/* What every output says about what is exact and what is not, for the
 * method o asks for. */
const char *cs_stats_note(const struct sim_mc_opts *o);
/* Money per 1,000 sessions: the totals' sum x 1,000 / the sessions. */
struct pricing_dec cs_per_thousand(const struct sim_book_stats *b);
double cs_sessions_per_month(const struct sim_book_stats *b);
/* The books' indices in the order every output lists them: books
 * priced whole by mean, then the lower bounds (a price unknown:
 * sim_book_lower_bound) by the mean of their known part, then those
 * that cannot price, each by file name on a tie. To free; NULL when out
 * of memory. */
size_t *cs_order(const struct cs_run *run);

/* A lower bound for people: "at least 98.65 USD; 7,650 GiB-hours of
 * storage not priced", each quantity left unpriced by its mean a month,
 * its amount and unit. Into buf (n bytes, cut there), returned. */
const char *cs_lower_bound_text(const struct cs_book *bk,
                                const struct sim_book_stats *b, char *buf,
                                size_t n);
/* The same of one statement or any known part: known, the amount
 * known; unpriced, bit 1 << PRICING_DIM_x; qty[d], the quantity of each
 * bit's dimension in pricing_unpriced_quantity's unit. */
const char *cs_bound_text(const struct pricing_book *book,
                          struct pricing_dec known, unsigned unpriced,
                          const struct pricing_dec *qty, char *buf, size_t n);
/* Dimension d's unpriced quantity in b, its mean a month (exact, 12
 * decimals), and its unit ("GiB-hour"). */
struct pricing_dec cs_unpriced_mean(const struct cs_book *bk,
                                    const struct sim_book_stats *b,
                                    enum pricing_dim d, const char **unit);
/* The 95% interval of b's q quantile (sim_book_quantile_ci) as text in
 * the currency's decimals, "97.10-99.30", with " (covers 79%)" when
 * the trials are too few for 95%. Into buf, returned. */
const char *cs_quantile_ci_text(const struct cs_book *bk,
                                const struct sim_book_stats *b, double q,
                                char *buf, size_t n);

/* The comparison on f as a terminal table, JSON, CSV (out_csv.c) or a
 * self-contained HTML report (out_html.c). 0, or -1 when out of
 * memory. */
int cs_print_table(FILE *f, const struct cs_run *run);
int cs_print_json(FILE *f, const struct cs_run *run);
int cs_print_csv(FILE *f, const struct cs_run *run);
int cs_print_html(FILE *f, const struct cs_run *run);

/* Plan tiers and limits (costsim_limits.c). Under book i of the table:
 * the add-ons its months bought and the limits they broke, named. */
void cs_print_plan(FILE *f, const struct cs_run *run, size_t i);
/* The same, each line after indent and ending with end (the CSV's
 * field: "", "; "). */
void cs_print_plan_as(FILE *f, const struct cs_run *run, size_t i,
                      const char *indent, const char *end);
/* With several months (sim_mc_opts.months): book b's mean of month k
 * (0 the first), its name "YYYY-MM" (n bytes), and under book i in the
 * table the means of every month (nothing with one month). */
struct pricing_dec cs_month_mean(const struct sim_book_stats *b, unsigned k);
void cs_month_name(const struct sim_mc_opts *o, unsigned k, char *buf,
                   size_t n);
void cs_print_by_month(FILE *f, const struct cs_run *run, size_t i);
/* The autopause that book i was priced under: "profile" (the profile's
 * pauses, which override every book's), "book" (the book's default), or
 * NULL (none: a profile without activity, or neither gives one); the
 * idle seconds before a pause in *after_s. cs_print_pauses puts it
 * under the book in the table (nothing without activity). */
const char *cs_pauses(const struct cs_run *run, size_t i, uint32_t *after_s);
void cs_print_pauses(FILE *f, const struct cs_run *run, size_t i);
/* After the table's books: the tier chosen per provider and a note on
 * how limits are checked. -1 when out of memory. */
int cs_print_tiers(FILE *f, const struct cs_run *run);
/* Calls line once per provider of the run's books, in name order, with
 * the tier chosen as text ("BOOK (mean ...)" or "none fits (...)"). -1
 * when out of memory. */
int cs_tiers_each(const struct cs_run *run,
                  void (*line)(const char *provider, const char *text,
                               void *arg),
                  void *arg);
/* Sets book i's "provider" and, if it priced, "plan" (its add-ons and
 * limits) in its JSON object; -1 when out of memory. */
int cs_plan_json(json_t *book, const struct cs_run *run, size_t i);
/* Sets root's "tiers" (per provider, the books and the one chosen) and
 * "limits_note"; -1 when out of memory. */
int cs_tiers_json(json_t *root, const struct cs_run *run);

#endif
