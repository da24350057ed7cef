/*  actors/kafka/acceptor.c - the Kafka listener ("kafka_acceptor")
    Owns the listening socket on KAFKA_PORT and every Kafka client socket:
    non-blocking reads, framing (INT32 size prefix, wire/kafka_proto.h; a
    size below 8 or above KAFKA_MAX_REQUEST_BYTES closes the connection),
    each complete frame handed to the codec as KAFKA_REQUEST with a
    per-connection sequence number, answers written back in that order.
    Modelled on actors/http/acceptor.c: bounded pipelining (at most
    S_MAX_IN_FLIGHT frames of one connection at the codec), reading paused
    while the codec is full (QN_EAGAIN) or unsent output is large, so TCP
    pushes back on the client.
    Receives  QN_MSG_KAFKA_RESPONSE from the codec; STOP
    Sends     QN_MSG_KAFKA_REQUEST, QN_MSG_KAFKA_CLOSED to "kafka"
    Owns      sockets, input and output buffers
    Failure   a framing error or a socket error closes that client only; a
              response out of sequence closes its client (a codec bug must
              not reorder answers)
*/
#include "actors/actors.h"
#include "base/hashmap.h"
#include "wire/kafka_proto.h"
#include "wire/msg_kafka.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define S_CODEC           "kafka"
#define S_READ_CHUNK      65536
#define S_MAX_IN_FLIGHT   64            //  Frames of one connection at the codec
#define S_OUT_SOFT_LIMIT  (4 * 1024 * 1024)

typedef struct {
    uint64_t id;
    int fd;
    qn_buf_t in;                //  Bytes read, not yet framed
    qn_buf_t out;               //  Unsent output
    size_t out_off;
    uint32_t next_seq;          //  Seq of the next request
    uint32_t write_seq;         //  Seq whose answer comes next
    uint32_t in_flight;
    bool paused;
    bool closing;               //  Close once the answers in flight are out
    bool watching_out;
    qn_frame_t parked;          //  A request the codec could not take yet
    uint32_t parked_seq;
    bool has_parked;
} s_conn_t;

typedef struct {
    qn_kernel_t *kernel;        //  Not owned
    const qn_config_t *config;  //  Not owned
    int listen_fd;
    qn_hashmap_t *conns;        //  id -> s_conn_t *
    qn_hashmap_t *by_fd;        //  fd + 1 -> s_conn_t *
    uint64_t next_id;
    uint32_t conn_count;
    bool draining;
    bool waiting_writable;
    msgpack_sbuffer body;       //  Reused for message bodies
} self_t;

static void s_process (self_t *self, s_conn_t *c);

static void
s_watch (self_t *self, s_conn_t *c)
{
    bool reading = !(c->paused || c->closing);
    qn_fd_modify (self->kernel, c->fd, (reading ? QN_FD_IN : 0) | (c->watching_out ? QN_FD_OUT : 0));
}

static void
s_close (self_t *self, s_conn_t *c)
{
    qn_fd_unwatch (self->kernel, c->fd);
    if (c->in_flight) {
        msgpack_sbuffer_clear (&self->body);
        qn_msg_kafka_closed_encode (&self->body, c->id);
        qn_send_body (self->kernel, S_CODEC, QN_MSG_KAFKA_CLOSED, 0, self->body.data, self->body.size);
    }
    qn_hashmap_remove (self->conns, c->id);
    qn_hashmap_remove (self->by_fd, (uint64_t) c->fd + 1);
    close (c->fd);
    self->conn_count--;
    qn_gauge_set (self->kernel, "kafka_connections", self->conn_count);
    qn_buf_free (&c->in);
    qn_buf_free (&c->out);
    free (c->parked.data);
    free (c);
    if (self->draining && self->conn_count == 0)
        qn_actor_done (self->kernel);
}

static void
s_resume (self_t *self, s_conn_t *c)
{
    c->paused = false;
    s_watch (self, c);
    s_process (self, c);
}

//  Writes what it can. False if the connection was closed.
static bool
s_flush (self_t *self, s_conn_t *c)
{
    while (c->out_off < c->out.len) {
        ssize_t n = write (c->fd, c->out.data + c->out_off, c->out.len - c->out_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!c->watching_out) {
                c->watching_out = true;
                s_watch (self, c);
            }
            return true;
        }
        if (n <= 0) {
            s_close (self, c);
            return false;
        }
        c->out_off += (size_t) n;
    }
    qn_buf_reset (&c->out);
    c->out_off = 0;
    if (c->watching_out) {
        c->watching_out = false;
        s_watch (self, c);
    }
    if (c->closing && c->in_flight == 0) {
        s_close (self, c);
        return false;
    }
    if (c->paused && !c->has_parked && c->in_flight < S_MAX_IN_FLIGHT)
        s_resume (self, c);
    return true;
}

