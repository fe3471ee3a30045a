/* fuzz_profile.c - the simulator's workload profile loader, whatever the
 * bytes. */
#include "profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sim_err e = {{0}};
    sim_profile_free(sim_profile_parse((const char *)data, size, "fuzz", &e));
    return 0;
}
