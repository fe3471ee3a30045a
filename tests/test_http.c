/*
 * test_http.c - the HTTP layer on its own, over real HTTP with routes of
 * the test's own (no database: none of them needs a key): path
 * parameters and query arguments, 404 and 405 with Allow, HEAD, body
 * routes (the cap, an empty body, gzip inflated and NUL-terminated, a
 * corrupt gzip, an encoding refused), a route's own admission, the
 * 500 for a handler or admission that forgets to answer; forms decoded
 * and malformed ones refused; a page without credentials sent to the
 * sign-in page with its way back; HTML replies with their security
 * headers, extra headers, redirects; log lines that never span lines,
 * as text or JSON, and a log file reopened after a rename. (Sessions
 * and CSRF need the database: tests/sessions.sh.)
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

/* Answers the form's fields a, b and c as "a=[...] b=[...] c=[...]". */
static void
echo_form(struct meter_http_request *rq)
{
    if (!meter_http_form_or_reply(rq))
        return;
    const char *names[] = {"a", "b", "c"};
    char text[256];
    size_t n = 0;
    for (size_t i = 0; i < 3; i++) {
        const char *v = meter_http_form(rq, names[i]);
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%s=[%s]",
                              i ? " " : "", names[i], v ? v : "(none)");
    }
    meter_http_reply_text(rq, 200, "text/plain", text, n);
}

/* A page with a cookie: the extra header, the HTML headers. */
static void
page(struct meter_http_request *rq)
{
    meter_http_reply_header(rq, "Set-Cookie", "x=1; HttpOnly");
    meter_http_reply_html(rq, 200, "<p>hi</p>", 9);
}

/* A header that cannot be one: the reply becomes a 500. */
static void
bad_header(struct meter_http_request *rq)
{
    meter_http_reply_header(rq, "Set-Cookie", "x=1\r\nX-Injected: yes");
    meter_http_reply_html(rq, 200, "<p>hi</p>", 9);
}

static void
redirect(struct meter_http_request *rq)
{
    meter_http_reply_redirect(rq, 303, "/elsewhere?a=1");
}

