/*
 * ctl_rate.c - `meterctl rate`: rates files of samples with a price book,
 * with no database, and prints the invoices.
 *
 * Samples may come in any order and from several files: they are read
 * into memory (up to --memory-limit), sorted by (sandbox, ts, input
 * order) so that the first of a repeated second in input order stands,
 * and streamed through the pricing engine one sandbox at a time.
 */
#include "ctl_int.h"
#include "meter_int.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A sample as held for sorting. */
struct rec {
    uint32_t sandbox; /* index in the sandbox table */
    uint32_t pad;
    uint64_t seq; /* input order */
    struct pricing_second s;
};

/* Interned strings: sandbox ids (with their account) and account ids. */
struct strtab {
    char **str;
    uint32_t *owner; /* sandboxes: the account index; else unused */
    size_t n, cap;
    uint32_t *slots; /* open addressing, index + 1, 0 empty */
    size_t nslots;
};

struct input {
    struct strtab sandboxes, accounts;
    struct rec *recs;
    size_t n, cap, max;
    size_t memory_mib;
};

/* The index of s, added if new (*added set); -1 when out of memory. */
static long
intern(struct strtab *t, const char *s, bool *added)
{
    *added = false;
    if (2 * (t->n + 1) > t->nslots) {
        size_t ns = t->nslots ? 2 * t->nslots : 1024;
        uint32_t *slots = calloc(ns, sizeof(*slots));
        if (!slots)
            return -1;
        for (size_t i = 0; i < t->n; i++) {
            size_t k = meter_fnv1a(t->str[i]) & (ns - 1);
            while (slots[k])
                k = (k + 1) & (ns - 1);
            slots[k] = (uint32_t)i + 1;
        }
        free(t->slots);
        t->slots = slots;
        t->nslots = ns;
    }
    size_t k = meter_fnv1a(s) & (t->nslots - 1);
    for (; t->slots[k]; k = (k + 1) & (t->nslots - 1))
        if (strcmp(t->str[t->slots[k] - 1], s) == 0)
            return t->slots[k] - 1;
    if (t->n == t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 1024;
        char **str = realloc(t->str, nc * sizeof(*str));
        if (!str)
            return -1;
        t->str = str;
        uint32_t *owner = realloc(t->owner, nc * sizeof(*owner));
        if (!owner)
            return -1;
        t->owner = owner;
        t->cap = nc;
    }
    if (t->n >= UINT32_MAX - 1 || !(t->str[t->n] = strdup(s)))
        return -1;
    t->slots[k] = (uint32_t)t->n + 1;
    *added = true;
    return (long)t->n++;
}

static void
strtab_release(struct strtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->str[i]);
    free(t->str);
    free(t->owner);
    free(t->slots);
}

/* Adds one sample; where says where it came from, for messages. */
static int
add_sample(struct input *in, const json_t *obj, const char *where)
{
    struct meter_sample m;
    struct meter_sample_err err;
    bool added;
    if (meter_sample_parse(obj, &m, &err) < 0) {
        fprintf(stderr, "meterctl: %s: field '%s'%s%s: %s\n", where, err.field,
                err.value[0] ? " value " : "", err.value, err.reason);
        return -1;
    }
    long acct = intern(&in->accounts, m.account_id, &added);
    long sb = acct < 0 ? -1 : intern(&in->sandboxes, m.sandbox_id, &added);
    if (sb < 0) {
        fprintf(stderr, "meterctl: out of memory\n");
        return -1;
    }
    if (added) {
        in->sandboxes.owner[sb] = (uint32_t)acct;
    } else if (in->sandboxes.owner[sb] != (uint32_t)acct) {
        fprintf(stderr,
                "meterctl: %s: field 'account_id' value \"%s\": sandbox '%s' "
                "belongs to account '%s'\n",
                where, m.account_id, m.sandbox_id,
                in->accounts.str[in->sandboxes.owner[sb]]);
        return -1;
    }
    if (in->n == in->cap) {
        if (in->n >= in->max) {
            fprintf(stderr,
                    "meterctl: %s: more than %zu samples, the limit of the "
                    "in-memory sort (--memory-limit %zu MiB); raise it, or "
                    "rate the accounts in separate runs\n",
                    where, in->max, in->memory_mib);
            return -1;
        }
        size_t nc = in->cap ? 2 * in->cap : 65536;
        if (nc > in->max)
            nc = in->max;
        struct rec *r = realloc(in->recs, nc * sizeof(*r));
        if (!r) {
            fprintf(stderr, "meterctl: out of memory at %zu samples\n", in->n);
            return -1;
        }
        in->recs = r;
        in->cap = nc;
    }
    struct rec *r = &in->recs[in->n];
    r->sandbox = (uint32_t)sb;
    r->pad = 0;
    r->seq = in->n;
    r->s = m.s;
    in->n++;
    return 0;
}

