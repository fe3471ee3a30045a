/*
 * webhook.c - one webhook sent: the secret, the body, the signature and
 * the POST (meter_webhook.h). The signature is Standard Webhooks' (and
 * Svix's), so that a receiver may check it with their libraries as well
 * as with the few lines of docs/webhooks.md; tests/test_webhook.c checks
 * it against the specification's own example.
 */
#include "meter_webhook.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <curl/curl.h>
#include <jansson.h>
#include <nettle/base64.h>
#include <nettle/hmac.h>

const char *const meter_webhook_types[] = {
    "invoice.finalized", "invoice.voided",  "invoice.run_failed",
    "usage.unbilled",    "alert.triggered",
};
const size_t meter_webhook_ntypes =
    sizeof(meter_webhook_types) / sizeof(meter_webhook_types[0]);

bool
meter_webhook_types_valid(const char *list, char bad[64])
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        bool known = false;
        for (size_t i = 0; i < meter_webhook_ntypes && !known; i++)
            known = strlen(meter_webhook_types[i]) == n &&
                    memcmp(meter_webhook_types[i], p, n) == 0;
        if (!known) {
            snprintf(bad, 64, "%.*s", (int)(n < 63 ? n : 63), p);
            return false;
        }
        p += n;
        if (*p == ',' && !*++p) { /* a trailing comma: an empty type */
            bad[0] = '\0';
            return false;
        }
    }
    return true;
}

#define SECRET_PREFIX "whsec_"
#define KEY_MIN 24
#define KEY_MAX 64

/* The key of secret into key: its length, or -1 if secret is not of
 * the form. */
static int
secret_key(const char *secret, uint8_t key[KEY_MAX + 2])
{
    size_t plen = strlen(SECRET_PREFIX), len = strlen(secret);
    if (strncmp(secret, SECRET_PREFIX, plen) != 0 ||
        len - plen > BASE64_ENCODE_RAW_LENGTH(KEY_MAX) ||
        len - plen < BASE64_ENCODE_RAW_LENGTH(KEY_MIN))
        return -1;
    struct base64_decode_ctx ctx;
    size_t n = KEY_MAX + 2;
    base64_decode_init(&ctx);
    if (!base64_decode_update(&ctx, &n, key, len - plen, secret + plen) ||
        !base64_decode_final(&ctx) || n < KEY_MIN || n > KEY_MAX)
        return -1;
    return (int)n;
}

bool
meter_webhook_secret_valid(const char *secret)
{
    uint8_t key[KEY_MAX + 2];
    int n = secret_key(secret, key);
    explicit_bzero(key, sizeof(key));
    /* Only the canonical encoding: the table checks the characters. */
    return n > 0 && strlen(secret) == strlen(SECRET_PREFIX) +
                                          BASE64_ENCODE_RAW_LENGTH((size_t)n);
}

int
meter_webhook_secret_new(char out[METER_WEBHOOK_SECRET_MAX])
{
    uint8_t raw[32];
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0)
            return -1;
        got += (size_t)n;
    }
    memcpy(out, SECRET_PREFIX, strlen(SECRET_PREFIX));
    char *b64 = out + strlen(SECRET_PREFIX);
    base64_encode_raw(b64, sizeof(raw), raw);
    b64[BASE64_ENCODE_RAW_LENGTH(sizeof(raw))] = '\0';
    explicit_bzero(raw, sizeof(raw));
    return 0;
}

