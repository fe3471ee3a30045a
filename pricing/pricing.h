/*
 * pricing.h - the pricing library: exact decimal money, price books, and
 * the rating engine that turns per-second usage into statement lines
 * (the rules: docs/pricing.md; the pipeline: pricing/README.md).
 *
 * Pure: no I/O, no database, no floating point. Functions return 0 on
 * success and -1 on failure with a message in the caller's struct
 * pricing_err, or a status of enum pricing_status where noted. Objects
 * from *_new / *_parse belong to the caller and are released with the
 * matching *_free, which accepts NULL. Every object belongs to one thread
 * at a time; the library keeps no global state.
 */
#ifndef PRICING_H
#define PRICING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

__extension__ typedef __int128 pricing_i128;
__extension__ typedef unsigned __int128 pricing_u128;

struct pricing_err {
    char msg[512];
};

enum pricing_status {
    PRICING_OK = 0,
    PRICING_ESYNTAX,   /* not a decimal string of the accepted form */
    PRICING_EDECIMALS, /* more decimals than allowed */
    PRICING_ERANGE,    /* overflow: the value does not fit */
    PRICING_ECURRENCY, /* amounts of two currencies */
};

/* A description of a status, for messages. */
const char *pricing_status_str(enum pricing_status st);

/* ---- exact decimals --------------------------------------------------- */

/* Decimal places of struct pricing_dec: every rate, fee and amount. */
#define PRICING_SCALE 12
#define PRICING_ONE ((pricing_i128)1000000000000LL)

/* An exact signed decimal: v / 10^12. Magnitudes up to about 1.7e26. */
struct pricing_dec {
    pricing_i128 v;
};

/*
 * Parses "-?[0-9]+(\.[0-9]+)?" with at most max_decimals (<= 12)
 * decimals. No leading '+', no exponent, no spaces, no empty parts
 * (".5", "5."). "-0" is zero.
 */
enum pricing_status pricing_dec_parse(const char *s, unsigned max_decimals,
                                      struct pricing_dec *out);

/* Writes d rounded half to even to `decimals` places (<= 12), e.g.
 * "-1.250000"; zero is never written with a minus sign. Returns the
 * length; the output is truncated to n - 1 bytes like snprintf. 48
 * bytes always suffice. */
size_t pricing_dec_format(struct pricing_dec d, unsigned decimals, char *buf,
                          size_t n);

enum pricing_status pricing_dec_add(struct pricing_dec a, struct pricing_dec b,
                                    struct pricing_dec *out);
enum pricing_status pricing_dec_sub(struct pricing_dec a, struct pricing_dec b,
                                    struct pricing_dec *out);
enum pricing_status pricing_dec_mul_int(struct pricing_dec a, int64_t k,
                                        struct pricing_dec *out);
/* Rounds to `decimals` places, half to even, symmetric around zero:
 * -0.0000125 to 6 places is -0.000012. */
enum pricing_status pricing_dec_round(struct pricing_dec a, unsigned decimals,
                                      struct pricing_dec *out);
int pricing_dec_cmp(struct pricing_dec a, struct pricing_dec b);

/* ---- money ------------------------------------------------------------ */

/* An amount in a currency (ISO 4217 code). */
struct pricing_money {
    struct pricing_dec amount;
    char currency[4];
};

/* Digits after the decimal point of a currency's minor unit (USD 2,
 * JPY 0, KWD 3), or -1 for a currency this project does not accept. */
int pricing_currency_minor_unit(const char *code);
/* The decimals an amount in currency is shown and stored with: its
 * minor unit, 6 for a code this project does not accept (which no
 * book has, but a stored document may be read with). */
unsigned pricing_money_decimals(const char *currency);
/* v as text to currency's decimals (pricing_money_decimals), rounded as
 * pricing_dec_format rounds: "12.30" for USD, "1230" for JPY. The one
 * money formatter; returns pricing_dec_format's length. */
size_t pricing_money_format(struct pricing_dec v, const char *currency,
                            char *buf, size_t n);

/* a + b, a - b: PRICING_ECURRENCY if the currencies differ. */
enum pricing_status pricing_money_add(const struct pricing_money *a,
                                      const struct pricing_money *b,
                                      struct pricing_money *out);
