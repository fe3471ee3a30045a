/*
 * test_decimal.c - exact decimals and money: parsing, printing, rounding
 * and overflow, with values written down by hand.
 */
#include <string.h>

#include "pricing.h"
#include "testutil.h"

static void
test_parse(void)
{
    static const struct {
        const char *in;
        unsigned max;
        enum pricing_status st;
        const char *out; /* formatted back with 12 decimals */
    } cases[] = {
        {"0", 12, PRICING_OK, "0.000000000000"},
        {"-0", 12, PRICING_OK, "0.000000000000"}, /* negative zero */
        {"-0.000", 12, PRICING_OK, "0.000000000000"},
        {"1", 12, PRICING_OK, "1.000000000000"},
        {"0.000014", 12, PRICING_OK, "0.000014000000"},
        {"-12.5", 12, PRICING_OK, "-12.500000000000"},
        {"007", 12, PRICING_OK, "7.000000000000"},
        {"0.123456789012", 12, PRICING_OK, "0.123456789012"},
        {"0.1234567890123", 12, PRICING_EDECIMALS, NULL}, /* 13 */
        {"1.0000000000000", 12, PRICING_EDECIMALS, NULL},
        {"0.1234567", 6, PRICING_EDECIMALS, NULL},
        {"0.123456", 6, PRICING_OK, "0.123456000000"},
        {"+1", 12, PRICING_ESYNTAX, NULL},  /* leading + */
        {"1e5", 12, PRICING_ESYNTAX, NULL}, /* exponents */
        {"1.5E3", 12, PRICING_ESYNTAX, NULL},
        {"1e-5", 12, PRICING_ESYNTAX, NULL},
        {".5", 12, PRICING_ESYNTAX, NULL},
        {"5.", 12, PRICING_ESYNTAX, NULL},
        {"", 12, PRICING_ESYNTAX, NULL},
        {"-", 12, PRICING_ESYNTAX, NULL},
        {" 1", 12, PRICING_ESYNTAX, NULL},
        {"1 ", 12, PRICING_ESYNTAX, NULL},
        {"1,5", 12, PRICING_ESYNTAX, NULL},
        {"--1", 12, PRICING_ESYNTAX, NULL},
        {"0x10", 12, PRICING_ESYNTAX, NULL},
        {"NaN", 12, PRICING_ESYNTAX, NULL},
        /* the largest magnitude, (2^126 - 1) / 10^12, and one unit past */
        {"85070591730234615865843651.857942052863", 12, PRICING_OK,
         "85070591730234615865843651.857942052863"},
        {"-85070591730234615865843651.857942052863", 12, PRICING_OK,
         "-85070591730234615865843651.857942052863"},
        {"85070591730234615865843651.857942052864", 12, PRICING_ERANGE, NULL},
        {"100000000000000000000000000000000000000000000", 12, PRICING_ERANGE,
         NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pricing_dec d = {0};
        char buf[64];
        enum pricing_status st =
            pricing_dec_parse(cases[i].in, cases[i].max, &d);
        if (st != cases[i].st) {
            fprintf(stderr, "parse '%s': status %d, want %d\n", cases[i].in, st,
                    cases[i].st);
            test_failures++;
            continue;
        }
        if (cases[i].out) {
            pricing_dec_format(d, 12, buf, sizeof(buf));
            CHECK_STR(buf, cases[i].out);
        }
    }
}

static struct pricing_dec
dec(const char *s)
{
    struct pricing_dec d = {0};
    if (pricing_dec_parse(s, 12, &d) != PRICING_OK) {
        fprintf(stderr, "bad test decimal '%s'\n", s);
        test_failures++;
    }
    return d;
}

static void
test_round_and_format(void)
{
    static const struct {
        const char *in;
        unsigned decimals;
        const char *out;
    } cases[] = {
        /* half to even, symmetric around zero */
        {"0.0000125", 6, "0.000012"},
        {"-0.0000125", 6, "-0.000012"},
        {"0.0000135", 6, "0.000014"},
        {"-0.0000135", 6, "-0.000014"},
        {"0.0000375", 6, "0.000038"},
        {"0.00001250001", 6, "0.000013"},
        {"2.5", 0, "2"},
        {"3.5", 0, "4"},
        {"-2.5", 0, "-2"},
        {"0.005", 2, "0.00"},
        {"0.015", 2, "0.02"},
        {"0.025", 2, "0.02"},
        {"0.468", 2, "0.47"},
        {"120.888", 2, "120.89"},
        /* no negative zero after rounding */
        {"-0.0000001", 6, "0.000000"},
        {"-0.4", 0, "0"},
        {"-0.5", 0, "0"},
        {"-0.51", 0, "-1"},
        {"123", 3, "123.000"},
        {"0.000000000001", 12, "0.000000000001"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[64];
        struct pricing_dec r;
        pricing_dec_format(dec(cases[i].in), cases[i].decimals, buf,
                           sizeof(buf));
        CHECK_STR(buf, cases[i].out);
        /* pricing_dec_round agrees with the formatting */
        CHECK(pricing_dec_round(dec(cases[i].in), cases[i].decimals, &r) ==
              PRICING_OK);
        pricing_dec_format(r, 12, buf, sizeof(buf));
        struct pricing_dec back = dec(buf);
        CHECK(pricing_dec_cmp(back, r) == 0);
    }
    /* A short buffer truncates like snprintf and reports the length. */
    char small[5];
    CHECK(pricing_dec_format(dec("123.456"), 3, small, sizeof(small)) == 7);
    CHECK_STR(small, "123.");
}

static void
test_arithmetic(void)
{
    struct pricing_dec max = dec("85070591730234615865843651.857942052863");
    struct pricing_dec one = dec("0.000000000001"), r;
    char buf[64];

    CHECK(pricing_dec_add(dec("0.1"), dec("0.2"), &r) == PRICING_OK);
    pricing_dec_format(r, 12, buf, sizeof(buf));
    CHECK_STR(buf, "0.300000000000"); /* exact, unlike binary floating point */
    CHECK(pricing_dec_sub(dec("1"), dec("1.000000000001"), &r) == PRICING_OK);
    pricing_dec_format(r, 12, buf, sizeof(buf));
    CHECK_STR(buf, "-0.000000000001");
    CHECK(pricing_dec_add(max, dec("0"), &r) == PRICING_OK);
    CHECK(pricing_dec_add(max, one, &r) == PRICING_ERANGE);
    CHECK(pricing_dec_sub(dec("-85070591730234615865843651.857942052863"), one,
                          &r) == PRICING_ERANGE);
    CHECK(pricing_dec_mul_int(dec("0.000014"), 3600 * 8, &r) == PRICING_OK);
    pricing_dec_format(r, 6, buf, sizeof(buf));
    CHECK_STR(buf, "0.403200");
    CHECK(pricing_dec_mul_int(max, 2, &r) == PRICING_ERANGE);
    CHECK(pricing_dec_mul_int(max, -1, &r) == PRICING_OK);
    CHECK(pricing_dec_mul_int(dec("1000000000"), INT64_MAX, &r) ==
          PRICING_ERANGE);
    /* Rounding up at the top of the range overflows, it does not wrap. */
    CHECK(pricing_dec_round(max, 0, &r) == PRICING_ERANGE);

    struct pricing_money usd = {dec("1.50"), "USD"}, eur = {dec("2"), "EUR"};
    struct pricing_money m;
    CHECK(pricing_money_add(&usd, &usd, &m) == PRICING_OK);
    pricing_dec_format(m.amount, 2, buf, sizeof(buf));
    CHECK_STR(buf, "3.00");
    CHECK_STR(m.currency, "USD");
    CHECK(pricing_money_add(&usd, &eur, &m) == PRICING_ECURRENCY);
    CHECK(pricing_money_sub(&usd, &eur, &m) == PRICING_ECURRENCY);
    struct pricing_money big = {max, "USD"};
    CHECK(pricing_money_add(&big, &usd, &m) == PRICING_ERANGE);

    CHECK(pricing_currency_minor_unit("USD") == 2);
    CHECK(pricing_currency_minor_unit("JPY") == 0);
    CHECK(pricing_currency_minor_unit("KWD") == 3);
    CHECK(pricing_currency_minor_unit("usd") == -1);
    CHECK(pricing_currency_minor_unit("XXX") == -1);

    /* The one money formatter: to the minor unit, rounded half to even;
     * six decimals for a currency it does not know. */
    CHECK(pricing_money_decimals("USD") == 2);
    CHECK(pricing_money_decimals("JPY") == 0);
    CHECK(pricing_money_decimals("XXX") == 6);
    pricing_money_format(dec("12.345"), "USD", buf, sizeof(buf));
    CHECK_STR(buf, "12.34");
    pricing_money_format(dec("12.3"), "USD", buf, sizeof(buf));
    CHECK_STR(buf, "12.30");
    pricing_money_format(dec("1234.5"), "JPY", buf, sizeof(buf));
    CHECK_STR(buf, "1234");
    pricing_money_format(dec("-1.2345"), "KWD", buf, sizeof(buf));
    CHECK_STR(buf, "-1.234");
    pricing_money_format(dec("1.5"), "XXX", buf, sizeof(buf));
    CHECK_STR(buf, "1.500000");
}

static void
test_periods(void)
{
    int y, m;
    int64_t start, end;
    /* 2026-11-30T12:00:00Z */
    pricing_period_of(1796040000, &y, &m, &start, &end);
    CHECK(y == 2026 && m == 11);
    CHECK(start == 1793491200 && end == 1796083200);
    /* The last second of a month and the first of the next. */
    pricing_period_of(end - 1, &y, &m, &start, &end);
    CHECK(y == 2026 && m == 11);
    pricing_period_of(1796083200, &y, &m, &start, &end);
    CHECK(y == 2026 && m == 12 && end - start == 31 * 86400);
    /* February of a leap year; December to January. */
    pricing_period_of(pricing_days_from_civil(2028, 2, 29) * 86400, &y, &m,
                      &start, &end);
    CHECK(y == 2028 && m == 2 && end - start == 29 * 86400);
    pricing_period_of(pricing_days_from_civil(2026, 12, 31) * 86400 + 86399, &y,
                      &m, &start, &end);
    CHECK(y == 2026 && m == 12 &&
          end == pricing_days_from_civil(2027, 1, 1) * 86400);
    CHECK(pricing_days_from_civil(1970, 1, 1) == 0);
}

int
main(void)
{
    test_parse();
    test_round_and_format();
    test_arithmetic();
    test_periods();
    return test_result();
}
