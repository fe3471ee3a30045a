/* fuzz_book.c - the price book loader, whatever the bytes. */
#include "pricing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pricing_err e = {{0}};
    pricing_book_free(pricing_book_parse((const char *)data, size, "fuzz", &e));
    return 0;
}
