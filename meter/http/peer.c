/*
 * peer.c - who is on the other end of a request: the client's address,
 * as text for the logs and as an id for the per-address limits, IPv4
 * and IPv6 alike; and the request's id.
 */
#include "http_int.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

/* The client's address, an IPv4-mapped IPv6 one (a dual-stack socket's
 * IPv4 client) unmapped: AF_INET with *v4, AF_INET6 with *v6, or 0. */
static int
peer(struct MHD_Connection *c, struct in_addr *v4, struct in6_addr *v6)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return 0;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET) {
        *v4 = ((const struct sockaddr_in *)(const void *)sa)->sin_addr;
        return AF_INET;
    }
    if (sa->sa_family != AF_INET6)
        return 0;
    *v6 = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(v6)) {
        memcpy(&v4->s_addr, v6->s6_addr + 12, 4);
        return AF_INET;
    }
    return AF_INET6;
}

void
http_peer_text(struct MHD_Connection *c, char *out, size_t n)
{
    struct in_addr v4;
    struct in6_addr v6;
    int family = peer(c, &v4, &v6);
    if (!family ||
        !inet_ntop(family, family == AF_INET ? (void *)&v4 : (void *)&v6, out,
                   (socklen_t)n))
        snprintf(out, n, "?");
}

int64_t
http_peer_id(struct MHD_Connection *c)
{
    struct in_addr v4;
    struct in6_addr v6;
    switch (peer(c, &v4, &v6)) {
    case AF_INET:
        return (int64_t)ntohl(v4.s_addr);
    case AF_INET6: {
        uint64_t prefix = 0;
        for (int i = 0; i < 8; i++)
            prefix = prefix << 8 | v6.s6_addr[i];
        /* With the top bit flipped: the prefixes of every assigned
         * range (global unicast 2000::/3 and ::/8 below the bit, ULA,
         * link-local and multicast above it) land outside the IPv4 ids
         * [0, 2^32) and outside 0; only the unassigned 8000::/32 could
         * meet them. */
        return (int64_t)(prefix ^ UINT64_C(0x8000000000000000));
    }
    default:
        return 0;
    }
}

/* A well-formed X-Request-Id: 1 to METER_HTTP_REQUEST_ID_MAX of
 * [A-Za-z0-9._-], safe in a header, a log line and a JSON string. */
static bool
id_shaped(const char *s)
{
    size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                         "0123456789._-");
    return n > 0 && n <= METER_HTTP_REQUEST_ID_MAX && s[n] == '\0';
}

/* A thread's generator (splitmix64), seeded once from the kernel: ids
 * unique with overwhelming odds, not secrets. */
static uint64_t
next_random(void)
{
    static _Thread_local uint64_t state;
    static _Thread_local bool seeded;
    if (!seeded) {
        if (getrandom(&state, sizeof(state), 0) != sizeof(state)) {
            struct timespec t;
            clock_gettime(CLOCK_REALTIME, &t);
            state = (uint64_t)t.tv_nsec ^ (uint64_t)t.tv_sec << 30 ^
                    (uint64_t)(uintptr_t)&state;
        }
        seeded = true;
    }
    uint64_t z = (state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

void
http_request_id(struct meter_http_request *rq)
{
    const char *theirs = meter_http_header(rq, "X-Request-Id");
    if (theirs && id_shaped(theirs)) {
        snprintf(rq->request_id, sizeof(rq->request_id), "%s", theirs);
        return;
    }
    snprintf(rq->request_id, sizeof(rq->request_id), "%016llx",
             (unsigned long long)next_random());
}