enum pricing_status pricing_money_sub(const struct pricing_money *a,
                                      const struct pricing_money *b,
                                      struct pricing_money *out);

/* ---- JSON text --------------------------------------------------------- */

/* The reason of a JSON parse error of text, for a person: why (jansson's
 * json_error_t.text) as it is, but for a key given twice, which a parser
 * refusing them (JSON_REJECT_DUPLICATES) names only when it is short:
 * "duplicate key 'KEY'", KEY as written between its quotes (escapes
 * kept), the string that ends at byte pos of text (the error's
 * position). dup: whether the error is that one (json_error_code() ==
 * json_error_duplicate_key). Into buf, cut to n - 1 bytes at a
 * character; returns buf. Every parser of the tree that reads JSON from
 * a client or a file says it so. */
const char *pricing_json_reason(const char *why, bool dup, const char *text,
                                size_t pos, char *buf, size_t n);

/* ---- price books ------------------------------------------------------ */

/* A validated, immutable price book (format: docs/pricing.md). */
struct pricing_book;

/* Parses and validates a book from JSON text. Errors name the key path
 * and the value, e.g. "cpu.rate: '0.1.2' is not a decimal", and a key
 * given twice ("line 3 column 12: duplicate key 'cpu'"). origin names
 * the text in messages (a file name) and may be NULL. */
struct pricing_book *pricing_book_parse(const char *json, size_t len,
                                        const char *origin,
                                        struct pricing_err *e);
void pricing_book_free(struct pricing_book *b);
const char *pricing_book_id(const struct pricing_book *b);
const char *pricing_book_currency(const struct pricing_book *b);
/* The product whose plan tiers the book is one of (its "provider" key,
 * e.g. "e2b" for e2b-hobby and e2b-pro), or "" when the book names
 * none. Books of one provider are a ladder the simulator chooses from. */
const char *pricing_book_provider(const struct pricing_book *b);

/* ---- usage ------------------------------------------------------------ */

/*
 * One second [ts, ts+1) of one sandbox, as the engine consumes it. A
 * paused second has vcpu = 0, and cpu_used, mem_bytes and mem_used_bytes
 * 0 (they are ignored on paused samples); a running second has vcpu > 0.
 */
struct pricing_second {
    int64_t ts;              /* Unix seconds, UTC */
    uint32_t vcpu;           /* allocated vCPUs, in 1/10,000 */
    uint32_t cpu_used;       /* vCPUs used, in 1/10,000, <= vcpu */
    uint64_t mem_bytes;      /* allocated memory */
    uint64_t mem_used_bytes; /* <= mem_bytes */
    uint64_t disk_bytes;     /* storage held */
    uint64_t egress_bytes;   /* sent during the second */
};

#define PRICING_CPU_UNIT 10000 /* pricing_second.vcpu per vCPU */
#define PRICING_ID_MAX 64      /* longest account or sandbox id */
/* Longest grant id: an operator's id, or a book's "BOOK/ID". */
#define PRICING_GRANT_ID_MAX (2 * PRICING_ID_MAX + 1)

/* Whether s is a valid id: 1-64 characters of A-Za-z0-9._:- */
bool pricing_id_valid(const char *s);

/*
 * A run: n consecutive seconds s.ts, s.ts + 1, ..., s.ts + n - 1 of one
 * sandbox, each with the values of s. The engine rates a run as exactly
 * those n seconds, in one step (what a simulator's spell, or a stored
 * stretch of unchanged samples, is).
 */
struct pricing_run {
    struct pricing_second s;
    uint32_t n; /* >= 1 */
};

/*
 * A block of seconds of one sandbox, ts ascending; equal ts (a repeated
 * second) in arrival order. All the blocks of a sandbox must come one
 * after another, in ts order, before the next sandbox's. The seconds are
 * given one by one (s, n) or, when runs is not NULL, as nruns runs (s
 * and n are then ignored), rated alike.
 */
struct pricing_block {
    const char *account_id;
    const char *sandbox_id;
    const struct pricing_second *s;
    size_t n;
    /* Whether the source knows history beyond its input (stored usage):
     * then first_run_minute is the Unix minute (ts / 60) of the
     * sandbox's first running second ever (INT64_MAX if none), and a
     * sandbox whose first running minute precedes its first block's
     * starts no run. Read from a sandbox's first block. */
    bool history;
    int64_t first_run_minute;
    const struct pricing_run *runs;
    size_t nruns;
};

