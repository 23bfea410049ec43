/*
 * The closed-loop HTTP/1.1 keep-alive load generator of the benchmarks, in C.
 *
 * `concurrency` connections to 127.0.0.1:port each send one pre-built
 * `POST path` with a fixed body and read the whole answer (content-length
 * framing), then send the next at once, for `seconds`. One thread, one epoll
 * set. It does what `benchmarks/_loadgen.py` does in closed-loop mode, for a
 * small part of the CPU: on a 2-core machine the generator shares the cores
 * with the servers it measures, and the Python one takes more than half a
 * core at the rates two workers serve.
 *
 *   loadgen PORT BODY_FILE CONCURRENCY SECONDS OUT_JSON [PATH]
 *
 * Writes {"count", "errors", "seconds", "cpu_seconds", "backlog": 0} to
 * OUT_JSON, as the Python generator does, and "sleeps": how many times it
 * waited for the server (voluntary context switches: each is a wake-up the
 * server's write paid for). An error is an answer other than
 * 200, a broken or closed connection, or an answer past MAX_ANSWER bytes; a
 * broken connection is opened again (at most MAX_RECONNECTS in a run).
 *
 * Bounds: the run ends `seconds` after it began (epoll waits at most 10 ms
 * at a time); an answer is read into at most MAX_ANSWER bytes; the request
 * body at most MAX_BODY bytes; connections at most MAX_CONNS.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 1024
#define MAX_BODY (16 * 1024 * 1024)
#define MAX_ANSWER (64 * 1024 * 1024)
#define MAX_RECONNECTS 10000

struct conn {
    int fd;
    size_t sent;      /* bytes of the request written so far */
    char *buf;        /* the answer read so far */
    size_t len, cap;
};

static char *request;
static size_t request_len;
static struct sockaddr_in addr;
static int epfd;
static long count, errors, reconnects;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

static int open_conn(struct conn *c) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
    c->fd = fd;
    c->sent = 0;
    c->len = 0;
    return 0;
}

static void want(struct conn *c, unsigned events) {
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl");
}

/* A broken connection is an error; it is opened again (at most MAX_RECONNECTS in a run). */
static void broken(struct conn *c) {
    errors++;
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    if (reconnects++ < MAX_RECONNECTS && open_conn(c) < 0) errors++;
}

/* Write what is left of the request; 1 once it is all out. */
static int send_rest(struct conn *c) {
    while (c->sent < request_len) {
        ssize_t n = write(c->fd, request + c->sent, request_len - c->sent);
        if (n < 0) return errno == EAGAIN ? 0 : -1;
        c->sent += (size_t)n;
    }
    return 1;
}

/* The length of one whole answer at the head of c->buf, 0 while incomplete, -1 if bad. */
static long whole_answer(struct conn *c, int *status) {
    char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
    if (end == NULL) return c->len > 65536 ? -1 : 0;
    size_t head = (size_t)(end - c->buf) + 4;
    if (c->len < 12 || memcmp(c->buf, "HTTP/1.", 7) != 0) return -1;
    *status = atoi(c->buf + 9);
    long body = -1;
    for (char *line = memchr(c->buf, '\n', head); line && line < end; line = memchr(line + 1, '\n', (size_t)(end - line))) {
        if (strncasecmp(line + 1, "content-length:", 15) == 0) body = atol(line + 16);
    }
    if (body < 0 || head + (size_t)body > MAX_ANSWER) return -1;
    return head + (size_t)body <= c->len ? (long)(head + (size_t)body) : 0;
}

