/*
 * document.c - documents read back, a final one checked against the
 * SHA-256 it was issued with; and voiding a final invoice by a credit
 * note (docs/invoicing.md).
 */
#include "billing_int.h"

#include <stdio.h>
#include <string.h>

enum meter_db_status
billing_document(PGconn *db, const char *ref, const char *account,
                 struct report_invoice *inv, bool *altered, struct meter_err *e)
{
    if (altered)
        *altered = false;
    enum meter_db_status st = meter_db_invoice_get(db, ref, account, inv, e);
    if (st != METER_DB_ROWS || !inv->sha256[0])
        return st;
    /* A final document must still be what was issued. */
    char hex[65];
    if (report_invoice_hash(inv, hex, e) < 0)
        return METER_DB_HARD;
    if (strcmp(hex, inv->sha256) != 0) {
        if (altered)
            *altered = true;
        return billing_fail(e,
                            "invoice %s does not match its SHA-256 (%s "
                            "stored, %s now)",
                            ref, inv->sha256, hex);
    }
    return st;
}

/* The credit note of final invoice inv: its lines negated, giving back
 * what its grant lines spent (rules section 14). */
static enum meter_db_status
credit_note(const struct report_invoice *inv, const char *reason,
            struct report_invoice *note, struct meter_err *e)
{
    *note = *inv;
    note->lines = NULL;
    note->nlines = note->lines_cap = 0;
    snprintf(note->kind, sizeof(note->kind), "credit_note");
    snprintf(note->voids, sizeof(note->voids), "%s", inv->number);
    snprintf(note->reason, sizeof(note->reason), "%s", reason);
    note->number[0] = note->sha256[0] = note->voided_by[0] = '\0';
    note->finalized_at[0] = '\0';
    note->total.v = -inv->total.v;
    for (size_t i = 0; i < inv->nlines; i++) {
        struct report_line l = inv->lines[i];
        l.amount.v = -l.amount.v;
        l.quantity.v = -l.quantity.v;
        /* The invoice's grant line showed the balance it left; voiding
         * gives the amount back. */
        if (strcmp(l.kind, "credit_grant") == 0) {
            char back[48];
            pricing_dec_format(l.amount, 6, back, sizeof(back));
            snprintf(l.description, sizeof(l.description),
                     "credit grant %.40s, %s returned", l.grant, back);
        }
        if (report_invoice_add_line(note, &l, e) < 0)
            return METER_DB_HARD;
    }
    return METER_DB_ROWS;
}

struct void_arg {
    const char *number, *reason;
    char *credit;
};

static enum meter_db_status
void_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct void_arg *a = arg;
    struct report_invoice inv = {0}, note = {0};
    enum meter_db_status st =
        meter_db_invoice_get(db, a->number, NULL, &inv, e);
    if (st == METER_DB_NONE)
        st = billing_fail(e, "no invoice '%s'", a->number);
    if (st < 0)
        goto out;
    if (strcmp(inv.kind, "invoice") != 0 || strcmp(inv.status, "final") != 0) {
        st = billing_fail(e,
                          "%s '%s' is %s: only a final invoice can be "
                          "voided",
                          strcmp(inv.kind, "invoice") ? "credit note"
                                                      : "invoice",
                          a->number, inv.status);
        goto out;
    }
    /* Serialize with the account's runs. */
    struct meter_db_account acct = {.id = inv.account_id};
    st = meter_db_account_load(db, &acct, true, e);
    meter_db_account_release(&acct);
    if (st >= 0)
        st = credit_note(&inv, a->reason, &note, e);
    if (st >= 0)
        st = meter_db_credit_note_store(db, &note, inv.id, e);
    struct report_invoice *docs[] = {&note};
    if (st >= 0)
        st = meter_db_invoices_finalize(db, docs, 1, e);
    if (st >= 0)
        st = billing_event_voided(db, &note, e);
    if (st >= 0)
        snprintf(a->credit, 16, "%s", note.number);
out:
    report_invoice_release(&inv);
    report_invoice_release(&note);
    return st;
}

enum meter_db_status
billing_void(PGconn *db, const char *number, const char *reason,
             char credit[16], struct meter_err *e)
{
    struct void_arg a = {number, reason, credit};
    return meter_db_transaction(db, "BEGIN", 5, void_attempt, &a, e);
}