/* The rating input, pulled block by block: next() fills *b (valid until
 * the following call), every field, runs and nruns included (NULL and 0
 * for seconds), and returns 1, 0 at the end, or -1 on error with a
 * message in e. */
struct pricing_source {
    int (*next)(void *ctx, struct pricing_block *b, struct pricing_err *e);
    void *ctx;
};

/* ---- rating ----------------------------------------------------------- */

struct pricing_line {
    const char *kind; /* "cpu", "memory", ... (docs/pricing.md) */
    char instance[PRICING_ID_MAX + 1];    /* an "instance" line's type */
    char grant[PRICING_GRANT_ID_MAX + 1]; /* a "credit_grant" line's grant */
    char description[96];
    bool has_quantity;           /* quantity and unit are set */
    struct pricing_dec quantity; /* display units, 6 decimals */
    char unit[24];               /* "vCPU-second", "GiB-month", "run", ... */
    bool has_unit_price;         /* one rate applies */
    struct pricing_dec unit_price;
    struct pricing_dec amount; /* rounded to 6 decimals */
};

#define PRICING_TYPES_MAX 32 /* instance types in one book */

/* The exact quantities behind a statement, in internal units. */
struct pricing_quantities {
    pricing_u128 cpu_gross; /* 1/10,000 vCPU-seconds, padding included */
    pricing_u128 cpu_credited;
    pricing_u128 mem_gross; /* byte-seconds */
    pricing_u128 mem_credited;
    pricing_u128 storage; /* byte-seconds, after included_gib and the
                             account's allowance */
    pricing_u128 egress;  /* bytes, before free_gb */
    uint64_t running_s;   /* running seconds (no padding) */
    uint64_t padding_s;   /* seconds added by granularity/minimums */
    uint64_t credited_s;  /* idle seconds credited */
    uint64_t runs;
    /* Seconds billed (padding included) and credited per instance type,
     * in the book's order. */
    uint64_t type_s[PRICING_TYPES_MAX];
    uint64_t type_credited_s[PRICING_TYPES_MAX];
};

/* The usage dimensions a book may leave unpriced (null), in statement
 * order. */
enum pricing_dim {
    PRICING_DIM_CPU,
    PRICING_DIM_MEMORY,
    PRICING_DIM_STORAGE,
    PRICING_DIM_EGRESS,
    PRICING_DIM_RUNS,
    PRICING_NDIMS
};
/* Their names: "cpu", "memory", "storage", "egress", "runs". */
extern const char *const pricing_dim_names[PRICING_NDIMS];

/*
 * What one account owes for one period under one price book: the rated
 * lines and their total. Not yet an invoice (no number, no status): the
 * invoicing layer builds invoices from statements. lines is a malloc'd
 * array of nlines, owned by the statement and released with it.
 */
struct pricing_statement {
    char account_id[PRICING_ID_MAX + 1];
    int year, month; /* the period: a calendar month, UTC */
    char currency[4];
    char price_book[PRICING_ID_MAX + 1];
    struct pricing_line *lines;
    size_t nlines;            /* zero lines are left out */
    size_t lines_cap;         /* allocated room in lines */
    struct pricing_dec total; /* to the currency's minor unit, >= 0 */
    struct pricing_quantities q;
    uint64_t duplicates; /* repeated seconds with equal values */
    uint64_t conflicts;  /* repeated seconds with other values */
    /* Only from a rater made partial (pricing_rater_partial): the
     * dimensions the usage needs whose price the book leaves unknown,
     * bit 1 << PRICING_DIM_x. They have no line and are not in total,
     * which is then a lower bound of what the account owes (their
     * quantities are in q: pricing_unpriced_quantity). 0 otherwise. */
    unsigned unpriced;
};

/* Releases the lines of the n statements of s, then s itself (as
 * returned by pricing_rate or pricing_rater_finish). s may be NULL. */
void pricing_statements_free(struct pricing_statement *s, size_t n);

/*
 * The rating engine. Push blocks with pricing_rater_add (the order of
 * struct pricing_block), then pricing_rater_finish. Memory holds one
 * sandbox's state plus one accumulator per (account, period), whatever
 * the number of samples.
 */
