/*
 * log.c - the process's log: one line an entry, as text or as a JSON
 * object, to stderr or to a file reopened on demand (SIGHUP, after
 * logrotate renamed it).
 *
 * Each line is formatted on the stack and written with one write(2) to
 * a descriptor opened O_APPEND, so that lines of several threads never
 * interleave and no lock is taken. Reopening dup2()s the new file onto
 * that same descriptor number: a thread writing at that moment writes
 * its whole line to the old file or to the new one, never half to each.
 *
 * No entry spans lines: in text, a newline, a carriage return or another
 * control character of a message (a database error quotes SQL on
 * several lines) is written escaped (\n, \r, \xHH); in JSON, jansson
 * escapes them.
 */
#include "http_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const level_names[] = {"error", "warn", "info", "debug"};
static atomic_int log_level = METER_LOG_INFO;
static atomic_int log_format = METER_LOG_TEXT;
/* Where lines go: stderr until meter_log_open. */
static atomic_int log_fd = STDERR_FILENO;
/* The file's path, for meter_log_reopen; set once, before any thread
 * but the main one logs. */
static char log_path[4096];

/* A message's bytes at most, and a line: room for one escaped (a byte
 * is at most 6 in JSON, \u00XX) and the request's fields. */
#define LOG_MSG_MAX 4096
#define LOG_LINE_MAX (6 * LOG_MSG_MAX + 1024)

/* The request the calling thread is serving (server.c sets it around
 * its calls into handlers): its lines carry its id. */
static _Thread_local const char *thread_request_id;

void
http_log_request_id(const char *id)
{
    thread_request_id = id;
}

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
meter_log_set_format(enum meter_log_format format)
{
    atomic_store(&log_format, (int)format);
}

int
meter_log_parse_format(const char *s)
{
    if (strcmp(s, "text") == 0)
        return METER_LOG_TEXT;
    if (strcmp(s, "json") == 0)
        return METER_LOG_JSON;
    return -1;
}

static int
open_log(const char *path, struct meter_err *e)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0)
        return meter_fail(e, "cannot open the log file '%s': %s", path,
                          strerror(errno));
    return fd;
}

int
meter_log_open(const char *path, struct meter_err *e)
{
    if ((size_t)snprintf(log_path, sizeof(log_path), "%s", path) >=
        sizeof(log_path)) {
        log_path[0] = '\0';
        return meter_fail(e, "the log file's path '%.64s...' is too long",
                          path);
    }
    int fd = open_log(path, e);
    if (fd < 0) {
        log_path[0] = '\0';
        return -1;
    }
    atomic_store(&log_fd, fd);
    return 0;
}

int
meter_log_reopen(struct meter_err *e)
{
    if (!log_path[0])
        return 0; /* stderr: nothing to reopen */
    int fd = open_log(log_path, e);
    if (fd < 0)
        return -1;
    /* Atomically: writers keep using the same number. */
    int rc = 0;
    int to = atomic_load(&log_fd);
    if (dup2(fd, to) < 0)
        rc = meter_fail(e, "cannot reopen the log file '%s': %s", log_path,
                        strerror(errno));
    else
        fcntl(to, F_SETFD, FD_CLOEXEC);
    close(fd);
    return rc;
}

/* Writes line (len bytes, newline included) whole, or gives up. */
static void
emit(const char *line, size_t len)
{
    int fd = atomic_load(&log_fd);
    while (len > 0) {
        ssize_t n = write(fd, line, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* nowhere to say so */
        line += n;
        len -= (size_t)n;
    }
}

/* Now as "YYYY-MM-DDTHH:MM:SS.mmmZ". */
static void
now_text(char out[48])
{
    struct timespec ts;
    struct tm tm;
    char when[24];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 48, "%s.%03dZ", when, (int)(ts.tv_nsec / 1000000));
}

/* Appends s to out (at *len of cap) with its control characters
 * escaped; stops, marked "...", when out is full. */
static void
add_escaped(char *out, size_t cap, size_t *len, const char *s)
{
    size_t n = *len;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[5];
        size_t k = 1;
        esc[0] = (char)c;
        if (c == '\n' || c == '\r') {
            esc[0] = '\\';
            esc[1] = c == '\n' ? 'n' : 'r';
            k = 2;
        } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
            snprintf(esc, sizeof(esc), "\\x%02x", c);
            k = 4;
        }
        if (n + k + 4 > cap) {
            memcpy(out + n, "...", 3);
            n += 3;
            break;
        }
        memcpy(out + n, esc, k);
        n += k;
    }
    *len = n;
}

