/*
 * test_webhook.c - sending one webhook without sending it: the signature
 * against the example of the Standard Webhooks specification (the
 * vector its reference libraries test with), secrets, bodies, and the
 * retry schedule. No database, no network.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "meter_webhook.h"
#include "testutil.h"

/* The specification's example: secret, id, timestamp and body, and the
 * signature every conforming library computes. */
static void
test_sign_vector(void)
{
    static const char body[] = "{\"test\": 2432232314}";
    char sig[METER_WEBHOOK_SIG_MAX];
    struct meter_err e = {{0}};
    CHECK(meter_webhook_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                             "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body,
                             strlen(body), sig, &e) == 0);
    CHECK_STR(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    /* Any byte changed changes it. */
    CHECK(meter_webhook_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                             "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265331, body,
                             strlen(body), sig, &e) == 0);
    CHECK(strcmp(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=") != 0);
    /* Not a secret of the form: refused, nothing signed. */
    CHECK(meter_webhook_sign("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "x", 1, body,
                             strlen(body), sig, &e) < 0);
    CHECK(strstr(e.msg, "whsec_") != NULL);
}

static void
test_secrets(void)
{
    static const struct {
        const char *secret;
        bool valid;
    } cases[] = {
        {"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", true}, /* 24 bytes */
        {"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS", false}, /* cut */
        {"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2La", false},    /* 19 bytes */
        {"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", false},      /* no prefix */
        {"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS!", false},
        {"whsec_", false},
        {"", false},
        /* 64 bytes, the most */
        {"whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
         "AAAAAAAAAAAAAAAAAAAAAAAAAA==",
         true},
        /* 65 bytes */
        {"whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
         "AAAAAAAAAAAAAAAAAAAAAAAAAAA=",
         false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        CHECK(meter_webhook_secret_valid(cases[i].secret) == cases[i].valid);
    char a[METER_WEBHOOK_SECRET_MAX], b[METER_WEBHOOK_SECRET_MAX];
    CHECK(meter_webhook_secret_new(a) == 0);
    CHECK(meter_webhook_secret_new(b) == 0);
    CHECK(meter_webhook_secret_valid(a));
    CHECK(strncmp(a, "whsec_", 6) == 0 && strlen(a) == 6 + 44);
    CHECK(strcmp(a, b) != 0);
}

static void
test_types(void)
{
    char bad[64];
    CHECK(meter_webhook_types_valid("", bad));
    CHECK(meter_webhook_types_valid("invoice.finalized", bad));
    CHECK(meter_webhook_types_valid("usage.unbilled,alert.triggered", bad));
    CHECK(!meter_webhook_types_valid("invoice.finalized,invoice.paid", bad));
    CHECK_STR(bad, "invoice.paid");
    CHECK(!meter_webhook_types_valid("invoice.voided,", bad));
    CHECK(!meter_webhook_types_valid("invoice", bad));
}

static void
test_body(void)
{
    struct meter_err e = {{0}};
    char *s =
        meter_webhook_body("evt_1", "invoice.voided", "2026-02-01T00:00:00Z",
                           "acme", "{\"number\":\"2026-000001\"}", &e);
    CHECK_STR(s ? s : "",
              "{\"id\":\"evt_1\",\"type\":\"invoice.voided\",\"created\":"
              "\"2026-02-01T00:00:00Z\",\"account\":\"acme\",\"data\":"
              "{\"number\":\"2026-000001\"}}");
    free(s);
    s = meter_webhook_body("evt_2", "alert.triggered", "2026-02-01T00:00:00Z",
                           "", "{}", &e);
    CHECK(s && strstr(s, "\"account\":null"));
    free(s);
    CHECK(meter_webhook_body("evt_3", "x", "t", NULL, "[1]", &e) == NULL);
    CHECK(strstr(e.msg, "evt_3") != NULL);
}

static void
test_retries(void)
{
    /* 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, then every 3 h. */
    static const int64_t want[] = {5000,    30000,   120000,   600000,
                                   1800000, 3600000, 10800000, 10800000};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        CHECK(meter_webhook_retry_ms((int)i + 1, 1) == want[i]);
    CHECK(meter_webhook_retry_ms(0, 1) == 5000);
    CHECK(meter_webhook_retry_ms(1, 1000) == 5);
    CHECK(meter_webhook_give_up_ms(1) == 86400000);
    CHECK(meter_webhook_give_up_ms(10000) == 8640);
    /* Tried for a day: the sum of the waits passes it at the 14th
     * (6,155 s for the first six, then 3 h each). */
    int64_t sum = 0;
    int n = 0;
    while (sum <= meter_webhook_give_up_ms(1))
        sum += meter_webhook_retry_ms(++n, 1);
    CHECK(n == 14);
}

int
main(void)
{
    test_sign_vector();
    test_secrets();
    test_types();
    test_body();
    test_retries();
    return test_result();
}