struct pricing_rater;

struct pricing_rater *pricing_rater_new(const struct pricing_book *book,
                                        struct pricing_err *e);
void pricing_rater_free(struct pricing_rater *r);

/*
 * From now on r prices what the book knows and leaves out what it does
 * not: a dimension whose price is unknown (null) is named in the
 * statement's unpriced instead of failing pricing_rater_finish, and the
 * total is a lower bound. For the simulator's comparisons only: an
 * invoice is never a lower bound, so the invoice run, pricing_rate and
 * meterctl never call it. An unknown subscription fee or included
 * credit still fails (an unknown credit would make no bound), as does
 * an instance type that does not fit.
 */
void pricing_rater_partial(struct pricing_rater *r);

/* Rates one block, of seconds or of runs. Fails on seconds out of order,
 * a run of no second, or a sandbox seen under two accounts; the error
 * names the sandbox and the second. */
int pricing_rater_add(struct pricing_rater *r, const struct pricing_block *b,
                      struct pricing_err *e);

/*
 * Ends the input and prices every (account, period): *out receives an
 * array of *n statements ordered by account, then period, released with
 * pricing_statements_free. Fails, naming the dimension, if the usage
 * needs a price the book leaves unknown (null), or on overflow.
 */
int pricing_rater_finish(struct pricing_rater *r,
                         struct pricing_statement **out, size_t *n,
                         struct pricing_err *e);

/*
 * The quantity of dimension d in q (a statement's) as a person reads
 * it, to 6 decimals (half to even): vCPU-hours and memory unit-hours of
 * b's basis (padding included), storage unit-hours, GB of egress past
 * b's free allowance, runs. *unit receives its unit's singular name
 * ("vCPU-hour", "GiB-hour" or "GB-hour", "GB", "run"). -1 (e set) on
 * overflow.
 */
int pricing_unpriced_quantity(const struct pricing_book *b,
                              const struct pricing_quantities *q,
                              enum pricing_dim d, struct pricing_dec *out,
                              const char **unit, struct pricing_err *e);

/* A part of a period spent on one book: whole days [from, to). */
struct pricing_part {
    const struct pricing_book *book;
    int64_t from, to; /* Unix seconds, multiples of 86,400 */
};

/* Which statements to price. */
struct pricing_scope {
    int year, month; /* the one period priced; year 0: every period */
    /* Days of the period on the book (subscription and minimum commit
     * are prorated by them); 0: the whole period, as offline rating,
     * which has no assignment dates, counts it. */
    int active_days;
    /* Not NULL: only this account is priced, and with year its period
     * is priced even without usage (a subscription or a minimum commit
     * is still owed). */
    const char *account;
    /* With year: the periods before it are priced too (what grants
     * spend before it). */
    bool through;
};

/* Makes pricing_rater_finish price what scope says (account is copied);
 * the quantities of other periods still count where the rules look
 * back (runs). */
void pricing_rater_select(struct pricing_rater *r,
                          const struct pricing_scope *scope);

/*
 * The rating pipeline, the one way usage becomes statements: pulls every
 * block of src through a rater of book and finishes it, pricing what
 * scope says (NULL: every period, whole). *out and *n as
 * pricing_rater_finish. On failure (the source's error, the rater's, or
 * an unknown price) nothing is returned and e says why.
 *
 * With nparts > 0, book is NULL and scope names one account's period:
 * the period is cut into parts, in order and inside the period, each
 * rated with its own book as if it were a period of its own (segments
 * and idle streaks stop at its bounds), its subscription and minimum
 * commit prorated by its days. *out then holds one statement per part,
 * in order (empty where the part has no usage and owes nothing);
 * seconds outside every part are not rated.
 */
int pricing_rate(const struct pricing_book *book, struct pricing_source src,
                 const struct pricing_scope *scope,
                 const struct pricing_part *parts, size_t nparts,
                 struct pricing_statement **out, size_t *n,
                 struct pricing_err *e);

/* ---- an estimate from totals ------------------------------------------ */

/* What an account's usage summed over a stretch of a period comes to
 * (the hourly rollups' sums): no sandbox, run or second apart. */
