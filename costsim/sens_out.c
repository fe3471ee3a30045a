/*
 * sens_out.c - costsim's tornado (--tornado PCT), after the comparison:
 * for each book, the profile's parameters moved down and up, the mean
 * monthly total each way, sorted by the swing, largest first.
 *
 * The means are exact decimals, like the comparison's: each the exact
 * sum of the same trials' totals over their number. The parameters'
 * values are doubles (a profile's numbers are not money).
 */
#include "costsim_int.h"

#include <stdlib.h>
#include <string.h>

static const char tornado_note[] =
    "each parameter moved alone by -PCT% and +PCT%, as the profile holds "
    "it (rounded to whole sessions, seconds, bytes or 1/10,000 vCPU; "
    "clamped into its key's range); every run with the comparison's seed "
    "(common random numbers), each book's means over the same trials; "
    "swing = mean at +PCT% - mean at -PCT%, exact decimals";

static struct pricing_dec
swing_of(const struct sim_swing *s)
{
    struct pricing_dec d = {0};
    if (pricing_dec_sub(s->high, s->low, &d) != PRICING_OK)
        return (struct pricing_dec){0}; /* cannot: totals are small */
    return d;
}

int
cs_print_tornado(FILE *f, const struct cs_run *run, const size_t *order)
{
    const struct sim_tornado *t = run->tornado;
    char pct[32], minus[40], plus[40];
    snprintf(pct, sizeof(pct), "%g%%", t->pct);
    snprintf(minus, sizeof(minus), "-%s", pct);
    snprintf(plus, sizeof(plus), "+%s", pct);
    fprintf(f,
            "\ntornado: each parameter moved by -%s and +%s alone, with "
            "seed %llu (common random numbers)\n",
            pct, pct, (unsigned long long)run->opts->seed);
    fprintf(f,
            "note: swing = mean at +%s - mean at -%s; each book's means "
            "are over the same trials; values as the profile holds them "
            "(rounded, clamped)\n",
            pct, pct);
    for (size_t k = 0; k < run->nbooks; k++) {
        size_t i = order[k];
        const struct sim_tornado_book *tb = &t->books[i];
        const struct cs_book *bk = &run->books[i];
        if (tb->nswings == 0)
            continue; /* cannot price (the comparison says why) */
        const char *cur = pricing_book_currency(bk->book);
        unsigned d = pricing_money_decimals(cur);
        char base[48];
        pricing_dec_format(tb->base, d, base, sizeof(base));
        fprintf(f, "\n%-26s %-4s base %s, %zu trials\n",
                pricing_book_id(bk->book), cur, base, tb->trials);
        fprintf(f, "    %-30s %12s %12s %12s %12s %12s\n", "parameter", minus,
                plus, "mean at -", "mean at +", "swing");
        for (size_t j = 0; j < tb->nswings; j++) {
            const struct sim_swing *s = &tb->swings[j];
            char lo[48] = "cannot price", hi[48] = "cannot price", sw[48] = "-";
            if (!s->low_failed)
                pricing_dec_format(s->low, d, lo, sizeof(lo));
            if (!s->high_failed)
                pricing_dec_format(s->high, d, hi, sizeof(hi));
            if (!s->failed)
                pricing_dec_format(swing_of(s), d, sw, sizeof(sw));
            fprintf(f, "    %-30s %12.6g %12.6g %12s %12s %12s\n", s->param,
                    s->low_value, s->high_value, lo, hi, sw);
            if (s->note[0])
                fprintf(f, "        note: %s\n", s->note);
        }
    }
    for (size_t j = 0; j < t->nnotes; j++)
        fprintf(f, "%s%s\n", j ? "    " : "\nnot in the tornado:\n    ",
                t->notes[j]);
    return 0;
}

int
cs_tornado_json(json_t *root, const struct cs_run *run)
{
    const struct sim_tornado *t = run->tornado;
    json_t *o = json_object(), *notes = json_array();
    if (!o || !notes || json_object_set_new(root, "tornado", o)) {
        json_decref(notes);
        return -1;
    }
    if (json_object_set_new(o, "pct", json_real(t->pct)) ||
        json_object_set_new(o, "note", json_string(tornado_note)) ||
        json_object_set_new(o, "not_moved", notes))
        return -1;
    for (size_t j = 0; j < t->nnotes; j++)
        if (json_array_append_new(notes, json_string(t->notes[j])))
            return -1;
    return 0;
}

static json_t *
jdec6(struct pricing_dec d)
{
    char buf[48];
    pricing_dec_format(d, 6, buf, sizeof(buf));
    return json_string(buf);
}

static json_t *
swing_json(const struct sim_swing *s)
{
    json_t *j = json_object();
    if (!j)
        return NULL;
    bool ok = !json_object_set_new(j, "param", json_string(s->param)) &&
              !json_object_set_new(j, "value", json_real(s->value)) &&
              !json_object_set_new(j, "low_value", json_real(s->low_value)) &&
              !json_object_set_new(j, "high_value", json_real(s->high_value));
    ok = ok &&
         !json_object_set_new(j, "low",
                              s->low_failed ? json_null() : jdec6(s->low)) &&
         !json_object_set_new(j, "high",
                              s->high_failed ? json_null() : jdec6(s->high)) &&
         !json_object_set_new(j, "swing",
                              s->failed ? json_null() : jdec6(swing_of(s)));
    if (ok && s->note[0])
        ok = !json_object_set_new(j, "note", json_string(s->note));
    if (!ok) {
        json_decref(j);
        return NULL;
    }
    return j;
}

int
cs_tornado_book_json(json_t *book, const struct cs_run *run, size_t i)
{
    const struct sim_tornado_book *tb = &run->tornado->books[i];
    if (tb->nswings == 0)
        return 0; /* not priced: the book's reason says why */
    json_t *o = json_object(), *swings = json_array();
    if (!o || !swings || json_object_set_new(book, "tornado", o)) {
        json_decref(swings);
        return -1;
    }
    if (json_object_set_new(o, "trials",
                            json_integer((json_int_t)tb->trials)) ||
        json_object_set_new(o, "base", jdec6(tb->base)) ||
        json_object_set_new(o, "swings", swings))
        return -1;
    for (size_t j = 0; j < tb->nswings; j++) {
        json_t *x = swing_json(&tb->swings[j]);
        if (!x || json_array_append_new(swings, x))
            return -1;
    }
    return 0;
}
