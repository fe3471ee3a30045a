/*
 * slowconn.c - a slowloris for tests/hostile_sockets.sh: holds SOCKETS
 * connections open to 127.0.0.1:PORT for up to SECONDS, from ADDRESSES
 * source addresses 127.0.0.2 on (so that a per-address limit does not
 * refuse them all), the way an attacker with little bandwidth would.
 *
 * Half the sockets send the start of a request and then one header byte
 * a second (never finishing the headers: an idle timeout never fires on
 * them, meterd's --header-timeout does, 30 s after they open); the
 * other half connect and send nothing (half-open). A socket
 * the server closes is opened again 200 ms later, so the pressure
 * stays. bash's /dev/tcp cannot hold thousands of sockets at once; this
 * holds them in one poll loop.
 *
 * Every second it prints "held N closed N refused N" (held: connected
 * now, as a client sees it, so a connection still in the server's
 * listen backlog counts: the server's descriptors tell what it holds;
 * closed: by the server so far; refused: connects that failed), and the
 * same at the end, on SIGTERM or after SECONDS.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Connects started per pass of the loop: a burst of thousands would
 * overflow the listen backlog, and a dropped SYN waits a second. */
#define OPEN_BURST 64
#define REOPEN_MS 200
#define TRICKLE_MS 1000

enum state { IDLE, CONNECTING, OPEN };

struct slot {
    int fd;
    enum state state;
    bool trickle;     /* sends a header byte a second; else silent */
    double next;      /* when to reopen (IDLE) or send a byte (OPEN) */
    unsigned address; /* 127.0.0.(2 + address) */
};

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long
number(const char *s, long min, long max, const char *what)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max) {
        fprintf(stderr, "slowconn: %s '%s' is not from %ld to %ld\n", what, s,
                min, max);
        exit(2);
    }
    return v;
}

static void
drop(struct slot *s, double t)
{
    close(s->fd);
    s->fd = -1;
    s->state = IDLE;
    s->next = t + REOPEN_MS / 1e3;
}

/* Starts a connect from s's address; false if it failed at once. */
static bool
start(struct slot *s, unsigned short port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    struct sockaddr_in src = {.sin_family = AF_INET};
    src.sin_addr.s_addr = htonl(0x7f000002u + s->address);
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(port)};
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
        (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0 &&
         errno != EINPROGRESS)) {
        close(fd);
        return false;
    }
    s->fd = fd;
    s->state = CONNECTING;
    return true;
}

static void
report(int held, long closed, long refused, double t0)
{
    printf("t=%.1f held %d closed %ld refused %ld\n", now() - t0, held, closed,
           refused);
    fflush(stdout);
}

int
main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: slowconn PORT SOCKETS SECONDS [ADDRESSES]\n");
        return 2;
    }
    unsigned short port = (unsigned short)number(argv[1], 1, 65535, "port");
    long n = number(argv[2], 1, 1000000, "sockets");
    double seconds = (double)number(argv[3], 1, 3600, "seconds");
    unsigned addresses =
        argc == 5 ? (unsigned)number(argv[4], 1, 250, "addresses") : 1;

    /* A socket each, and room for stdio. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 16) {
        fprintf(stderr, "slowconn: the open-file limit %llu is below %ld\n",
                (unsigned long long)rl.rlim_cur, n + 16);
        return 1;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGPIPE, SIG_IGN);

    struct slot *slots = calloc((size_t)n, sizeof(*slots));
    struct pollfd *pfd = calloc((size_t)n, sizeof(*pfd));
    size_t *of = calloc((size_t)n, sizeof(*of));
    if (!slots || !pfd || !of) {
        fprintf(stderr, "slowconn: out of memory\n");
        return 1;
    }
    for (long i = 0; i < n; i++)
        slots[i] = (struct slot){.fd = -1,
                                 .state = IDLE,
                                 .trickle = i % 2 == 0,
                                 .address = (unsigned)i % addresses};

    static const char head[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    double t0 = now(), last_report = t0;
    long closed = 0, refused = 0;
    int held = 0;
    while (!stop && now() - t0 < seconds) {
        double t = now();
        int burst = 0;
        for (long i = 0; i < n && burst < OPEN_BURST; i++) {
            struct slot *s = &slots[i];
            if (s->state != IDLE || s->next > t)
                continue;
            burst++;
            if (!start(s, port)) {
                refused++;
                s->next = t + REOPEN_MS / 1e3;
            }
        }
        size_t np = 0;
        for (long i = 0; i < n; i++) {
            struct slot *s = &slots[i];
            if (s->state == IDLE)
                continue;
            pfd[np] = (struct pollfd){
                .fd = s->fd,
                .events = s->state == CONNECTING ? POLLOUT : POLLIN};
            of[np++] = (size_t)i;
        }
        /* Short, so that bursts of connects and trickled bytes go out on
         * time. */
        int ready = poll(pfd, np, 20);
        if (ready < 0 && errno != EINTR)
            break;
        t = now();
        for (size_t k = 0; k < np; k++) {
            struct slot *s = &slots[of[k]];
            if (s->state == CONNECTING && pfd[k].revents) {
                int err = 0;
                socklen_t len = sizeof(err);
                getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (err || (pfd[k].revents & (POLLERR | POLLHUP))) {
                    refused++;
                    drop(s, t);
                    continue;
                }
                s->state = OPEN;
                held++;
                if (s->trickle &&
                    send(s->fd, head, sizeof(head) - 1, MSG_NOSIGNAL) < 0) {
                    closed++;
                    held--;
                    drop(s, t);
                    continue;
                }
                s->next = t + TRICKLE_MS / 1e3;
            } else if (s->state == OPEN && pfd[k].revents) {
                /* The server closed it (or answered, then closed). */
                char buf[512];
                ssize_t got = recv(s->fd, buf, sizeof(buf), 0);
                if (got <= 0 && !(got < 0 && errno == EAGAIN)) {
                    closed++;
                    held--;
                    drop(s, t);
                }
            }
        }
        for (long i = 0; i < n; i++) {
            struct slot *s = &slots[i];
            if (s->state != OPEN || !s->trickle || s->next > t)
                continue;
            if (send(s->fd, "a", 1, MSG_NOSIGNAL) < 0) {
                closed++;
                held--;
                drop(s, t);
                continue;
            }
            s->next = t + TRICKLE_MS / 1e3;
        }
        if (t - last_report >= 1) {
            report(held, closed, refused, t0);
            last_report = t;
        }
    }
    report(held, closed, refused, t0);
    for (long i = 0; i < n; i++)
        if (slots[i].fd >= 0)
            close(slots[i].fd);
    free(slots);
    free(pfd);
    free(of);
    return 0;
}
