/*
 * test_costsim_out.c - costsim's CSV and HTML renderers on a run built by
 * hand: three books (one priced at a constant 5.00 a month, one over four
 * trials that average 11.50, one that cannot price), hostile strings in
 * every field a profile or a book controls, and a tornado, since its
 * producer (sens.c) is not the renderer's to run. The figures are checked
 * against values worked out by hand; the strings must come out escaped.
 *
 * With a file name as its argument it also writes the HTML there, which
 * tests/costsim_html.sh opens in a browser.
 */
#include <stdlib.h>
#include <string.h>

#include "costsim.h"
#include "testutil.h"

#define HOSTILE_PROFILE "<img src=x onerror=alert(1)>"
#define HOSTILE_NAME "<script>alert(\"book\")</script>"

static struct pricing_dec
d(const char *s)
{
    struct pricing_dec v = {0};
    CHECK(pricing_dec_parse(s, 12, &v) == PRICING_OK);
    return v;
}

static struct pricing_book *
book(const char *id)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s.json", BOOKS_DIR, id);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f)
        return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    struct pricing_err e;
    struct pricing_book *b = pricing_book_parse(buf, n, path, &e);
    if (!b)
        fprintf(stderr, "%s\n", e.msg);
    CHECK(b != NULL);
    return b;
}

/* How many times needle occurs in hay. */
static size_t
count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static char *
render(int (*print)(FILE *, const struct cs_run *), const struct cs_run *run)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    CHECK(print(f, run) == 0);
    fclose(f);
    return text;
}

/* The run: book 0 (e2b-pro) four trials of 10, 12, 11 and 13 (mean 11.50:
 * cpu 7.50, memory 5.00, included_credit -1.00 a month); book 1
 * (fly-machines) 5.00 every month, all subscription; book 2 (aws-lambda)
 * cannot price. */
struct fixture {
    struct cs_book books[3];
    struct sim_book_stats stats[3];
    struct pricing_dec totals0[4], sorted0[4], totals1[4];
    struct sim_mc_result res;
    struct sim_mc_opts opts;
    struct sim_profile *profile;
    struct sim_swing swings0[3], swings1[1];
    struct sim_tornado_book tbooks[3];
    struct sim_tornado tornado;
    struct cs_run run;
};

static int
kind(const char *name)
{
    for (int k = 0; k < SIM_NKINDS; k++)
        if (strcmp(sim_line_kinds[k], name) == 0)
            return k;
    return SIM_NKINDS - 1;
}

