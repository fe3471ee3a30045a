/*
 * pricing_int.h - the price book as the engine reads it; private to
 * pricing/.
 */
#ifndef PRICING_INT_H
#define PRICING_INT_H

#include "pricing.h"

/* Seconds in each time unit a rate may be given per. */
#define SECONDS_PER_HOUR 3600
#define SECONDS_PER_STORAGE_MONTH 2628000 /* 730 hours */
#define SECONDS_PER_MONTH30 2592000       /* 30 days */

/* Units of memory and storage rates. */
enum byte_unit { UNIT_GIB, UNIT_GB };
#define UNIT_BYTES(u)                                                          \
    ((u) == UNIT_GB ? (uint64_t)1000000000 : (uint64_t)1 << 30)
#define UNIT_NAME(u) ((u) == UNIT_GB ? "GB" : "GiB")

enum tier_mode { TIERS_NONE, TIERS_GRADUATED, TIERS_VOLUME };

struct tier {
    bool unbounded;           /* up_to is null: the last tier */
    struct pricing_dec up_to; /* display units, inclusive */
    struct pricing_dec rate;  /* per display unit */
};

/* The price of one dimension. */
struct price {
    bool known; /* false: null in the book, price unknown */
    enum tier_mode mode;
    struct pricing_dec rate; /* TIERS_NONE: per unit per per_s seconds */
    int64_t per_s;           /* TIERS_NONE: the rate's time unit */
    struct tier *tiers;
    size_t ntiers;
    const char *per_name; /* "second", "hour", ... */
    /* Tiers: the time unit of their display unit, 0 for the dimension's
     * default (section 13's "per"), and its name. */
    int64_t tier_per_s;
    const char *tier_per_name;
};

/* An instance type (rules section 11). */
struct instance_type {
    char name[PRICING_ID_MAX + 1];
    uint32_t vcpu;           /* 1/10,000 vCPU */
    uint64_t mem_bytes;      /* memory times the unit */
    struct pricing_dec rate; /* per per_s seconds */
    int64_t per_s;
    const char *per_name;
};
#define INSTANCE_TYPES_MAX PRICING_TYPES_MAX

/* A credit grant a book gives (rules section 14). */
struct book_grant {
    char id[PRICING_ID_MAX + 1];
    struct pricing_dec amount; /* at most 6 decimals */
    int32_t expires_after;     /* periods; 0: never */
};

struct pricing_book {
    char id[PRICING_ID_MAX + 1];
    char provider[PRICING_ID_MAX + 1]; /* "": none */
    char currency[4];
    int minor_unit;

    struct price cpu;
    bool cpu_used;     /* basis "used" (cpu_used), else vcpu */
    uint32_t cpu_step; /* allocation step in 1/10,000 vCPU; 0: none */
    struct price memory;
    bool memory_used;
    enum byte_unit memory_unit;
    uint64_t memory_step;        /* in bytes; 0: none */
    struct instance_type *types; /* "instances": ntypes > 0 */
    size_t ntypes;
    struct price storage;
    enum byte_unit storage_unit;
    uint64_t included_bytes;
    bool storage_running_only; /* billed_when "running" */
    uint64_t pool_bytes;       /* included_per_account; 0: none */
    struct price egress;       /* per GB, no time unit */
    uint64_t free_bytes;
    bool per_run_known;
    struct pricing_dec per_run;
    uint64_t runs_free; /* per_run_free: runs a statement has free */

    uint32_t granularity_s;
    uint32_t min_billed_s;

    bool has_subscription;
    bool monthly_fee_known, included_credit_known;
    struct pricing_dec monthly_fee;
    struct pricing_dec included_credit;
    /* Plan limits (section 15): the simulator's, never rating's.
     * limits.addons points at addons, which the book owns. */
    struct pricing_limits limits;
    struct pricing_addon *addons;
    struct pricing_dec promotional_credit;
    struct pricing_dec minimum_commit;
    struct book_grant *grants;
    size_t ngrants;

    bool autopause;
    struct pricing_dec idle_below; /* fraction of vcpu, 0..1 */
    uint32_t after_s;
};

#endif
