/*
 * out_html.c - costsim's comparison as one self-contained HTML page for
 * people deciding: the run's settings, a table of every book, each
 * book's monthly total over the trials (a box plot of all books on one
 * axis and a histogram per book), the mean breakdown by line kind as
 * stacked bars, and the tornado when one was computed.
 *
 * Self-contained: styles inline, charts as inline SVG written here, no
 * script and no external resource. The page's Content-Security-Policy
 * forbids both, so it reads the same offline, attached to a mail or
 * opened years later, and a string that slipped through escaping still
 * could not run. Every string from a profile or a book goes through
 * meter_html_fputs (util/). The tables print the exact decimals of the other
 * outputs; the charts place the same figures with doubles, which only draw.
 */
#include "costsim_int.h"
#include "meter_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The SVG's coordinate width; it scales to the page. */
#define W 960
/* Left of every bar chart: the books' names. */
#define LABEL_W 190
#define PLOT_X0 (LABEL_W + 12)
#define PLOT_X1 (W - 96)
#define ROW_H 28

/* One colour per line kind, sim_line_kinds' order; readable on white
 * and apart from each other (Tableau's 10, three more for the rarest). */
static const char *const kind_colour[SIM_NKINDS] = {
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f",
    "#e15759", "#bab0ac", "#ff9da7", "#86bcb6", "#d4a6c8", "#d37295", "#7f7f7f",
};
#define LOW_COLOUR "#4e79a7"
#define HIGH_COLOUR "#e15759"

static bool
is_url(const char *s)
{
    return strncmp(s, "https://", 8) == 0 || strncmp(s, "http://", 7) == 0;
}

/* A book's source, its http(s) addresses as links: the words that start
 * with one, to the next space, less a trailing full stop, comma,
 * semicolon or parenthesis. Nothing else becomes a link, so a
 * "javascript:" source stays text. */
static void
source_html(FILE *f, const char *s)
{
    while (*s) {
        const char *u = s;
        while ((u = strstr(u, "http")) && !is_url(u))
            u += 4;
        if (!u) {
            meter_html_fputs(f, s);
            return;
        }
        meter_html_fwrite(f, s, (size_t)(u - s));
        size_t n = strcspn(u, " \t\r\n");
        while (n > 8 && strchr(".,;)", u[n - 1]))
            n--;
        fputs("<a href=\"", f);
        meter_html_fwrite(f, u, n);
        fputs("\" rel=\"noreferrer noopener\">", f);
        meter_html_fwrite(f, u, n);
        fputs("</a>", f);
        s = u + n;
    }
}

/* A decimal string with thousands separators: "-12345.60" to
 * "-12,345.60". */
static const char *
grouped(const char *in, char *out, size_t n)
{
    const char *digits = in + (in[0] == '-');
    size_t intlen = strcspn(digits, ".");
    size_t k = 0;
    if (digits != in && k + 1 < n)
        out[k++] = '-';
    for (size_t i = 0; i < intlen && k + 1 < n; i++) {
        if (i > 0 && (intlen - i) % 3 == 0 && k + 2 < n)
            out[k++] = ',';
        out[k++] = digits[i];
    }
    snprintf(out + k, n - k, "%s", digits + intlen);
    return out;
}

/* d exactly, to the given decimals, grouped. */
static const char *
money(struct pricing_dec d, int decimals, char *out, size_t n)
{
    char raw[48];
    pricing_dec_format(d, (unsigned)(decimals < 0 ? 0 : decimals), raw,
                       sizeof(raw));
    return grouped(raw, out, n);
}

static double
dbl(struct pricing_dec d)
{
    return (double)d.v / (double)PRICING_ONE;
}

static int
minor_unit(const struct cs_book *bk)
{
    return (int)pricing_money_decimals(pricing_book_currency(bk->book));
}

/* ---- axes ----------------------------------------------------------- */

/* A linear axis from lo to hi (round numbers) drawn over [x0, x1]. */
struct axis {
    double lo, hi, step;
    double x0, x1;
};

/* An axis over [lo, hi], widened to 0 if zero (costs are read from
 * zero), with about five steps of 1, 2, 2.5 or 5 times a power of ten. */
static void
axis_init(struct axis *a, double lo, double hi, bool zero, double x0, double x1)
{
    if (zero && lo > 0)
        lo = 0;
    if (zero && hi < 0)
        hi = 0;
    if (!(hi > lo))
        hi = lo + 1;
    double rough = (hi - lo) / 5;
    double mag = pow(10, floor(log10(rough)));
    static const double nice[] = {1, 2, 2.5, 5, 10};
    double step = mag;
    for (size_t i = 0; i < sizeof(nice) / sizeof(nice[0]); i++)
        if ((step = nice[i] * mag) >= rough)
            break;
    /* Ends on a tick, unless that would waste a quarter of the width (a
     * small credit left of zero, a narrow tornado): then a little past
     * the data. */
    double span = hi - lo;
    a->step = step;
    a->lo = floor(lo / step) * step;
    if (a->lo < lo - span / 4)
        a->lo = lo - span / 50;
    a->hi = ceil(hi / step) * step;
    if (a->hi > hi + span / 4)
        a->hi = hi + span / 50;
    a->x0 = x0;
    a->x1 = x1;
}

static double
axis_x(const struct axis *a, double v)
{
    return a->x0 + (v - a->lo) / (a->hi - a->lo) * (a->x1 - a->x0);
}

/* The first tick: the axis's start, or the first step after it. */
static double
axis_first(const struct axis *a)
{
    return ceil(a->lo / a->step - 1e-9) * a->step;
}

/* A tick's label: as many decimals as the step needs, grouped. */
static const char *
tick_text(const struct axis *a, double v, char *out, size_t n)
{
    int decimals = a->step >= 1 ? 0 : (int)ceil(-log10(a->step) - 1e-9);
    if (a->step < 1 && fmod(a->step * pow(10, decimals), 1) > 1e-9)
        decimals++;
    char raw[64];
    snprintf(raw, sizeof(raw), "%.*f", decimals, fabs(v) < 1e-12 ? 0 : v);
    return grouped(raw, out, n);
}

/* Vertical grid lines and their labels under [top, bottom]; the zero
 * line darker. */