static void
fixture_init(struct fixture *x)
{
    memset(x, 0, sizeof(*x));
    static const char *const ids[] = {"e2b-pro", "fly-machines", "aws-lambda"};
    for (int i = 0; i < 3; i++) {
        x->books[i].book = book(ids[i]);
        snprintf(x->books[i].file, sizeof(x->books[i].file), "%s.json", ids[i]);
    }
    snprintf(x->books[0].name, sizeof(x->books[0].name), "%s", HOSTILE_NAME);
    snprintf(x->books[0].source, sizeof(x->books[0].source), "%s",
             "javascript:alert(1) https://example.com/p?a=1&b=2 ; \"quoted, "
             "with a comma\"");
    snprintf(x->books[0].as_of, sizeof(x->books[0].as_of), "2026-01-01 <i>");
    snprintf(x->books[1].source, sizeof(x->books[1].source),
             "http://fly.example/pricing.");
    snprintf(x->books[1].as_of, sizeof(x->books[1].as_of), "=HYPERLINK(\"x\")");

    static const char *const t0[] = {"10", "12", "11", "13"};
    static const char *const s0[] = {"10", "11", "12", "13"};
    for (int k = 0; k < 4; k++) {
        x->totals0[k] = d(t0[k]);
        x->sorted0[k] = d(s0[k]);
        x->totals1[k] = d("5");
    }
    struct sim_book_stats *b = &x->stats[0];
    b->trials = 4;
    b->months = 4; /* one month a trial */
    b->totals = x->totals0;
    b->sorted = x->sorted0;
    b->kind_sum[kind("cpu")] = d("30");
    b->kind_sum[kind("memory")] = d("20");
    b->kind_sum[kind("included_credit")] = d("-4");
    b->sessions = 400;
    b->mean = 11.5;
    b->half = 2.05;
    b->converged = true;
    b = &x->stats[1];
    b->trials = 4;
    b->months = 4;
    b->totals = b->sorted = x->totals1;
    b->kind_sum[kind("subscription")] = d("20");
    b->sessions = 400;
    b->mean = 5;
    b->converged = true;
    b = &x->stats[2];
    b->failed = true;
    snprintf(b->reason, sizeof(b->reason), "%s",
             "price book 'aws-lambda': uses <storage> & \"more\"");
    x->res = (struct sim_mc_result){3, x->stats, 4};

    x->opts = (struct sim_mc_opts){.seed = 7,
                                   .precision = 0.005,
                                   .min_trials = 2,
                                   .max_trials = 4,
                                   .threads = 1,
                                   .year = 2026,
                                   .month = 11};
    static const char profile[] =
        "{\"name\": \"" HOSTILE_PROFILE "\", \"sessions\": {\"per_month\": "
        "100, \"length\": {\"dist\": \"fixed\", \"value\": 60}}, "
        "\"sandbox\": {\"vcpu\": 1, \"memory_gib\": 1, \"disk_gib\": 0}}";
    struct sim_err e;
    x->profile = sim_profile_parse(profile, strlen(profile), "p.json", &e);
    if (!x->profile)
        fprintf(stderr, "%s\n", e.msg);
    CHECK(x->profile != NULL);

    /* Book 0 swings most on the sessions, then on the vCPU, and one side
     * of a third parameter cannot be priced; book 1 does not move; book
     * 2 has no tornado (it cannot price). */
    x->swings0[0] = (struct sim_swing){
        .param = "sessions.per_month", .low = d("9"), .high = d("14")};
    x->swings0[1] = (struct sim_swing){
        .param = "sandbox.vcpu", .low = d("11"), .high = d("12.5")};
    x->swings0[2] = (struct sim_swing){
        .param = "<param>", .failed = true, .high_failed = true};
    x->swings1[0] = (struct sim_swing){
        .param = "sessions.length", .low = d("5"), .high = d("5")};
    x->tbooks[0] = (struct sim_tornado_book){
        .base = d("11.5"), .swings = x->swings0, .nswings = 3, .trials = 4};
    x->tbooks[1] = (struct sim_tornado_book){
        .base = d("5"), .swings = x->swings1, .nswings = 1, .trials = 4};
    x->tornado =
        (struct sim_tornado){.pct = 10, .nbooks = 3, .books = x->tbooks};
    x->run = (struct cs_run){"p.json", x->profile, x->books,   3,
                             &x->opts, &x->res,    &x->tornado};
}

static void
fixture_release(struct fixture *x)
{
    for (int i = 0; i < 3; i++)
        pricing_book_free(x->books[i].book);
    sim_profile_free(x->profile);
}