/* Reads a JSON array of samples, or NDJSON (one sample per line). */
static int
read_usage(struct input *in, const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
    char where[300];
    int rc = -1;
    if (!f) {
        fprintf(stderr, "meterctl: cannot open '%s': %s\n", path,
                strerror(errno));
        return -1;
    }
    int c;
    while ((c = getc(f)) == ' ' || c == '\t' || c == '\n' || c == '\r')
        ;
    if (c != EOF)
        ungetc(c, f);
    if (c == '[') {
        json_error_t jerr;
        json_t *arr = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
        if (!arr) {
            fprintf(stderr, "meterctl: %s:%d:%d: %s\n", path, jerr.line,
                    jerr.column, jerr.text);
            goto out;
        }
        size_t i;
        json_t *v;
        json_array_foreach(arr, i, v)
        {
            snprintf(where, sizeof(where), "%s: sample [%zu]", path, i);
            if (add_sample(in, v, where) < 0) {
                json_decref(arr);
                goto out;
            }
        }
        json_decref(arr);
    } else {
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        long lineno = 0;
        while ((len = getline(&line, &cap, f)) >= 0) {
            lineno++;
            size_t k = 0;
            while (k < (size_t)len && (line[k] == ' ' || line[k] == '\t' ||
                                       line[k] == '\r' || line[k] == '\n'))
                k++;
            if (k == (size_t)len)
                continue; /* blank line */
            json_error_t jerr;
            json_t *v =
                json_loadb(line, (size_t)len, JSON_REJECT_DUPLICATES, &jerr);
            snprintf(where, sizeof(where), "%s:%ld", path, lineno);
            if (!v) {
                fprintf(stderr, "meterctl: %s:%d: %s\n", where, jerr.column,
                        jerr.text);
                free(line);
                goto out;
            }
            int bad = add_sample(in, v, where);
            json_decref(v);
            if (bad) {
                free(line);
                goto out;
            }
        }
        free(line);
    }
    if (ferror(f)) {
        fprintf(stderr, "meterctl: cannot read '%s'\n", path);
        goto out;
    }
    rc = 0;
out:
    if (f != stdin)
        fclose(f);
    return rc;
}

