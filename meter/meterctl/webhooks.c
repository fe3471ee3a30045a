/*
 * webhooks.c - `meterctl webhooks add|list|remove|deliveries`: the
 * endpoints events are sent to, and what became of each delivery
 * (docs/webhooks.md). A generated secret is printed once, when the
 * endpoint is added; listing never shows one. Adding and removing are
 * audited as the operator's (the table's trigger).
 */
#include "ctl_int.h"

#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "meter_webhook.h"

static int
webhooks_add(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"events", required_argument, NULL, 'e'},
        {"secret", required_argument, NULL, 's'},
        {NULL, 0, NULL, 0},
    };
    const char *events = NULL, *given = NULL;
    int opt;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt == 'e')
            events = optarg;
        else if (opt == 's')
            given = optarg;
        else
            return ctl_bad_option("webhooks add", argv);
    }
    if (optind + 1 != argc)
        return ctl_usage_error("webhooks add needs one URL");
    const char *url = argv[optind];
    size_t n = strlen(url);
    if ((strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) ||
        n > 2000 || n <= 8 || strpbrk(url, " \t\r\n\v\f"))
        return ctl_usage_error("webhooks add: '%s' is not an http or https "
                               "URL of at most 2000 bytes",
                               url);
    char bad[64];
    if (events && (!*events || !meter_webhook_types_valid(events, bad)))
        return ctl_usage_error(
            "webhooks add: --events '%s' holds '%s', which is not "
            "invoice.finalized, invoice.voided, invoice.run_failed, "
            "usage.unbilled or alert.triggered",
            events, *events ? bad : "");
    if (given && !meter_webhook_secret_valid(given))
        return ctl_usage_error("webhooks add: --secret is not whsec_ and the "
                               "base64 of 24 to 64 bytes (the value is not "
                               "shown)");
    char secret[METER_WEBHOOK_SECRET_MAX] = "";
    if (!given && meter_webhook_secret_new(secret) < 0) {
        struct meter_err e = {{0}};
        meter_fail(&e, "no random bytes for a secret");
        return ctl_failed(&e);
    }
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    int64_t id;
    int rc = 0;
    if (meter_db_webhook_add(db, url, events, given ? given : secret, &id, &e) <
        0) {
        rc = ctl_failed(&e);
    } else if (given) {
        printf("webhook %" PRId64 " added\n", id);
    } else {
        fprintf(stderr,
                "meterctl: webhook %" PRId64 " added; its secret is shown "
                "once:\n",
                id);
        printf("%s\n", secret);
    }
    explicit_bzero(secret, sizeof(secret));
    PQfinish(db);
    return rc;
}

static void
print_webhook_header(void)
{
    printf("%-6s %-21s %-21s %-8s %-9s %-6s %-36s %s\n", "id", "created",
           "removed", "pending", "delivered", "failed", "events", "url");
}

static void
print_webhook(const struct meter_webhook *w, void *arg)
{
    bool *headed = arg;
    if (!*headed)
        print_webhook_header();
    *headed = true;
    printf("%-6" PRId64 " %-21s %-21s %-8" PRId64 " %-9" PRId64 " %-6" PRId64
           " %-36s %s\n",
           w->id, w->created_at, w->disabled_at[0] ? w->disabled_at : "-",
           w->pending, w->delivered, w->failed,
           w->event_types[0] ? w->event_types : "all", w->url);
}

static int
webhooks_list(struct ctl *ctl, int argc, char **argv)
{
    if (argc > 1)
        return ctl_usage_error("webhooks list: unexpected argument '%s'",
                               argv[1]);
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    bool headed = false;
    int rc = 0;
    if (meter_db_webhook_list(db, print_webhook, &headed, &e) < 0)
        rc = ctl_failed(&e);
    else if (!headed)
        print_webhook_header();
    PQfinish(db);
    return rc;
}

