/*
 * sim.h - the simulator's library: workloads generated second by second,
 * in the form the pricing engine and the meter take (struct
 * pricing_second). meterctl gen, make demo and the benchmarks use the
 * generated fleet; costsim will build its workloads here too.
 *
 * Depends only on pricing/. Deterministic for a seed. A fleet belongs to
 * one thread; objects from *_new are released with *_free, which
 * accepts NULL.
 */
#ifndef SIM_H
#define SIM_H

#include <stddef.h>
#include <stdint.h>

#include "pricing.h"

/* A generated fleet: N slots, each running one sandbox after another,
 * of four shapes (coding agent, evaluation, code run, browser; see
 * fleet.c and meter/README.md). Accounts are slot % accounts. */
struct sim_fleet;
/* NULL when out of memory. start is the first second generated. */
struct sim_fleet *sim_fleet_new(uint64_t seed, size_t sandboxes,
                                size_t accounts, int64_t start);
void sim_fleet_free(struct sim_fleet *f);
/* From now on every slot always runs a sandbox: a waiting slot starts
 * one now, and one that goes is followed by the next the same second. */
void sim_fleet_fill(struct sim_fleet *f);
size_t sim_fleet_size(const struct sim_fleet *f);
/* The next second sim_fleet_next will generate. */
int64_t sim_fleet_now(const struct sim_fleet *f);

/* Receives n consecutive seconds of one sandbox. */
typedef void sim_fleet_cb(const char *account, const char *sandbox,
                          const struct pricing_second *s, size_t n, void *arg);
/* Generates the next `seconds` seconds of every slot, sandbox by sandbox;
 * returns the number of samples. */
size_t sim_fleet_next(struct sim_fleet *f, uint32_t seconds, sim_fleet_cb *cb,
                      void *arg);

#endif
