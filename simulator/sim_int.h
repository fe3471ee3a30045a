/*
 * sim_int.h - what the simulator's files share beyond sim.h: the count
 * of a thread's memory against --memory-limit (montecarlo.c sets it,
 * month.c and limits.c grow their arrays through it), and the measures
 * of a month taken session by session as it is drawn (limits.c, used by
 * price.c's stream). Private to simulator/.
 */
#ifndef SIM_INT_H
#define SIM_INT_H

#include "sim.h"

/* Runs (or seconds) handed to the raters at a time (price.c), in a
 * buffer taken for each month: 2,048 runs (115 KiB) stay below the
 * allocators' large-block path (glibc's mmap, ASan's secondary
 * allocator), which 65,536 took on every trial. Release builds price
 * alike at either size; the AddressSanitizer build of test_sim_stats
 * took 156 s at 65,536 and 27 s at 2,048. */
#define SIM_PRICE_CHUNK 2048

/* Bytes one thread's growing arrays hold (a month's sessions, spells
 * and arrival times, the measures' edges), against a bound. */
struct sim_mem {
    size_t used;
    size_t limit;       /* bytes a thread may hold */
    uint64_t limit_mib; /* --memory-limit, for messages */
    unsigned threads;   /* it is shared by */
};

/*
 * Room for need elements of size in the array *pp (a pointer to the
 * array's pointer), which has room for *cap: grown by doubling (from at
 * least min elements) if it has not, its bytes counted in mem (NULL: not
 * counted). 0; -1 out of memory, or -2 past mem's limit, *pp unchanged.
 */
int sim_grow(struct sim_mem *mem, void *pp, size_t *cap, size_t need,
             size_t size, size_t min);
/* Sets e to "WHAT: ASKED (N MiB), past --memory-limit ..." and returns
 * -1. what names the profile's key and the size it implies. */
int sim_mem_over(const struct sim_mem *mem, size_t bytes, struct sim_err *e,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Changes of a count (sandboxes running, bytes of disk held) at seconds,
 * summed in time order into its largest value. */
struct sim_edge {
    int64_t t;
    pricing_i128 delta;
};
struct sim_peak {
    struct sim_edge *e;
    size_t n, cap;
    pricing_i128 level, top; /* of the edges folded so far */
};

/*
 * A month's measures (struct sim_month_use), taken session by session:
 * sim_measure_add takes session s of m, sim_measure_end gives the
 * month's. With in_order, sessions come in order of start (as drawn),
 * so the edges before s's start are final and are folded as the arrays
 * fill: memory holds the changes still ahead (at most one an edge a
 * second of the longest session), not the month's. Idle stretches are
 * paused at cut (a book's autopause, sim_book_cut). -1 (e set) when out
 * of memory or past mem's limit.
 */
struct sim_measure {
    struct sim_month_use u;
    struct sim_peak running, disk;
    struct sim_mem *mem;
    bool in_order;
    uint32_t cut;
};
void sim_measure_init(struct sim_measure *x, struct sim_mem *mem, bool in_order,
                      uint32_t cut);
int sim_measure_add(struct sim_measure *x, const struct sim_month *m,
                    const struct sim_session *s, struct sim_err *e);
int sim_measure_end(struct sim_measure *x, struct sim_month_use *u,
                    struct sim_err *e);
void sim_measure_release(struct sim_measure *x);

#endif
