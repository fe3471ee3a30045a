/* fuzz_dec.c - the decimal parser, and printing back what it reads:
 * a value that parses prints to a text that parses to the same value. */
#include <stdlib.h>
#include <string.h>

#include "pricing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[128];
    if (size >= sizeof(text))
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    struct pricing_dec d, back;
    if (pricing_dec_parse(text, 12, &d) != PRICING_OK)
        return 0;
    char out[64];
    pricing_dec_format(d, 12, out, sizeof(out));
    if (pricing_dec_parse(out, 12, &back) != PRICING_OK || back.v != d.v)
        abort();
    return 0;
}
