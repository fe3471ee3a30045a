/*
 * view.c - how the dashboard pages show a report: tables (with their
 * CSV, the same rows and columns) and bar charts drawn as SVG on the
 * server, each with a text alternative and the table beside it, so the
 * numbers are there without a script, a stylesheet or sight.
 *
 * A table is a list of columns over a JSON array of objects (a slice of
 * a report document): the cell of a column is the member of its key,
 * written as the JSON has it, so the page shows the API's very strings.
 */
#include "meterd_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *
meterd_cell(json_t *row, const char *key, char buf[32])
{
    json_t *v = json_object_get(row, key);
    if (json_is_string(v))
        return json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(buf, 32, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return buf;
    }
    if (json_is_true(v))
        return "yes";
    if (json_is_false(v))
        return "no";
    return "";
}

/* The href of a row's cell, when its column links: prefix + value, then
 * the column's query (kept as given: the page built it escaped). */
static void
cell_link(struct meter_buf *out, const struct meterd_col *c, const char *v)
{
    meter_buf_str(out, "<a href=\"");
    meter_buf_html(out, c->link);
    struct meter_buf enc = {0};
    meter_buf_urlencode(&enc, v);
    meter_buf_html(out, enc.failed ? "" : enc.p);
    meter_buf_release(&enc);
    if (c->link_query)
        meter_buf_html(out, c->link_query);
    meter_buf_str(out, "\">");
    meter_buf_html(out, c->text ? c->text : v);
    meter_buf_str(out, "</a>");
}

void
meterd_table(struct meter_buf *out, const struct meterd_table *t, json_t *rows)
{
    meter_buf_str(out,
                  "<div class=\"table-wrap\">\n<table class=\"data\" id=\"");
    meter_buf_html(out, t->id);
    meter_buf_str(out, "\" data-table=\"");
    meter_buf_html(out, t->id);
    meter_buf_str(out, "\">\n<caption>");
    meter_buf_html(out, t->caption);
    meter_buf_str(out, "</caption>\n<thead><tr>");
    for (size_t i = 0; i < t->ncols; i++) {
        const struct meterd_col *c = &t->cols[i];
        meter_buf_str(out, c->num ? "<th scope=\"col\" class=\"num\""
                                  : "<th scope=\"col\"");
        if (c->sort_href) {
            meter_buf_str(
                out, c->sorted ? (c->sorted > 0
                                      ? " aria-sort=\"ascending\"><a href=\""
                                      : " aria-sort=\"descending\"><a href=\"")
                               : "><a href=\"");
            meter_buf_html(out, c->sort_href);
            meter_buf_str(out, "\">");
            meter_buf_html(out, c->label);
            meter_buf_str(out, c->sorted > 0   ? " ▲"
                               : c->sorted < 0 ? " ▼"
                                               : "");
            meter_buf_str(out, "</a></th>");
        } else {
            meter_buf_str(out, ">");
            meter_buf_html(out, c->label);
            meter_buf_str(out, "</th>");
        }
    }
    meter_buf_str(out, "</tr></thead>\n<tbody>\n");
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        meter_buf_str(out, "<tr>");
        for (size_t k = 0; k < t->ncols; k++) {
            const struct meterd_col *c = &t->cols[k];
            char buf[32];
            const char *v = meterd_cell(row, c->key, buf);
            meter_buf_str(out, k == 0 ? "<th scope=\"row\"" : "<td");
            meter_buf_str(out, c->num ? " class=\"num\" data-key=\""
                                      : " data-key=\"");
            meter_buf_html(out, c->key);
            meter_buf_str(out, "\">");
            if (c->link && *v)
                cell_link(out, c, v);
            else
                meter_buf_html(out, v);
            meter_buf_str(out, k == 0 ? "</th>" : "</td>");
        }
        meter_buf_str(out, "</tr>\n");
    }
    if (json_array_size(rows) == 0)
        meter_buf_printf(
            out, "<tr><td colspan=\"%zu\" class=\"empty\">%s</td></tr>\n",
            t->ncols, "Nothing in this range.");
    meter_buf_str(out, "</tbody>\n</table>\n</div>\n");
    if (t->csv_href) {
        meter_buf_str(out, "<p class=\"csv\"><a href=\"");
        meter_buf_html(out, t->csv_href);
        meter_buf_str(out, "\" download>Download this table as CSV</a></p>\n");
    }
}

void
meterd_table_csv(struct meter_buf *out, const struct meterd_table *t,
                 json_t *rows)
{
    for (size_t k = 0; k < t->ncols; k++) {
        if (k)
            meter_buf_str(out, ",");
        meter_buf_csv(out, t->cols[k].label);
    }
    meter_buf_str(out, "\r\n");
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        for (size_t k = 0; k < t->ncols; k++) {
            const struct meterd_col *c = &t->cols[k];
            char buf[32];
            const char *v = meterd_cell(row, c->key, buf);
            if (k)
                meter_buf_str(out, ",");
            if (!c->text || !*v) {
                meter_buf_csv(out, v);
                continue;
            }
            /* A link shown by its text ("PDF"): its address. */
            struct meter_buf url = {0};
            meter_buf_str(&url, c->link);
            meter_buf_urlencode(&url, v);
            meter_buf_str(&url, c->link_query ? c->link_query : "");
            meter_buf_csv(out, url.failed ? "" : url.p);
            meter_buf_release(&url);
        }
        meter_buf_str(out, "\r\n");
    }
}

