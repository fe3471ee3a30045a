/*
 * path.c - a route's path pattern matched against a request's path,
 * segment by segment; no libmicrohttpd and no allocation, so that the
 * fuzz target (tests/fuzz/fuzz_path.c) runs it as the server does.
 */
#include "meter_http.h"

#include <string.h>

bool
meter_http_path_match(const char *pattern, const char *path,
                      struct meter_http_segment *params, size_t max, size_t *n)
{
    size_t np = 0;
    const char *p = pattern, *u = path;
    while (*p && *u) {
        if (*p == '{') {
            const char *close = strchr(p, '}');
            size_t seg = strcspn(u, "/");
            if (!close || seg == 0 || np == max)
                return false;
            params[np++] = (struct meter_http_segment){
                p + 1, (size_t)(close - p - 1), u, seg};
            p = close + 1;
            u += seg;
        } else if (*p++ != *u++) {
            return false;
        }
    }
    if (*p || *u)
        return false;
    *n = np;
    return true;
}
