/*
 * costsim_int.h - what costsim's files share: the books it compares and
 * the run's settings; private to simulator/.
 */
#ifndef COSTSIM_INT_H
#define COSTSIM_INT_H

#include <stdio.h>

#include "sim.h"

/* A book as costsim shows it: the engine's book and what the file says
 * about where its prices come from. */
struct cs_book {
    char file[256];
    struct pricing_book *book;
    char source[1024];
    char as_of[256];
    char name[128];
};

/* The installed books' folder: $METER_DATA_DIR/books, else
 * share/meter/books beside the program's bin/. -1 if it cannot be told. */
int cs_default_books(char *out, size_t n);
/* Every *.json of dir, in name order, into *out (*n of them), released
 * with cs_books_free. -1, the reason on stderr, if one is bad. */
int cs_load_books(const char *dir, struct cs_book **out, size_t *n);
void cs_books_free(struct cs_book *b, size_t n);

struct cs_run {
    const char *profile_path;
    const struct sim_profile *profile;
    const struct cs_book *books;
    size_t nbooks;
    const struct sim_mc_opts *opts;
    const struct sim_mc_result *res;
};

/* costsim replay (replay.c): argv[0] is "replay". Returns the exit
 * status. */
int cs_replay_main(int argc, char **argv);

/* The comparison as a terminal table or as JSON, on f. 0, or -1 when
 * out of memory. */
int cs_print_table(FILE *f, const struct cs_run *run);
int cs_print_json(FILE *f, const struct cs_run *run);

#endif
