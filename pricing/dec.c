/*
 * dec.c - exact decimals (value / 10^12 in a 128-bit integer) and money:
 * parsing, printing, rounding and overflow-checked arithmetic.
 */
#include "pricing.h"

#include <stdio.h>
#include <string.h>

/* Largest magnitude accepted: keeps every result of add/sub/round, and
 * the minus sign, representable. */
#define DEC_MAX (((pricing_i128)1 << 126) - 1)

static const pricing_i128 pow10_tab[] = {
    1,
    10,
    100,
    1000,
    10000,
    100000,
    1000000,
    10000000,
    100000000,
    1000000000,
    10000000000LL,
    100000000000LL,
    1000000000000LL,
};

const char *
pricing_status_str(enum pricing_status st)
{
    switch (st) {
    case PRICING_OK:
        return "ok";
    case PRICING_ESYNTAX:
        return "not a decimal number (digits, one optional '.', optional "
               "leading '-')";
    case PRICING_EDECIMALS:
        return "too many decimals";
    case PRICING_ERANGE:
        return "out of range";
    case PRICING_ECURRENCY:
        return "currencies differ";
    }
    return "unknown status";
}

static bool
in_range(pricing_i128 v)
{
    return v <= DEC_MAX && v >= -DEC_MAX;
}

enum pricing_status
pricing_dec_parse(const char *s, unsigned max_decimals, struct pricing_dec *out)
{
    bool neg = false;
    pricing_i128 v = 0;
    unsigned decimals = 0;
    if (max_decimals > PRICING_SCALE)
        max_decimals = PRICING_SCALE;
    if (*s == '-') {
        neg = true;
        s++;
    }
    if (*s < '0' || *s > '9')
        return PRICING_ESYNTAX;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, *s - '0', &v) || v > DEC_MAX)
            return PRICING_ERANGE;
    }
    if (*s == '.') {
        s++;
        if (*s < '0' || *s > '9')
            return PRICING_ESYNTAX;
        for (; *s >= '0' && *s <= '9'; s++) {
            if (++decimals > PRICING_SCALE) {
                /* Keep scanning to tell syntax errors from decimals. */
                continue;
            }
            if (__builtin_mul_overflow(v, 10, &v) ||
                __builtin_add_overflow(v, *s - '0', &v))
                return PRICING_ERANGE;
        }
    }
    if (*s != '\0')
        return PRICING_ESYNTAX;
    if (decimals > max_decimals)
        return PRICING_EDECIMALS;
    if (__builtin_mul_overflow(v, pow10_tab[PRICING_SCALE - decimals], &v) ||
        v > DEC_MAX)
        return PRICING_ERANGE;
    out->v = neg ? -v : v;
    return PRICING_OK;
}

/* Divides v by 10^(12 - decimals), rounding half to even, symmetric. */
static pricing_i128
round_units(pricing_i128 v, unsigned decimals)
{
    pricing_i128 d = pow10_tab[PRICING_SCALE - decimals];
    bool neg = v < 0;
    pricing_i128 a = neg ? -v : v;
    pricing_i128 q = a / d, r = a % d;
    if (r > d - r || (r == d - r && (q & 1)))
        q++;
    return neg ? -q : q;
}

enum pricing_status
pricing_dec_round(struct pricing_dec a, unsigned decimals,
                  struct pricing_dec *out)
{
    if (decimals > PRICING_SCALE)
        decimals = PRICING_SCALE;
    pricing_i128 v =
        round_units(a.v, decimals) * pow10_tab[PRICING_SCALE - decimals];
    if (!in_range(v))
        return PRICING_ERANGE;
    out->v = v;
    return PRICING_OK;
}

