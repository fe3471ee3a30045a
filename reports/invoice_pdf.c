/*
 * invoice_pdf.c - an invoice or credit note as an A4 PDF, drawn with
 * cairo (never hand-written PDF): the header, the lines in columns,
 * the total, and further pages when the lines need them.
 */
#include "report_int.h"

#include <string.h>

#include <cairo-pdf.h>
#include <cairo.h>

#define PAGE_W 595.0 /* A4 in points */
#define PAGE_H 842.0
#define MARGIN 42.0
#define ROW 14.0

struct pdf {
    cairo_t *cr;
    double y;
};

static cairo_status_t
write_to(void *closure, const unsigned char *data, unsigned int len)
{
    return fwrite(data, 1, len, closure) == len ? CAIRO_STATUS_SUCCESS
                                                : CAIRO_STATUS_WRITE_ERROR;
}

static void
font(struct pdf *p, double size, bool bold)
{
    cairo_select_font_face(p->cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD
                                : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(p->cr, size);
}

/* Text at x (left-aligned) or ending at x (right). */
static void
text(struct pdf *p, double x, const char *s, bool right)
{
    cairo_text_extents_t ext;
    if (right) {
        cairo_text_extents(p->cr, s, &ext);
        x -= ext.x_advance;
    }
    cairo_move_to(p->cr, x, p->y);
    cairo_show_text(p->cr, s);
}

/* Columns of the lines table: description, period, quantity, unit, unit
 * price, amount (quantity, unit price and amount right-aligned). */
static const double col[] = {MARGIN, 238, 348, 356, 482, PAGE_W - MARGIN};

static void
lines_header(struct pdf *p)
{
    font(p, 8.5, true);
    text(p, col[0], "Line", false);
    text(p, col[1], "Period", false);
    text(p, col[2], "Quantity", true);
    text(p, col[3], "Unit", false);
    text(p, col[4], "Unit price", true);
    text(p, col[5], "Amount", true);
    cairo_move_to(p->cr, MARGIN, p->y + 4);
    cairo_line_to(p->cr, PAGE_W - MARGIN, p->y + 4);
    cairo_set_line_width(p->cr, 0.5);
    cairo_stroke(p->cr);
    p->y += ROW + 2;
    font(p, 8.5, false);
}

static void
next_row(struct pdf *p)
{
    p->y += ROW;
    if (p->y > PAGE_H - MARGIN - 2 * ROW) {
        cairo_show_page(p->cr);
        p->y = MARGIN + ROW;
        lines_header(p);
    }
}

int
report_invoice_pdf(FILE *out, const struct report_invoice *inv,
                   struct meter_err *e)
{
    cairo_surface_t *s =
        cairo_pdf_surface_create_for_stream(write_to, out, PAGE_W, PAGE_H);
    struct pdf p = {cairo_create(s), MARGIN + 18};
    char title[64], buf[320], total[80];
    report_invoice_title(inv, title, sizeof(title));
    report_total_text(inv, total, sizeof(total));
    cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_TITLE, title);
    cairo_set_source_rgb(p.cr, 0, 0, 0);

    font(&p, 18, true);
    text(&p, MARGIN, title, false);
    font(&p, 10, true);
    text(&p, PAGE_W - MARGIN, inv->status, true);
    p.y += 28;
    const struct {
        const char *label, *value;
    } head[] = {
        {"Seller", inv->seller},
        {"Account", inv->account_id},
        {"Account name", inv->account_name},
        {"Number", inv->number},
        {"Issued", inv->finalized_at},
        {"Computed", inv->number[0] ? "" : inv->created_at},
        {"Voids invoice", inv->voids},
        {"Reason", inv->reason},
        {"Voided by credit note", inv->voided_by},
    };
    snprintf(buf, sizeof(buf), "%04d-%02d", inv->year, inv->month);
    for (size_t i = 0; i < sizeof(head) / sizeof(head[0]) + 1; i++) {
        const char *label = i == 0 ? "Period" : head[i - 1].label;
        const char *value = i == 0 ? buf : head[i - 1].value;
        if (!value[0])
            continue;
        font(&p, 9.5, true);
        text(&p, MARGIN, label, false);
        font(&p, 9.5, false);
        text(&p, MARGIN + 120, value, false);
        p.y += ROW;
    }
    p.y += ROW;
    lines_header(&p);
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct report_line *l = &inv->lines[i];
        struct report_cells c;
        report_line_cells(l, &c);
        snprintf(buf, sizeof(buf), "%.46s", l->description);
        text(&p, col[0], buf, false);
        snprintf(buf, sizeof(buf), "%04d-%02d", l->year, l->month);
        text(&p, col[1], buf, false);
        text(&p, col[2], c.quantity, true);
        text(&p, col[3], l->has_quantity ? l->unit : "", false);
        text(&p, col[4], c.unit_price, true);
        text(&p, col[5], c.amount, true);
        if (l->book[0]) {
            next_row(&p);
            font(&p, 7, false);
            snprintf(buf, sizeof(buf), "  %s version %d", l->book, l->version);
            text(&p, col[0], buf, false);
            font(&p, 8.5, false);
        }
        next_row(&p);
    }
    cairo_move_to(p.cr, MARGIN, p.y - ROW + 4);
    cairo_line_to(p.cr, PAGE_W - MARGIN, p.y - ROW + 4);
    cairo_stroke(p.cr);
    p.y += 4;
    font(&p, 11, true);
    text(&p, col[0], "Total", false);
    text(&p, col[5], total, true);
    if (inv->sha256[0]) {
        p.y += 2 * ROW;
        font(&p, 6.5, false);
        snprintf(buf, sizeof(buf), "SHA-256 of the document: %s", inv->sha256);
        text(&p, MARGIN, buf, false);
    }
    cairo_show_page(p.cr);
    cairo_status_t st = cairo_status(p.cr);
    cairo_destroy(p.cr);
    cairo_surface_finish(s);
    if (st == CAIRO_STATUS_SUCCESS)
        st = cairo_surface_status(s);
    cairo_surface_destroy(s);
    if (st != CAIRO_STATUS_SUCCESS)
        return meter_fail(e, "cannot draw the PDF: %s",
                          cairo_status_to_string(st));
    return 0;
}