static void
axis_draw(FILE *f, const struct axis *a, double top, double bottom,
          const char *unit)
{
    fputs("<g class=\"axis\" aria-hidden=\"true\">\n", f);
    for (double v = axis_first(a); v <= a->hi + a->step / 1e6; v += a->step) {
        double x = axis_x(a, v);
        char t[64];
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "class=\"%s\"/>\n",
                x, top, x, bottom, fabs(v) < a->step / 1e6 ? "zero" : "grid");
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
                "class=\"tick\">%s</text>\n",
                x, bottom + 16, tick_text(a, v, t, sizeof(t)));
    }
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
            "class=\"unit\">",
            (a->x0 + a->x1) / 2, bottom + 34);
    meter_html_fputs(f, unit);
    fputs("</text>\n</g>\n", f);
}

/* <svg> with its accessible name (title) and description: id must be
 * unique in the page. */
static void
svg_open(FILE *f, const char *cls, const char *id, int w, int h,
         const char *title, const char *desc)
{
    fprintf(f,
            "<svg class=\"%s\" viewBox=\"0 0 %d %d\" width=\"%d\" "
            "height=\"%d\" role=\"img\" aria-labelledby=\"%s-t %s-d\" "
            "xmlns=\"http://www.w3.org/2000/svg\">\n<title id=\"%s-t\">",
            cls, w, h, w, h, id, id, id);
    meter_html_fputs(f, title);
    fprintf(f, "</title>\n<desc id=\"%s-d\">", id);
    meter_html_fputs(f, desc);
    fputs("</desc>\n", f);
}

/* A book's name at the left of a chart's row. */
static void
row_label(FILE *f, const struct cs_book *bk, double y)
{
    fprintf(f,
            "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" "
            "class=\"label\">",
            LABEL_W, y + 4);
    meter_html_fputs(f, pricing_book_id(bk->book));
    fputs("</text>\n", f);
}

/* ---- the page's parts ---------------------------------------------- */

static const char style[] =
    ":root{--ink:#1f2633;--mute:#5f6877;--line:#e2e5eb;--soft:#f5f6f8;"
    "--accent:#2b63c6;--good:#1d7a46}\n"
    "*{box-sizing:border-box}\n"
    "body{margin:0;background:var(--soft);color:var(--ink);"
    "font:14px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,"
    "\"Helvetica Neue\",Arial,sans-serif}\n"
    "main{max-width:1120px;margin:0 auto;padding:28px 28px 48px}\n"
    "h1{font-size:26px;line-height:1.25;margin:0 0 4px}\n"
    "h1 .name{color:var(--accent)}\n"
    ".kicker{margin:0;color:var(--mute);font-size:12px;font-weight:600;"
    "text-transform:uppercase;letter-spacing:.08em}\n"
    "h2{font-size:18px;margin:0 0 4px}\n"
    "h3{font-size:14px;margin:0 0 6px}\n"
    ".lead{color:var(--mute);margin:0 0 18px;font-size:15px}\n"
    "section{background:#fff;border:1px solid var(--line);"
    "border-radius:10px;padding:20px 24px;margin:0 0 20px}\n"
    ".intro{color:var(--mute);margin:0 0 14px}\n"
    "dl.settings{display:grid;grid-template-columns:repeat(auto-fill,"
    "minmax(160px,1fr));gap:10px 24px;margin:0}\n"
    "dl.settings div{min-width:0}\n"
    "dt{color:var(--mute);font-size:12px;text-transform:uppercase;"
    "letter-spacing:.04em}\n"
    "dd{margin:0;font-weight:600;overflow-wrap:anywhere}\n"
    ".cards{display:grid;grid-template-columns:repeat(3,1fr);gap:12px;"
    "margin:0 0 20px}\n"
    ".card{background:#fff;border:1px solid var(--line);border-radius:10px;"
    "padding:14px 18px}\n"
    ".card .big{font-size:22px;font-weight:700;"
    "font-variant-numeric:tabular-nums}\n"
    ".card .what{color:var(--mute);font-size:12px;text-transform:uppercase;"
    "letter-spacing:.04em}\n"
    ".scroll{overflow-x:auto}\n"
    "table{border-collapse:collapse;width:100%;"
    "font-variant-numeric:tabular-nums}\n"
    "caption{text-align:left;color:var(--mute);padding:0 0 8px}\n"
    "th,td{padding:7px 10px;border-bottom:1px solid var(--line);"
    "text-align:right;vertical-align:top;white-space:nowrap}\n"
    "thead th{font-size:12px;color:var(--mute);font-weight:600;"
    "border-bottom:2px solid var(--line)}\n"
    "th[scope=row],td.text,th.text{text-align:left;white-space:normal}\n"
    "th[scope=row]{font-weight:600}\n"
    "table.summary th[scope=row]{width:44%}\n"
    "td.mean{font-weight:600}\n"
    ".badge{display:inline-block;margin-left:4px;padding:0 7px;"
    "border-radius:9px;background:#e3f3e9;color:var(--good);"
    "font-size:11px;font-weight:600}\n"
    ".meta{display:block;color:var(--mute);font-size:12px;font-weight:400;"
    "overflow-wrap:anywhere}\n"
    ".meta a{color:var(--accent)}\n"
    ".warn{color:#a6461b}\n"
    ".muted{color:var(--mute)}\n"
    "svg{display:block;width:100%;height:auto;margin:8px 0}\n"
    "svg text{font:12px system-ui,-apple-system,\"Segoe UI\",Roboto,Arial,"
    "sans-serif;fill:var(--ink)}\n"
    "svg .tick,svg .unit{fill:var(--mute);font-size:11px}\n"
    "svg .grid{stroke:var(--line)}\n"
    "svg .zero{stroke:#9aa1ad}\n"
    "svg .value{fill:var(--mute);font-size:11px}\n"
    ".legend{display:flex;flex-wrap:wrap;gap:4px 18px;margin:8px 0 0;"
    "padding:0;list-style:none;font-size:12px;color:var(--mute)}\n"
    ".sw{display:inline-block;width:11px;height:11px;border-radius:2px;"
    "margin-right:6px;vertical-align:-1px}\n"
    ".sw.credit{background-image:repeating-linear-gradient(45deg,"
    "rgba(255,255,255,.75) 0 2px,transparent 2px 5px)}\n"
    ".grid-books{display:grid;grid-template-columns:repeat(auto-fill,"
    "minmax(320px,1fr));gap:14px}\n"
    ".grid-books.wide{grid-template-columns:repeat(auto-fill,"
    "minmax(470px,1fr))}\n"
    ".grid-books figure{margin:0;border:1px solid var(--line);"
    "border-radius:8px;padding:10px 12px}\n"
    "figcaption{font-weight:600}\n"
    "figcaption .meta{display:inline;margin-left:6px}\n"
    "details{margin-top:6px}\n"
    "summary{cursor:pointer;color:var(--accent);font-size:12px}\n"
    "footer{color:var(--mute);font-size:12px;margin-top:8px}\n"
    "@media (max-width:760px){.cards{grid-template-columns:1fr}}\n"
    "@media print{body{background:#fff}main{padding:0}"
    "section,.card{break-inside:avoid;border-color:#ccc}}\n";

