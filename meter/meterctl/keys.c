/*
 * keys.c - `meterctl keys create|list|revoke`: API keys. A token is
 * printed once, when created; the database keeps only its SHA-256.
 */
#include "ctl_int.h"

#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "pricing.h"

/* A host key's --accounts: ids separated by commas, each valid. */
static int
check_scope(const char *scope)
{
    char id[PRICING_ID_MAX + 2];
    for (const char *p = scope;; p++) {
        size_t n = strcspn(p, ",");
        if (n >= sizeof(id))
            return ctl_usage_error("keys create: --accounts '%s' holds an "
                                   "id longer than %d characters",
                                   scope, PRICING_ID_MAX);
        memcpy(id, p, n);
        id[n] = '\0';
        if (ctl_check_account("keys create", "--accounts", id))
            return CTL_USAGE;
        p += n;
        if (!*p)
            return 0;
    }
}

static int
keys_create(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"role", required_argument, NULL, 'r'},
        {"account", required_argument, NULL, 'a'},
        {"name", required_argument, NULL, 'n'},
        {"accounts", required_argument, NULL, 's'},
        {NULL, 0, NULL, 0},
    };
    const char *role_s = NULL, *account = NULL, *name = NULL, *scope = NULL;
    int opt;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'r':
            role_s = optarg;
            break;
        case 'a':
            account = optarg;
            break;
        case 'n':
            name = optarg;
            break;
        case 's':
            scope = optarg;
            break;
        default:
            return ctl_bad_option("keys create", argv);
        }
    }
    if (optind < argc)
        return ctl_usage_error("keys create: unexpected argument '%s'",
                               argv[optind]);
    if (!role_s || !name)
        return ctl_usage_error("keys create needs --role and --name");
    enum meter_role role = meter_role_parse(role_s);
    if (!role)
        return ctl_usage_error("keys create: --role '%s' is not host, "
                               "account, finance or admin",
                               role_s);
    if ((role == METER_ROLE_ACCOUNT) != (account != NULL))
        return ctl_usage_error("keys create: --account is required with "
                               "--role account, and only with it");
    if (account && ctl_check_account("keys create", "--account", account))
        return CTL_USAGE;
    if (scope && role != METER_ROLE_HOST)
        return ctl_usage_error("keys create: --accounts is for --role host "
                               "only");
    if (scope && check_scope(scope))
        return CTL_USAGE;
    if (!*name || strlen(name) > 200)
        return ctl_usage_error("keys create: --name must have 1-200 "
                               "characters");
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    char token[METER_TOKEN_LEN + 1];
    int64_t id;
    int rc = 0;
    if (meter_db_key_create(db, role, account, name, scope, token, &id, &e) <
        0) {
        rc = ctl_failed(&e);
    } else {
        fprintf(stderr,
                "meterctl: key %" PRId64 " created (role %s%s%s); the token "
                "is shown once:\n",
                id, role_s, account ? ", account " : "",
                account ? account : "");
        printf("%s\n", token);
    }
    PQfinish(db);
    return rc;
}

static void
print_header(void)
{
    printf("%-6s %-8s %-20s %-21s %-21s %s\n", "id", "role", "account",
           "created", "revoked", "name");
}

/* One key a line; the header before the first, once the query worked. */
static void
print_key(const struct meter_key *k, void *arg)
{
    bool *headed = arg;
    if (!*headed)
        print_header();
    *headed = true;
    /* A host key's accounts in the account column, cut to its width. */
    char scope[21];
    if (strlen(k->scope) >= sizeof(scope))
        snprintf(scope, sizeof(scope), "%.16s...", k->scope);
    else
        snprintf(scope, sizeof(scope), "%s", k->scope);
    printf("%-6" PRId64 " %-8s %-20s %-21s %-21s %s\n", k->key_id, k->role,
           k->account_id[0] ? k->account_id
           : scope[0]       ? scope
                            : "-",
           k->created_at, k->revoked_at[0] ? k->revoked_at : "-", k->name);
}

static int
keys_list(struct ctl *ctl)
{
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    int rc = 0;
    bool headed = false;
    if (meter_db_key_list(db, print_key, &headed, &e) < 0)
        rc = ctl_failed(&e);
    else if (!headed)
        print_header();
    PQfinish(db);
    return rc;
}

static int
keys_revoke(struct ctl *ctl, int argc, char **argv)
{
    uint64_t id;
    if (argc != 2)
        return ctl_usage_error("keys revoke needs one key id");
    if (meter_parse_uint(argv[1], 1, INT64_MAX, &id) < 0)
        return ctl_usage_error("keys revoke: '%s' is not a key id", argv[1]);
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    int rc = 0;
    switch (meter_db_key_revoke(db, (int64_t)id, &e)) {
    case METER_DB_ROWS:
        printf("key %" PRIu64 " revoked\n", id);
        break;
    case METER_DB_NONE:
        fprintf(stderr, "meterctl: no active key %" PRIu64 "\n", id);
        rc = CTL_FAILED;
        break;
    default:
        rc = ctl_failed(&e);
    }
    PQfinish(db);
    return rc;
}

int
ctl_keys(struct ctl *ctl, int argc, char **argv)
{
    if (argc < 2)
        return ctl_usage_error("keys needs a subcommand: create, list or "
                               "revoke");
    const char *sub = argv[1];
    if (strcmp(sub, "create") == 0)
        return keys_create(ctl, argc - 1, argv + 1);
    if (strcmp(sub, "revoke") == 0)
        return keys_revoke(ctl, argc - 1, argv + 1);
    if (strcmp(sub, "list") != 0)
        return ctl_usage_error("unknown keys subcommand '%s'", sub);
    if (argc > 2)
        return ctl_usage_error("keys list: unexpected argument '%s'", argv[2]);
    return keys_list(ctl);
}