struct pricing_totals {
    uint64_t samples;             /* sandbox-seconds stored */
    uint64_t running_s;           /* of them running */
    pricing_u128 vcpu;            /* allocated, 1/10,000 vCPU-seconds */
    pricing_u128 cpu_used;        /* used, 1/10,000 vCPU-seconds */
    pricing_u128 mem_byte_s;      /* allocated memory, byte-seconds */
    pricing_u128 mem_used_byte_s; /* used memory, byte-seconds */
    pricing_u128 disk_byte_s;     /* storage, byte-seconds */
    pricing_u128 egress_bytes;
};

/*
 * The period (year, month)'s amount under book for usage totals t, as
 * the rules price those quantities (rate_price: rates, tiers, free
 * egress, the whole period's subscription, minimum commit), into *total.
 * An estimate, for usage alerts, never an invoice: totals know no runs,
 * so granularity, minimum billed seconds, per-run prices and autopause
 * credit are left out, storage's per-sandbox inclusion is taken off each
 * running second (as the rater does), an account's storage allowance is
 * not taken.
 * Fails naming the dimension on a price the book leaves unknown, and on
 * a book of instance types.
 */
int pricing_estimate(const struct pricing_book *book,
                     const struct pricing_totals *t, int year, int month,
                     struct pricing_dec *total, struct pricing_err *e);

/* ---- credit grants (rules section 14) --------------------------------- */

#define PRICING_GRANTS_MAX 32 /* grants in one book */
/* Longest life of a grant, in periods: a hundred years. */
#define PRICING_GRANT_PERIODS_MAX 1200

/* A grant an account received, and what is left of it. */
struct pricing_grant {
    char id[PRICING_GRANT_ID_MAX + 1]; /* a book's: "BOOK/ID" */
    char currency[4];
    struct pricing_dec amount;  /* as received, at most 6 decimals */
    struct pricing_dec balance; /* what is left */
    int received;               /* its period: year * 12 + month - 1 */
    int expires_after;          /* periods it can be spent in (at most
                                   PRICING_GRANT_PERIODS_MAX); 0: never */
};

/* The period index of (year, month): year * 12 + month - 1. */
int pricing_period_index(int year, int month);

/* The grants book lists, as received in (year, month) with their whole
 * amount left; returns how many (at most max are written). */
size_t pricing_book_grants(const struct pricing_book *book, int year, int month,
                           struct pricing_grant *out, size_t max);

/* Whether g can be spent by an invoice of (year, month) in currency:
 * the period is in its window and it has a balance. */
bool pricing_grant_spendable(const struct pricing_grant *g, int year, int month,
                             const char *currency);

/* The description of a credit_grant line of g, after it paid: the grant
 * and its balance left (at most 96 bytes with the NUL). */
void pricing_grant_describe(const struct pricing_grant *g, char *buf, size_t n);

/*
 * Spends the n grants (at most PRICING_GRANTS_MAX) on a document of (year,
 * month) in currency whose rounded lines sum to total: each spendable grant,
 * soonest expiry first (never-expiring last), then earliest received, then by
 * id, pays -min(balance, what is left of total if positive). order[] receives
 * the indices of the grants that pay, in that order, and spent[] (indexed like
 * g) their amounts (negative, else 0); balances fall by as much. Returns the
 * number in order[]. Cannot fail: amounts only shrink.
 */
size_t pricing_grants_spend(struct pricing_grant *g, size_t n, int year,
                            int month, const char *currency,
                            struct pricing_dec total, size_t *order,
                            struct pricing_dec *spent);

/*
 * Spends the n grants g (their balances, held by the caller from one
 * period to the next) on statement st: a credit_grant line for each
 * grant that pays (naming it and its balance left), and st's total
 * recomputed from its lines. -1 (e set) on overflow.
 */
int pricing_statement_spend(const struct pricing_book *book,
                            struct pricing_grant *g, size_t n,
                            struct pricing_statement *st,
                            struct pricing_err *e);

/*
 * Offline rating across periods (rules section 14): with the n
 * statements of pricing_rate (ordered by account, then period), each
 * account receives the book's grants in its first period and spends
 * them period after period; a credit_grant line (naming the grant and
 * its balance left) ends each statement that spends, and its total is
 * recomputed.
 */
