/*
 * err.c - the one error convention: a message in the caller's struct
 * meter_err, and -1.
 */
#include "meter_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int
meter_fail(struct meter_err *e, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
        va_end(ap);
        /* libpq's messages end in a newline; ours do not. */
        size_t n = strlen(e->msg);
        while (n > 0 && (e->msg[n - 1] == '\n' || e->msg[n - 1] == ' '))
            e->msg[--n] = '\0';
    }
    return -1;
}
