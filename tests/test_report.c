/*
 * test_report.c - the invoice document without a database: late usage
 * as differences matched by kind, book and version; the total's rounding
 * and floor; the canonical hash (stable, and changed by any content);
 * and every rendering parsed back: JSON with jansson, CSV by its header,
 * HTML escaped, PDF through pdftotext showing number and total.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"
#include "testutil.h"

static struct report_line
line(const char *kind, const char *book, int version, const char *amount,
     const char *qty)
{
    struct report_line l = {.year = 2026, .month = 1, .version = version};
    snprintf(l.kind, sizeof(l.kind), "%s", kind);
    snprintf(l.book, sizeof(l.book), "%s", book);
    snprintf(l.description, sizeof(l.description), "%s line", kind);
    pricing_dec_parse(amount, 12, &l.amount);
    if (qty) {
        l.has_quantity = true;
        pricing_dec_parse(qty, 12, &l.quantity);
        snprintf(l.unit, sizeof(l.unit), "vCPU-second");
        l.has_unit_price = true;
        pricing_dec_parse("0.001", 12, &l.unit_price);
    }
    return l;
}

static const char *
dec(struct pricing_dec d, char *buf)
{
    pricing_dec_format(d, 6, buf, 48);
    return buf;
}

static void
test_late(void)
{
    struct meter_err e = {{0}};
    char b[48];
    struct report_line fresh[] = {line("cpu", "a", 1, "0.500000", "500"),
                                  line("runs", "a", 1, "1.000000", NULL),
                                  line("cpu", "a", 2, "0.100000", "100")};
    struct report_line billed[] = {line("cpu", "a", 1, "0.300000", "300"),
                                   line("runs", "a", 1, "1.000000", NULL),
                                   line("egress", "a", 1, "0.200000", NULL)};
    /* An earlier late line counts as billed for the kind it corrects. */
    struct report_line late = line("late_usage", "a", 1, "0.100000", "100");
    snprintf(late.corrects, sizeof(late.corrects), "cpu");
    struct report_line billed2[4] = {billed[0], billed[1], billed[2], late};
    struct report_invoice inv = {0};
    snprintf(inv.currency, sizeof(inv.currency), "USD");
    CHECK(report_invoice_add_late(&inv, 2026, 1, fresh, 3, billed2, 4, &e) ==
          0);
    /* cpu v1: 0.5 - 0.3 - 0.1; runs: equal, left out; cpu v2: new;
     * egress: billed, gone now. */
    CHECK(inv.nlines == 3);
    if (inv.nlines == 3) {
        CHECK_STR(inv.lines[0].kind, "late_usage");
        CHECK_STR(inv.lines[0].corrects, "cpu");
        CHECK(inv.lines[0].version == 1);
        CHECK_STR(dec(inv.lines[0].amount, b), "0.100000");
        CHECK(inv.lines[0].has_quantity);
        CHECK_STR(dec(inv.lines[0].quantity, b), "100.000000");
        CHECK(inv.lines[0].has_unit_price);
        CHECK(inv.lines[1].version == 2);
        CHECK_STR(dec(inv.lines[1].amount, b), "0.100000");
        CHECK_STR(inv.lines[2].corrects, "egress");
        CHECK_STR(dec(inv.lines[2].amount, b), "-0.200000");
        CHECK(!inv.lines[2].has_quantity);
        CHECK(strstr(inv.lines[0].description, "late usage of 2026-01") !=
              NULL);
    }
    /* The total: the sum to cents, half to even, never below zero. */
    CHECK(report_invoice_total(&inv, &e) == 0);
    CHECK_STR(dec(inv.total, b), "0.000000");
    report_invoice_release(&inv);

    struct report_line up[] = {line("cpu", "a", 1, "0.125000", NULL),
                               line("cpu", "a", 1, "0.010000", NULL)};
    snprintf(inv.currency, sizeof(inv.currency), "USD");
    report_invoice_add_line(&inv, &up[0], &e);
    CHECK(report_invoice_total(&inv, &e) == 0);
    CHECK_STR(dec(inv.total, b), "0.120000"); /* 0.125 to even: 0.12 */
    report_invoice_add_line(&inv, &up[1], &e);
    CHECK(report_invoice_total(&inv, &e) == 0);
    CHECK_STR(dec(inv.total, b), "0.140000"); /* 0.135: 0.14 */
    report_invoice_release(&inv);
}

static struct report_invoice
sample_invoice(void)
{
    struct meter_err e = {{0}};
    struct report_invoice inv = {.id = 42, .year = 2026, .month = 1};
    snprintf(inv.kind, sizeof(inv.kind), "invoice");
    snprintf(inv.status, sizeof(inv.status), "final");
    snprintf(inv.number, sizeof(inv.number), "2026-000007");
    snprintf(inv.account_id, sizeof(inv.account_id), "acme");
    snprintf(inv.account_name, sizeof(inv.account_name), "Acme <&> \"Co\"");
    snprintf(inv.seller, sizeof(inv.seller), "Seller, Inc.");
    snprintf(inv.currency, sizeof(inv.currency), "USD");
    snprintf(inv.finalized_at, sizeof(inv.finalized_at),
             "2026-02-01T00:00:00Z");
    struct report_line a = line("cpu", "e2b", 1, "0.403200", "28800");
    struct report_line b = line("memory", "e2b", 1, "0.064800", "14400");
    snprintf(b.description, sizeof(b.description), "memory, \"allocated\"");
    report_invoice_add_line(&inv, &a, &e);
    report_invoice_add_line(&inv, &b, &e);
    report_invoice_total(&inv, &e);
    return inv;
}

