/*
 * costsim_int.h - what costsim's files share beyond costsim.h (the
 * books, the run and its outputs); private to simulator/costsim/.
 */
#ifndef COSTSIM_INT_H
#define COSTSIM_INT_H

#include <stdio.h>
#include <time.h>

#include <jansson.h>

#include "costsim.h"

/* A progress bar on f (stderr), drawn only if f is a terminal
 * (progress.c). cs_progress_update is a sim_mc_opts.progress callback,
 * its arg the struct cs_progress; cs_progress_end erases the bar. */
struct cs_progress {
    FILE *f;
    bool on, shown;
    size_t nbooks;
    struct timespec start, last;
};
void cs_progress_init(struct cs_progress *p, FILE *f, size_t nbooks);
void cs_progress_update(size_t trials, size_t max, size_t open, void *arg);
void cs_progress_end(struct cs_progress *p);

/* costsim replay (replay.c): argv[0] is "replay". Returns the exit
 * status. */
int cs_replay_main(int argc, char **argv);

/* The tornado (sens_out.c): after the table, each priced book in the
 * table's order (order[0..nbooks)); in JSON, run's settings into root
 * and book i's swings into its object. 0, or -1 when out of memory. */
int cs_print_tornado(FILE *f, const struct cs_run *run, const size_t *order);
int cs_tornado_json(json_t *root, const struct cs_run *run);
int cs_tornado_book_json(json_t *book, const struct cs_run *run, size_t i);

/* costsim breakeven (breakeven.c): argv[0] is "breakeven". Returns the
 * exit status. */
int cs_breakeven_main(int argc, char **argv);

#endif