static int
webhooks_remove(struct ctl *ctl, int argc, char **argv)
{
    uint64_t id;
    if (argc != 2)
        return ctl_usage_error("webhooks remove needs one webhook id");
    if (meter_parse_uint(argv[1], 1, INT64_MAX, &id) < 0)
        return ctl_usage_error("webhooks remove: '%s' is not a webhook id",
                               argv[1]);
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    int rc = 0;
    switch (meter_db_webhook_remove(db, (int64_t)id, &e)) {
    case METER_DB_ROWS:
        printf("webhook %" PRIu64 " removed\n", id);
        break;
    case METER_DB_NONE:
        fprintf(stderr, "meterctl: no live webhook %" PRIu64 "\n", id);
        rc = CTL_FAILED;
        break;
    default:
        rc = ctl_failed(&e);
    }
    PQfinish(db);
    return rc;
}

static void
print_delivery_header(void)
{
    printf("%-38s %-18s %-16s %-8s %-9s %-8s %-6s %-21s %s\n", "event", "type",
           "account", "endpoint", "state", "attempts", "status", "next try",
           "last error");
}

static void
print_delivery(const struct meter_webhook_delivery *d, void *arg)
{
    bool *headed = arg;
    if (!*headed)
        print_delivery_header();
    *headed = true;
    char status[16] = "-";
    if (d->last_status)
        snprintf(status, sizeof(status), "%d", d->last_status);
    printf("%-38s %-18s %-16s %-8" PRId64 " %-9s %-8d %-6s %-21s %s\n",
           d->event_id, d->type, d->account[0] ? d->account : "-",
           d->endpoint_id, d->state, d->attempts, status,
           d->next_attempt_at[0] ? d->next_attempt_at : "-",
           d->last_error[0] ? d->last_error : "-");
}

static int
webhooks_deliveries(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"event", required_argument, NULL, 'e'},
        {"endpoint", required_argument, NULL, 'p'},
        {"failed", no_argument, NULL, 'f'},
        {"limit", required_argument, NULL, 'l'},
        {NULL, 0, NULL, 0},
    };
    struct meter_webhook_filter f = {.limit = 1000};
    uint64_t v;
    int opt;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'e':
            f.event_id = optarg;
            break;
        case 'p':
            if (meter_parse_uint(optarg, 1, INT64_MAX, &v) < 0)
                return ctl_usage_error("webhooks deliveries: --endpoint '%s' "
                                       "is not a webhook id",
                                       optarg);
            f.endpoint_id = (int64_t)v;
            break;
        case 'f':
            f.failed = true;
            break;
        case 'l':
            if (meter_parse_uint(optarg, 1, 100000, &v) < 0)
                return ctl_usage_error("webhooks deliveries: --limit '%s' is "
                                       "not a number from 1 to 100000",
                                       optarg);
            f.limit = (int)v;
            break;
        default:
            return ctl_bad_option("webhooks deliveries", argv);
        }
    }
    if (optind < argc)
        return ctl_usage_error("webhooks deliveries: unexpected argument '%s'",
                               argv[optind]);
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    bool headed = false;
    int rc = 0;
    if (meter_db_webhook_deliveries(db, &f, print_delivery, &headed, &e) < 0)
        rc = ctl_failed(&e);
    else if (!headed)
        print_delivery_header();
    PQfinish(db);
    return rc;
}

int
ctl_webhooks(struct ctl *ctl, int argc, char **argv)
{
    if (argc < 2)
        return ctl_usage_error("webhooks needs a subcommand: add, list, "
                               "remove or deliveries");
    const char *sub = argv[1];
    if (strcmp(sub, "add") == 0)
        return webhooks_add(ctl, argc - 1, argv + 1);
    if (strcmp(sub, "list") == 0)
        return webhooks_list(ctl, argc - 1, argv + 1);
    if (strcmp(sub, "remove") == 0)
        return webhooks_remove(ctl, argc - 1, argv + 1);
    if (strcmp(sub, "deliveries") == 0)
        return webhooks_deliveries(ctl, argc - 1, argv + 1);
    return ctl_usage_error("unknown webhooks subcommand '%s'", sub);
}
