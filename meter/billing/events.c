/*
 * events.c - the webhook events of billing (docs/webhooks.md): each
 * written by meter_db_event_add in the transaction of what it reports,
 * so that an event is sent for every invoice made final or voided, and
 * for every account a run could not bill, and for nothing rolled back.
 * The payloads are the receiver's contract: amounts are strings, as
 * everywhere (docs/webhooks.md lists each member).
 */
#include "billing_int.h"

#include <stdio.h>

/* "YYYY-MM". */
static void
period_text(int year, int month, char out[16])
{
    snprintf(out, 16, "%04d-%02d", year, month);
}

/* Writes the event and releases payload (NULL: out of memory). */
static enum meter_db_status
add(PGconn *db, const char *type, const char *account, json_t *payload,
    struct meter_err *e)
{
    if (!payload)
        return billing_fail(e, "cannot write the %s event: out of memory",
                            type);
    enum meter_db_status st = meter_db_event_add(db, type, account, payload, e);
    json_decref(payload);
    return st;
}

enum meter_db_status
billing_event_finalized(PGconn *db, const struct report_invoice *inv,
                        struct meter_err *e)
{
    char period[16], total[64];
    period_text(inv->year, inv->month, period);
    pricing_money_format(inv->total, inv->currency, total, sizeof(total));
    return add(db, "invoice.finalized", inv->account_id,
               json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "number",
                         inv->number, "account", inv->account_id, "period",
                         period, "total", total, "currency", inv->currency,
                         "sha256", inv->sha256),
               e);
}

enum meter_db_status
billing_event_voided(PGconn *db, const struct report_invoice *note,
                     struct meter_err *e)
{
    char period[16];
    period_text(note->year, note->month, period);
    return add(db, "invoice.voided", note->account_id,
               json_pack("{s:s, s:s, s:s, s:s, s:s}", "number", note->voids,
                         "credit_note", note->number, "account",
                         note->account_id, "period", period, "reason",
                         note->reason),
               e);
}

enum meter_db_status
billing_event_run_failed(PGconn *db, const char *account, int year, int month,
                         bool finalize, const char *error, struct meter_err *e)
{
    char period[16];
    period_text(year, month, period);
    return add(db, "invoice.run_failed", account,
               json_pack("{s:s, s:s, s:b, s:s}", "account", account, "period",
                         period, "finalize", finalize, "error", error),
               e);
}
