/*
 * args.c - the argument helpers every meterctl command shares: usage
 * errors, option parsing, ids, times, and the database connection.
 */
#include "ctl_int.h"

#include <getopt.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "pricing.h"

int
ctl_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("meterctl: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nrun 'meterctl help' for usage\n", stderr);
    return CTL_USAGE;
}

int
ctl_failed(const struct meter_err *e)
{
    fprintf(stderr, "meterctl: %s\n", e->msg);
    return CTL_FAILED;
}

void
ctl_getopt_reset(void)
{
    optind = 0; /* 0: glibc re-initializes, permuting again */
    opterr = 0;
}

int
ctl_bad_option(const char *cmd, char **argv)
{
    return ctl_usage_error("%s: unknown or incomplete option '%s'", cmd,
                           argv[optind - 1]);
}

int
ctl_check_account(const char *cmd, const char *option, const char *id)
{
    if (pricing_id_valid(id))
        return 0;
    return ctl_usage_error("%s: %s%s'%s' is not 1-64 of A-Za-z0-9._:-", cmd,
                           option, *option ? " " : "", id);
}

int
ctl_parse_time(const char *cmd, const char *option, const char *s, int64_t *out)
{
    if (meter_time_parse(s, out) == 0)
        return 0;
    return ctl_usage_error("%s: %s '%s' is not Unix seconds or "
                           "YYYY-MM-DDTHH:MM:SSZ",
                           cmd, option, s);
}

int
ctl_set_actor(PGconn *db, struct meter_err *e)
{
    /* The operator: the user running meterctl, or, as root through
     * sudo, the user sudo names (believed only then: anyone can set the
     * variable). */
    const char *sudo = geteuid() == 0 ? getenv("SUDO_USER") : NULL;
    struct passwd pwd, *pw = NULL;
    char buf[1024], actor[160];
    if (sudo && *sudo)
        snprintf(actor, sizeof(actor), "meterctl:%s (sudo)", sudo);
    else if (getpwuid_r(getuid(), &pwd, buf, sizeof(buf), &pw) == 0 && pw)
        snprintf(actor, sizeof(actor), "meterctl:%s", pw->pw_name);
    else
        snprintf(actor, sizeof(actor), "meterctl:uid %u", (unsigned)getuid());
    return meter_db_set_actor(db, actor, e) < 0 ? -1 : 0;
}

static PGconn *
connect_as(const struct ctl *ctl, bool owner)
{
    struct meter_err e = {{0}};
    char *conninfo = NULL;
    PGconn *db = NULL;
    if ((owner ? meter_db_owner_conninfo(ctl->db, &conninfo, &e)
               : meter_db_conninfo(ctl->db, &conninfo, &e)) < 0 ||
        !(db = meter_db_connect(conninfo, &e)) || ctl_set_actor(db, &e) < 0) {
        ctl_failed(&e);
        PQfinish(db);
        db = NULL;
    }
    free(conninfo);
    return db;
}

PGconn *
ctl_connect(const struct ctl *ctl)
{
    return connect_as(ctl, false);
}

PGconn *
ctl_connect_owner(const struct ctl *ctl)
{
    return connect_as(ctl, true);
}

/* A price book's text is at most this long. */
#define BOOK_MAX ((size_t)1 << 20)

struct pricing_book *
ctl_read_book(const char *path, char **text)
{
    struct meter_err e = {{0}};
    struct pricing_err pe = {{0}};
    char *t;
    size_t len;
    if (meter_file_read(path, BOOK_MAX, &t, &len, &e) < 0) {
        ctl_failed(&e);
        return NULL;
    }
    struct pricing_book *book = pricing_book_parse(t, len, path, &pe);
    if (!book)
        fprintf(stderr, "meterctl: %s\n", pe.msg);
    if (book && text)
        *text = t;
    else
        free(t);
    return book;
}

double
ctl_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