static void
head(FILE *f, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
          "<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, "
          "initial-scale=1\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" "
          "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
          "<meta name=\"generator\" content=\"costsim\">\n<title>",
          f);
    meter_html_fputs(f, title);
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n",
            style);
}

/* The run: what was simulated, how, and how many books priced it. */
static void
settings(FILE *f, const struct cs_run *run, const char *name, size_t priced,
         size_t full)
{
    const struct sim_mc_opts *o = run->opts;
    fputs("<header>\n<p class=\"kicker\">costsim report</p>\n<h1>A month "
          "of <span class=\"name\">",
          f);
    meter_html_fputs(f, name);
    fprintf(f,
            "</span>, priced on %zu book%s</h1>\n<p class=\"lead\">%zu "
            "simulated month%s (%04d-%02d) through the engine that bills; "
            "%zu of the books can price this workload.</p>\n</header>\n",
            run->nbooks, run->nbooks == 1 ? "" : "s", run->res->trials,
            run->res->trials == 1 ? "" : "s", o->year, o->month, priced);
    fputs("<section aria-labelledby=\"run-h\">\n<h2 id=\"run-h\">The run</h2>\n"
          "<dl class=\"settings\">\n<div><dt>Profile</dt><dd>",
          f);
    meter_html_fputs(f, run->profile->name[0] ? run->profile->name : "-");
    fputs("</dd></div>\n<div><dt>Profile file</dt><dd>", f);
    meter_html_fputs(f, run->profile_path);
    fprintf(f,
            "</dd></div>\n<div><dt>Simulated month</dt><dd>%04d-%02d%s</dd>"
            "</div>\n<div><dt>Seed</dt><dd>%llu</dd></div>\n"
            "<div><dt>Trials drawn</dt><dd>%zu (cap %zu)</dd></div>\n"
            "<div><dt>Precision asked</dt><dd>&plusmn;%.4g%% of the mean"
            "</dd></div>\n<div><dt>Books</dt><dd>%zu priced, %zu as lower "
            "bounds (a price unknown), %zu not</dd>"
            "</div>\n</dl>\n</section>\n",
            o->year, o->month,
            o->first_month ? " (the account&rsquo;s first: grants received)"
                           : "",
            (unsigned long long)o->seed, run->res->trials, o->max_trials,
            o->precision * 100, full, priced - full, run->nbooks - priced);
}

/* Three figures first: the cheapest book, the most expensive, and the
 * spread between them. */
static void
cards(FILE *f, const struct cs_run *run, const size_t *o, size_t priced)
{
    if (priced == 0)
        return;
    const struct cs_book *lo = &run->books[o[0]],
                         *hi = &run->books[o[priced - 1]];
    const struct sim_book_stats *blo = &run->res->books[o[0]],
                                *bhi = &run->res->books[o[priced - 1]];
    char a[64], b[64];
    fputs("<div class=\"cards\">\n<div class=\"card\"><div class=\"what\">"
          "Cheapest</div><div class=\"big\">",
          f);
    meter_html_fputs(f, pricing_book_currency(lo->book));
    fprintf(f, " %s</div>", money(sim_book_mean(blo), minor_unit(lo), a, 64));
    meter_html_fputs(f, pricing_book_id(lo->book));
    fputs(", mean a month</div>\n<div class=\"card\"><div class=\"what\">"
          "Most expensive</div><div class=\"big\">",
          f);
    meter_html_fputs(f, pricing_book_currency(hi->book));
    fprintf(f, " %s</div>", money(sim_book_mean(bhi), minor_unit(hi), b, 64));
    meter_html_fputs(f, pricing_book_id(hi->book));
    fputs(", mean a month</div>\n<div class=\"card\"><div class=\"what\">"
          "Spread</div><div class=\"big\">",
          f);
    double l = dbl(sim_book_mean(blo)), h = dbl(sim_book_mean(bhi));
    if (l > 0)
        fprintf(f, "&times;%.1f", h / l);
    else
        fputs("&ndash;", f);
    fputs("</div>the most expensive over the cheapest</div>\n</div>\n", f);
}

/* The one currency of every book, or NULL if they have several. */
static const char *
one_currency(const struct cs_run *run)
{
    const char *cur = NULL;
    for (size_t i = 0; i < run->nbooks; i++) {
        const char *c = pricing_book_currency(run->books[i].book);
        if (cur && strcmp(cur, c) != 0)
            return NULL;
        cur = c;
    }
    return cur;
}

/* What b's plan made of the months (limits.c): the add-ons bought and
 * every limit broken, as the table says them; a flagged book keeps its
 * price and its place. */
static void
plan_html(FILE *f, const struct cs_book *bk, const struct sim_book_stats *b)
{
    const struct pricing_limits *l = pricing_book_limits(bk->book);
    if (b->failed || b->trials == 0)
        return;
    int mu = minor_unit(bk);
    for (size_t k = 0; k < l->naddons; k++) {
        char fee[64];
        if (!b->on_option[1 + k])
            continue;
        fputs("<span class=\"meta\">add-on: ", f);
        meter_html_fputs(f, l->addons[k].name);
        fprintf(f, " (%s a month, %u at once) in %llu of %llu months</span>",
                money(l->addons[k].monthly_fee, mu, fee, sizeof(fee)),
                l->addons[k].max_concurrency,
                (unsigned long long)b->on_option[1 + k],
                (unsigned long long)b->months);
    }
    for (int lim = 0; lim < SIM_NLIMITS; lim++) {
        char msg[256];
        if (!b->broken[lim])
            continue;
        sim_limit_message(bk->book, (enum sim_limit)lim, b->worst[lim], msg,
                          sizeof(msg));
        fputs("<span class=\"meta warn\">limit broken: ", f);
        meter_html_fputs(f, msg);
        fprintf(f, " (%llu of %llu months)</span>",
                (unsigned long long)b->broken[lim],
                (unsigned long long)sim_book_months_checked(
                    b, (enum sim_limit)lim));
    }
}

/* A book's name, what it is called, where its prices come from, and
 * what its plan made of the months. */