static int
by_sandbox_ts_seq(const void *x, const void *y)
{
    const struct rec *a = x, *b = y;
    if (a->sandbox != b->sandbox)
        return a->sandbox < b->sandbox ? -1 : 1;
    if (a->s.ts != b->s.ts)
        return a->s.ts < b->s.ts ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* The pricing source over the sorted records: one block per run of up to
 * BLOCK seconds of one sandbox. */
enum { BLOCK = 4096 };

struct cursor {
    const struct input *in;
    size_t i;
    struct pricing_second buf[BLOCK];
};

static int
next_block(void *ctx, struct pricing_block *b, struct pricing_err *e)
{
    (void)e;
    struct cursor *c = ctx;
    const struct input *in = c->in;
    if (c->i >= in->n)
        return 0;
    uint32_t sb = in->recs[c->i].sandbox;
    size_t n = 0;
    while (c->i < in->n && n < BLOCK && in->recs[c->i].sandbox == sb)
        c->buf[n++] = in->recs[c->i++].s;
    b->sandbox_id = in->sandboxes.str[sb];
    b->account_id = in->accounts.str[in->sandboxes.owner[sb]];
    b->s = c->buf;
    b->n = n;
    return 1;
}

static int
read_file(const char *path, char **text, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "meterctl: cannot open '%s': %s\n", path,
                strerror(errno));
        return -1;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *p = cap < ((size_t)64 << 20) ? realloc(buf, cap *= 2) : NULL;
            if (!p) {
                free(buf);
                buf = NULL;
            }
            buf = p;
        }
    }
    bool bad = ferror(f) || !buf;
    fclose(f);
    if (bad) {
        free(buf);
        fprintf(stderr, "meterctl: cannot read '%s' (at most 64 MiB)\n", path);
        return -1;
    }
    *text = buf;
    *len = n;
    return 0;
}

static int
parse_period(const char *s, int *year, int *month)
{
    if (strlen(s) != 7 || s[4] != '-')
        return -1;
    for (int i = 0; i < 7; i++)
        if (i != 4 && (s[i] < '0' || s[i] > '9'))
            return -1;
    *year = ((s[0] - '0') * 10 + (s[1] - '0')) * 100 + (s[2] - '0') * 10 +
            (s[3] - '0');
    *month = (s[5] - '0') * 10 + (s[6] - '0');
    return *month >= 1 && *month <= 12 && *year >= 1970 ? 0 : -1;
}

