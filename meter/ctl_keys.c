/*
 * ctl_keys.c - `meterctl keys create|list|revoke`: API keys. A token is
 * printed once, when created; the database keeps only its SHA-256.
 */
#include "ctl_int.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static int
keys_create(PGconn *db, int argc, char **argv)
{
    static const struct option opts[] = {
        {"role", required_argument, NULL, 'r'},
        {"account", required_argument, NULL, 'a'},
        {"name", required_argument, NULL, 'n'},
        {NULL, 0, NULL, 0},
    };
    const char *role = NULL, *account = NULL, *name = NULL;
    int opt;
    optind = 0; /* 0: glibc re-initializes, permuting again */
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'r':
            role = optarg;
            break;
        case 'a':
            account = optarg;
            break;
        case 'n':
            name = optarg;
            break;
        default:
            return ctl_usage_error("keys create: unknown or incomplete "
                                   "option '%s'",
                                   argv[optind - 1]);
        }
    }
    if (optind < argc)
        return ctl_usage_error("keys create: unexpected argument '%s'",
                               argv[optind]);
    if (!role || !name)
        return ctl_usage_error("keys create needs --role and --name");
    if (strcmp(role, "host") != 0 && strcmp(role, "account") != 0 &&
        strcmp(role, "finance") != 0 && strcmp(role, "admin") != 0)
        return ctl_usage_error("keys create: --role '%s' is not host, "
                               "account, finance or admin",
                               role);
    if ((strcmp(role, "account") == 0) != (account != NULL))
        return ctl_usage_error("keys create: --account is required with "
                               "--role account, and only with it");
    if (account && !pricing_id_valid(account))
        return ctl_usage_error("keys create: --account '%s' is not 1-64 of "
                               "A-Za-z0-9._:-",
                               account);
    if (!*name || strlen(name) > 200)
        return ctl_usage_error("keys create: --name must have 1-200 "
                               "characters");

    char token[METER_TOKEN_LEN + 1];
    uint8_t hash[32];
    if (meter_token_new(token) < 0) {
        fprintf(stderr, "meterctl: no random bytes for a token\n");
        return CTL_FAILED;
    }
    meter_token_hash(token, hash);
    const char *values[] = {role, account, name, (const char *)hash};
    int lengths[] = {0, 0, 0, 32}, formats[] = {0, 0, 0, 1};
    PGresult *r = PQexecParams(
        db,
        "WITH acct AS (INSERT INTO accounts (account_id) SELECT $2::text"
        "  WHERE $2::text IS NOT NULL ON CONFLICT DO NOTHING)"
        " INSERT INTO api_keys (role, account_id, name, token_hash)"
        " VALUES ($1, $2, $3, $4) RETURNING key_id",
        4, NULL, values, lengths, formats, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "meterctl: cannot create the key: %s",
                PQerrorMessage(db));
        PQclear(r);
        return CTL_FAILED;
    }
    fprintf(stderr,
            "meterctl: key %s created (role %s%s%s); the token is shown "
            "once:\n",
            PQgetvalue(r, 0, 0), role, account ? ", account " : "",
            account ? account : "");
    printf("%s\n", token);
    PQclear(r);
    return 0;
}

static int
keys_list(PGconn *db)
{
    PGresult *r =
        PQexec(db, "SELECT key_id, role, coalesce(account_id, '-'), name,"
                   " to_char(created_at AT TIME ZONE 'UTC',"
                   "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
                   " coalesce(to_char(revoked_at AT TIME ZONE 'UTC',"
                   "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), '-')"
                   " FROM api_keys ORDER BY key_id");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "meterctl: cannot list keys: %s", PQerrorMessage(db));
        PQclear(r);
        return CTL_FAILED;
    }
    printf("%-6s %-8s %-20s %-21s %-21s %s\n", "id", "role", "account",
           "created", "revoked", "name");
    for (int i = 0; i < PQntuples(r); i++)
        printf("%-6s %-8s %-20s %-21s %-21s %s\n", PQgetvalue(r, i, 0),
               PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), PQgetvalue(r, i, 4),
               PQgetvalue(r, i, 5), PQgetvalue(r, i, 3));
    PQclear(r);
    return 0;
}

static int
keys_revoke(PGconn *db, int argc, char **argv)
{
    if (argc != 2)
        return ctl_usage_error("keys revoke needs one key id");
    char *end;
    long id = strtol(argv[1], &end, 10);
    if (*end || id <= 0 || argv[1][0] == '\0')
        return ctl_usage_error("keys revoke: '%s' is not a key id", argv[1]);
    const char *values[] = {argv[1]};
    PGresult *r = PQexecParams(db,
                               "UPDATE api_keys SET revoked_at = now()"
                               " WHERE key_id = $1 AND revoked_at IS NULL"
                               " RETURNING key_id",
                               1, NULL, values, NULL, NULL, 0);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "meterctl: cannot revoke key %ld: %s", id,
                PQerrorMessage(db));
        rc = CTL_FAILED;
    } else if (PQntuples(r) == 0) {
        fprintf(stderr, "meterctl: no active key %ld\n", id);
        rc = CTL_FAILED;
    } else {
        printf("key %ld revoked\n", id);
    }
    PQclear(r);
    return rc;
}

int
ctl_keys(const char *conninfo, int argc, char **argv)
{
    if (argc < 2)
        return ctl_usage_error("keys needs a subcommand: create, list or "
                               "revoke");
    const char *sub = argv[1];
    if (strcmp(sub, "create") != 0 && strcmp(sub, "list") != 0 &&
        strcmp(sub, "revoke") != 0)
        return ctl_usage_error("unknown keys subcommand '%s'", sub);
    if (strcmp(sub, "list") == 0 && argc > 2)
        return ctl_usage_error("keys list: unexpected argument '%s'", argv[2]);
    struct meter_err e = {{0}};
    PGconn *db = meter_db_connect(conninfo, &e);
    if (!db) {
        fprintf(stderr, "meterctl: %s\n", e.msg);
        return CTL_FAILED;
    }
    int rc = strcmp(sub, "create") == 0 ? keys_create(db, argc - 1, argv + 1)
             : strcmp(sub, "list") == 0 ? keys_list(db)
                                        : keys_revoke(db, argc - 1, argv + 1);
    PQfinish(db);
    return rc;
}
