/*  bench/mesh_rr.c - the ephemeral request/reply load of bench/mesh.sh
    A small single-threaded epoll client, because the node generator spent
    more CPU per round trip than the two brokers together (docs/benchmarks.md).

    mesh_rr HOST_A PORT_A HOST_B PORT_B SECONDS REQUESTERS DEPTH REPLIERS QUEUE OUT_JSON [BATCH]

    REPLIERS keep-alive connections to B each loop: GET receive (long-poll);
    on a message, POST reply and the next GET receive in one write
    (pipelined). With BATCH > 0 a replier receives up to BATCH requests at
    once (receive?max=BATCH) and answers them in one reply call
    ({"replies": [...]}). REQUESTERS keep-alive connections to A each keep DEPTH
    POST request calls in flight (HTTP/1.1 pipelining: answers come in
    order). A round trip is one request call answered 200; its latency is
    from writing the call to reading its answer. Writes OUT_JSON
    {"requesters","depth","repliers","seconds","trips","errors","perSecond","p50","p99"}.
*/
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FIFO 256

typedef struct {
    int fd;
    bool replier;
    char *in;                   //  Unparsed answers
    size_t in_len, in_cap;
    char *out;                  //  Unwritten calls
    size_t out_len, out_cap;
    int64_t sent_us [MAX_FIFO]; //  Requester: when each call in flight was written
    char kind [MAX_FIFO];       //  Replier: 'r' receive, 'p' reply
    unsigned head, count;
    uint64_t n;
} conn_t;

static int s_ep;
static const char *s_queue;
static int s_batch;
static int64_t s_stop_us;
static uint64_t s_trips, s_errors;
static double *s_lat;
static size_t s_lat_len, s_lat_cap;

static int64_t
s_now_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
s_die (const char *what)
{
    fprintf (stderr, "mesh_rr: %s: %s\n", what, strerror (errno));
    exit (1);
}

static void
s_append (char **b, size_t *len, size_t *cap, const char *data, size_t n)
{
    if (*len + n > *cap) {
        *cap = (*len + n) * 2 + 4096;
        *b = realloc (*b, *cap);
        if (!*b)
            s_die ("realloc");
    }
    memcpy (*b + *len, data, n);
    *len += n;
}

