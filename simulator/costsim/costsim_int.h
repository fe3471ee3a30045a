/*
 * costsim_int.h - what costsim's files share beyond costsim.h (the
 * books, the run and its outputs); private to simulator/costsim/.
 */
#ifndef COSTSIM_INT_H
#define COSTSIM_INT_H

#include <stdio.h>
#include <time.h>

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

#endif
