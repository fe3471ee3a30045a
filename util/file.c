/*
 * file.c - the one capped file reader, and where installed data lives
 * relative to the running program.
 */
#include "meter_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
meter_file_read(const char *path, size_t max, char **text, size_t *len,
                struct meter_err *e)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return meter_fail(e, "cannot open '%s': %s", path, strerror(errno));
    struct meter_buf b = {0};
    char chunk[65536];
    size_t got;
    bool too_big = false;
    while (!b.failed && (got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (got > max - b.len) {
            too_big = true;
            break;
        }
        meter_buf_add(&b, chunk, got);
    }
    bool io_error = ferror(f) != 0;
    int saved = errno;
    fclose(f);
    int rc = 0;
    if (io_error)
        rc = meter_fail(e, "cannot read '%s': %s", path, strerror(saved));
    else if (too_big)
        rc =
            meter_fail(e, "cannot read '%s': larger than %zu bytes", path, max);
    else if (b.failed || !(*text = meter_buf_detach(&b, len)))
        rc = meter_fail(e, "cannot read '%s': out of memory", path);
    meter_buf_release(&b);
    return rc;
}

int
meter_data_dir(const char *what, char *out, size_t n, struct meter_err *e)
{
    const char *env = getenv("METER_DATA_DIR");
    int k;
    if (env && *env) {
        k = snprintf(out, n, "%s/%s", env, what);
    } else {
        char exe[4096];
        ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (len < 0)
            return meter_fail(e, "cannot find the running program: %s",
                              strerror(errno));
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        k = snprintf(out, n, "%s/../share/meter/%s", exe, what);
    }
    if (k < 0 || (size_t)k >= n)
        return meter_fail(e, "the path of the %s directory is too long", what);
    return 0;
}