static void
book_cell(FILE *f, const struct cs_book *bk, const struct sim_book_stats *b,
          bool best)
{
    fputs("<th scope=\"row\"><span class=\"id\">", f);
    meter_html_fputs(f, pricing_book_id(bk->book));
    fputs("</span>", f);
    if (bk->name[0]) {
        fputs(" <span class=\"muted\">", f);
        meter_html_fputs(f, bk->name);
        fputs("</span>", f);
    }
    if (best)
        fputs(" <span class=\"badge\">cheapest</span>", f);
    fputs("<span class=\"meta\">source: ", f);
    source_html(f, bk->source[0] ? bk->source : "-");
    fputs("</span><span class=\"meta\">as of ", f);
    meter_html_fputs(f, bk->as_of[0] ? bk->as_of : "-");
    fputs("</span>", f);
    if (!b->failed && sim_book_lower_bound(b)) {
        char text[512];
        fputs("<span class=\"meta warn\">lower bound: ", f);
        meter_html_fputs(f, cs_lower_bound_text(bk, b, text, sizeof(text)));
        fputs("; every figure of this row is of the known part</span>", f);
    }
    plan_html(f, bk, b);
    fputs("</th>", f);
}

/* The comparison as numbers: the table of the terminal output, and
 * what each book costs over the cheapest (exact, in one currency). */
static void
summary(FILE *f, const struct cs_run *run, const size_t *o, size_t full)
{
    const char *cur = one_currency(run);
    fputs("<section aria-labelledby=\"sum-h\">\n<h2 id=\"sum-h\">"
          "Comparison</h2>\n<p class=\"intro\">Cheapest mean first. Under "
          "each book, where its prices come from and when they were "
          "read: a comparison is only as good as its dates. Under each "
          "percentile, its 95% interval (order statistics).</p>\n"
          "<div class=\"scroll\"><table class=\"summary\">\n<caption>Monthly "
          "cost per book",
          f);
    if (cur) {
        fputs(", ", f);
        meter_html_fputs(f, cur);
    }
    fputs("</caption>\n<thead><tr><th scope=\"col\" class=\"text\">Book"
          "</th><th scope=\"col\">Mean / month</th><th scope=\"col\">95% "
          "&plusmn;</th><th scope=\"col\">p5</th><th scope=\"col\">p50</th>"
          "<th scope=\"col\">p95</th><th scope=\"col\">Per 1,000<br>"
          "sessions</th><th scope=\"col\">Over the<br>cheapest</th>"
          "<th scope=\"col\">Trials</th></tr></thead>\n<tbody>\n",
          f);
    const struct cs_book *first = full ? &run->books[o[0]] : NULL;
    struct pricing_dec cheapest =
        full ? sim_book_mean(&run->res->books[o[0]]) : (struct pricing_dec){0};
    for (size_t k = 0; k < run->nbooks; k++) {
        const struct cs_book *bk = &run->books[o[k]];
        const struct sim_book_stats *b = &run->res->books[o[k]];
        const char *bcur = pricing_book_currency(bk->book);
        int mu = minor_unit(bk);
        bool lower = !b->failed && sim_book_lower_bound(b);
        if (lower && k == full)
            fputs("<tr class=\"group\"><th scope=\"rowgroup\" colspan=\"9\" "
                  "class=\"text\">Lower bounds: a price these books need is "
                  "unknown (null); every figure is of the known part, ranked "
                  "apart</th></tr>\n",
                  f);
        fputs("<tr data-book=\"", f);
        meter_html_fputs(f, pricing_book_id(bk->book));
        fputs("\">", f);
        book_cell(f, bk, b, k == 0 && full);
        if (b->failed) {
            fputs("<td colspan=\"8\" class=\"text warn\">cannot price this "
                  "workload: ",
                  f);
            meter_html_fputs(f, b->reason);
            fputs("</td></tr>\n", f);
            continue;
        }
        char m[64], p5[64], p50[64], p95[64], pk[64], d[64];
        fputs("<td class=\"mean\">", f);
        if (!cur) {
            meter_html_fputs(f, bcur);
            fputc(' ', f);
        }
        char c5[128], c50[128], c95[128];
        fprintf(f,
                "%s%s</td><td>%.*f</td><td>%s<span class=\"meta\">%s</span>"
                "</td><td>%s<span class=\"meta\">%s</span></td><td>%s"
                "<span class=\"meta\">%s</span></td><td>%s</td>",
                lower ? "&ge;&nbsp;" : "", money(sim_book_mean(b), mu, m, 64),
                mu, b->half, money(sim_book_quantile(b, 0.05), mu, p5, 64),
                cs_quantile_ci_text(bk, b, 0.05, c5, sizeof(c5)),
                money(sim_book_quantile(b, 0.5), mu, p50, 64),
                cs_quantile_ci_text(bk, b, 0.5, c50, sizeof(c50)),
                money(sim_book_quantile(b, 0.95), mu, p95, 64),
                cs_quantile_ci_text(bk, b, 0.95, c95, sizeof(c95)),
                b->sessions ? money(cs_per_thousand(b), mu, pk, 64) : "-");
        struct pricing_dec diff;
        if (k == 0 && !lower)
            fputs("<td>&ndash;</td>", f);
        else if (lower || !first)
            fputs("<td>n/a</td>", f);
        else if (strcmp(bcur, pricing_book_currency(first->book)) != 0 ||
                 pricing_dec_sub(sim_book_mean(b), cheapest, &diff) !=
                     PRICING_OK)
            fputs("<td>n/a</td>", f);
        else
            fprintf(f, "<td>+%s</td>", money(diff, mu, d, 64));
        fprintf(f, "<td>%zu%s</td></tr>\n", b->trials,
                b->converged ? ""
                             : "<span class=\"meta warn\">not converged"
                               "</span>");
    }
    fputs("</tbody>\n</table></div>\n</section>\n", f);
}

static void
tier_row(const char *provider, const char *text, void *arg)
{
    FILE *f = arg;
    fputs("<tr><th scope=\"row\" class=\"text\">", f);
    meter_html_fputs(f, provider);
    fputs("</th><td class=\"text\">", f);
    meter_html_fputs(f, text);
    fputs("</td></tr>\n", f);
}