/* A JSON string of s; s's bytes that are not UTF-8 become '?' (a
 * message may quote what a client sent). */
static json_t *
json_text(const char *s)
{
    json_t *j = json_string(s);
    if (j)
        return j;
    char safe[LOG_MSG_MAX];
    size_t n = 0;
    for (; *s && n + 1 < sizeof(safe); s++)
        safe[n++] = (unsigned char)*s < 0x80 ? *s : '?';
    safe[n] = '\0';
    return json_string(safe);
}

/* Writes entry o (taken) as one line, "time", "level" and "msg" first. */
static void
emit_json(json_t *o)
{
    char line[LOG_LINE_MAX];
    size_t flags = JSON_COMPACT | JSON_REAL_PRECISION(10) | JSON_PRESERVE_ORDER;
    size_t n = o ? json_dumpb(o, line, sizeof(line) - 1, flags) : 0;
    if (n > 0 && n < sizeof(line) - 1) {
        line[n++] = '\n';
        emit(line, n);
    } else if (n > 0) {
        /* Too long for the stack: rare, and allowed to allocate. */
        char *big = json_dumps(o, flags);
        if (big) {
            size_t len = strlen(big);
            big[len] = '\n';
            emit(big, len + 1);
            big[len] = '\0';
            free(big);
        }
    }
    json_decref(o);
}

static json_t *
json_entry(enum meter_log_level level, const char *msg)
{
    char when[48];
    now_text(when);
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "time", json_string(when));
    json_object_set_new(o, "level", json_string(level_names[level]));
    json_object_set_new(o, "msg", json_text(msg));
    if (thread_request_id)
        json_object_set_new(o, "request_id", json_string(thread_request_id));
    return o;
}

static void
emit_text(enum meter_log_level level, const char *msg, const char *id)
{
    char line[LOG_LINE_MAX], when[48];
    now_text(when);
    int k = snprintf(line, sizeof(line), "%s %s ", when, level_names[level]);
    size_t n = k > 0 ? (size_t)k : 0;
    add_escaped(line, sizeof(line) - 32 - METER_HTTP_REQUEST_ID_MAX, &n, msg);
    if (id) {
        k = snprintf(line + n, sizeof(line) - n, " id=%s", id);
        n += k > 0 ? (size_t)k : 0;
    }
    line[n++] = '\n';
    emit(line, n);
}

static void
vlog(enum meter_log_level level, const char *fmt, va_list ap)
{
    char msg[LOG_MSG_MAX];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (atomic_load(&log_format) == METER_LOG_JSON)
        emit_json(json_entry(level, msg));
    else
        emit_text(level, msg, thread_request_id);
}

void
meter_log(enum meter_log_level level, const char *fmt, ...)
{
    if ((int)level > atomic_load(&log_level))
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}

void
http_log_access(const struct http_access *a)
{
    if (METER_LOG_INFO > atomic_load(&log_level))
        return;
    double ms = (double)(long long)(a->seconds * 1e6 + 0.5) / 1e3;
    if (atomic_load(&log_format) != METER_LOG_JSON) {
        char key[32] = "";
        if (a->key_id > 0)
            snprintf(key, sizeof(key), " key=%lld", (long long)a->key_id);
        char msg[LOG_MSG_MAX];
        snprintf(msg, sizeof(msg), "%s %s %s %u %.1fms %zuB%s%s%s%s", a->remote,
                 a->method, a->route, a->status, ms, a->bytes, key,
                 a->note[0] ? " " : "", a->note,
                 a->aborted ? " (aborted)" : "");
        emit_text(METER_LOG_INFO, msg, a->request_id);
        return;
    }
    char msg[LOG_MSG_MAX];
    snprintf(msg, sizeof(msg), "%s %s %u", a->method, a->route, a->status);
    json_t *o = json_entry(METER_LOG_INFO, msg);
    if (!o)
        return;
    json_object_set_new(o, "request_id", json_string(a->request_id));
    json_object_set_new(o, "method", json_text(a->method));
    json_object_set_new(o, "route", json_string(a->route));
    json_object_set_new(o, "status", json_integer(a->status));
    json_object_set_new(o, "duration_ms", json_real(ms));
    if (a->key_id > 0)
        json_object_set_new(o, "key_id", json_integer(a->key_id));
    json_object_set_new(o, "remote", json_string(a->remote));
    json_object_set_new(o, "bytes", json_integer((json_int_t)a->bytes));
    if (a->note[0])
        json_object_set_new(o, "note", json_text(a->note));
    if (a->aborted)
        json_object_set_new(o, "aborted", json_true());
    emit_json(o);
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