static const struct meter_http_route routes[] = {
    {"GET", "/v1/things/{id}", 0, false, NULL, echo_params, NULL, false},
    {"GET", "/v1/things/{id}/{kind}", 0, false, NULL, echo_params, NULL, false},
    {"POST", "/v1/body", 0, true, only_json, echo_body, NULL, false},
    {"PUT", "/v1/body", 0, true, NULL, echo_body, NULL, false},
    {"GET", "/v1/silent", 0, false, NULL, silent, NULL, false},
    {"GET", "/v1/refuses", 0, false, silent_refusal, echo_params, NULL, false},
    {"POST", "/v1/form", 0, true, NULL, echo_form, NULL, false},
    {"GET", "/v1/page", 0, false, NULL, page, NULL, true},
    {"GET", "/v1/bad-header", 0, false, NULL, bad_header, NULL, false},
    {"GET", "/v1/redirect", 0, false, NULL, redirect, NULL, false},
    /* With roles: no credentials is all these can be sent here (a
     * lookup needs the database, which this test has not). */
    {"GET", "/v1/finance/page", METER_ROLE_FINANCE, false, NULL, page, NULL,
     true},
    {"POST", "/v1/finance/page", METER_ROLE_FINANCE, true, NULL, page, NULL,
     true},
    {"GET", "/v1/finance/api", METER_ROLE_FINANCE, false, NULL, page, NULL,
     false},
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

/* The lines of file path into lines (at most max), each without its
 * newline; their number. */
static size_t
read_lines(const char *path, char lines[][1024], size_t max)
{
    FILE *f = fopen(path, "r");
    size_t n = 0;
    while (f && n < max && fgets(lines[n], 1024, f)) {
        lines[n][strcspn(lines[n], "\n")] = '\0';
        n++;
    }
    if (f)
        fclose(f);
    return n;
}

/* A message with newlines and control characters stays one line, text
 * or JSON; after a rename and meter_log_reopen, lines go to a new file
 * of the name. */
static void
test_log(void)
{
    char dir[] = "/tmp/test_http_log.XXXXXX", path[64], moved[80];
    char lines[8][1024];
    struct meter_err e = {{0}};
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/meterd.log", dir);
    snprintf(moved, sizeof(moved), "%s/meterd.log.1", dir);
    CHECK(meter_log_open(path, &e) == 0);
    meter_log(METER_LOG_ERROR, "ERROR:  syntax\nLINE 1: SELECT\r\x01 end");
    meter_log_set_format(METER_LOG_JSON);
    meter_log(METER_LOG_ERROR, "two\nlines \xff");
    CHECK(read_lines(path, lines, 8) == 2);
    CHECK(strstr(lines[0], " error ERROR:  syntax\\nLINE 1: SELECT\\r\\x01 "
                           "end") != NULL);
    json_error_t je;
    json_t *o = json_loads(lines[1], 0, &je);
    CHECK(o != NULL);
    CHECK(o && strcmp(json_string_value(json_object_get(o, "msg")),
                      "two\nlines ?") == 0);
    CHECK(o &&
          strcmp(json_string_value(json_object_get(o, "level")), "error") == 0);
    CHECK(o && json_is_string(json_object_get(o, "time")));
    json_decref(o);
    CHECK(rename(path, moved) == 0);
    CHECK(meter_log_reopen(&e) == 0);
    meter_log(METER_LOG_ERROR, "after");
    CHECK(read_lines(path, lines, 8) == 1);
    CHECK(strstr(lines[0], "\"msg\":\"after\"") != NULL);
    CHECK(read_lines(moved, lines, 8) == 2);
    CHECK(meter_log_parse_format("json") == METER_LOG_JSON);
    CHECK(meter_log_parse_format("text") == METER_LOG_TEXT);
    CHECK(meter_log_parse_format("xml") == -1);
    meter_log_set_format(METER_LOG_TEXT);
    unlink(path);
    unlink(moved);
    rmdir(dir);
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
    struct sockaddr_in *in4 = (struct sockaddr_in *)(void *)&cfg.listen;
    in4->sin_family = AF_INET;
    in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
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

    /* Forms: decoded ('+', %XX, in names too), the first of a repeated
     * field, empty and valueless fields; refused whole on a malformed
     * escape or a NUL, for another content type, past 64 fields. */
    const char *form = "Content-Type: application/x-www-form-urlencoded";
    static const struct {
        const char *body, *want;
        long status;
    } forms[] = {
        {"a=1&b=x+y%2Bz&c=%C3%A9", "a=[1] b=[x y+z] c=[\xc3\xa9]", 200},
        {"a=1&a=2&&b=&c", "a=[1] b=[] c=[]", 200},
        {"%61=%2f&b=%26%3D", "a=[/] b=[&=] c=[(none)]", 200},
        {"", "a=[(none)] b=[(none)] c=[(none)]", 200},
        {"a=%zz", "form field 'a': a malformed %-escape", 400},
        {"a=%4", "form field 'a': a malformed %-escape", 400},
        {"a=%", "form field 'a': a malformed %-escape", 400},
        {"a=x%00y", "form field 'a': a malformed %-escape (or %00)", 400},
        {"%zz=1", "a field's name has a malformed %-escape", 400},
    };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        r = request("POST", "/v1/form", forms[i].body, strlen(forms[i].body),
                    form, NULL);
        CHECK(reply_is(&r, forms[i].status, forms[i].want));
    }
    r = request("POST", "/v1/form", "a=1\0b=2", 7, form, NULL);
    CHECK(reply_is(&r, 400, "NUL byte"));
    r = request("POST", "/v1/form", "a=1", 3, "Content-Type: text/plain", NULL);
    CHECK(reply_is(&r, 415, "not a form"));
    char many[65 * 4 + 1];
    for (int i = 0; i < 65; i++)
        memcpy(many + 4 * i, "x=1&", 4);
    many[65 * 4] = '\0';
    r = request("POST", "/v1/form", many, strlen(many), form, NULL);
    CHECK(reply_is(&r, 400, "more than 64 fields"));

    /* HTML: the page's security headers, and the handler's own. */
    r = request("GET", "/v1/page", NULL, 0, NULL, NULL);
    CHECK(reply_is(&r, 200, "<p>hi</p>"));
    CHECK(strstr(r.headers, "Content-Type: text/html; charset=utf-8\r\n"));
    CHECK(strstr(r.headers,
                 "Content-Security-Policy: default-src 'none'; style-src "
                 "'self'; img-src 'self' data:; form-action 'self'; "
                 "frame-ancestors 'none'; base-uri 'none'\r\n"));
    CHECK(strstr(r.headers, "X-Content-Type-Options: nosniff\r\n"));
    CHECK(strstr(r.headers, "Referrer-Policy: same-origin\r\n"));
    CHECK(strstr(r.headers, "Cache-Control: no-store\r\n"));
    CHECK(strstr(r.headers, "Set-Cookie: x=1; HttpOnly\r\n"));
    r = request("GET", "/v1/bad-header", NULL, 0, NULL, NULL);
    CHECK(reply_is(&r, 500, "could not be made"));
    CHECK(!strstr(r.headers, "X-Injected") && !strstr(r.headers, "x=1"));
    r = request("GET", "/v1/redirect", NULL, 0, NULL, NULL);
    CHECK(r.status == 303 && r.len == 0);
    CHECK(strstr(r.headers, "Location: /elsewhere?a=1\r\n"));

    /* A page without credentials: to the sign-in page, with the way back
     * (path and query, encoded once more) for a GET, none for a POST;
     * an API route: 401. */
    r = request("GET", "/v1/finance/page?from=2026-01&x=a%20b&flag", NULL, 0,
                NULL, NULL);
    CHECK(r.status == 303);
    CHECK(strstr(r.headers, "Location: /sign-in?next=%2Fv1%2Ffinance%2Fpage"
                            "%3Ffrom%3D2026-01%26x%3Da%2520b%26flag\r\n"));
    r = request("POST", "/v1/finance/page", "csrf=x", 6, form, NULL);
    CHECK(r.status == 303 && strstr(r.headers, "Location: /sign-in\r\n"));
    r = request("GET", "/v1/finance/page", NULL, 0,
                "Authorization: Basic eA==", NULL);
    CHECK(r.status == 303);
    r = request("GET", "/v1/finance/api", NULL, 0, NULL, NULL);
    CHECK(reply_is(&r, 401, "or sign in at /sign-in"));

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
    in4->sin_port = htons((uint16_t)port);
    h = meter_http_start(&cfg, &e);
    CHECK(h != NULL);
    meter_http_stop(h);
    curl_global_cleanup();
    test_log(); /* last: the log goes to a file of its own from then on */
    return test_result();
}