static void s_on_codec_writable (void *self_, void *arg);

//  Sends the parked request. 0, or QN_EAGAIN (still parked).
static int
s_send_parked (self_t *self, s_conn_t *c)
{
    msgpack_sbuffer_clear (&self->body);
    qn_msg_kafka_request_encode (&self->body, c->id, c->parked_seq);
    qn_msg_t msg = {
        .to = S_CODEC, .type = QN_MSG_KAFKA_REQUEST,
        .body = self->body.data, .body_len = self->body.size,
        .frames = &c->parked, .frame_count = 1
    };
    int rc = qn_send (self->kernel, &msg);
    if (rc == 0)
        c->has_parked = false;
    else
    if (!self->waiting_writable) {
        self->waiting_writable = true;
        qn_on_writable (self->kernel, S_CODEC, s_on_codec_writable, NULL);
    }
    return rc;
}

//  Frames and dispatches what c->in holds, until it runs out, the
//  connection must pause, or a framing error closes it.
static void
s_process (self_t *self, s_conn_t *c)
{
    size_t at = 0;
    while (!c->paused && !c->closing) {
        size_t payload = 0;
        int64_t n = qn_kafka_frame (c->in.data + at, c->in.len - at,
                                    (size_t) self->config->kafka_max_request_bytes, &payload);
        if (n == QN_KAFKA_WIRE_INCOMPLETE)
            break;
        if (n == QN_KAFKA_WIRE_MALFORMED) {
            qn_warn ("kafka frame refused: conn=%llu size out of bounds", (unsigned long long) c->id);
            qn_count (self->kernel, "kafka_errors_framing", 1);
            s_close (self, c);
            return;
        }
        c->parked.data = qn_malloc (payload);
        memcpy (c->parked.data, c->in.data + at + 4, payload);
        c->parked.len = payload;
        c->parked_seq = c->next_seq++;
        c->has_parked = true;
        c->in_flight++;
        at += (size_t) n;
        qn_count (self->kernel, "kafka_requests", 1);
        if (s_send_parked (self, c) || c->in_flight >= S_MAX_IN_FLIGHT
         || c->out.len - c->out_off >= S_OUT_SOFT_LIMIT) {
            c->paused = true;
            s_watch (self, c);
        }
    }
    qn_buf_consume (&c->in, at);
    if (c->in.len == 0 && c->in.cap > S_READ_CHUNK)
        qn_buf_free (&c->in);
}

static void
s_on_client (void *self_, int fd, uint32_t events)
{
    self_t *self = self_;
    s_conn_t *c = qn_hashmap_get (self->by_fd, (uint64_t) fd + 1);
    if (!c)
        return;
    if (events & QN_FD_OUT) {
        if (!s_flush (self, c))
            return;
    }
    if (!(events & (QN_FD_IN | QN_FD_HUP | QN_FD_ERR)) || c->paused || c->closing)
        return;
    qn_buf_reserve (&c->in, S_READ_CHUNK);
    ssize_t n = read (fd, c->in.data + c->in.len, c->in.cap - c->in.len - 1);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        s_close (self, c);
        return;
    }
    c->in.len += (size_t) n;
    s_process (self, c);
}

typedef struct {
    self_t *self;
    qn_buf_t ids;
} s_collect_t;

static void
s_collect_parked (void *arg, uint64_t key, void *value)
{
    s_collect_t *col = arg;
    s_conn_t *c = value;
    if (c->has_parked || c->paused)
        qn_buf_append (&col->ids, &key, sizeof key);
}

//  The codec drained: send parked requests, then let their readers go on.
static void
s_on_codec_writable (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    self->waiting_writable = false;
    s_collect_t col = { self, QN_BUF_INIT };
    qn_hashmap_each (self->conns, s_collect_parked, &col);
    for (size_t i = 0; i < col.ids.len / sizeof (uint64_t); i++) {
        uint64_t id;
        memcpy (&id, col.ids.data + i * sizeof id, sizeof id);
        s_conn_t *c = qn_hashmap_get (self->conns, id);
        if (!c)
            continue;
        if (c->has_parked && s_send_parked (self, c))
            break;                      //  Full again: wait for the next drain
        if (c->paused && c->in_flight < S_MAX_IN_FLIGHT && c->out.len - c->out_off < S_OUT_SOFT_LIMIT)
            s_resume (self, c);
    }
    qn_buf_free (&col.ids);
}

