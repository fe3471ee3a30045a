/* fuzz_body.c - POST /v1/samples bodies: the three forms, whatever the
 * bytes (the first byte picks array/columnar or NDJSON). */
#include <stdlib.h>
#include <string.h>

#include "meter_sample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    /* The HTTP layer hands bodies NUL-terminated. */
    char *body = malloc(size);
    memcpy(body, data + 1, size - 1);
    body[size - 1] = '\0';
    struct meter_sample *s = NULL;
    size_t n = 0;
    struct meter_problems p = {0};
    meter_body_parse(body, size - 1, data[0] & 1, 1000, &s, &n, &p);
    free(s);
    free(body);
    return 0;
}
