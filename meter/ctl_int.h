/*
 * ctl_int.h - shared by the files of meterctl; private to meter/.
 */
#ifndef CTL_INT_H
#define CTL_INT_H

#include <stdio.h>

#include "meter.h"

/* Exit statuses: 0 done. */
enum { CTL_FAILED = 1, CTL_USAGE = 2 };

/* Prints "meterctl: MESSAGE" and a hint to stderr; returns CTL_USAGE. */
int ctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A time as Unix seconds or "YYYY-MM-DDTHH:MM:SSZ"; -1 if neither. */
int ctl_parse_time(const char *s, int64_t *out);

/* The subcommands. */
int ctl_rate(const char *conninfo, int argc, char **argv);
int ctl_keys(const char *conninfo, int argc, char **argv);
int ctl_export(const char *conninfo, int argc, char **argv);
int ctl_gen(int argc, char **argv);
int ctl_admin(const char *conninfo, int argc, char **argv);

/* Invoices as a JSON array, every number a decimal string. */
int ctl_print_invoices_json(FILE *out, const struct pricing_invoice *inv,
                            size_t n);
/* Invoices for a person. */
void ctl_print_invoices_table(FILE *out, const struct pricing_invoice *inv,
                              size_t n, const struct pricing_book *book);

#endif