static void readable(struct conn *c) {
    for (;;) {
        if (c->cap - c->len < 65536) {
            size_t cap = c->cap * 2;
            if (cap > MAX_ANSWER + 65536) { broken(c); return; }
            char *grown = realloc(c->buf, cap);
            if (grown == NULL) die("realloc");
            c->buf = grown;
            c->cap = cap;
        }
        ssize_t n = read(c->fd, c->buf + c->len, c->cap - c->len);
        if (n == 0) { broken(c); return; }
        if (n < 0) {
            if (errno == EAGAIN) return;
            broken(c);
            return;
        }
        c->len += (size_t)n;
        int status = 0;
        long whole = whole_answer(c, &status);
        if (whole < 0) { broken(c); return; }
        if (whole > 0) {
            if (status == 200) count++; else errors++;
            memmove(c->buf, c->buf + whole, c->len - (size_t)whole);
            c->len -= (size_t)whole;
            c->sent = 0;
            int out = send_rest(c);
            if (out < 0) { broken(c); return; }
            if (out == 0) { want(c, EPOLLIN | EPOLLOUT); return; }
        }
    }
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s PORT BODY_FILE CONCURRENCY SECONDS OUT_JSON [PATH]\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]);
    int concurrency = atoi(argv[3]);
    double seconds = atof(argv[4]);
    const char *path = argc > 6 ? argv[6] : "/execute";
    if (port <= 0 || port > 65535 || concurrency <= 0 || concurrency > MAX_CONNS || seconds <= 0) {
        fprintf(stderr, "loadgen: bad port, concurrency (1..%d) or seconds\n", MAX_CONNS);
        return 2;
    }
    FILE *f = fopen(argv[2], "rb");
    if (f == NULL) die(argv[2]);
    char *body = malloc(MAX_BODY + 1);
    if (body == NULL) die("malloc");
    size_t body_len = fread(body, 1, MAX_BODY + 1, f);
    fclose(f);
    if (body_len > MAX_BODY) {
        fprintf(stderr, "loadgen: %s is over %d bytes\n", argv[2], MAX_BODY);
        return 2;
    }
    char head[512];
    int head_len = snprintf(head, sizeof head,
                            "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                            "Content-Length: %zu\r\n\r\n", path, port, body_len);
    if (head_len < 0 || (size_t)head_len >= sizeof head) {
        fprintf(stderr, "loadgen: path too long\n");
        return 2;
    }
    request_len = (size_t)head_len + body_len;
    request = malloc(request_len);
    if (request == NULL) die("malloc");
    memcpy(request, head, (size_t)head_len);
    memcpy(request + head_len, body, body_len);
    free(body);

    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) die("epoll_create1");
    struct conn *conns = calloc((size_t)concurrency, sizeof *conns);
    if (conns == NULL) die("calloc");
    for (int i = 0; i < concurrency; i++) {
        conns[i].cap = 65536;
        conns[i].buf = malloc(conns[i].cap);
        if (conns[i].buf == NULL) die("malloc");
        if (open_conn(&conns[i]) < 0) errors++;
    }

    double began = now(), until = began + seconds;
    struct epoll_event events[64];
    while (now() < until) {  /* bounded: the run's end */
        int n = epoll_wait(epfd, events, 64, 10);
        if (n < 0 && errno != EINTR) die("epoll_wait");
        for (int i = 0; i < n; i++) {
            struct conn *c = events[i].data.ptr;
            if (c->fd < 0) continue;
            if (events[i].events & (EPOLLERR | EPOLLHUP) && !(events[i].events & EPOLLIN)) {
                broken(c);
                continue;
            }
            if (events[i].events & EPOLLOUT) {
                int out = send_rest(c);
                if (out < 0) { broken(c); continue; }
                if (out == 1) want(c, EPOLLIN);
            }
            if (c->fd >= 0 && events[i].events & EPOLLIN) readable(c);
        }
    }
    double elapsed = now() - began;
    for (int i = 0; i < concurrency; i++) {
        if (conns[i].fd >= 0) close(conns[i].fd);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    FILE *out = fopen(argv[5], "w");
    if (out == NULL) die(argv[5]);
    fprintf(out,
            "{\"count\": %ld, \"errors\": %ld, \"seconds\": %.6f, \"cpu_seconds\": %.6f, "
            "\"backlog\": 0, \"sleeps\": %ld}\n",
            count, errors, elapsed, cpu, (long)ru.ru_nvcsw);
    fclose(out);
    return 0;
}