static void
test_hash(void)
{
    struct meter_err e = {{0}};
    struct report_invoice inv = sample_invoice();
    char h1[65], h2[65], h3[65];
    CHECK(report_invoice_hash(&inv, h1, &e) == 0);
    CHECK(strlen(h1) == 64);
    /* What may change after finalization is not hashed. */
    snprintf(inv.status, sizeof(inv.status), "void");
    snprintf(inv.voided_by, sizeof(inv.voided_by), "2026-000009");
    CHECK(report_invoice_hash(&inv, h2, &e) == 0);
    CHECK_STR(h2, h1);
    /* Any content is: one millionth. */
    inv.lines[1].amount.v += PRICING_ONE / 1000000;
    CHECK(report_invoice_hash(&inv, h3, &e) == 0);
    CHECK(strcmp(h3, h1) != 0);
    report_invoice_release(&inv);
}

/* Renders inv as format into a temporary file; its path in path. */
static void
render(const struct report_invoice *inv, const char *format, char *path)
{
    struct meter_err e = {{0}};
    snprintf(path, 64, "/tmp/test_report_%d.%s", (int)getpid(), format);
    FILE *f = fopen(path, "wb");
    CHECK(f && report_invoice_write(f, inv, format, &e) == 0);
    if (f)
        fclose(f);
}

static char *
slurp(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    static char buf[65536];
    size_t n = p ? fread(buf, 1, sizeof(buf) - 1, p) : 0;
    buf[n] = '\0';
    if (p)
        pclose(p);
    return buf;
}

static void
test_renderings(void)
{
    struct report_invoice inv = sample_invoice();
    char path[64];

    render(&inv, "json", path);
    json_error_t jerr;
    json_t *o = json_load_file(path, 0, &jerr);
    CHECK(o != NULL);
    CHECK_STR(json_string_value(json_object_get(o, "number")), "2026-000007");
    CHECK_STR(json_string_value(json_object_get(o, "total")), "0.47");
    json_t *l0 = json_array_get(json_object_get(o, "lines"), 0);
    CHECK_STR(json_string_value(json_object_get(l0, "amount")), "0.403200");
    CHECK_STR(json_string_value(json_object_get(l0, "unit_price")), "0.001");
    CHECK_STR(json_string_value(json_object_get(l0, "price_book")), "e2b");
    json_decref(o);
    unlink(path);

    render(&inv, "csv", path);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "cat %s", path);
    const char *csv = slurp(cmd);
    CHECK(strncmp(csv, "document,account_id,period,line,kind,", 37) == 0);
    CHECK(strstr(csv, "\r\n2026-000007,acme,2026-01,1,cpu,") != NULL);
    /* A field with a quote is quoted, its quotes doubled. */
    CHECK(strstr(csv, ",\"memory, \"\"allocated\"\"\",") != NULL);
    int rows = 0;
    for (const char *p = csv; *p; p++)
        rows += *p == '\n';
    CHECK(rows == 3);
    unlink(path);

    /* The invoice CSV has the dashboards' formula guard: a description
     * from a book that starts a formula is shown with a leading ', a
     * credit's negative amount stays a number. */
    struct report_invoice f = sample_invoice();
    snprintf(f.lines[0].description, sizeof(f.lines[0].description),
             "=HYPERLINK(\"http://x\")");
    snprintf(f.lines[1].description, sizeof(f.lines[1].description),
             "@SUM(A1)");
    CHECK(pricing_dec_parse("-1.50", 12, &f.lines[1].amount) == PRICING_OK);
    render(&f, "csv", path);
    snprintf(cmd, sizeof(cmd), "cat %s", path);
    csv = slurp(cmd);
    CHECK(strstr(csv, ",\"'=HYPERLINK(\"\"http://x\"\")\",") != NULL);
    CHECK(strstr(csv, ",\"'@SUM(A1)\",") != NULL);
    CHECK(strstr(csv, ",-1.500000,USD\r\n") != NULL);
    CHECK(strstr(csv, ",=") == NULL && strstr(csv, ",@") == NULL);
    unlink(path);
    report_invoice_release(&f);

    render(&inv, "html", path);
    snprintf(cmd, sizeof(cmd), "cat %s", path);
    const char *html = slurp(cmd);
    CHECK(strstr(html, "<!DOCTYPE html>") == html);
    CHECK(strstr(html, "Acme &lt;&amp;&gt; &quot;Co&quot;") != NULL);
    CHECK(strstr(html, "Invoice 2026-000007") != NULL);
    CHECK(strstr(html, "0.47 USD") != NULL);
    CHECK(strstr(html, "<script") == NULL && strstr(html, "http") == NULL);
    unlink(path);

    render(&inv, "pdf", path);
    snprintf(cmd, sizeof(cmd), "pdftotext %s - 2>&1", path);
    const char *text = slurp(cmd);
    CHECK(strstr(text, "Invoice 2026-000007") != NULL);
    CHECK(strstr(text, "0.47 USD") != NULL);
    CHECK(strstr(text, "0.403200") != NULL);
    unlink(path);

    struct meter_err e = {{0}};
    CHECK(report_invoice_write(stdout, &inv, "xml", &e) == -1);
    CHECK(strstr(e.msg, "'xml'") != NULL);
    report_invoice_release(&inv);
}

int
main(void)
{
    test_late();
    test_hash();
    test_renderings();
    return test_result();
}
