/*
 * meter_sample.h - usage samples: validating one (docs/pricing.md,
 * "Samples"), the body forms hosts send them in (a JSON array, NDJSON,
 * the columnar object), the canonical NDJSON line, the per-minute block
 * codec of storage, and sample sets read from files as a pricing source.
 *
 * No database and no network. Functions return 0 on success and -1 on
 * failure, with a message in the caller's struct meter_err or the
 * invalid samples listed in a struct meter_problems, as noted. Objects
 * from *_new belong to the caller and are released with the matching
 * *_free, which accepts NULL. Nothing here keeps global state.
 */
#ifndef METER_SAMPLE_H
#define METER_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "meter_util.h"
#include "pricing.h"

/* ---- one sample ------------------------------------------------------- */

/* One sample, parsed and validated. */
struct meter_sample {
    char account_id[PRICING_ID_MAX + 1];
    char sandbox_id[PRICING_ID_MAX + 1];
    struct pricing_second s;
};

/* Why a sample is invalid: the field, its value (JSON text, shortened)
 * and the reason. */
struct meter_sample_err {
    char field[80];
    char value[96];
    char reason[160];
};

/*
 * Validates the JSON object obj as a sample and fills *out: ts as an
 * integer or "YYYY-MM-DDTHH:MM:SSZ"; vcpu and cpu_used with at most 4
 * decimals; integers as JSON integers; unknown fields refused; on a
 * paused sample the running-only fields are ignored (left 0).
 */
int meter_sample_parse(const json_t *obj, struct meter_sample *out,
                       struct meter_sample_err *err);

/* The fields of a sample, by number, for forms that are not one object
 * per sample (the columnar body). */
enum {
    METER_F_TS,
    METER_F_ACCOUNT,
    METER_F_SANDBOX,
    METER_F_STATE,
    METER_F_VCPU,
    METER_F_CPU_USED,
    METER_F_MEM,
    METER_F_MEM_USED,
    METER_F_DISK,
    METER_F_EGRESS,
    METER_NFIELDS
};
extern const char *const meter_sample_fields[METER_NFIELDS];
/* The number of field name, or -1. */
int meter_sample_field(const char *name);
/* As meter_sample_parse, from the values of each field (NULL: absent). */
int meter_sample_from_fields(const json_t *const v[METER_NFIELDS],
                             struct meter_sample *out,
                             struct meter_sample_err *err);

/* Writes a count of 1/10,000 vCPU as the shortest decimal ("2", "0.25")
 * into buf; returns what snprintf returns. */
int meter_cpu_format(char *buf, size_t n, uint64_t v);

/* A sample as one NDJSON line (with its newline) in the canonical form
 * that export writes and rate reads; returns what snprintf returns. */
int meter_sample_format(char *buf, size_t n, const char *account,
                        const char *sandbox, const struct pricing_second *s);

/* ---- problems of a batch ---------------------------------------------- */

/* Why a batch was refused: the first METER_MAX_PROBLEMS of total. */
enum { METER_MAX_PROBLEMS = 20 };
struct meter_problem {
    size_t index; /* of the sample in the batch */
    struct meter_sample_err err;
};
struct meter_problems {
    size_t n, total;
    struct meter_problem items[METER_MAX_PROBLEMS];
};
/* Counts a problem, and keeps it if fewer than METER_MAX_PROBLEMS are. */
void meter_problems_add(struct meter_problems *p, size_t index,
                        const char *field, const char *value,
                        const char *reason);

/* ---- request bodies ---------------------------------------------------- */

/*
 * The decimals of vcpu and cpu_used, read from the JSON text: jansson
 * turns a fraction into a double, on which 1.00000000000000001 is 1.
 * Looks in text for a number under one of those keys (its value, or an
 * element of its array) with more than 4 decimals (trailing zeros do not
 * count, an exponent shifts them); false, with the key and the number's
 * text, if there is one.
 */
bool meter_sample_decimals_ok(const char *text, size_t len, char key[16],
                              char number[48]);

/*
 * Parses and validates a body of samples: NDJSON if ndjson, else a JSON
 * array of samples or the columnar object (meter/README.md). *out
 * (malloc'd, *n samples) holds every sample read; p lists the invalid
 * ones and any syntax error. At most max samples: past that, a problem.
 * Returns -1 only when out of memory (nothing in *out).
 */
int meter_body_parse(const char *body, size_t len, bool ndjson, size_t max,
                     struct meter_sample **out, size_t *n,
                     struct meter_problems *p);