int
ctl_rate(const char *conninfo, int argc, char **argv)
{
    static const struct option opts[] = {
        {"price-book", required_argument, NULL, 'b'},
        {"usage", required_argument, NULL, 'u'},
        {"from", required_argument, NULL, 'F'},
        {"to", required_argument, NULL, 'T'},
        {"account", required_argument, NULL, 'a'},
        {"period", required_argument, NULL, 'p'},
        {"format", required_argument, NULL, 'f'},
        {"memory-limit", required_argument, NULL, 'm'},
        {NULL, 0, NULL, 0},
    };
    const char *book_path = NULL, *period = NULL, *format = "json";
    const char *from_s = NULL, *to_s = NULL, *account = NULL;
    int64_t from = 0, to = 0;
    PGconn *db = NULL;
    struct meter_store_reader *stored = NULL;
    struct cursor *cur = NULL;
    const char **usage = calloc((size_t)argc + 1, sizeof(*usage));
    size_t nusage = 0, memory_mib = 4096;
    int year = 0, month = 0, opt, rc = CTL_USAGE;
    struct input in = {0};
    struct pricing_book *book = NULL;
    struct pricing_invoice *inv = NULL;
    size_t ninv = 0;
    char *text = NULL, *end;
    size_t len;

    if (!usage)
        return CTL_FAILED;
    optind = 0; /* 0: glibc re-initializes, permuting again */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'b':
            if (book_path) {
                ctl_usage_error("rate: one --price-book only");
                goto out;
            }
            book_path = optarg;
            break;
        case 'u':
            usage[nusage++] = optarg;
            break;
        case 'F':
            from_s = optarg;
            break;
        case 'T':
            to_s = optarg;
            break;
        case 'a':
            account = optarg;
            break;
        case 'p':
            period = optarg;
            if (parse_period(period, &year, &month) < 0) {
                ctl_usage_error("rate: --period '%s' is not YYYY-MM", period);
                goto out;
            }
            break;
        case 'f':
            format = optarg;
            if (strcmp(format, "json") != 0 && strcmp(format, "table") != 0) {
                ctl_usage_error("rate: --format '%s' is not json or table",
                                format);
                goto out;
            }
            break;
        case 'm':
            errno = 0;
            memory_mib = strtoul(optarg, &end, 10);
            if (errno || *end || memory_mib < 1 || optarg[0] == '-' ||
                memory_mib > ((size_t)1 << 40)) {
                ctl_usage_error("rate: --memory-limit '%s' is not a number "
                                "of MiB",
                                optarg);
                goto out;
            }
            break;
        default:
            ctl_usage_error("rate: unknown or incomplete option '%s'",
                            argv[optind - 1]);
            goto out;
        }
    }
    if (optind < argc) {
        ctl_usage_error("rate: unexpected argument '%s'", argv[optind]);
        goto out;
    }
    bool from_db = from_s || to_s || account;
    if (!book_path || (nusage == 0) == !from_db || (from_db && nusage)) {
        ctl_usage_error("rate needs --price-book FILE and either --usage "
                        "FILE ... or --from T --to T (stored usage)");
        goto out;
    }
    if (from_db && (!from_s || !to_s || ctl_parse_time(from_s, &from) < 0 ||
                    ctl_parse_time(to_s, &to) < 0)) {
        ctl_usage_error("rate: --from and --to must both be Unix seconds or "
                        "YYYY-MM-DDTHH:MM:SSZ");
        goto out;
    }
    if (account && !pricing_id_valid(account)) {
        ctl_usage_error("rate: --account '%s' is not 1-64 of A-Za-z0-9._:-",
                        account);
        goto out;
    }

    rc = CTL_FAILED;
    struct pricing_err e = {{0}};
    if (read_file(book_path, &text, &len) < 0)
        goto out;
    book = pricing_book_parse(text, len, book_path, &e);
    if (!book) {
        fprintf(stderr, "meterctl: %s\n", e.msg);
        goto out;
    }
    struct pricing_source src;
    if (from_db) {
        struct meter_err me = {{0}};
        db = meter_db_connect(conninfo, &me);
        if (!db ||
            !(stored = meter_store_reader_new(db, account, from, to, &me))) {
            fprintf(stderr, "meterctl: %s\n", me.msg);
            goto out;
        }
        src = meter_store_source(stored);
    } else {
        in.memory_mib = memory_mib;
        in.max = memory_mib * (size_t)1048576 / sizeof(struct rec);
        for (size_t i = 0; i < nusage; i++)
            if (read_usage(&in, usage[i]) < 0)
                goto out;
        if (in.n > 0)
            qsort(in.recs, in.n, sizeof(*in.recs), by_sandbox_ts_seq);
        if (!(cur = malloc(sizeof(*cur))))
            goto out;
        cur->in = &in;
        cur->i = 0;
        src = (struct pricing_source){next_block, cur};
    }
    struct pricing_rater *rater = pricing_rater_new(book, &e);
    struct pricing_block blk;
    int got = -1;
    if (rater) {
        /* --period prices one period; all samples still count for runs. */
        if (period)
            pricing_rater_select_period(rater, year, month);
        while ((got = src.next(src.ctx, &blk, &e)) > 0)
            if (pricing_rater_add(rater, &blk, &e) < 0) {
                got = -1;
                break;
            }
        if (got == 0 && pricing_rater_finish(rater, &inv, &ninv, &e) < 0)
            got = -1;
    }
    pricing_rater_free(rater);
    if (got < 0) {
        fprintf(stderr, "meterctl: %s\n", e.msg);
        goto out;
    }
    if (strcmp(format, "table") == 0)
        ctl_print_invoices_table(stdout, inv, ninv, book);
    else if (ctl_print_invoices_json(stdout, inv, ninv) < 0)
        goto out;
    rc = 0;
out:
    meter_store_reader_free(stored);
    PQfinish(db);
    free(cur);
    free(inv);
    free(text);
    free(usage);
    pricing_book_free(book);
    free(in.recs);
    strtab_release(&in.sandboxes);
    strtab_release(&in.accounts);
    return rc;
}
