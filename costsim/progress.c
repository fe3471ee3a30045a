/*
 * progress.c - costsim's progress bar: one line on stderr, redrawn after
 * each batch of trials and erased at the end, so a run of minutes says
 * how far it is. Only on a terminal: a redirected stderr (a log, a
 * test, CI) gets no bar and no control characters at all.
 */
#include "costsim_int.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Redraws at most this often: a small profile runs a batch in
 * milliseconds, and a terminal need not show each. */
#define EVERY_NS 100000000LL
#define WIDTH 20

static long long
since(const struct timespec *a, const struct timespec *b)
{
    return (long long)(b->tv_sec - a->tv_sec) * 1000000000LL +
           (b->tv_nsec - a->tv_nsec);
}

void
cs_progress_init(struct cs_progress *p, FILE *f, size_t nbooks)
{
    const char *term = getenv("TERM");
    memset(p, 0, sizeof(*p));
    p->f = f;
    p->nbooks = nbooks;
    /* A dumb terminal cannot erase the line. */
    p->on = isatty(fileno(f)) && !(term && strcmp(term, "dumb") == 0);
    clock_gettime(CLOCK_MONOTONIC, &p->start);
}

void
cs_progress_update(size_t trials, size_t max, size_t open, void *arg)
{
    struct cs_progress *p = arg;
    struct timespec now;
    if (!p->on)
        return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (p->shown && since(&p->last, &now) < EVERY_NS && trials < max &&
        open > 0)
        return;
    p->last = now;
    p->shown = true;
    char bar[WIDTH + 1];
    size_t full = max ? trials * WIDTH / max : WIDTH;
    for (size_t i = 0; i < WIDTH; i++)
        bar[i] = i < full ? '=' : i == full ? '>' : ' ';
    bar[WIDTH] = '\0';
    /* \r and erase to the end of the line: the bar is always redrawn
     * whole, shorter or longer than before. */
    fprintf(p->f,
            "\r\033[Kcostsim [%s] %zu/%zu trials, %zu of %zu books open, "
            "%lld s",
            bar, trials, max, open, p->nbooks,
            since(&p->start, &now) / 1000000000LL);
    fflush(p->f);
}

void
cs_progress_end(struct cs_progress *p)
{
    if (p->on && p->shown) {
        fputs("\r\033[K", p->f);
        fflush(p->f);
    }
    p->shown = false;
}