static void
s_on_accept (void *self_, int fd, uint32_t events)
{
    (void) fd;
    (void) events;
    self_t *self = self_;
    for (int i = 0; i < 256; i++) {
        int cfd = accept4 (self->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0)
            return;
        if (self->conn_count >= (uint32_t) self->config->max_connections || self->draining) {
            close (cfd);
            qn_count (self->kernel, "kafka_connections_refused", 1);
            continue;
        }
        int one = 1;
        setsockopt (cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        s_conn_t *c = qn_zalloc (sizeof *c);
        c->id = ++self->next_id;
        c->fd = cfd;
        qn_hashmap_put (self->conns, c->id, c);
        qn_hashmap_put (self->by_fd, (uint64_t) cfd + 1, c);
        self->conn_count++;
        qn_gauge_set (self->kernel, "kafka_connections", self->conn_count);
        qn_fd_watch (self->kernel, cfd, QN_FD_IN, s_on_client);
    }
}

static int
s_on_response (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    qn_msg_kafka_t m;
    if (env->frame_count > 1 || qn_msg_kafka_response_decode (env->body.ptr, env->body.len, &m))
        return QN_EPROTO;
    s_conn_t *c = qn_hashmap_get (self->conns, m.conn_id);
    if (!c)
        return 0;                       //  Client already gone
    if (m.seq != c->write_seq) {
        qn_error ("kafka answer out of order: conn=%llu seq=%u expected=%u",
                  (unsigned long long) c->id, m.seq, c->write_seq);
        s_close (self, c);
        return 0;
    }
    c->write_seq++;
    c->in_flight--;
    if (env->frame_count == 1) {
        size_t at = qn_kafka_frame_begin (&c->out);
        qn_buf_append (&c->out, env->frames [0].ptr, env->frames [0].len);
        qn_kafka_frame_end (&c->out, at);
    }
    if (m.close || self->draining)
        c->closing = true;
    s_flush (self, c);
    return 0;
}

static int
s_listen (self_t *self)
{
    char port [16];
    snprintf (port, sizeof port, "%lld", (long long) self->config->kafka_port);
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
    struct addrinfo *ai = NULL;
    const char *host = self->config->host && self->config->host [0] ? self->config->host : NULL;
    int rc = getaddrinfo (host, port, &hints, &ai);
    if (rc) {
        qn_error ("cannot resolve listen address: host=%s reason=%s", host ? host : "*", gai_strerror (rc));
        return QN_EIO;
    }
    int fd = socket (ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind (fd, ai->ai_addr, ai->ai_addrlen) || listen (fd, 4096)) {
        qn_error ("cannot listen: door=kafka port=%s reason=%s", port, strerror (errno));
        if (fd >= 0)
            close (fd);
        freeaddrinfo (ai);
        return QN_EIO;
    }
    freeaddrinfo (ai);
    self->listen_fd = fd;
    qn_info ("listening: door=kafka host=%s port=%s", host ? host : "*", port);
    return qn_fd_watch (self->kernel, fd, QN_FD_IN, s_on_accept);
}

static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    return s_listen (self_);
}

static void
s_collect_all (void *arg, uint64_t key, void *value)
{
    (void) value;
    qn_buf_append (arg, &key, sizeof key);
}

//  Graceful stop: no new connections or requests; idle connections close
//  now, busy ones after their answers.
static int
s_on_stop (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    self->draining = true;
    if (self->listen_fd >= 0) {
        qn_fd_unwatch (self->kernel, self->listen_fd);
        close (self->listen_fd);
        self->listen_fd = -1;
    }
    qn_buf_t ids = QN_BUF_INIT;
    qn_hashmap_each (self->conns, s_collect_all, &ids);
    for (size_t i = 0; i < ids.len / sizeof (uint64_t); i++) {
        uint64_t id;
        memcpy (&id, ids.data + i * sizeof id, sizeof id);
        s_conn_t *c = qn_hashmap_get (self->conns, id);
        if (!c)
            continue;
        if (c->in_flight == 0)
            s_close (self, c);
        else {
            c->closing = true;
            s_watch (self, c);
        }
    }
    qn_buf_free (&ids);
    return self->conn_count == 0 ? QN_DONE : 0;
}

static void
s_free_conn (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    s_conn_t *c = value;
    close (c->fd);
    qn_buf_free (&c->in);
    qn_buf_free (&c->out);
    free (c->parked.data);
    free (c);
}

static void
s_destroy (void **self_p)
{
    self_t *self = *self_p;
    qn_hashmap_each (self->conns, s_free_conn, NULL);
    qn_hashmap_destroy (&self->conns);
    qn_hashmap_destroy (&self->by_fd);
    if (self->listen_fd >= 0)
        close (self->listen_fd);
    msgpack_sbuffer_destroy (&self->body);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_STOP, s_on_stop },
    { QN_MSG_KAFKA_RESPONSE, s_on_response },
    { 0, NULL }
};

qn_actor_t *
qn_kafka_acceptor_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    self->listen_fd = -1;
    self->conns = qn_hashmap_new ();
    self->by_fd = qn_hashmap_new ();
    msgpack_sbuffer_init (&self->body);
    qn_actor_def_t def = {
        .name = "kafka_acceptor", .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}
