/* fuzz_block.c - the storage block decoder on any bytes and mask; and
 * what it decodes encodes back to a block that decodes the same. */
#include <stdlib.h>
#include <string.h>

#include "meter_sample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    uint64_t mask;
    memcpy(&mask, data, 8);
    struct pricing_second out[60], again[60];
    size_t n, m;
    if (meter_block_decode(29453760, mask, data + 8, size - 8, out, &n) < 0)
        return 0;
    uint8_t buf[METER_BLOCK_MAX];
    size_t len = meter_block_encode(out, n, buf);
    if (meter_block_decode(29453760, mask, buf, len, again, &m) < 0 || m != n ||
        memcmp(out, again, n * sizeof(*out)) != 0)
        abort();
    return 0;
}
