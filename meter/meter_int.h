/*
 * meter_int.h - small helpers shared by the files of meter/; private.
 */
#ifndef METER_INT_H
#define METER_INT_H

#include <arpa/inet.h>
#include <string.h>

#include "meter.h"

/* FNV-1a: hash of a string for the module's hash tables and names. */
static inline uint64_t
meter_fnv1a(const char *s)
{
    uint64_t h = 14695981039346656037ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

/* A big-endian 64-bit integer, as in PostgreSQL's binary format. */
static inline uint64_t
meter_be64(const char *p)
{
    uint32_t hi, lo;
    memcpy(&hi, p, 4);
    memcpy(&lo, p + 4, 4);
    return ((uint64_t)ntohl(hi) << 32) | ntohl(lo);
}

#endif