static void
test_csv(const struct cs_run *run)
{
    char *csv = render(cs_print_csv, run);
    static const char header[] =
        "book,file,currency,priced,reason,trials,converged,bound,unpriced,"
        "mean,ci95_half_width,controls,pauses_after_idle_s,pauses_from,p5,p50,"
        "p95,p5_ci95_low,p5_ci95_high,"
        "p5_ci95_coverage,p50_ci95_low,p50_ci95_high,p50_ci95_coverage,"
        "p95_ci95_low,p95_ci95_high,p95_ci95_coverage,per_1000_sessions,"
        "sessions_per_month,"
        "line_cpu,line_memory,line_instance,line_storage,line_egress,"
        "line_runs,line_autopause_credit,line_subscription,"
        "line_included_credit,line_promotional_credit,line_minimum_commit,"
        "line_credit_grant,line_addon,line_other,provider,plan,provider_tier,"
        "source,as_of\r\n";
    CHECK(strncmp(csv, header, strlen(header)) == 0);
    /* The cheapest first; a text that would start a formula is quoted
     * with a leading '; numbers are not. */
    const char *row1 = csv + strlen(header);
    static const char fly[] =
        "fly-machines,fly-machines.json,USD,true,,4,true,,,5.000000,0.000000,"
        "0,,,5.00,5.00,5.00,5.00,5.00,0.171475,5.00,5.00,0.875000,5.00,5.00,"
        "0.171475,50.000000,100.000000,0.000000,0.000000,0.000000,"
        "0.000000,0.000000,0.000000,0.000000,5.000000,0.000000,0.000000,"
        "0.000000,0.000000,0.000000,0.000000,fly-machines,,fly-machines "
        "(mean 5.00 USD),http://fly.example/"
        "pricing.,\"'=HYPERLINK(\"\"x\"\")"
        "\"\r\n";
    CHECK(strncmp(row1, fly, strlen(fly)) == 0);
    /* Nearest rank of 4 sorted trials: p5 the 1st, p50 the 2nd, p95 the
     * 4th; 46 x 1,000 / 400 sessions = 115 per 1,000. Their intervals,
     * B ~ binomial(4, q): p5 ranks 1-2, covering P(B = 1) = 4 x 0.05 x
     * 0.95^3 = 0.171475; p50 1-4, P(1 <= B <= 3) = 14/16 = 0.875; p95
     * 3-4, 0.171475 (four trials are too few for 95%). */
    static const char e2b[] =
        "e2b-pro,e2b-pro.json,USD,true,,4,true,,,11.500000,2.050000,0,,,10.00,"
        "11.00,13.00,10.00,11.00,0.171475,10.00,13.00,0.875000,12.00,13.00,"
        "0.171475,115.000000,100.000000,7.500000,5.000000,0.000000,"
        "0.000000,0.000000,0.000000,0.000000,0.000000,-1.000000,0.000000,"
        "0.000000,0.000000,0.000000,0.000000,e2b,limits: none broken,e2b-pro "
        "(mean 11.50 USD),\"javascript:alert(1) "
        "https://example.com/p?a=1&b=2"
        " ; \"\"quoted, with a comma\"\"\",2026-01-01 <i>\r\n";
    CHECK(strstr(csv, e2b) != NULL);
    static const char lambda[] =
        "aws-lambda,aws-lambda.json,USD,false,\"price book 'aws-lambda': uses "
        "<storage> & \"\"more\"\"\",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,aws-"
        "lambda,,none fits (aws-lambda: cannot price),,\r\n";
    CHECK(strstr(csv, lambda) != NULL);
    CHECK(count(csv, "\r\n") == 4);
    free(csv);
}

