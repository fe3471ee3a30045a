/*
 * gen.c - `meterctl gen`: a generated fleet (simulator/fleet.c), written
 * as NDJSON or pushed to meterd in columnar batches, at a given rate or
 * as fast as possible, retrying on 503.
 */
#include "ctl_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "meter_sample.h"
#include "sim.h"

struct out_file {
    FILE *f;
    char line[1024];
};

static void
write_ndjson(const char *account, const char *sandbox,
             const struct pricing_second *s, size_t n, void *arg)
{
    struct out_file *o = arg;
    for (size_t i = 0; i < n; i++) {
        meter_sample_format(o->line, sizeof(o->line), account, sandbox, &s[i]);
        fputs(o->line, o->f);
    }
}

static void
add_columnar(const char *account, const char *sandbox,
             const struct pricing_second *s, size_t n, void *arg)
{
    meter_columnar_add(arg, account, sandbox, s, n);
}

/* Keeps the first 4 kB of a reply, for the error message. */
static size_t
keep_reply(char *data, size_t size, size_t n, void *arg)
{
    struct meter_buf *t = arg;
    if (t->len < 4096)
        meter_buf_add(t, data, size * n < 4096 ? size * n : 4096);
    return size * n;
}

/* POSTs body; retries on 503 and connection errors, up to a minute. */
static int
post(CURL *curl, const char *url, struct curl_slist *headers,
     const struct meter_buf *body)
{
    for (int attempt = 0;; attempt++) {
        struct meter_buf reply = {0};
        curl_easy_setopt(curl, CURLOPT_URL, url);
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->p);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)body->len);
        curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, keep_reply);
        curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
        CURLcode rc = curl_easy_perform(curl);
        long status = 0;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        if (rc == CURLE_OK && status == 200) {
            meter_buf_release(&reply);
            return 0;
        }
        bool retry = rc != CURLE_OK || status == 503;
        if (!retry || attempt >= 30) {
            fprintf(stderr, "meterctl: POST %s: %s%ld %s\n", url,
                    rc != CURLE_OK ? curl_easy_strerror(rc) : "HTTP ",
                    rc != CURLE_OK ? 0L : status, reply.p ? reply.p : "");
            meter_buf_release(&reply);
            return -1;
        }
        meter_buf_release(&reply);
        sleep(2); /* the service's Retry-After */
    }
}

