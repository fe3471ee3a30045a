/*
 * ctl_int.h - shared by the files of meterctl, one file a command;
 * private.
 *
 * Exit statuses: 0 done, 1 failed (the message says why), 2 usage error.
 */
#ifndef CTL_INT_H
#define CTL_INT_H

#include <stdio.h>

#include "meter_db.h"
#include "meter_util.h"

enum { CTL_FAILED = 1, CTL_USAGE = 2 };

/* What every command receives besides its arguments. */
struct ctl {
    const char *db; /* --db, or NULL: $METER_DATABASE_URL, else the
                       embedded database (started only by 'db start'
                       and 'db url') */
};

/* A command: argv[0] is its name. Returns the exit status. */
typedef int ctl_command(struct ctl *ctl, int argc, char **argv);

ctl_command ctl_db, ctl_migrate, ctl_rate, ctl_books, ctl_accounts, ctl_keys,
    ctl_export, ctl_gen, ctl_invoice, ctl_usage, ctl_credits, ctl_audit,
    ctl_shard, ctl_webhooks;

/* ---- argument helpers (args.c) ------------------------------------------ */

/* Prints "meterctl: MESSAGE" and a hint to stderr; returns CTL_USAGE. */
int ctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "meterctl: " and e's message; returns CTL_FAILED. */
int ctl_failed(const struct meter_err *e);

/* Starts getopt_long over a command's arguments (argv[0] its name). */
void ctl_getopt_reset(void);
/* The usage error for the option getopt_long just refused. */
int ctl_bad_option(const char *cmd, char **argv);

/* Checks an account id argument; a usage error names the option. */
int ctl_check_account(const char *cmd, const char *option, const char *id);
/* Parses a time option (Unix seconds or RFC 3339); a usage error names
 * the option and the value. */
int ctl_parse_time(const char *cmd, const char *option, const char *s,
                   int64_t *out);

/* Reads and validates the price book of file path: the book, and its
 * text in *text (malloc'd) when text is not NULL. Prints the error
 * (file, key path, value); NULL on failure. */
struct pricing_book *ctl_read_book(const char *path, char **text);

/* Seconds on the monotonic clock, for rates and progress. */
double ctl_now(void);

/* Names the operator (meterctl:USER) as the session's actor in the
 * audit log. Thread-safe. */
int ctl_set_actor(PGconn *db, struct meter_err *e);

/* Connects to the database of ctl for daily work (meter_db_conninfo:
 * the embedded cluster's worker role), as the operator (ctl_set_actor);
 * prints the error. NULL on failure. */
PGconn *ctl_connect(const struct ctl *ctl);
/* The same as the schema's owner (meter_db_owner_conninfo), for the
 * maintenance commands: usage compact (its VACUUM). */
PGconn *ctl_connect_owner(const struct ctl *ctl);

#endif
