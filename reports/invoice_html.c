/*
 * invoice_html.c - an invoice or credit note as one HTML page a person
 * would print: no script, no external resource, styles inline.
 */
#include "report_int.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <nettle/base64.h>
#include <nettle/sha2.h>

/* One "<tr><th>label</th><td>value</td></tr>" of the header, if value. */
static void
field(FILE *out, const char *label, const char *value)
{
    if (!value[0])
        return;
    fprintf(out, "<tr><th>%s</th><td>", label);
    meter_html_fputs(out, value);
    fputs("</td></tr>\n", out);
}

/* The document's one stylesheet, inline so that a saved invoice shows
 * as it printed; a server sends its hash in the Content-Security-Policy
 * (report_invoice_html_style_hash). */
static const char style[] =
    "\n"
    "body{font-family:sans-serif;margin:2em;color:#111}\n"
    "h1{font-size:1.6em;margin:0 0 .2em}\n"
    "table{border-collapse:collapse}\n"
    ".head th{text-align:left;padding:.1em 1em .1em 0;color:#555}\n"
    ".lines{width:100%;margin-top:1.5em}\n"
    ".lines th,.lines td{border-bottom:1px solid #ccc;padding:.3em .5em}\n"
    ".lines th{text-align:left;white-space:nowrap}\n"
    ".lines td+td{white-space:nowrap}\n"
    ".lines .num{text-align:right;font-variant-numeric:tabular-nums}\n"
    ".credit td{color:#064}\n"
    ".total td{font-weight:bold;border-top:2px solid #111}\n"
    ".status{display:inline-block;padding:.1em .5em;border:1px solid;"
    "text-transform:uppercase;font-size:.8em}\n"
    "@media print{body{margin:0}}\n";

void
report_invoice_html_style_hash(char out[REPORT_STYLE_HASH_LEN])
{
    /* CSP's hash source: base64 of the SHA-256 of the <style> text. */
    uint8_t d[SHA256_DIGEST_SIZE];
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    sha256_update(&ctx, sizeof(style) - 1, (const uint8_t *)style);
    sha256_digest(&ctx, sizeof(d), d);
    char b64[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE) + 1];
    base64_encode_raw((char *)b64, sizeof(d), d);
    b64[sizeof(b64) - 1] = '\0';
    snprintf(out, REPORT_STYLE_HASH_LEN, "'sha256-%s'", b64);
}

int
report_invoice_html(FILE *out, const struct report_invoice *inv,
                    struct meter_err *e)
{
    (void)e;
    char title[64], period[16], total[80];
    report_invoice_title(inv, title, sizeof(title));
    snprintf(period, sizeof(period), "%04d-%02d", inv->year, inv->month);
    report_total_text(inv, total, sizeof(total));
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
          "<meta charset=\"utf-8\">\n<title>",
          out);
    meter_html_fputs(out, title);
    fputs("</title>\n<style>", out);
    fputs(style, out);
    fputs("</style>\n</head>\n<body>\n", out);
    fputs("<header>\n<h1>", out);
    meter_html_fputs(out, title);
    fprintf(out, "</h1>\n<span class=\"status\">%s</span>\n</header>\n",
            inv->status);
    fputs("<table class=\"head\">\n", out);
    field(out, "Seller", inv->seller);
    field(out, "Account", inv->account_id);
    field(out, "Account name", inv->account_name);
    field(out, "Number", inv->number);
    field(out, "Period", period);
    field(out, "Issued", inv->finalized_at);
    field(out, "Computed", inv->number[0] ? "" : inv->created_at);
    field(out, "Voids invoice", inv->voids);
    field(out, "Reason", inv->reason);
    field(out, "Voided by credit note", inv->voided_by);
    field(out, "Currency", inv->currency);
    fputs("</table>\n", out);
    fputs("<table class=\"lines\">\n<thead><tr><th>Line</th><th>Period</th>"
          "<th>Price book</th><th class=\"num\">Quantity</th><th>Unit</th>"
          "<th class=\"num\">Unit price</th><th class=\"num\">Amount</th>"
          "</tr></thead>\n<tbody>\n",
          out);
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct report_line *l = &inv->lines[i];
        struct report_cells c;
        report_line_cells(l, &c);
        char lp[16], book[96] = "";
        snprintf(lp, sizeof(lp), "%04d-%02d", l->year, l->month);
        if (l->book[0])
            snprintf(book, sizeof(book), "%s v%d", l->book, l->version);
        fprintf(out, "<tr%s><td>", l->amount.v < 0 ? " class=\"credit\"" : "");
        meter_html_fputs(out, l->description);
        fputs("</td><td>", out);
        meter_html_fputs(out, lp);
        fputs("</td><td>", out);
        meter_html_fputs(out, book);
        fprintf(out, "</td><td class=\"num\">%s</td><td>", c.quantity);
        meter_html_fputs(out, l->has_quantity ? l->unit : "");
        fprintf(out,
                "</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
                "</tr>\n",
                c.unit_price, c.amount);
    }
    fputs("</tbody>\n<tfoot><tr class=\"total\"><td colspan=\"6\">Total</td>"
          "<td class=\"num\">",
          out);
    meter_html_fputs(out, total);
    fputs("</td></tr></tfoot>\n</table>\n", out);
    if (inv->sha256[0])
        fprintf(out, "<p><small>SHA-256 of the document: %s</small></p>\n",
                inv->sha256);
    fputs("</body>\n</html>\n", out);
    return 0;
}
