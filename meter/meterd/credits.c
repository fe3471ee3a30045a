/*
 * credits.c - GET /v1/accounts/{id}/credits: the credit grants an account
 * has received (its books' and its operator's), with the balances its
 * final invoices left. A key of role account reads only its own (another
 * account is a 404, as one that does not exist).
 */
#include "meterd_int.h"

#include <string.h>

static void
add_grant(const struct meter_grant *g, void *arg)
{
    json_t *items = arg;
    const struct pricing_grant *x = &g->grant;
    char amount[48], balance[48], received[16], last[16];
    pricing_dec_format(x->amount, 6, amount, sizeof(amount));
    pricing_dec_format(x->balance, 6, balance, sizeof(balance));
    snprintf(received, sizeof(received), "%04d-%02d", x->received / 12,
             x->received % 12 + 1);
    int p = x->received + x->expires_after - 1;
    snprintf(last, sizeof(last), "%04d-%02d", p / 12, p % 12 + 1);
    json_array_append_new(
        items, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "grant", x->id,
                         "source", g->from_book ? "book" : "operator", "amount",
                         amount, "balance", balance, "currency", x->currency,
                         "received", received, "last_period",
                         x->expires_after ? json_string(last) : json_null()));
}

void
meterd_credits(struct meter_http_request *rq)
{
    const struct meter_principal *who = meter_http_principal(rq);
    const char *account = meter_http_param(rq, "id");
    if (!pricing_id_valid(account) || (who->role == METER_ROLE_ACCOUNT &&
                                       strcmp(account, who->account_id) != 0)) {
        meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                 "no account '%s'", account);
        return;
    }
    json_t *items = json_array();
    struct meter_err e = {{0}};
    PGconn *db = meter_http_db(rq);
    enum meter_db_status st =
        db ? meter_db_grants_list(db, account, add_grant, items, &e)
           : METER_DB_HARD;
    if (st < 0) {
        json_decref(items);
        meter_http_reply_db_error(rq, db, st, &e, "credits cannot be read");
        return;
    }
    if (st == METER_DB_NONE) {
        json_decref(items);
        meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                 "no account '%s'", account);
        return;
    }
    meter_http_reply_json(
        rq, 200,
        json_pack("{s:s, s:o}", "account_id", account, "items", items));
}