/* The tier chosen per provider, as the table says it. */
static int
tiers(FILE *f, const struct cs_run *run)
{
    fputs("<section aria-labelledby=\"tier-h\">\n<h2 id=\"tier-h\">The "
          "tier of each provider</h2>\n<p class=\"intro\">Of a provider's "
          "books, the cheapest whose plan the workload fits in every "
          "month (its add-ons included), or none.</p>\n<div "
          "class=\"scroll\"><table class=\"summary\">\n<thead><tr><th "
          "scope=\"col\" class=\"text\">Provider</th><th scope=\"col\" "
          "class=\"text\">Tier chosen</th></tr></thead>\n<tbody>\n",
          f);
    int rc = cs_tiers_each(run, tier_row, f);
    fputs("</tbody>\n</table></div>\n</section>\n", f);
    return rc;
}

/* The books of currency cur among the first `priced` of o, in o's order,
 * into sel; their number. */
static size_t
of_currency(const struct cs_run *run, const size_t *o, size_t priced,
            const char *cur, size_t *sel)
{
    size_t n = 0;
    for (size_t k = 0; k < priced; k++)
        if (strcmp(pricing_book_currency(run->books[o[k]].book), cur) == 0)
            sel[n++] = o[k];
    return n;
}

/* Draws one chart per currency of the first `priced` books of o, in the
 * order each currency first appears, with draw(f, run, sel, n, cur, k):
 * amounts in two currencies share no axis. */
static void
per_currency(FILE *f, const struct cs_run *run, const size_t *o, size_t priced,
             size_t *sel,
             void (*draw)(FILE *f, const struct cs_run *run, const size_t *sel,
                          size_t n, const char *cur, int chart))
{
    int chart = 0;
    for (size_t k = 0; k < priced; k++) {
        const char *cur = pricing_book_currency(run->books[o[k]].book);
        bool seen = false;
        for (size_t j = 0; j < k && !seen; j++)
            seen = !strcmp(cur, pricing_book_currency(run->books[o[j]].book));
        if (!seen)
            draw(f, run, sel, of_currency(run, o, priced, cur, sel), cur,
                 chart++);
    }
}

/* Each book's monthly total over the trials on one axis: whiskers p5 to
 * p95, the box the quartiles, the median a line, the mean a dot. */
static void
box_plot(FILE *f, const struct cs_run *run, const size_t *sel, size_t n,
         const char *cur, int chart)
{
    double lo = 0, hi = 0;
    for (size_t k = 0; k < n; k++) {
        const struct sim_book_stats *b = &run->res->books[sel[k]];
        lo = fmin(lo, dbl(sim_book_quantile(b, 0.05)));
        hi = fmax(hi, dbl(sim_book_quantile(b, 0.95)));
        hi = fmax(hi, dbl(sim_book_mean(b)));
    }
    struct axis a;
    axis_init(&a, lo, hi, true, PLOT_X0, PLOT_X1);
    int top = 8, h = top + (int)n * ROW_H + 44;
    char id[32], unit[64];
    snprintf(id, sizeof(id), "dist%d", chart);
    snprintf(unit, sizeof(unit), "%s a month", cur);
    svg_open(f, "chart dist", id, W, h,
             "Monthly total over the trials, per book",
             "For each book that can price the workload: the 5th to 95th "
             "percentile as whiskers, the quartiles as a box, the median as "
             "a line and the mean as a dot. The table above has the "
             "figures.");
    axis_draw(f, &a, top, top + (double)n * ROW_H, unit);
    for (size_t k = 0; k < n; k++) {
        const struct cs_book *bk = &run->books[sel[k]];
        const struct sim_book_stats *b = &run->res->books[sel[k]];
        int mu = minor_unit(bk);
        double y = top + (double)k * ROW_H + ROW_H / 2.0;
        double p5 = axis_x(&a, dbl(sim_book_quantile(b, 0.05))),
               q1 = axis_x(&a, dbl(sim_book_quantile(b, 0.25))),
               p50 = axis_x(&a, dbl(sim_book_quantile(b, 0.5))),
               q3 = axis_x(&a, dbl(sim_book_quantile(b, 0.75))),
               p95 = axis_x(&a, dbl(sim_book_quantile(b, 0.95))),
               mean = axis_x(&a, dbl(sim_book_mean(b)));
        /* A book whose trials all cost the same still gets a visible
         * box, 2 units wide, around that cost. */
        if (q3 - q1 < 2) {
            q1 = (q1 + q3) / 2 - 1;
            q3 = q1 + 2;
        }
        char m[64], s5[64], s50[64], s95[64];
        row_label(f, bk, y);
        fputs("<g class=\"box\" data-book=\"", f);
        meter_html_fputs(f, pricing_book_id(bk->book));
        fputs("\"><title>", f);
        meter_html_fputs(f, pricing_book_id(bk->book));
        fprintf(f, ": mean %s, p5 %s, median %s, p95 %s %s</title>\n",
                money(sim_book_mean(b), mu, m, 64),
                money(sim_book_quantile(b, 0.05), mu, s5, 64),
                money(sim_book_quantile(b, 0.5), mu, s50, 64),
                money(sim_book_quantile(b, 0.95), mu, s95, 64), cur);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#7d8696\"/>\n"
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#7d8696\"/>\n"
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#7d8696\"/>\n",
                p5, y, p95, y, p5, y - 5, p5, y + 5, p95, y - 5, p95, y + 5);
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"14\" "
                "rx=\"2\" fill=\"#c9d8f0\" stroke=\"#4e79a7\"/>\n"
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#1f3f73\" stroke-width=\"2\"/>\n"
                "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"#e15759\"/>"
                "\n</g>\n",
                q1, y - 7, q3 - q1, p50, y - 7, p50, y + 7, mean, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"value\">%s%s</text>\n",
                PLOT_X1 + 10, y + 4, sim_book_lower_bound(b) ? "&ge; " : "", m);
    }
    fputs("</svg>\n", f);
}

/* One book's trials as a histogram of 20 bins between its cheapest and
 * its dearest month, the mean marked. */
