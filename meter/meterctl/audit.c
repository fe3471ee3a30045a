/*
 * audit.c - `meterctl audit [--after ID] [--limit N] [--format
 * table|json]`: the audit log, oldest first (meter_db_audit_list). The
 * log is append-only; what goes in it is listed in docs/reliability.md.
 */
#include "ctl_int.h"

#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include <jansson.h>

static void
print_table(const struct meter_audit_entry *x, void *arg)
{
    (void)arg;
    printf("%-6" PRId64 " %-27s %-24s %-22s %-16s %-20s %s\n", x->id, x->at,
           x->actor, x->action, x->account[0] ? x->account : "-", x->subject,
           x->detail);
}

static void
print_json(const struct meter_audit_entry *x, void *arg)
{
    (void)arg;
    json_t *detail = json_loads(x->detail, 0, NULL);
    json_t *o = json_pack("{s:I,s:s,s:s,s:s,s:s,s:s?,s:s,s:o?}", "id",
                          (json_int_t)x->id, "at", x->at, "actor", x->actor,
                          "db_user", x->db_user, "action", x->action,
                          "account_id", x->account[0] ? x->account : NULL,
                          "subject", x->subject, "detail", detail);
    char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (line)
        puts(line);
    free(line);
    json_decref(o);
}

int
ctl_audit(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"after", required_argument, NULL, 'a'},
        {"limit", required_argument, NULL, 'l'},
        {"format", required_argument, NULL, 'f'},
        {NULL, 0, NULL, 0},
    };
    uint64_t after = 0, limit = 1000;
    bool json = false;
    int opt;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'a':
            if (meter_parse_uint(optarg, 0, INT64_MAX, &after) < 0)
                return ctl_usage_error("audit: --after '%s' is not an entry "
                                       "number",
                                       optarg);
            break;
        case 'l':
            if (meter_parse_uint(optarg, 1, 100000, &limit) < 0)
                return ctl_usage_error("audit: --limit '%s' is not from 1 "
                                       "to 100000",
                                       optarg);
            break;
        case 'f':
            if (strcmp(optarg, "json") != 0 && strcmp(optarg, "table") != 0)
                return ctl_usage_error("audit: --format '%s' is not json or "
                                       "table",
                                       optarg);
            json = optarg[0] == 'j';
            break;
        default:
            return ctl_bad_option("audit", argv);
        }
    }
    if (optind < argc)
        return ctl_usage_error("audit: unexpected argument '%s'", argv[optind]);
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    if (!json)
        printf("%-6s %-27s %-24s %-22s %-16s %-20s %s\n", "ID", "AT", "ACTOR",
               "ACTION", "ACCOUNT", "SUBJECT", "DETAIL");
    int rc = meter_db_audit_list(db, (int64_t)after, (int)limit,
                                 json ? print_json : print_table, NULL, &e) < 0
                 ? ctl_failed(&e)
                 : 0;
    PQfinish(db);
    return rc;
}