static void
s_flush (conn_t *c)
{
    size_t off = 0;
    while (off < c->out_len) {
        ssize_t w = write (c->fd, c->out + off, c->out_len - off);
        if (w < 0) {
            if (errno == EAGAIN)
                break;
            s_die ("write");
        }
        off += (size_t) w;
    }
    memmove (c->out, c->out + off, c->out_len - off);
    c->out_len -= off;
    struct epoll_event ev = { .events = EPOLLIN | (c->out_len ? EPOLLOUT : 0), .data.ptr = c };
    epoll_ctl (s_ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void
s_call (conn_t *c, const char *method, const char *path, const char *body, char kind)
{
    char head [512];
    size_t blen = body ? strlen (body) : 0;
    int n = body
          ? snprintf (head, sizeof head, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\n\r\n", method, path, blen)
          : snprintf (head, sizeof head, "%s %s HTTP/1.1\r\nHost: x\r\n\r\n", method, path);
    s_append (&c->out, &c->out_len, &c->out_cap, head, (size_t) n);
    if (body)
        s_append (&c->out, &c->out_len, &c->out_cap, body, blen);
    unsigned slot = (c->head + c->count) % MAX_FIFO;
    c->sent_us [slot] = s_now_us ();
    c->kind [slot] = kind;
    c->count++;
}

static void
s_request (conn_t *c)
{
    char path [300], body [128];
    snprintf (path, sizeof path, "/api/v1/ephemeral/queues/%s/request", s_queue);
    snprintf (body, sizeof body, "{\"payload\":{\"n\":%llu},\"timeout\":5000}", (unsigned long long) c->n++);
    s_call (c, "POST", path, body, 'q');
}

static void
s_receive (conn_t *c)
{
    char path [300];
    if (s_batch)
        snprintf (path, sizeof path, "/api/v1/ephemeral/queues/%s/receive?timeout=1000&max=%d", s_queue, s_batch);
    else
        snprintf (path, sizeof path, "/api/v1/ephemeral/queues/%s/receive?timeout=1000", s_queue);
    s_call (c, "GET", path, NULL, 'r');
}

//  The JSON string value of "key" in body (no escapes expected), or false.
static bool
s_field (const char *body, size_t len, const char *key, char *out, size_t cap)
{
    char pat [64];
    int pl = snprintf (pat, sizeof pat, "\"%s\":\"", key);
    const char *p = memmem (body, len, pat, (size_t) pl);
    if (!p)
        return false;
    p += pl;
    const char *e = memchr (p, '"', (size_t) (body + len - p));
    if (!e || (size_t) (e - p) >= cap)
        return false;
    memcpy (out, p, (size_t) (e - p));
    out [e - p] = 0;
    return true;
}

static void
s_on_answer (conn_t *c, int status, const char *body, size_t len)
{
    unsigned slot = c->head;
    c->head = (c->head + 1) % MAX_FIFO;
    c->count--;
    int64_t now = s_now_us ();
    bool running = now < s_stop_us;
    if (!c->replier) {
        if (status == 200) {
            s_trips++;
            if (s_lat_len == s_lat_cap) {
                s_lat_cap = s_lat_cap ? s_lat_cap * 2 : 65536;
                s_lat = realloc (s_lat, s_lat_cap * sizeof *s_lat);
            }
            s_lat [s_lat_len++] = (double) (now - c->sent_us [slot]) / 1000.0;
        }
        else
            s_errors++;
        if (running)
            s_request (c);
        return;
    }
    if (c->kind [slot] == 'p')
        return;                 //  The reply's own answer
    if (status == 200 && s_batch) {
        //  {"messages":[{..,"replyTo":"..","correlationId":".."}, ...]}
        static char *out;
        static size_t out_len, out_cap;
        out_len = 0;
        s_append (&out, &out_len, &out_cap, "{\"replies\":[", 12);
        const char *p = body, *end = body + len;
        char reply_to [128], corr [128], one [400];
        int n = 0;
        while (p < end && s_field (p, (size_t) (end - p), "replyTo", reply_to, sizeof reply_to)
               && s_field (p, (size_t) (end - p), "correlationId", corr, sizeof corr)) {
            int k = snprintf (one, sizeof one, "%s{\"replyTo\":\"%s\",\"correlationId\":\"%s\",\"payload\":1}",
                              n++ ? "," : "", reply_to, corr);
            s_append (&out, &out_len, &out_cap, one, (size_t) k);
            p = memmem (p, (size_t) (end - p), "\"correlationId\":\"", 17);
            p += 17;
        }
        s_append (&out, &out_len, &out_cap, "]}", 3);
        if (n)
            s_call (c, "POST", "/api/v1/ephemeral/reply", out, 'p');
    }
    else
    if (status == 200) {
        char reply_to [128], corr [128], body_out [512];
        if (s_field (body, len, "replyTo", reply_to, sizeof reply_to)
         && s_field (body, len, "correlationId", corr, sizeof corr)) {
            snprintf (body_out, sizeof body_out,
                      "{\"replyTo\":\"%s\",\"correlationId\":\"%s\",\"payload\":1}", reply_to, corr);
            s_call (c, "POST", "/api/v1/ephemeral/reply", body_out, 'p');
        }
    }
    s_receive (c);             //  Repliers serve until the last request is answered
}

//  Parses every complete answer in c->in.
static void
s_parse (conn_t *c)
{
    size_t off = 0;
    for (;;) {
        char *p = c->in + off;
        size_t avail = c->in_len - off;
        char *end = memmem (p, avail, "\r\n\r\n", 4);
        if (!end)
            break;
        size_t head_len = (size_t) (end - p) + 4;
        int status = atoi (p + 9);
        size_t clen = 0;
        char *cl = memmem (p, head_len, "Content-Length:", 15);
        if (cl)
            clen = (size_t) strtoul (cl + 15, NULL, 10);
        if (avail < head_len + clen)
            break;
        s_on_answer (c, status, p + head_len, clen);
        off += head_len + clen;
    }
    memmove (c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
}

static conn_t *
s_connect (const char *host, int port, bool replier)
{
    conn_t *c = calloc (1, sizeof *c);
    c->replier = replier;
    c->fd = socket (AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port) };
    inet_pton (AF_INET, host, &sa.sin_addr);
    if (connect (c->fd, (struct sockaddr *) &sa, sizeof sa))
        s_die ("connect");
    int one = 1;
    setsockopt (c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
    epoll_ctl (s_ep, EPOLL_CTL_ADD, c->fd, &ev);
    return c;
}

static int
s_cmp (const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

int
main (int argc, char **argv)
{
    if (argc != 11 && argc != 12) {
        fprintf (stderr, "usage: mesh_rr HOST_A PORT_A HOST_B PORT_B SECONDS REQUESTERS DEPTH REPLIERS QUEUE OUT_JSON [BATCH]\n");
        return 2;
    }
    s_batch = argc == 12 ? atoi (argv [11]) : 0;
    double seconds = atof (argv [5]);
    int requesters = atoi (argv [6]), depth = atoi (argv [7]), repliers = atoi (argv [8]);
    if (depth < 1 || depth > MAX_FIFO / 2 || requesters < 1 || repliers < 1)
        return 2;
    s_queue = argv [9];
    s_ep = epoll_create1 (0);
    int total = requesters + repliers;
    conn_t **conns = calloc ((size_t) total, sizeof *conns);
    s_stop_us = INT64_MAX;
    for (int i = 0; i < repliers; i++) {
        conns [i] = s_connect (argv [3], atoi (argv [4]), true);
        s_receive (conns [i]);
        s_flush (conns [i]);
    }
    usleep (500000);            //  Every replier waits, and A has heard so
    int64_t started = s_now_us ();
    s_stop_us = started + (int64_t) (seconds * 1e6);
    for (int i = repliers; i < total; i++) {
        conns [i] = s_connect (argv [1], atoi (argv [2]), false);
        for (int d = 0; d < depth; d++)
            s_request (conns [i]);
        s_flush (conns [i]);
    }
    int64_t ended = 0;
    for (;;) {
        int64_t now = s_now_us ();
        bool busy = false;
        for (int i = repliers; i < total; i++)
            busy = busy || conns [i]->count;
        if (!ended && (now >= s_stop_us && !busy))
            ended = now;
        if (ended || now > s_stop_us + 10000000)
            break;
        struct epoll_event evs [256];
        int n = epoll_wait (s_ep, evs, 256, 100);
        for (int i = 0; i < n; i++) {
            conn_t *c = evs [i].data.ptr;
            if (evs [i].events & EPOLLOUT)
                s_flush (c);
            if (evs [i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                char buf [65536];
                ssize_t r = read (c->fd, buf, sizeof buf);
                if (r == 0) {
                    fprintf (stderr, "mesh_rr: the broker closed a connection\n");
                    return 1;
                }
                if (r < 0) {
                    if (errno == EAGAIN || errno == EINTR)
                        continue;
                    s_die ("read");
                }
                s_append (&c->in, &c->in_len, &c->in_cap, buf, (size_t) r);
                s_parse (c);
                if (c->out_len)
                    s_flush (c);
            }
        }
    }
    if (!ended)
        ended = s_now_us ();
    double elapsed = (double) (ended - started) / 1e6;
    qsort (s_lat, s_lat_len, sizeof *s_lat, s_cmp);
    double p50 = s_lat_len ? s_lat [s_lat_len / 2] : -1;
    double p99 = s_lat_len ? s_lat [(size_t) ((double) s_lat_len * 0.99)] : -1;
    FILE *f = fopen (argv [10], "w");
    if (!f)
        s_die ("open OUT_JSON");
    fprintf (f, "{\"batch\":%d,\"requesters\":%d,\"depth\":%d,\"repliers\":%d,\"seconds\":%.3f,\"trips\":%llu,"
             "\"errors\":%llu,\"perSecond\":%.1f,\"p50\":%.3f,\"p99\":%.3f}\n",
             s_batch, requesters, depth, repliers, elapsed, (unsigned long long) s_trips,
             (unsigned long long) s_errors, (double) s_trips / elapsed, p50, p99);
    fclose (f);
    return 0;
}