int pricing_statements_grant(const struct pricing_book *book,
                             struct pricing_statement *st, size_t n,
                             struct pricing_err *e);

/* ---- plan limits (rules section 15) ----------------------------------- */

/* Caps of a plan, per period: allowances at which the plan stops the
 * workload instead of billing more. */
enum pricing_cap {
    PRICING_CAP_RUNS,         /* runs started in the period */
    PRICING_CAP_CPU_HOURS,    /* vCPU-hours, gross under the cpu basis */
    PRICING_CAP_MEMORY_HOURS, /* memory unit-hours, gross, memory basis */
    PRICING_CAP_EGRESS_GB,    /* GB (10^9 bytes) sent, before free_gb */
    PRICING_CAP_STORAGE,      /* the account's largest total disk_bytes
                                 at one second, in the storage unit,
                                 before any allowance */
    PRICING_NCAPS
};

#define PRICING_ADDONS_MAX 16 /* add-ons of one plan */

/* A plan add-on: bought for a monthly fee, its concurrency replaces
 * the plan's; at most one applies. */
struct pricing_addon {
    char name[PRICING_ID_MAX + 1];
    uint32_t max_concurrency; /* > 0 */
    struct pricing_dec monthly_fee;
};

/*
 * A book's plan limits, as its subscription writes them. Rating ignores
 * every one (a plan bought with an add-on is a book of its own): they
 * are read by the simulator, which chooses the cheapest option a
 * workload fits and names every limit it breaks. A book without a
 * subscription has none.
 */
struct pricing_limits {
    uint32_t max_concurrency;           /* sandboxes at once; 0: no limit */
    uint32_t max_session_s;             /* a session's length; 0: no limit */
    const struct pricing_addon *addons; /* naddons, the book's order */
    size_t naddons;
    bool has_cap[PRICING_NCAPS];
    struct pricing_dec cap[PRICING_NCAPS]; /* in the units above; runs
                                              are whole numbers */
    /* Bytes in the units of the memory and storage caps (the book's
     * memory and storage units: 2^30 for GiB, 10^9 for GB). */
    uint64_t memory_unit_bytes, storage_unit_bytes;
    /* The largest sandbox the provider runs ("limits": max_vcpu,
     * max_memory, max_disk): vCPUs, and memory and disk in the units
     * above; has_sandbox_max[i] false: no limit. */
    bool has_sandbox_max[3];
    struct pricing_dec sandbox_max[3];
    /* The provider's autopause ("pauses": after_idle_s): it pauses a
     * sandbox idle pause_after_s seconds for the rest of the idle
     * stretch, unless the workload says otherwise; pauses false: it
     * never does. */
    bool pauses;
    uint32_t pause_after_s;
    /* The one size the provider runs every sandbox at ("fixed_size":
     * vcpu, and memory in its own unit, fixed_unit_bytes): the simulator
     * prices each running second at it whatever the workload asks, and
     * a larger workload breaks it as the largest sandbox (where "limits"
     * gives none). has_fixed_size false: the workload's size. */
    bool has_fixed_size;
    uint32_t fixed_vcpu; /* 1/10,000 vCPU */
    uint64_t fixed_mem_bytes, fixed_unit_bytes;
    /* Memory that comes only with whole vCPUs ("memory_per_vcpu": unit,
     * memory; Vercel's 2 GB per vCPU): the simulator runs each running
     * second at the fewest whole vCPUs that hold the workload's vCPUs
     * and memory, with that many times memory_per_vcpu_bytes of memory
     * (in its own unit, memory_per_vcpu_unit_bytes). 0: the workload's
     * size. Never given with a fixed size. */
    uint64_t memory_per_vcpu_bytes, memory_per_vcpu_unit_bytes;
};

/* b's limits, owned by b and valid as long as it is. Cannot fail. */
const struct pricing_limits *pricing_book_limits(const struct pricing_book *b);

/* ---- periods ---------------------------------------------------------- */

/* The calendar month (UTC) holding ts, and its bounds [*start, *end). */
void pricing_period_of(int64_t ts, int *year, int *month, int64_t *start,
                       int64_t *end);

/* Days since 1970-01-01 of the proleptic Gregorian date y-m-d. */
int64_t pricing_days_from_civil(int64_t y, int m, int d);

#endif