static void
histogram(FILE *f, const struct cs_book *bk, const struct sim_book_stats *b,
          int chart)
{
    enum {
        BINS = 20,
        HW = 320,
        HH = 130,
        X0 = 8,
        X1 = HW - 8,
        TOP = 8,
        BOT = HH - 30
    };
    size_t count[BINS] = {0}, most = 1;
    double lo = dbl(b->sorted[0]), hi = dbl(b->sorted[b->trials - 1]);
    double width = hi > lo ? (hi - lo) / BINS : 1;
    for (size_t i = 0; i < b->trials; i++) {
        size_t k = (size_t)((dbl(b->sorted[i]) - lo) / width);
        k = k >= BINS ? BINS - 1 : k;
        if (++count[k] > most)
            most = count[k];
    }
    int mu = minor_unit(bk);
    const char *cur = pricing_book_currency(bk->book);
    char id[32], title[256], lo_s[64], hi_s[64];
    snprintf(id, sizeof(id), "hist%d", chart);
    snprintf(title, sizeof(title), "%s: the monthly totals of %zu trials",
             pricing_book_id(bk->book), b->trials);
    svg_open(f, "chart hist", id, HW, HH, title,
             "How many trials fell in each of 20 equal ranges between the "
             "cheapest and the dearest simulated month; the red line is the "
             "mean.");
    fputs("<g data-book=\"", f);
    meter_html_fputs(f, pricing_book_id(bk->book));
    fputs("\">\n", f);
    double bw = (double)(X1 - X0) / BINS;
    for (int k = 0; k < BINS; k++) {
        double bh = (double)(BOT - TOP) * (double)count[k] / (double)most;
        if (count[k] == 0)
            continue;
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"#4e79a7\"><title>%.*f",
                X0 + k * bw + 0.5, BOT - bh, bw - 1, bh, mu, lo + k * width);
        if (hi > lo)
            fprintf(f, " to %.*f", mu, lo + (k + 1) * width);
        fprintf(f, " %s: %zu trial%s</title></rect>\n", cur, count[k],
                count[k] == 1 ? "" : "s");
    }
    fputs("</g>\n", f);
    double mx = hi > lo
                    ? X0 + (dbl(sim_book_mean(b)) - lo) / (hi - lo) * (X1 - X0)
                    : X0 + bw / 2;
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
            "stroke=\"#e15759\" stroke-width=\"1.5\"/>\n"
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"zero\"/>\n"
            "<text x=\"%d\" y=\"%d\" class=\"tick\">%s</text>\n"
            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"tick\">%s"
            "</text>\n",
            mx, TOP, mx, BOT, X0, BOT, X1, BOT, X0, BOT + 16,
            money(b->sorted[0], mu, lo_s, 64), X1, BOT + 16,
            money(b->sorted[b->trials - 1], mu, hi_s, 64));
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" class=\"unit\">"
            "%s a month; tallest bar %zu trial%s</text>\n</svg>\n",
            HW / 2, HH - 2, cur, most, most == 1 ? "" : "s");
}

static void
distributions(FILE *f, const struct cs_run *run, const size_t *o, size_t priced,
              size_t *sel)
{
    fputs("<section aria-labelledby=\"dist-h\">\n<h2 id=\"dist-h\">"
          "Monthly cost over the trials</h2>\n<p class=\"intro\">Each "
          "simulated month is one trial; how far the months spread says "
          "how much a budget should allow.</p>\n"
          "<ul class=\"legend\"><li><span class=\"sw\" style=\"background:"
          "#c9d8f0;border:1px solid #4e79a7\"></span>quartiles (p25 to p75)"
          "</li><li>whiskers: p5 to p95</li><li><span class=\"sw\" "
          "style=\"background:#1f3f73;width:3px\"></span>median</li><li>"
          "<span class=\"sw\" style=\"background:#e15759;border-radius:50%"
          "\"></span>mean (its value at the right)</li></ul>\n",
          f);
    per_currency(f, run, o, priced, sel, box_plot);
    fputs("<h3>Per book</h3>\n<div class=\"grid-books\">\n", f);
    for (size_t k = 0; k < priced; k++) {
        const struct cs_book *bk = &run->books[o[k]];
        if (run->res->books[o[k]].trials == 0)
            continue;
        fputs("<figure>\n<figcaption>", f);
        meter_html_fputs(f, pricing_book_id(bk->book));
        fputs("</figcaption>\n", f);
        histogram(f, bk, &run->res->books[o[k]], (int)k);
        fputs("</figure>\n", f);
    }
    fputs("</div>\n</section>\n", f);
}

/* The kinds any of the books has a line of. */
static void
kinds_used(const struct cs_run *run, const size_t *o, size_t priced,
           bool used[SIM_NKINDS])
{
    for (int j = 0; j < SIM_NKINDS; j++) {
        used[j] = false;
        for (size_t k = 0; k < priced && !used[j]; k++)
            used[j] = run->res->books[o[k]].kind_sum[j].v != 0;
    }
}

/* Each book's mean month split by line kind: charges stacked right of
 * zero, credits (negative lines) left of it, hatched; the black mark is
 * the net total. */
static void
stacked(FILE *f, const struct cs_run *run, const size_t *sel, size_t n,
        const char *cur, int chart)
{
    double lo = 0, hi = 0;
    for (size_t k = 0; k < n; k++) {
        const struct sim_book_stats *b = &run->res->books[sel[k]];
        double pos = 0, neg = 0;
        for (int j = 0; j < SIM_NKINDS; j++) {
            double v = dbl(sim_dec_div(b->kind_sum[j], b->trials));
            if (v > 0)
                pos += v;
            else
                neg += v;
        }
        lo = fmin(lo, neg);
        hi = fmax(hi, pos);
    }
    struct axis a;
    axis_init(&a, lo, hi, true, PLOT_X0, PLOT_X1);
    int top = 8, h = top + (int)n * ROW_H + 44;
    char id[32], unit[64];
    snprintf(id, sizeof(id), "stack%d", chart);
    snprintf(unit, sizeof(unit), "%s a month (mean)", cur);
    svg_open(f, "chart stack", id, W, h,
             "Mean monthly cost per book by line kind",
             "For each book, its mean monthly lines stacked by kind: charges "
             "to the right of zero, credits to the left; a black mark at the "
             "net total. The table below has the figures.");
    fprintf(f,
            "<defs><pattern id=\"hatch%d\" width=\"5\" height=\"5\" "
            "patternUnits=\"userSpaceOnUse\" "
            "patternTransform=\"rotate(45)\"><rect width=\"2\" height=\"5\" "
            "fill=\"#fff\" fill-opacity=\".7\"/></pattern></defs>\n",
            chart);
    axis_draw(f, &a, top, top + (double)n * ROW_H, unit);
    for (size_t k = 0; k < n; k++) {
        const struct cs_book *bk = &run->books[sel[k]];
        const struct sim_book_stats *b = &run->res->books[sel[k]];
        int mu = minor_unit(bk);
        double y = top + (double)k * ROW_H + ROW_H / 2.0;
        double pos = 0, neg = 0;
        row_label(f, bk, y);
        fputs("<g class=\"stack\" data-book=\"", f);
        meter_html_fputs(f, pricing_book_id(bk->book));
        fputs("\">\n", f);
        for (int j = 0; j < SIM_NKINDS; j++) {
            struct pricing_dec d = sim_dec_div(b->kind_sum[j], b->trials);
            double v = dbl(d);
            if (d.v == 0)
                continue;
            double from = v > 0 ? pos : neg + v, to = v > 0 ? pos + v : neg;
            double x0 = axis_x(&a, from), x1 = axis_x(&a, to);
            char amt[64];
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                    "height=\"16\" fill=\"%s\"><title>",
                    x0, y - 8, fmax(x1 - x0, 0.5), kind_colour[j]);
            meter_html_fputs(f, pricing_book_id(bk->book));
            fprintf(f, ", %s: %s %s</title></rect>\n", sim_line_kinds[j],
                    money(d, mu, amt, 64), cur);
            if (v < 0)
                fprintf(f,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                        "height=\"16\" fill=\"url(#hatch%d)\" "
                        "pointer-events=\"none\"/>\n",
                        x0, y - 8, fmax(x1 - x0, 0.5), chart);
            if (v > 0)
                pos += v;
            else
                neg += v;
        }
        /* The net total: never drawn from the lines' doubles' sum but
         * from the exact mean. */
        double net = axis_x(&a, dbl(sim_book_mean(b)));
        char m[64];
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#111\" stroke-width=\"2\"/>\n</g>\n",
                net, y - 11, net, y + 11);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"value\">%s</text>\n",
                PLOT_X1 + 10, y + 4, money(sim_book_mean(b), mu, m, 64));
    }
    fputs("</svg>\n", f);
}

