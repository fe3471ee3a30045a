/*
 * fleet_load.h - the fleet-day the invoice and report benches share:
 * the generated fleet, full (a sample of every slot every second),
 * stored through the ingest transaction (meter_ingest), so the blocks,
 * sandboxes and rollups are exactly what meterd stores; its accounts on
 * one price book (E2B's rates, storage and egress priced too).
 */
#ifndef FLEET_LOAD_H
#define FLEET_LOAD_H

#include <stddef.h>

#include "meter_db.h"

/* The fleet's first second: 2026-01-10T00:00:00Z, inside period
 * 2026-01 for up to 21 days. */
#define FLEET_START 1768003200LL
#define FLEET_PERIOD "2026-01"

/* Stores book "bench", then SANDBOXES slots x SECONDS of the fleet over
 * ACCOUNTS accounts (acct-0, acct-1, ...) a minute of the whole fleet
 * per ingest transaction, then the accounts on the book; prints what it
 * stored and how long it took, prefixed by who. Returns the samples
 * stored; exits on failure. */
size_t fleet_load(PGconn *db, size_t sandboxes, unsigned seconds,
                  size_t accounts, const char *who);

#endif
