/*
 * log.c - timestamped lines to stderr, one level for the process.
 */
#include "http_int.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const level_names[] = {"error", "warn", "info", "debug"};
static atomic_int log_level = METER_LOG_INFO;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void
meter_log_set_level(enum meter_log_level level)
{
    atomic_store(&log_level, (int)level);
}

int
meter_log_parse_level(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, level_names[i]) == 0)
            return i;
    return -1;
}

void
meter_log(enum meter_log_level level, const char *fmt, ...)
{
    if ((int)level > atomic_load(&log_level))
        return;
    char when[32];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&log_lock);
    fprintf(stderr, "%s.%03ldZ %s ", when, ts.tv_nsec / 1000000,
            level_names[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    pthread_mutex_unlock(&log_lock);
    va_end(ap);
}

void
http_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    meter_log(METER_LOG_WARN, "libmicrohttpd: %s", msg);
}