static void
breakdown(FILE *f, const struct cs_run *run, const size_t *o, size_t priced,
          size_t *sel)
{
    bool used[SIM_NKINDS];
    kinds_used(run, o, priced, used);
    fputs("<section aria-labelledby=\"brk-h\">\n<h2 id=\"brk-h\">"
          "Where the money goes</h2>\n<p class=\"intro\">The mean month "
          "of each book by line kind. Credits (included, promotional, "
          "autopause) are negative lines: drawn left of zero, hatched; "
          "the black mark is what is paid.</p>\n<ul class=\"legend\">",
          f);
    for (int j = 0; j < SIM_NKINDS; j++)
        if (used[j])
            fprintf(f,
                    "<li><span class=\"sw%s\" style=\"background-color:%s\">"
                    "</span>%s</li>",
                    strstr(sim_line_kinds[j], "credit") ? " credit" : "",
                    kind_colour[j], sim_line_kinds[j]);
    fputs("</ul>\n", f);
    per_currency(f, run, o, priced, sel, stacked);
    fputs("<div class=\"scroll\"><table>\n<caption>Mean monthly lines by "
          "kind</caption>\n<thead><tr><th scope=\"col\" class=\"text\">"
          "Book</th>",
          f);
    for (int j = 0; j < SIM_NKINDS; j++)
        if (used[j])
            fprintf(f, "<th scope=\"col\">%s</th>", sim_line_kinds[j]);
    fputs("<th scope=\"col\">Total</th></tr></thead>\n<tbody>\n", f);
    for (size_t k = 0; k < priced; k++) {
        const struct cs_book *bk = &run->books[o[k]];
        const struct sim_book_stats *b = &run->res->books[o[k]];
        int mu = minor_unit(bk);
        char m[64];
        fputs("<tr><th scope=\"row\">", f);
        meter_html_fputs(f, pricing_book_id(bk->book));
        fputs("</th>", f);
        for (int j = 0; j < SIM_NKINDS; j++)
            if (used[j])
                fprintf(f, "<td>%s</td>",
                        b->kind_sum[j].v
                            ? money(sim_dec_div(b->kind_sum[j], b->trials), mu,
                                    m, 64)
                            : "&ndash;");
        fprintf(f, "<td><strong>%s</strong></td></tr>\n",
                money(sim_book_mean(b), mu, m, 64));
    }
    fputs("</tbody>\n</table></div>\n</section>\n", f);
}

/* One book's tornado: for each parameter, the mean total with it moved
 * down (upper bar) and up (lower bar), from the base line. */
static void
tornado_chart(FILE *f, const struct cs_book *bk,
              const struct sim_tornado_book *t, double pct, int chart)
{
    enum { TW = 460, TL = 170, TX0 = TL + 8, TX1 = TW - 16, TROW = 26 };
    int mu = minor_unit(bk);
    const char *cur = pricing_book_currency(bk->book);
    double base = dbl(t->base), lo = base, hi = base;
    for (size_t s = 0; s < t->nswings; s++)
        if (!t->swings[s].failed) {
            lo = fmin(lo, fmin(dbl(t->swings[s].low), dbl(t->swings[s].high)));
            hi = fmax(hi, fmax(dbl(t->swings[s].low), dbl(t->swings[s].high)));
        }
    /* The tornado's axis starts where its bars do, not at zero: the
     * swings are what it shows. */
    struct axis a;
    double pad = (hi - lo) * 0.05 + (hi == lo ? fabs(base) * 0.05 + 1 : 0);
    axis_init(&a, lo - pad, hi + pad, false, TX0, TX1);
    int h = 8 + (int)t->nswings * TROW + 44;
    char id[32], title[256], unit[96];
    snprintf(id, sizeof(id), "torn%d", chart);
    snprintf(title, sizeof(title),
             "%s: the mean monthly total with each parameter moved by "
             "-/+%.4g%%",
             pricing_book_id(bk->book), pct);
    snprintf(unit, sizeof(unit),
             "%s a month; base line at the profile as given", cur);
    svg_open(f, "chart tornado", id, TW, h, title,
             "One row per profile parameter, largest swing first: the blue "
             "bar runs from the base to the total with the parameter moved "
             "down, the red bar to the total with it moved up.");
    fputs("<g class=\"axis\" aria-hidden=\"true\">\n", f);
    for (double v = axis_first(&a); v <= a.hi + a.step / 1e6; v += a.step) {
        double x = axis_x(&a, v);
        char tk[64];
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"8\" x2=\"%.1f\" y2=\"%d\" "
                "class=\"grid\"/>\n<text x=\"%.1f\" y=\"%d\" "
                "text-anchor=\"middle\" class=\"tick\">%s</text>\n",
                x, x, 8 + (int)t->nswings * TROW, x,
                8 + (int)t->nswings * TROW + 16, tick_text(&a, v, tk, 64));
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" class=\"unit\">",
            (TX0 + TX1) / 2, h - 6);
    meter_html_fputs(f, unit);
    fputs("</text>\n</g>\n<g data-book=\"", f);
    meter_html_fputs(f, pricing_book_id(bk->book));
    fputs("\">\n", f);
    double bx = axis_x(&a, base);
    for (size_t s = 0; s < t->nswings; s++) {
        const struct sim_swing *sw = &t->swings[s];
        double y = 8 + (double)s * TROW;
        fprintf(f,
                "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" "
                "class=\"label\">",
                TL, y + TROW / 2.0 + 4);
        meter_html_fputs(f, sw->param);
        fputs("</text>\n", f);
        if (sw->failed) {
            fprintf(f,
                    "<text x=\"%.1f\" y=\"%.1f\" class=\"value\">cannot "
                    "price one side</text>\n",
                    bx + 6, y + TROW / 2.0 + 4);
            continue;
        }
        const struct pricing_dec side[2] = {sw->low, sw->high};
        for (int k = 0; k < 2; k++) {
            double x = axis_x(&a, dbl(side[k]));
            double x0 = fmin(x, bx), w = fmax(fabs(x - bx), 1);
            char v[64];
            fprintf(f,
                    "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                    "height=\"10\" fill=\"%s\"><title>",
                    k ? "high" : "low", x0, y + 3 + k * 10, w,
                    k ? HIGH_COLOUR : LOW_COLOUR);
            meter_html_fputs(f, sw->param);
            fprintf(f, " %s%.4g%%: %s %s</title></rect>\n", k ? "+" : "-", pct,
                    money(side[k], mu, v, 64), cur);
        }
    }
    fprintf(f,
            "</g>\n<line x1=\"%.1f\" y1=\"4\" x2=\"%.1f\" y2=\"%d\" "
            "stroke=\"#111\" stroke-dasharray=\"3 2\"/>\n</svg>\n",
            bx, bx, 12 + (int)t->nswings * TROW);
}