static void
test_html(const struct cs_run *run, const char *out)
{
    char *html = render(cs_print_html, run);
    CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0);
    CHECK(strstr(html, "</html>\n") != NULL);
    /* No script, no fetch: the policy forbids both, and nothing from the
     * profile or a book becomes markup. */
    CHECK(strstr(html, "default-src 'none'") != NULL);
    CHECK(strstr(html, "<script") == NULL);
    CHECK(strstr(html, "<img") == NULL);
    CHECK(strstr(html, "<i>") == NULL);
    CHECK(strstr(html, "&lt;script&gt;alert(&quot;book&quot;)&lt;/script&gt;"));
    CHECK(strstr(html, "&lt;img src=x onerror=alert(1)&gt;"));
    CHECK(strstr(html, "uses &lt;storage&gt; &amp; &quot;more&quot;"));
    CHECK(strstr(html, "href=\"javascript") == NULL);
    CHECK(count(html, "<a href=") == 2);
    CHECK(strstr(html, "<a href=\"https://example.com/p?a=1&amp;b=2\""));
    /* The trailing full stop stays outside the link. */
    CHECK(strstr(html, "<a href=\"http://fly.example/pricing\""));
    CHECK(strstr(html, "as of 2026-01-01 &lt;i&gt;"));
    /* The table: exact figures, the cheapest first and the others over
     * it; the unpriced book with its reason. */
    CHECK(strstr(html, "<td class=\"mean\">5.00</td>"));
    CHECK(strstr(html, "<td class=\"mean\">11.50</td>"));
    CHECK(strstr(html, "<td>+6.50</td>"));
    CHECK(strstr(html, "<td>115.00</td>"));
    CHECK(strstr(html, "<span class=\"badge\">cheapest</span>"));
    CHECK(strstr(html, "cannot price this workload: price book"));
    CHECK(strstr(html, "Seed</dt><dd>7</dd>"));
    CHECK(strstr(html, "exact decimals from the engine"));
    const char *fly = strstr(html, "<tr data-book=\"fly-machines\">"),
               *e2b = strstr(html, "<tr data-book=\"e2b-pro\">"),
               *lambda = strstr(html, "<tr data-book=\"aws-lambda\">");
    CHECK(fly && e2b && lambda && fly < e2b && e2b < lambda);
    /* Charts: a box and a stacked bar for each priced book and none for
     * the other; e2b-pro's three kinds, its credit hatched; histograms
     * of 4 trials. */
    CHECK(count(html, "<svg ") == 1 + 2 + 1 + 2);
    CHECK(count(html, "role=\"img\"") == count(html, "<svg "));
    CHECK(count(html, "<g class=\"box\"") == 2);
    CHECK(count(html, "<g class=\"stack\"") == 2);
    CHECK(strstr(html, "data-book=\"aws-lambda\"><title>") == NULL);
    CHECK(strstr(html, "e2b-pro, included_credit: -1.00 USD"));
    CHECK(strstr(html, "e2b-pro, cpu: 7.50 USD"));
    CHECK(count(html, "fill=\"url(#hatch0)\"") == 1);
    CHECK(strstr(html, "e2b-pro: the monthly totals of 4 trials</title>"));
    CHECK(strstr(html, "<title>5.00 USD: 4 trials</title>"));
    CHECK(strstr(html, "<title>10.00 to 10.15 USD: 1 trial</title>"));
    /* The tornado: two books' charts (aws-lambda has none), a low and
     * a high bar for each priced swing, the failed one said. */
    CHECK(strstr(html, "each parameter moved by &plusmn;10%"));
    CHECK(count(html, "class=\"chart tornado\"") == 2);
    CHECK(count(html, "<rect class=\"low\"") == 3);
    CHECK(count(html, "<rect class=\"high\"") == 3);
    CHECK(strstr(html, "sessions.per_month -10%: 9.00 USD"));
    CHECK(strstr(html, "sessions.per_month +10%: 14.00 USD"));
    CHECK(strstr(html, "&lt;param&gt;"));
    CHECK(count(html, "cannot price one side") == 2); /* chart, table */
    CHECK(strstr(html, "<td>9.00</td><td>14.00</td><td>5.00</td>"));
    const char *t0 = strstr(html, "sessions.per_month</th>"),
               *t1 = strstr(html, "sandbox.vcpu</th>");
    CHECK(t0 && t1 && t0 < t1);
    if (out) {
        FILE *f = fopen(out, "w");
        CHECK(f && fputs(html, f) >= 0 && fclose(f) == 0);
    }
    free(html);

    /* Without a tornado, no section for it. */
    struct cs_run plain = *run;
    plain.tornado = NULL;
    html = render(cs_print_html, &plain);
    CHECK(strstr(html, "chart tornado") == NULL);
    CHECK(strstr(html, "Sensitivity") == NULL);
    free(html);
}

int
main(int argc, char **argv)
{
    struct fixture x;
    fixture_init(&x);
    if (x.profile && x.books[0].book && x.books[1].book && x.books[2].book) {
        test_csv(&x.run);
        test_html(&x.run, argc > 1 ? argv[1] : NULL);
    }
    fixture_release(&x);
    return test_result();
}
