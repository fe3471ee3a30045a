/*
 * test_http.c - the HTTP layer on its own, over real HTTP with routes of
 * the test's own (no database: none of them needs a key): path
 * parameters and query arguments, 404 and 405 with Allow, HEAD, body
 * routes (the cap, an empty body, gzip inflated and NUL-terminated, a
 * corrupt gzip, an encoding refused), a route's own admission, and the
 * 500 for a handler or admission that forgets to answer.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "meter_http.h"
#include "testutil.h"

static void
echo_params(struct meter_http_request *rq)
{
    const char *id = meter_http_param(rq, "id");
    const char *kind = meter_http_param(rq, "kind");
    const char *q = meter_http_query(rq, "q");
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(id ? id : "(none)"));
    json_object_set_new(o, "kind", json_string(kind ? kind : "(none)"));
    json_object_set_new(o, "q", json_string(q ? q : "(none)"));
    json_object_set_new(o, "who", json_boolean(meter_http_principal(rq)));
    meter_http_reply_json(rq, 200, o);
}

/* Answers the body's length and whether it is NUL-terminated. */
static void
echo_body(struct meter_http_request *rq)
{
    size_t len;
    const char *body = meter_http_body(rq, &len);
    char text[64];
    int n = snprintf(text, sizeof(text), "%zu %s", len,
                     body && body[len] == '\0' ? "nul" : "no-nul");
    meter_http_reply_text(rq, 200, "text/plain", text, (size_t)n);
}

static bool
only_json(struct meter_http_request *rq)
{
    if (meter_http_header_is(rq, "Content-Type", "application/json"))
        return true;
    meter_http_reply_problem(rq, 415, "unsupported-media-type", "No", NULL,
                             "want json");
    return false;
}

static void
silent(struct meter_http_request *rq)
{
    (void)rq; /* forgets to answer */
}

static bool
silent_refusal(struct meter_http_request *rq)
{
    (void)rq;
    return false;
}

static const struct meter_http_route routes[] = {
    {"GET", "/v1/things/{id}", 0, false, NULL, echo_params, NULL},
    {"GET", "/v1/things/{id}/{kind}", 0, false, NULL, echo_params, NULL},
    {"POST", "/v1/body", 0, true, only_json, echo_body, NULL},
    {"PUT", "/v1/body", 0, true, NULL, echo_body, NULL},
    {"GET", "/v1/silent", 0, false, NULL, silent, NULL},
    {"GET", "/v1/refuses", 0, false, silent_refusal, echo_params, NULL},
};

static unsigned port;

struct reply {
    long status;
    char body[512];
    size_t len;
    char headers[2048];
    size_t hlen;
};

static size_t
keep(char *d, size_t s, size_t n, void *arg)
{
    struct reply *r = arg;
    size_t k = s * n;
    if (r->len + k < sizeof(r->body)) {
        memcpy(r->body + r->len, d, k);
        r->len += k;
        r->body[r->len] = '\0';
    }
    return s * n;
}

static size_t
keep_header(char *d, size_t s, size_t n, void *arg)
{
    struct reply *r = arg;
    size_t k = s * n;
    if (r->hlen + k < sizeof(r->headers)) {
        memcpy(r->headers + r->hlen, d, k);
        r->hlen += k;
        r->headers[r->hlen] = '\0';
    }
    return k;
}

/* A request: method, path, then body (may be NULL) of len bytes and up
 * to two extra headers. */
static struct reply
request(const char *method, const char *path, const char *body, size_t len,
        const char *h1, const char *h2)
{
    struct reply r;
    memset(&r, 0, sizeof(r));
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", port, path);
    CURL *c = curl_easy_init();
    struct curl_slist *hs = NULL;
    if (h1)
        hs = curl_slist_append(hs, h1);
    if (h2)
        hs = curl_slist_append(hs, h2);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, keep_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK)
        fprintf(stderr, "%s %s: %s\n", method, path, curl_easy_strerror(rc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(hs);
    curl_easy_cleanup(c);
    return r;
}

static bool
reply_is(const struct reply *r, long status, const char *needle)
{
    bool ok = r->status == status && strstr(r->body, needle) != NULL;
    if (!ok)
        fprintf(stderr, "got %ld %s, want %ld with '%s'\n", r->status, r->body,
                status, needle);
    return ok;
}

/* gzip of text into out (room n); returns the length. */
static size_t
gzip(const char *text, size_t len, unsigned char *out, size_t n)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    z.next_in = (unsigned char *)(uintptr_t)text;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)n;
    deflate(&z, Z_FINISH);
    size_t got = z.total_out;
    deflateEnd(&z);
    return got;
}