/* ---- charts ------------------------------------------------------------- */

#define CHART_W 720
#define CHART_H 220
#define PAD_L 64
#define PAD_B 28
#define PAD_T 12

/* A value of the chart as a number for drawing only: geometry, never
 * money (the table beside it carries the exact string). What is not a
 * number as a whole, or is beyond a double, is drawn as 0. */
static double
magnitude(const char *s)
{
    if (!s || !*s)
        return 0;
    char *end;
    double v = strtod(s, &end);
    return *end || !isfinite(v) ? 0 : v;
}

void
meterd_bar_chart(struct meter_buf *out, const char *id, const char *title,
                 const char *unit, json_t *rows, const char *label_key,
                 const char *value_key)
{
    size_t n = json_array_size(rows), i;
    json_t *row;
    double lo = 0, hi = 0;
    json_array_foreach(rows, i, row)
    {
        char buf[32];
        double v = magnitude(meterd_cell(row, value_key, buf));
        if (v > hi)
            hi = v;
        if (v < lo)
            lo = v;
    }
    if (hi == lo)
        hi = lo + 1;
    meter_buf_str(out, "<figure class=\"chart\">\n<svg "
                       "xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" ");
    meter_buf_printf(out,
                     "viewBox=\"0 0 %d %d\" aria-labelledby=\"%s-t %s-d\" "
                     "data-chart=\"%s\" data-points=\"%zu\">\n",
                     CHART_W, CHART_H, id, id, id, n);
    meter_buf_printf(out, "<title id=\"%s-t\">", id);
    meter_buf_html(out, title);
    meter_buf_printf(out, "</title>\n<desc id=\"%s-d\">", id);
    /* The text alternative: the extremes; the table has every value. */
    if (n == 0) {
        meter_buf_str(out, "No data in this range.");
    } else {
        char buf[32], lbuf[32];
        size_t imax = 0;
        double best = -INFINITY;
        json_array_foreach(rows, i, row)
        {
            double v = magnitude(meterd_cell(row, value_key, buf));
            if (v > best) {
                best = v;
                imax = i;
            }
        }
        json_t *top = json_array_get(rows, imax);
        meter_buf_printf(out, "%zu bar%s; the highest, ", n, n == 1 ? "" : "s");
        meter_buf_html(out, meterd_cell(top, value_key, buf));
        if (*unit)
            meter_buf_str(out, " ");
        meter_buf_html(out, unit);
        meter_buf_str(out, ", at ");
        meter_buf_html(out, meterd_cell(top, label_key, lbuf));
        meter_buf_str(out, ". The table below lists every value.");
    }
    meter_buf_str(out, "</desc>\n");
    double plot_w = CHART_W - PAD_L - 8, plot_h = CHART_H - PAD_T - PAD_B;
    double zero = PAD_T + plot_h * hi / (hi - lo);
    /* Axis: the top value, zero, and the bottom one if negative. */
    meter_buf_printf(out,
                     "<g class=\"axis\" aria-hidden=\"true\">"
                     "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>",
                     PAD_L, zero, CHART_W - 8, zero);
    meter_buf_printf(out,
                     "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.6g</text>",
                     PAD_L - 6, PAD_T + 10, hi);
    meter_buf_printf(out,
                     "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">0</text>",
                     PAD_L - 6, zero + 4);
    if (lo < 0)
        meter_buf_printf(
            out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.6g</text>",
            PAD_L - 6, CHART_H - PAD_B, lo);
    meter_buf_str(out, "</g>\n<g class=\"bars\">");
    /* A slot per bar; a bar at most 48 units wide, centred in it. */
    double slot = n ? plot_w / (double)n : plot_w;
    double bw = slot * 0.8 > 48 ? 48 : slot * 0.8;
    json_array_foreach(rows, i, row)
    {
        char buf[32], lbuf[32];
        const char *s = meterd_cell(row, value_key, buf);
        double v = magnitude(s);
        double y = PAD_T + plot_h * (hi - (v > 0 ? v : 0)) / (hi - lo);
        double h = plot_h * fabs(v) / (hi - lo);
        meter_buf_printf(out,
                         "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                         "height=\"%.1f\" class=\"%s\"><title>",
                         PAD_L + slot * (double)i + (slot - bw) / 2, y, bw,
                         h < 0.5 && v != 0 ? 0.5 : h, v < 0 ? "neg" : "pos");
        meter_buf_html(out, meterd_cell(row, label_key, lbuf));
        meter_buf_str(out, ": ");
        meter_buf_html(out, s);
        if (*unit)
            meter_buf_str(out, " ");
        meter_buf_html(out, unit);
        meter_buf_str(out, "</title></rect>");
    }
    meter_buf_str(out, "</g>\n<g class=\"labels\" aria-hidden=\"true\">");
    /* A few labels along the bottom: first, middle, last. */
    size_t marks[3] = {0, n / 2, n ? n - 1 : 0};
    for (int k = 0; k < 3 && n; k++) {
        if (k && marks[k] == marks[k - 1])
            continue;
        char lbuf[32];
        meter_buf_printf(out,
                         "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
                         PAD_L + slot * ((double)marks[k] + 0.5), CHART_H - 8);
        meter_buf_html(
            out, meterd_cell(json_array_get(rows, marks[k]), label_key, lbuf));
        meter_buf_str(out, "</text>");
    }
    meter_buf_str(out, "</g>\n</svg>\n</figure>\n");
}
