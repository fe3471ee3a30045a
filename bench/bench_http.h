/*
 * bench_http.h - what the benches that run meterd share over HTTP:
 * waiting for the meterd they started to be ready.
 */
#ifndef BENCH_HTTP_H
#define BENCH_HTTP_H

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline size_t
bench_http_discard(char *d, size_t s, size_t n, void *a)
{
    (void)d;
    (void)a;
    return s * n;
}

/* Waits until meterd answers /readyz on listen (IPV4:PORT), 10 s at
 * most; exits naming it if it does not. */
static inline void
bench_wait_ready(const char *listen)
{
    char url[128];
    snprintf(url, sizeof(url), "http://%s/readyz", listen);
    for (int i = 0;; i++) {
        CURL *c = curl_easy_init();
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, bench_http_discard);
        curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
        CURLcode rc = curl_easy_perform(c);
        curl_easy_cleanup(c);
        if (rc == CURLE_OK)
            return;
        if (i > 100) {
            fprintf(stderr, "bench: meterd on %s is not ready after 10 s\n",
                    listen);
            exit(1);
        }
        usleep(100000);
    }
}

#endif