int
meter_webhook_sign(const char *secret, const char *id, int64_t ts,
                   const char *body, size_t len,
                   char out[METER_WEBHOOK_SIG_MAX], struct meter_err *e)
{
    uint8_t key[KEY_MAX + 2], mac[SHA256_DIGEST_SIZE];
    int n = secret_key(secret, key);
    if (n < 0)
        return meter_fail(e, "the secret is not whsec_ and the base64 of "
                             "24 to 64 bytes");
    char stamp[32];
    int slen = snprintf(stamp, sizeof(stamp), ".%lld.", (long long)ts);
    struct hmac_sha256_ctx ctx;
    hmac_sha256_set_key(&ctx, (size_t)n, key);
    hmac_sha256_update(&ctx, strlen(id), (const uint8_t *)id);
    hmac_sha256_update(&ctx, (size_t)slen, (const uint8_t *)stamp);
    hmac_sha256_update(&ctx, len, (const uint8_t *)body);
    hmac_sha256_digest(&ctx, sizeof(mac), mac);
    explicit_bzero(key, sizeof(key));
    explicit_bzero(&ctx, sizeof(ctx));
    memcpy(out, "v1,", 3);
    base64_encode_raw(out + 3, sizeof(mac), mac);
    out[3 + BASE64_ENCODE_RAW_LENGTH(sizeof(mac))] = '\0';
    return 0;
}

char *
meter_webhook_body(const char *id, const char *type, const char *created,
                   const char *account, const char *data, struct meter_err *e)
{
    json_error_t je;
    json_t *d = json_loads(data, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(d)) {
        json_decref(d);
        meter_fail(e, "event %s: its payload is not a JSON object", id);
        return NULL;
    }
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:o, s:o}", "id", id, "type", type, "created", created,
        "account", account && *account ? json_string(account) : json_null(),
        "data", d);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!s)
        meter_fail(e, "event %s: out of memory", id);
    return s;
}

int64_t
meter_webhook_retry_ms(int attempt, unsigned divisor)
{
    static const int64_t s[] = {5, 30, 120, 600, 1800, 3600, 10800};
    size_t n = sizeof(s) / sizeof(s[0]);
    size_t i = attempt < 1 ? 0 : (size_t)attempt - 1;
    int64_t ms = s[i < n ? i : n - 1] * 1000;
    return ms / (divisor ? divisor : 1);
}

int64_t
meter_webhook_give_up_ms(unsigned divisor)
{
    return (int64_t)86400 * 1000 / (divisor ? divisor : 1);
}

int
meter_webhook_global_init(struct meter_err *e)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return meter_fail(e, "cannot set libcurl up");
    return 0;
}

/* The answer's body is of no use: read and dropped. */
static size_t
drop(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

void
meter_webhook_post(const char *url, const char *id, int64_t ts, const char *sig,
                   const char *body, size_t len, unsigned timeout_s,
                   struct meter_webhook_result *out)
{
    memset(out, 0, sizeof(*out));
    char h_id[128], h_ts[64], h_sig[METER_WEBHOOK_SIG_MAX + 32],
        err[CURL_ERROR_SIZE] = "";
    snprintf(h_id, sizeof(h_id), "Webhook-Id: %s", id);
    snprintf(h_ts, sizeof(h_ts), "Webhook-Timestamp: %lld", (long long)ts);
    snprintf(h_sig, sizeof(h_sig), "Webhook-Signature: %s", sig);
    struct curl_slist *h = NULL, *n;
    const char *lines[] = {
        "Content-Type: application/json", h_id, h_ts, h_sig, "Expect:",
        "User-Agent: meterd-webhooks"};
    CURL *c = curl_easy_init();
    bool ok = c != NULL;
    for (size_t i = 0; ok && i < sizeof(lines) / sizeof(lines[0]); i++)
        if ((n = curl_slist_append(h, lines[i])))
            h = n;
        else
            ok = false;
    if (!ok) {
        snprintf(out->error, sizeof(out->error), "out of memory");
        goto out;
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)timeout_s);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, (long)timeout_s);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, drop);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
        snprintf(out->error, sizeof(out->error), "%s",
                 err[0] ? err : curl_easy_strerror(rc));
        goto out;
    }
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    out->status = (int)status;
    out->delivered = status >= 200 && status < 300;
    if (!out->delivered)
        snprintf(out->error, sizeof(out->error), "HTTP status %ld", status);
out:
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}