size_t
pricing_dec_format(struct pricing_dec d, unsigned decimals, char *buf, size_t n)
{
    char tmp[64];
    char *p = tmp + sizeof(tmp);
    if (decimals > PRICING_SCALE)
        decimals = PRICING_SCALE;
    pricing_i128 v = round_units(d.v, decimals);
    bool neg = v < 0;
    pricing_u128 a = neg ? (pricing_u128)(-v) : (pricing_u128)v;
    *--p = '\0';
    for (unsigned i = 0; i < decimals; i++) {
        *--p = (char)('0' + (int)(a % 10));
        a /= 10;
    }
    if (decimals)
        *--p = '.';
    do {
        *--p = (char)('0' + (int)(a % 10));
        a /= 10;
    } while (a);
    if (neg)
        *--p = '-';
    size_t len = (size_t)(tmp + sizeof(tmp) - 1 - p);
    if (n) {
        size_t k = len < n - 1 ? len : n - 1;
        memcpy(buf, p, k);
        buf[k] = '\0';
    }
    return len;
}

enum pricing_status
pricing_dec_add(struct pricing_dec a, struct pricing_dec b,
                struct pricing_dec *out)
{
    pricing_i128 v;
    if (__builtin_add_overflow(a.v, b.v, &v) || !in_range(v))
        return PRICING_ERANGE;
    out->v = v;
    return PRICING_OK;
}

enum pricing_status
pricing_dec_sub(struct pricing_dec a, struct pricing_dec b,
                struct pricing_dec *out)
{
    pricing_i128 v;
    if (__builtin_sub_overflow(a.v, b.v, &v) || !in_range(v))
        return PRICING_ERANGE;
    out->v = v;
    return PRICING_OK;
}

enum pricing_status
pricing_dec_mul_int(struct pricing_dec a, int64_t k, struct pricing_dec *out)
{
    pricing_i128 v;
    if (__builtin_mul_overflow(a.v, (pricing_i128)k, &v) || !in_range(v))
        return PRICING_ERANGE;
    out->v = v;
    return PRICING_OK;
}

int
pricing_dec_cmp(struct pricing_dec a, struct pricing_dec b)
{
    return (a.v > b.v) - (a.v < b.v);
}

/* ---- money ------------------------------------------------------------ */

static const struct {
    char code[4];
    int minor;
} currencies[] = {
    {"AUD", 2}, {"BRL", 2}, {"CAD", 2}, {"CHF", 2}, {"CNY", 2},
    {"DKK", 2}, {"EUR", 2}, {"GBP", 2}, {"HKD", 2}, {"INR", 2},
    {"JPY", 0}, {"KRW", 0}, {"KWD", 3}, {"MXN", 2}, {"NOK", 2},
    {"NZD", 2}, {"PLN", 2}, {"SEK", 2}, {"SGD", 2}, {"USD", 2},
};

int
pricing_currency_minor_unit(const char *code)
{
    for (size_t i = 0; i < sizeof(currencies) / sizeof(currencies[0]); i++)
        if (strcmp(code, currencies[i].code) == 0)
            return currencies[i].minor;
    return -1;
}

unsigned
pricing_money_decimals(const char *currency)
{
    int minor = pricing_currency_minor_unit(currency);
    return minor < 0 ? 6 : (unsigned)minor;
}

size_t
pricing_money_format(struct pricing_dec v, const char *currency, char *buf,
                     size_t n)
{
    return pricing_dec_format(v, pricing_money_decimals(currency), buf, n);
}

/* a + sign x b, in a's currency. */
static enum pricing_status
money_combine(const struct pricing_money *a, const struct pricing_money *b,
              bool subtract, struct pricing_money *out)
{
    if (strcmp(a->currency, b->currency) != 0)
        return PRICING_ECURRENCY;
    struct pricing_dec v;
    enum pricing_status st = subtract
                                 ? pricing_dec_sub(a->amount, b->amount, &v)
                                 : pricing_dec_add(a->amount, b->amount, &v);
    if (st != PRICING_OK)
        return st;
    memcpy(out->currency, a->currency, sizeof(out->currency));
    out->amount = v;
    return PRICING_OK;
}

enum pricing_status
pricing_money_add(const struct pricing_money *a, const struct pricing_money *b,
                  struct pricing_money *out)
{
    return money_combine(a, b, false, out);
}

enum pricing_status
pricing_money_sub(const struct pricing_money *a, const struct pricing_money *b,
                  struct pricing_money *out)
{
    return money_combine(a, b, true, out);
}
