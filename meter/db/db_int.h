/*
 * db_int.h - shared by the files of meter/db/; private.
 */
#ifndef DB_INT_H
#define DB_INT_H

#include "meter_db.h"

/* The status of a statement that failed (r may be NULL), its message
 * "what: the server's message" in e: SOFT for serialization failures
 * and deadlocks, HARD otherwise. Clears r. For the few statements that
 * cannot go through meter_db_exec (COPY, binary results, cursors). */
enum meter_db_status db_failed(PGconn *db, PGresult *r, const char *what,
                               struct meter_err *e);

/* Runs sql, a COPY ... FROM STDIN, with len bytes of data: NONE, or
 * the status of the failure with "what: the server's message". */
enum meter_db_status db_copy_in(PGconn *db, const char *sql, const char *data,
                                size_t len, const char *what,
                                struct meter_err *e);

/* HARD, with a message: for failures that are not the server's. */
enum meter_db_status db_hard(struct meter_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The calendar month (year, month) as Unix seconds [*start, *end). */
static inline void
db_period(int year, int month, int64_t *start, int64_t *end)
{
    int y, m;
    pricing_period_of(pricing_days_from_civil(year, month, 1) * 86400, &y, &m,
                      start, end);
}

/* Runs sql (n text parameters) and adds the first column of every row
 * to out: NONE, ROWS or the failure, with "what: ..." in e. */
enum meter_db_status db_strings(PGconn *db, const char *what, const char *sql,
                                int n, const char *const *values,
                                struct meter_strtab *out, struct meter_err *e);

/* What the registry knows of a sandbox. */
struct db_sandbox {
    char account_id[PRICING_ID_MAX + 1];
    int32_t sandbox_pk, account_pk;
    int32_t first_run; /* first running minute stored, or at most that
                          (INT32_MAX: none known) */
};

/* Fills *out from the registry; false if the sandbox is not in it. */
bool db_registry_get(struct meter_registry *r, const char *sandbox_id,
                     struct db_sandbox *out);
/* Remembers a sandbox stored (committed), or a lower first_run of one
 * remembered; a cache, so failures to remember are ignored. */
void db_registry_put(struct meter_registry *r, const char *sandbox_id,
                     const struct db_sandbox *s);
/* Whether the partition of month key (year * 12 + month) is known to
 * exist; and remembering that it does. */
bool db_registry_month_known(struct meter_registry *r, int64_t key);
void db_registry_month_add(struct meter_registry *r, int64_t key);

/* Opens a reader of stored usage as meter_usage_reader_new does, but
 * with own_tx false inside the caller's transaction (at its isolation
 * level), which it leaves open when freed. */
struct meter_usage_reader *db_usage_open(PGconn *db, const char *account,
                                         int64_t from, int64_t to, bool own_tx,
                                         struct meter_err *e);
/* Seconds the reader has returned so far. */
uint64_t db_usage_seconds(const struct meter_usage_reader *r);

#endif
