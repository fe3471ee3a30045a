/*
 * keys.c - API tokens: random, shown once, stored only as SHA-256.
 */
#include "meter.h"

#include <nettle/sha2.h>
#include <string.h>
#include <sys/random.h>

int
meter_token_new(char *out)
{
    static const char hex[] = "0123456789abcdef";
    uint8_t raw[32];
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0)
            return -1;
        got += (size_t)n;
    }
    memcpy(out, "mtr_", 4);
    for (size_t i = 0; i < sizeof(raw); i++) {
        out[4 + 2 * i] = hex[raw[i] >> 4];
        out[5 + 2 * i] = hex[raw[i] & 15];
    }
    out[METER_TOKEN_LEN] = '\0';
    return 0;
}

void
meter_token_hash(const char *token, uint8_t out[32])
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    sha256_update(&ctx, strlen(token), (const uint8_t *)token);
    sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}