int
ctl_gen(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"sandboxes", required_argument, NULL, 'n'},
        {"accounts", required_argument, NULL, 'a'},
        {"seconds", required_argument, NULL, 's'},
        {"start", required_argument, NULL, 't'},
        {"seed", required_argument, NULL, 'S'},
        {"output", required_argument, NULL, 'o'},
        {"push", required_argument, NULL, 'p'},
        {"token", required_argument, NULL, 'k'},
        {"batch-seconds", required_argument, NULL, 'b'},
        {"rate", required_argument, NULL, 'r'},
        {"follow", no_argument, NULL, 'f'},
        {NULL, 0, NULL, 0},
    };
    uint64_t sandboxes = 100, accounts = 10, seconds = 60, seed = 1, batch = 10,
             rate = 0;
    long long start = (long long)time(NULL);
    const char *output = NULL, *url = NULL, *token = getenv("METER_TOKEN");
    bool follow = false;
    int opt;
    (void)ctl; /* gen needs no database */
    ctl_getopt_reset();
    int which = 0;
    while ((opt = getopt_long(argc, argv, "", opts, &which)) != -1) {
        uint64_t *target = NULL;
        switch (opt) {
        case 'n':
            target = &sandboxes;
            break;
        case 'a':
            target = &accounts;
            break;
        case 's':
            target = &seconds;
            break;
        case 'S':
            target = &seed;
            break;
        case 'b':
            target = &batch;
            break;
        case 'r':
            target = &rate;
            break;
        case 't': {
            int64_t ts;
            if (ctl_parse_time("gen", "--start", optarg, &ts))
                return CTL_USAGE;
            start = ts;
            break;
        }
        case 'o':
            output = optarg;
            break;
        case 'p':
            url = optarg;
            break;
        case 'k':
            token = optarg;
            break;
        case 'f':
            follow = true;
            break;
        default:
            return ctl_bad_option("gen", argv);
        }
        if (target && meter_parse_uint(optarg, 0, UINT64_MAX, target) < 0)
            return ctl_usage_error("gen: --%s '%s' is not a number",
                                   opts[which].name, optarg);
    }
    if (optind < argc)
        return ctl_usage_error("gen: unexpected argument '%s'", argv[optind]);
    if (sandboxes < 1 || sandboxes > 1000000 || accounts < 1 || batch < 1 ||
        batch > 3600)
        return ctl_usage_error("gen: --sandboxes 1-1000000, --accounts >= 1, "
                               "--batch-seconds 1-3600");
    if (url && !token)
        return ctl_usage_error("gen: --push needs --token (or METER_TOKEN), "
                               "a key of role host");
    if (url && output)
        return ctl_usage_error("gen: --push and --output exclude each other");

    struct sim_fleet *fleet =
        sim_fleet_new(seed, sandboxes, accounts, (int64_t)start);
    if (!fleet) {
        fprintf(stderr, "meterctl: out of memory\n");
        return CTL_FAILED;
    }
    int rc = CTL_FAILED;
    if (!url) {
        struct out_file o = {output ? fopen(output, "w") : stdout, ""};
        if (!o.f) {
            fprintf(stderr, "meterctl: cannot write '%s': %s\n", output,
                    strerror(errno));
            goto out;
        }
        for (uint64_t done = 0; done < seconds;) {
            uint32_t step =
                (uint32_t)(seconds - done < 3600 ? seconds - done : 3600);
            sim_fleet_next(fleet, step, write_ndjson, &o);
            done += step;
        }
        bool bad = ferror(o.f) != 0;
        if (o.f != stdout)
            bad |= fclose(o.f) != 0;
        else
            bad |= fflush(stdout) != 0;
        if (bad) {
            fprintf(stderr, "meterctl: cannot write the samples\n");
            goto out;
        }
        rc = 0;
        goto out;
    }

    /* Push: windows of batch seconds, one columnar body each. */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *curl = curl_easy_init();
    char auth[128];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
    struct curl_slist *headers = NULL;
    headers = curl_slist_append(headers, auth);
    headers = curl_slist_append(headers, "Content-Type: application/json");
    struct meter_columnar body = {0};
    unsigned long long sent = 0;
    double t0 = ctl_now();
    for (uint64_t done = 0; follow || done < seconds;) {
        uint32_t step =
            (uint32_t)(!follow && seconds - done < batch ? seconds - done
                                                         : batch);
        if (follow) { /* a live fleet: wait for the window to pass */
            int64_t ahead = sim_fleet_now(fleet) + step - (int64_t)time(NULL);
            if (ahead > 0)
                sleep((unsigned)ahead);
        }
        meter_columnar_begin(&body);
        size_t n = sim_fleet_next(fleet, step, add_columnar, &body);
        meter_columnar_end(&body);
        done += step;
        if (body.body.failed) {
            fprintf(stderr, "meterctl: out of memory\n");
            break;
        }
        if (n && post(curl, url, headers, &body.body) < 0)
            break;
        sent += n;
        if (rate) { /* keep to the rate */
            double due = (double)sent / (double)rate - (ctl_now() - t0);
            if (due > 0)
                usleep((useconds_t)(due * 1e6));
        }
        if (!follow && done >= seconds)
            rc = 0;
    }
    double secs = ctl_now() - t0;
    fprintf(stderr,
            "meterctl: pushed %llu samples in %.1f s (%.0f samples/s)\n", sent,
            secs, secs > 0 ? (double)sent / secs : 0.0);
    meter_buf_release(&body.body);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    curl_global_cleanup();
out:
    sim_fleet_free(fleet);
    return rc;
}