int
main(void)
{
    struct meter_err e = {{0}};
    struct meter_http_config cfg = {
        .conninfo = "host=/nonexistent", /* no route here needs it */
        .max_body = 4096,
        .max_buffered = 1 << 20,
        .threads = 2,
        .routes = routes,
        .nroutes = sizeof(routes) / sizeof(routes[0]),
    };
    cfg.listen.sin_family = AF_INET;
    cfg.listen.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    meter_log_set_level(METER_LOG_ERROR);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct meter_http *h = meter_http_start(&cfg, &e);
    if (!h) {
        fprintf(stderr, "cannot start: %s\n", e.msg);
        return 1;
    }
    port = meter_http_port(h);
    CHECK(port > 0);

    /* Path parameters, query arguments; no principal without roles. */
    struct reply r =
        request("GET", "/v1/things/42?q=x%20y", NULL, 0, NULL, NULL);
    CHECK(reply_is(&r, 200, "\"id\":\"42\",\"kind\":\"(none)\",\"q\":\"x y\""));
    CHECK(strstr(r.body, "\"who\":false") != NULL);
    r = request("GET", "/v1/things/a/b", NULL, 0, NULL, NULL);
    CHECK(reply_is(&r, 200, "\"id\":\"a\",\"kind\":\"b\",\"q\":\"(none)\""));
    r = request("GET", "/v1/things/", NULL, 0, NULL, NULL); /* empty segment */
    CHECK(reply_is(&r, 404, "urn:meter:problem:not-found"));
    r = request("GET", "/v1/things/a/b/c", NULL, 0, NULL, NULL);
    CHECK(reply_is(&r, 404, "no such route"));
    r = request("HEAD", "/v1/things/1", NULL, 0, NULL, NULL);
    CHECK(r.status == 200 && r.len == 0);

    /* 405 names every method of the path. */
    r = request("DELETE", "/v1/body", NULL, 0, NULL, NULL);
    CHECK(reply_is(&r, 405, "use POST, PUT"));
    CHECK(strstr(r.headers, "Allow: POST, PUT") != NULL);

    /* Bodies: kept whole, NUL-terminated; the cap, both sides. */
    char big[4097];
    memset(big, 'a', sizeof(big));
    r = request("PUT", "/v1/body", big, 4096, NULL, NULL);
    CHECK(reply_is(&r, 200, "4096 nul"));
    r = request("PUT", "/v1/body", big, 4097, NULL, NULL);
    CHECK(reply_is(&r, 413, "larger than 4096 bytes"));
    r = request("PUT", "/v1/body", "", 0, NULL, NULL);
    CHECK(reply_is(&r, 200, "0 nul"));
    /* The route's own admission runs before the body. */
    r = request("POST", "/v1/body", "{}", 2, "Content-Type: text/plain", NULL);
    CHECK(reply_is(&r, 415, "want json"));
    r = request("POST", "/v1/body", "{}", 2, "Content-Type: application/json",
                NULL);
    CHECK(reply_is(&r, 200, "2 nul"));

    /* gzip: inflated (exactly filling the buffer, still NUL-terminated),
     * refused past the cap once inflated, corrupt refused. */
    unsigned char z[512];
    size_t zn = gzip(big, 4096, z, sizeof(z));
    r = request("PUT", "/v1/body", (char *)z, zn, "Content-Encoding: gzip",
                NULL);
    CHECK(reply_is(&r, 200, "4096 nul"));
    zn = gzip(big, 100, z, sizeof(z)); /* a buffer with room after it */
    r = request("PUT", "/v1/body", (char *)z, zn, "Content-Encoding: gzip",
                NULL);
    CHECK(reply_is(&r, 200, "100 nul"));
    zn = gzip(big, 4097, z, sizeof(z));
    r = request("PUT", "/v1/body", (char *)z, zn, "Content-Encoding: gzip",
                NULL);
    CHECK(reply_is(&r, 413, "inflates to more than 4096 bytes"));
    r = request("PUT", "/v1/body", "nonsense", 8, "Content-Encoding: gzip",
                NULL);
    CHECK(reply_is(&r, 400, "invalid-gzip"));
    r = request("PUT", "/v1/body", "x", 1, "Content-Encoding: br", NULL);
    CHECK(reply_is(&r, 415, "content encoding 'br'"));

    /* Forgetting to answer is a 500, not a hang. */
    r = request("GET", "/v1/silent", NULL, 0, NULL, NULL);
    CHECK(reply_is(&r, 500, "not answered"));
    r = request("GET", "/v1/refuses", NULL, 0, NULL, NULL);
    CHECK(reply_is(&r, 500, "refused unanswered"));

    /* Metrics by route: the 200s of the first route, the 404s as other. */
    struct meter_buf m = {0};
    meter_http_metrics(h, &m);
    CHECK(strstr(m.p, "meter_requests_total{route=\"/v1/things/{id}\","
                      "method=\"GET\",status=\"200\"} 2") != NULL);
    CHECK(strstr(m.p, "meter_requests_total{route=\"other\",method=\"\","
                      "status=\"404\"} 2") != NULL);
    CHECK(strstr(m.p, "meter_buffered_bytes 0") != NULL);
    meter_buf_release(&m);

    /* Stopped, the port is free again: a new server can take it. */
    meter_http_stop(h);
    cfg.listen.sin_port = htons((uint16_t)port);
    h = meter_http_start(&cfg, &e);
    CHECK(h != NULL);
    meter_http_stop(h);
    curl_global_cleanup();
    return test_result();
}
