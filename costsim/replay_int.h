/*
 * replay_int.h - what costsim replay's files share: an account's stored
 * month priced under every book (replay.c) and its outputs
 * (replay_out.c); private to costsim/.
 */
#ifndef REPLAY_INT_H
#define REPLAY_INT_H

#include <stdio.h>

#include "billing.h"
#include "costsim_int.h"
#include "meter_db.h"
#include "report.h"

/* A change of a level (sandboxes running, bytes of disk held): d at
 * second t. */
struct cs_replay_event {
    int64_t t;
    int64_t d;
};

/* A level's changes, coalesced by second as they accumulate. */
struct cs_replay_events {
    struct cs_replay_event *ev;
    size_t n, cap;
};

/*
 * What the stored month tells about the limits a plan sets, gathered
 * as the usage streams past (replay.c). A session is a sandbox's
 * running stretch: consecutive running seconds; a paused or missing
 * second, or the period's bounds, end it (the engine's segment). Peak
 * concurrency is found from the sessions' starts and ends, coalesced by
 * second as they accumulate, so memory grows with the sessions (at most
 * with the distinct seconds where the count changes), never with the
 * samples; the disk held at once likewise, from each sandbox's spans of
 * constant disk (running or paused; a second without a sample holds
 * none).
 */
struct cs_usage_facts {
    uint64_t sandboxes;   /* with a stored second in the period */
    uint64_t running_s;   /* stored running seconds */
    uint64_t paused_s;    /* stored paused seconds */
    uint64_t sessions;    /* running stretches */
    uint64_t peak;        /* most sandboxes running in one second */
    int64_t peak_at;      /* the first such second (when peak > 0) */
    uint64_t longest_s;   /* the longest session's seconds */
    int64_t longest_from; /* its first second (when longest_s > 0) */
    char longest_sandbox[PRICING_ID_MAX + 1];
    uint64_t peak_disk; /* most disk_bytes held at one second, summed */
    /* The stretch being read, of sandbox. */
    char sandbox[PRICING_ID_MAX + 1];
    bool open;
    int64_t from, last;
    int64_t seen; /* the sandbox's last second read (INT64_MIN: none) */
    /* Starts (+1) and ends (-1) of sessions. */
    struct cs_replay_events run_ev;
    /* The span of constant disk being read, and the spans' starts
     * (+disk) and ends (-disk). */
    bool disk_open;
    int64_t disk_from, disk_last;
    uint64_t disk;
    struct cs_replay_events disk_ev;
};

/* One book of --books: what it made of the month, or why it could not. */
struct cs_replay_book {
    const struct cs_book *bk;
    struct pricing_rater *r;
    bool failed;
    struct pricing_err err;       /* when failed: the engine's message */
    struct pricing_statement *st; /* when not failed: one, owned */
    bool account_book; /* its id is the account's book at the period's end */
    /* When not failed and limits_checked: the month against the book's
     * plan (the add-on it needs, the limits it breaks). */
    struct sim_plan_month plan;
};

struct cs_replay {
    const char *account;
    int year, month;
    struct cs_usage_facts facts;
    struct cs_replay_book *books;
    size_t nbooks;
    /* The account's own books in the period, as stored, and the period
     * rated with them as the invoice run rates it (its own lines, one
     * statement per part), or why it could not be. */
    struct billing_period period;
    bool own_failed;
    struct pricing_err own_err;
    struct pricing_statement *own;
    size_t nown;
    /* The period's invoice: the live final one, else the draft. */
    bool invoiced;
    struct report_invoice inv;
    /* Its lines summed: this period's usage, late usage of earlier
     * periods, credit grants. */
    struct pricing_dec inv_usage, inv_late, inv_grants;
    /* Whether each priced book's limits were checked (plan). */
    bool limits_checked;
};

/* The replay as a terminal table or as JSON, on f. 0, or -1 when out
 * of memory or f fails. */
int cs_replay_table(FILE *f, const struct cs_replay *rp);
int cs_replay_json(FILE *f, const struct cs_replay *rp);

#endif