/* Whether meter_body_parse reads canonical elements without building a
 * tree (body.c's fast path; default on). Off, every element takes the
 * path that names problems: tests compare the two. Not thread-safe: set
 * it before parsing. */
void meter_body_set_fast(bool on);

/* A columnar body being built: begin (which empties it), one add per run
 * of consecutive seconds of one sandbox (n >= 1), end; the text is in
 * body, and out of memory shows as body.failed. Zero-initialize; release
 * with meter_buf_release(&c->body). */
struct meter_columnar {
    struct meter_buf body;
    size_t runs; /* runs (objects of "sandboxes") added since begin */
};
void meter_columnar_begin(struct meter_columnar *c);
void meter_columnar_add(struct meter_columnar *c, const char *account,
                        const char *sandbox, const struct pricing_second *s,
                        size_t n);
void meter_columnar_end(struct meter_columnar *c);

/* ---- storage blocks ---------------------------------------------------- */

/* Bytes an encoded block may take, at most. */
#define METER_BLOCK_MAX 4096

/* Encodes the n (1-60) seconds s, ascending and all in one minute, into
 * buf (METER_BLOCK_MAX bytes); returns the length. The seconds present
 * are not encoded: keep their mask beside the data. */
size_t meter_block_encode(const struct pricing_second *s, size_t n,
                          uint8_t *buf);

/* Decodes a block of Unix minute `minute` whose seconds are the bits of
 * mask into out (room for 60) and *n; -1 if data is malformed. */
int meter_block_decode(int64_t minute, uint64_t mask, const uint8_t *data,
                       size_t len, struct pricing_second *out, size_t *n);

/* ---- packs: an hour of a sandbox's blocks in one value (pack.c) -------- */

/* One block of a pack, and the batch that stored it. */
struct meter_pack_part {
    int64_t minute;      /* Unix minute, within the pack's hour */
    uint64_t mask;       /* its seconds (bit i: second minute * 60 + i) */
    int64_t key_id;      /* the API key of its batch; 0: none */
    int64_t arrived_us;  /* its batch's commit, Unix microseconds */
    const uint8_t *data; /* the block (meter_block_encode) */
    size_t len;
};

/* Bytes that encoding the n parts may take, at most. */
size_t meter_pack_bound(const struct meter_pack_part *p, size_t n);

/* Encodes the n parts, all of Unix hour `hour` and in the order to keep
 * (minute, then arrival), into out (meter_pack_bound bytes); returns the
 * length, or 0 out of memory. */
size_t meter_pack_encode(int64_t hour, const struct meter_pack_part *p,
                         size_t n, uint8_t *out);

/* Decodes a pack of Unix hour `hour` into *out (malloc'd, *n parts, in
 * stored order; their data point into data); -1 if data is malformed or
 * memory is out. */
int meter_pack_decode(int64_t hour, const uint8_t *data, size_t len,
                      struct meter_pack_part **out, size_t *n);

/* ---- sample sets --------------------------------------------------------- */

/*
 * Samples held in memory, in any order and from several inputs, handed
 * to the rating engine sorted by (sandbox, ts, input order), so that the
 * first of a repeated second in input order stands. Its samples take at
 * most max_bytes (64 bytes each); a sandbox seen under two accounts is
 * refused. A refused sample leaves the set as it was.
 */
struct meter_sample_set;

struct meter_sample_set *meter_sample_set_new(size_t max_bytes);
void meter_sample_set_free(struct meter_sample_set *set);
/* Whether an add was refused because max_bytes were full. */
bool meter_sample_set_full(const struct meter_sample_set *set);

/* Adds one validated sample; where names its origin in messages. */
int meter_sample_set_add(struct meter_sample_set *set,
                         const struct meter_sample *m, const char *where,
                         struct meter_err *e);

/* Adds every sample of the file path ("-": standard input), a JSON array
 * of samples or NDJSON (one per line, blank lines skipped). The error
 * names the file, the sample or line, the field and the value; samples
 * added before it stay in the set. */
int meter_sample_set_read(struct meter_sample_set *set, const char *path,
                          struct meter_err *e);

size_t meter_sample_set_count(const struct meter_sample_set *set);

/* Sorts the set (once; adding afterwards is an error) and returns it as
 * a pricing source of blocks of one sandbox, valid while set lives. */
struct pricing_source meter_sample_set_source(struct meter_sample_set *set);

#endif