static void
tornado(FILE *f, const struct cs_run *run, const size_t *o)
{
    const struct sim_tornado *t = run->tornado;
    fprintf(f,
            "<section aria-labelledby=\"torn-h\">\n<h2 id=\"torn-h\">"
            "Sensitivity: each parameter moved by &plusmn;%.4g%%</h2>\n"
            "<p class=\"intro\">Which guesses in the profile matter: the "
            "mean monthly total of each book with one parameter moved at a "
            "time, largest swing first.</p>\n<ul class=\"legend\"><li>"
            "<span class=\"sw\" style=\"background:%s\"></span>parameter "
            "&minus;%.4g%%</li><li><span class=\"sw\" style=\"background:"
            "%s\"></span>parameter +%.4g%%</li><li>dashed: the profile as "
            "given</li></ul>\n<div class=\"grid-books wide\">\n",
            t->pct, LOW_COLOUR, t->pct, HIGH_COLOUR, t->pct);
    for (size_t k = 0; k < run->nbooks; k++) {
        size_t i = o[k];
        if (i >= t->nbooks || t->books[i].nswings == 0)
            continue;
        const struct cs_book *bk = &run->books[i];
        const struct sim_tornado_book *tb = &t->books[i];
        int mu = minor_unit(bk);
        char base[64];
        fputs("<figure>\n<figcaption>", f);
        meter_html_fputs(f, pricing_book_id(bk->book));
        fputs("<span class=\"meta\">base ", f);
        meter_html_fputs(f, pricing_book_currency(bk->book));
        fprintf(f, " %s</span></figcaption>\n", money(tb->base, mu, base, 64));
        tornado_chart(f, bk, tb, t->pct, (int)i);
        fputs("<details><summary>the figures</summary>\n<table>\n<thead><tr>"
              "<th scope=\"col\" class=\"text\">Parameter</th>",
              f);
        fprintf(f,
                "<th scope=\"col\">&minus;%.4g%%</th><th scope=\"col\">"
                "+%.4g%%</th><th scope=\"col\">Swing</th></tr></thead>\n"
                "<tbody>\n",
                t->pct, t->pct);
        for (size_t s = 0; s < tb->nswings; s++) {
            const struct sim_swing *sw = &tb->swings[s];
            char l[64], h[64], d[64];
            struct pricing_dec diff;
            fputs("<tr><th scope=\"row\">", f);
            meter_html_fputs(f, sw->param);
            fputs("</th>", f);
            if (sw->failed ||
                pricing_dec_sub(sw->high, sw->low, &diff) != PRICING_OK) {
                fputs("<td colspan=\"3\" class=\"text warn\">cannot price one "
                      "side</td></tr>\n",
                      f);
                continue;
            }
            if (diff.v < 0)
                diff.v = -diff.v;
            fprintf(f, "<td>%s</td><td>%s</td><td>%s</td></tr>\n",
                    money(sw->low, mu, l, 64), money(sw->high, mu, h, 64),
                    money(diff, mu, d, 64));
        }
        fputs("</tbody>\n</table>\n</details>\n</figure>\n", f);
    }
    fputs("</div>\n</section>\n", f);
}

int
cs_print_html(FILE *f, const struct cs_run *run)
{
    size_t *o = cs_order(run);
    size_t *sel = malloc((run->nbooks ? run->nbooks : 1) * sizeof(*sel));
    int rc = -1;
    if (!o || !sel)
        goto out;
    size_t priced = 0, full = 0;
    while (priced < run->nbooks && !run->res->books[o[priced]].failed)
        priced++;
    /* Priced whole first (cs_order): the cheapest and dearest of them. */
    while (full < priced && !sim_book_lower_bound(&run->res->books[o[full]]))
        full++;
    const char *name =
        run->profile->name[0] ? run->profile->name : run->profile_path;
    char title[256];
    snprintf(title, sizeof(title), "costsim: what %s costs a month", name);
    head(f, title);
    settings(f, run, name, priced, full);
    cards(f, run, o, full);
    summary(f, run, o, full);
    if (tiers(f, run) < 0)
        goto out;
    if (priced) {
        distributions(f, run, o, priced, sel);
        breakdown(f, run, o, priced, sel);
    }
    if (run->tornado)
        tornado(f, run, o);
    fputs("<footer>\n<p><strong>What is exact.</strong> ", f);
    meter_html_fputs(f, cs_stats_note(run->opts));
    fputs(". The tables print those exact figures; the charts place them "
          "on the page as floating point, which only draws.</p>\n"
          "<p>Made by costsim, which prices each simulated month through "
          "the same engine that bills (docs/simulator.md).</p>\n"
          "</footer>\n</main>\n</body>\n</html>\n",
          f);
    rc = 0;
out:
    free(o);
    free(sel);
    return rc;
}
