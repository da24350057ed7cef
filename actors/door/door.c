/*  actors/door/door.c - the door engine's listener actor (actors/door/door.h)
    One actor per door, named by its definition: the broker's HTTP door
    ("acceptor"), SQS ("sqs_acceptor"), Kafka ("kafka_acceptor"), the
    proxy's and the sink's. Non-blocking reads into one shared buffer,
    framing by the protocol's table, requests to the codec in order with
    per-connection sequence numbers, answers written back in that order.
    Receives  the protocol's response_type from its codec; STOP
    Sends     the protocol's request_type, closed_type and drained_type to
              its codec
    Owns      the listening socket, client sockets, framing states, output
              buffers; idle connections hold no read buffer, so thousands
              of keep-alive clients cost little
    Failure   a client error closes that client only; a full codec pauses
              reading (TCP pushes back on the client); an answer out of
              sequence closes its client
*/
#include "actors/door/door.h"
#include "base/hashmap.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define S_READ_CHUNK 65536

typedef struct {
    uint32_t seq;
    char *data;                 //  Owned (NULL: no answer bytes)
    size_t len;
    bool close;
} s_stash_t;

typedef struct {
    uint64_t id;
    int fd;
    void *state;                //  Owned: the protocol's framing state
    qn_buf_t in;                //  Input read, not yet consumed
    qn_buf_t out;               //  Unsent output
    size_t out_off;
    uint32_t next_seq;          //  Seq of the next request
    uint32_t write_seq;         //  Seq whose answer goes out next
    s_stash_t *stash;           //  Answers that arrived early
    uint32_t stash_len, stash_cap;
    uint32_t in_flight;
    bool paused;                //  Not reading (limits or back-pressure)
    bool closing;               //  Close once in_flight answers are out
    bool linger;                //  An error answer: linger before closing
    int64_t linger_until_ms;    //  Lingering (write side shut) until then
    bool watching_out;
    qn_buf_t parked_body;       //  A request the codec could not take yet
    qn_frame_t parked_frame;
    bool parked;
    int64_t active_ms;          //  Last byte read or written
    int64_t request_ms;         //  When the current partial request began
} s_conn_t;

typedef struct {
    qn_kernel_t *kernel;        //  Not owned
    const qn_config_t *config;  //  Not owned
    const qn_door_proto_t *proto;
    int listen_fd;
    qn_hashmap_t *conns;        //  id -> s_conn_t *
    qn_hashmap_t *by_fd;        //  fd + 1 -> s_conn_t * (same objects)
    uint64_t next_id;
    uint32_t conn_count;
    bool draining;
    bool waiting_writable;
    char *read_buf;             //  Shared by all connections
    char *name;                 //  This actor's name (owned)
    char *codec;                //  Where requests go (owned)
    int64_t port;
    //  Counter names: <proto>_connections, ...
    char c_conns [48], c_refused [48], c_requests [48], c_framing [48], c_timeouts [48];
    qn_route_t routes [4];      //  START, STOP, the protocol's answer
} self_t;

static void s_resume (self_t *self, s_conn_t *c);
static void s_queue_answer (self_t *self, s_conn_t *c, uint32_t seq, const char *data,
                            size_t len, bool close);

int
qn_door_buf_write (void *buf, const char *data, size_t len)
{
    qn_buf_append ((qn_buf_t *) buf, data, len);
    return 0;
}

// ------------------------------------------------------------------ connections
static void
s_watch (self_t *self, s_conn_t *c)
{
    bool reading = c->linger_until_ms || !(c->paused || c->closing);
    uint32_t ev = (reading ? QN_FD_IN : 0) | (c->watching_out ? QN_FD_OUT : 0);
    qn_fd_modify (self->kernel, c->fd, ev);
}

static void
s_conn_free (self_t *self, s_conn_t *c)
{
    close (c->fd);
    if (self->proto->conn_free && c->state)
        self->proto->conn_free (c->state);
    qn_buf_free (&c->in);
    qn_buf_free (&c->out);
    qn_buf_free (&c->parked_body);
    free (c->parked_frame.data);
    for (uint32_t i = 0; i < c->stash_len; i++)
        free (c->stash [i].data);
    free (c->stash);
    free (c);
}

//  Cancel-on-close: the codec drops what the client still has in flight
//  (parked long-polls free their slots now).
static void
s_close (self_t *self, s_conn_t *c)
{
    qn_fd_unwatch (self->kernel, c->fd);
    if (c->in_flight) {
        qn_buf_t b = QN_BUF_INIT;
        self->proto->closed_encode (&b, c->id);
        qn_send_body (self->kernel, self->codec, self->proto->closed_type, 0, b.data, b.len);
        qn_buf_free (&b);
    }
    qn_hashmap_remove (self->conns, c->id);
    qn_hashmap_remove (self->by_fd, (uint64_t) c->fd + 1);
    self->conn_count--;
    qn_gauge_set (self->kernel, self->c_conns, self->conn_count);
    s_conn_free (self, c);
    if (self->draining && self->conn_count == 0)
        qn_actor_done (self->kernel);
}

//  Closes c, or after an error answer starts its lingering close: the
//  write side is shut (the client sees the end of the answer) and input is
//  read and dropped until the client closes or linger_ms pass. Closing
//  with unread input would make the kernel send a reset, which can destroy
//  the answer before the client reads it (the "lingering close" of nginx).
static void
s_finish (self_t *self, s_conn_t *c)
{
    if (!c->linger || !self->proto->linger_ms || c->linger_until_ms || shutdown (c->fd, SHUT_WR)) {
        s_close (self, c);
        return;
    }
    c->linger_until_ms = qn_now_ms () + self->proto->linger_ms;
    s_watch (self, c);
}

static bool
s_may_read (self_t *self, s_conn_t *c)
{
    return !c->parked && !c->closing && c->in_flight < self->proto->max_in_flight
        && c->out.len - c->out_off < self->proto->out_soft_limit;
}

//  Writes what it can. Returns false if the connection was closed (or is
//  lingering before it closes: either way, it takes no more requests).
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
        c->active_ms = qn_now_ms ();
    }
    //  Everything is out.
    if (c->out.cap > S_READ_CHUNK)
        qn_buf_free (&c->out);
    else
        qn_buf_reset (&c->out);
    c->out_off = 0;
    if (c->watching_out) {
        c->watching_out = false;
        s_watch (self, c);
    }
    if (c->closing && c->in_flight == 0) {
        s_finish (self, c);
        return false;
    }
    if (c->paused && s_may_read (self, c))
        s_resume (self, c);
    return true;
}

//  Answers the request being framed with an error, then the connection
//  closes (a protocol without error answers closes at once). The answer
//  takes that request's place in line: answers to earlier requests still
//  in flight go out before it.
static void
s_error_reply (self_t *self, s_conn_t *c, int status, const char *msg)
{
    qn_count (self->kernel, self->c_framing, 1);
    if (!self->proto->error_answer) {
        qn_warn ("%s framing error: conn=%llu reason=%s", self->proto->name,
                 (unsigned long long) c->id, msg);
        s_close (self, c);
        return;
    }
    qn_buf_t response = QN_BUF_INIT;
    self->proto->error_answer (&response, status, msg);
    c->in_flight++;
    s_queue_answer (self, c, c->next_seq++, response.data, response.len, true);
    qn_buf_free (&response);
    c->closing = true;
    c->linger = true;
    s_watch (self, c);
    s_flush (self, c);
}

// ------------------------------------------------------------------ requests
static void s_on_codec_writable (void *self_, void *arg);

static int
s_send_parked (self_t *self, s_conn_t *c)
{
    qn_msg_t msg = {
        .to = self->codec, .type = self->proto->request_type,
        .body = c->parked_body.data, .body_len = c->parked_body.len,
        .frames = &c->parked_frame, .frame_count = 1
    };
    int rc = qn_send (self->kernel, &msg);
    if (rc == 0) {
        c->parked = false;
        qn_buf_reset (&c->parked_body);
        c->parked_frame.data = NULL;
        c->parked_frame.len = 0;
    }
    else
    if (rc == QN_EAGAIN && !self->waiting_writable) {
        self->waiting_writable = true;
        qn_on_writable (self->kernel, self->codec, s_on_codec_writable, NULL);
    }
    return rc;
}

//  Hands the request framed into req to the codec. Returns false if the
//  connection must stop reading (codec full, or a limit).
static bool
s_dispatch (self_t *self, s_conn_t *c, qn_door_req_t *req)
{
    c->parked_frame = req->frame;
    if (req->last)
        c->closing = true;          //  Answer this one, then close
    c->next_seq++;
    c->in_flight++;
    c->parked = true;
    c->request_ms = 0;
    qn_count (self->kernel, self->c_requests, 1);
    s_send_parked (self, c);
    return s_may_read (self, c);
}

//  Frames bytes, dispatching every complete request. Returns how many
//  bytes were consumed (the caller keeps the rest), or -1 if the
//  connection closed or is closing after an error answer.
static ssize_t
s_process (self_t *self, s_conn_t *c, const char *data, size_t len)
{
    const char *start = data;
    while (len > 0) {
        if (!c->request_ms)
            c->request_ms = qn_now_ms ();
        size_t used = 0;
        qn_buf_reset (&c->parked_body);
        qn_door_req_t req = {
            .conn_id = c->id, .seq = c->next_seq, .draining = self->draining,
            .body = &c->parked_body
        };
        qn_door_rc_t rc = self->proto->feed (c->state, self->config, data, len, &used, &req);
        data += used;
        len -= used;
        if (rc == QN_DOOR_MORE)
            break;
        if (rc == QN_DOOR_INTERIM) {
            qn_buf_puts (&c->out, req.interim);
            if (!s_flush (self, c))
                return -1;
            continue;
        }
        if (rc == QN_DOOR_ERROR) {
            s_error_reply (self, c, req.error_status, req.error ? req.error : "malformed request");
            return -1;
        }
        if (!s_dispatch (self, c, &req)) {
            if (!c->closing) {
                c->paused = true;
                s_watch (self, c);
            }
            break;
        }
    }
    return data - start;
}

//  Frames what c->in holds (and keeps what is not consumed).
static void
s_process_kept (self_t *self, s_conn_t *c)
{
    ssize_t n = s_process (self, c, c->in.data, c->in.len);
    if (n < 0)
        return;
    qn_buf_consume (&c->in, (size_t) n);
    if (c->in.len == 0)
        qn_buf_free (&c->in);
}

static void
s_resume (self_t *self, s_conn_t *c)
{
    c->paused = false;
    s_watch (self, c);
    if (c->in.len)
        s_process_kept (self, c);
}

static void
s_collect_waiting (void *arg, uint64_t key, void *value)
{
    qn_buf_t *ids = arg;
    s_conn_t *c = value;
    if (c->parked || c->paused)
        qn_buf_append (ids, &key, sizeof key);
}

//  The codec drained: send parked requests in connection order, then let
//  their readers go on. Stops at the first refusal and waits again.
static void
s_on_codec_writable (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    self->waiting_writable = false;
    qn_buf_t ids = QN_BUF_INIT;
    qn_hashmap_each (self->conns, s_collect_waiting, &ids);
    size_t n = ids.len / sizeof (uint64_t);
    for (size_t i = 0; i < n && !self->waiting_writable; i++) {
        uint64_t id;
        memcpy (&id, ids.data + i * sizeof id, sizeof id);
        s_conn_t *c = qn_hashmap_get (self->conns, id);
        if (!c)
            continue;
        if (c->parked && s_send_parked (self, c) == QN_EAGAIN)
            break;
        if (c->paused && s_may_read (self, c))
            s_resume (self, c);
    }
    qn_buf_free (&ids);
}

static void
s_on_client (void *self_, int fd, uint32_t events)
{
    self_t *self = self_;
    s_conn_t *c = qn_hashmap_get (self->by_fd, (uint64_t) fd + 1);
    if (!c)
        return;
    //  Hang-up or error: the client is gone both ways (a half-close reads
    //  as end of file instead), and epoll reports it whatever the mask.
    if (events & (QN_FD_HUP | QN_FD_ERR)) {
        s_close (self, c);
        return;
    }
    if (c->linger_until_ms) {
        //  Lingering: drop what the client still sends, close at its end.
        ssize_t n = read (c->fd, self->read_buf, S_READ_CHUNK);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            s_close (self, c);
        return;
    }
    if (events & QN_FD_OUT)
        if (!s_flush (self, c))
            return;
    if (!(events & QN_FD_IN) || c->paused || c->closing)
        return;
    ssize_t n = read (c->fd, self->read_buf, S_READ_CHUNK);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        //  End of file or reset: the client is gone (an aborted request
        //  closes this way). Like nginx, we do not serve half-closed
        //  clients: in-flight work is cancelled, parked pops freed.
        s_close (self, c);
        return;
    }
    c->active_ms = qn_now_ms ();
    if (c->in.len) {
        //  A partial frame is kept: add to it.
        qn_buf_append (&c->in, self->read_buf, (size_t) n);
        s_process_kept (self, c);
        return;
    }
    ssize_t used = s_process (self, c, self->read_buf, (size_t) n);
    if (used >= 0 && used < n)
        qn_buf_append (&c->in, self->read_buf + used, (size_t) (n - used));
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
            if (self->proto->busy) {
                ssize_t w = write (cfd, self->proto->busy, strlen (self->proto->busy));
                (void) w;
            }
            close (cfd);
            qn_count (self->kernel, self->c_refused, 1);
            continue;
        }
        int one = 1;
        setsockopt (cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        s_conn_t *c = qn_zalloc (sizeof *c);
        c->id = ++self->next_id;
        c->fd = cfd;
        c->state = self->proto->conn_new ? self->proto->conn_new (self->config) : NULL;
        c->active_ms = qn_now_ms ();
        qn_hashmap_put (self->conns, c->id, c);
        qn_hashmap_put (self->by_fd, (uint64_t) cfd + 1, c);
        self->conn_count++;
        qn_gauge_set (self->kernel, self->c_conns, self->conn_count);
        qn_fd_watch (self->kernel, cfd, QN_FD_IN, s_on_client);
    }
}

// ------------------------------------------------------------------ answers
static void
s_write_answer (self_t *self, s_conn_t *c, const char *data, size_t len, bool close)
{
    if (data) {
        if (self->proto->response_write)
            self->proto->response_write (&c->out, data, len);
        else
            qn_buf_append (&c->out, data, len);
    }
    c->write_seq++;
    c->in_flight--;
    if (close)
        c->closing = true;
}

//  Appends an answer, or stashes it until the ones before it are out.
static void
s_queue_answer (self_t *self, s_conn_t *c, uint32_t seq, const char *data, size_t len, bool close)
{
    if (seq != c->write_seq) {
        if (c->stash_len == c->stash_cap) {
            c->stash_cap = c->stash_cap ? c->stash_cap * 2 : 4;
            c->stash = qn_realloc (c->stash, c->stash_cap * sizeof *c->stash);
        }
        s_stash_t *s = &c->stash [c->stash_len++];
        s->seq = seq;
        s->data = data ? qn_strndup (data, len) : NULL;
        s->len = len;
        s->close = close;
        return;
    }
    s_write_answer (self, c, data, len, close);
    //  Earlier arrivals that are now next in line.
    bool moved = true;
    while (moved) {
        moved = false;
        for (uint32_t i = 0; i < c->stash_len; i++)
            if (c->stash [i].seq == c->write_seq) {
                s_stash_t s = c->stash [i];
                c->stash [i] = c->stash [--c->stash_len];
                s_write_answer (self, c, s.data, s.len, s.close);
                free (s.data);
                moved = true;
                break;
            }
    }
}

//  True if seq is in flight on c and not answered yet.
static bool
s_seq_pending (const s_conn_t *c, uint32_t seq)
{
    if (seq - c->write_seq >= c->next_seq - c->write_seq)
        return false;
    for (uint32_t i = 0; i < c->stash_len; i++)
        if (c->stash [i].seq == seq)
            return false;
    return true;
}

static int
s_on_response (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    qn_door_resp_t m = { 0 };
    if (self->proto->response_decode (env, &m))
        return QN_EPROTO;
    s_conn_t *c = qn_hashmap_get (self->conns, m.conn_id);
    if (!c)
        return 0;                       //  Client already gone
    if (!s_seq_pending (c, m.seq)) {
        qn_error ("%s answer out of sequence: conn=%llu seq=%u expected=%u",
                  self->proto->name, (unsigned long long) c->id, m.seq, c->write_seq);
        s_close (self, c);
        return 0;
    }
    s_queue_answer (self, c, m.seq, m.data, m.len, m.close || self->draining);
    s_flush (self, c);
    return 0;
}

// ------------------------------------------------------------------ timeouts
typedef struct {
    self_t *self;
    int64_t now;
    qn_buf_t ids;
} s_sweep_t;

static bool
s_in_request (self_t *self, s_conn_t *c)
{
    return self->proto->in_request ? self->proto->in_request (c->state) : c->in.len > 0;
}

static void
s_sweep_one (void *arg, uint64_t key, void *value)
{
    s_sweep_t *sw = arg;
    s_conn_t *c = value;
    self_t *self = sw->self;
    const qn_config_t *cfg = self->config;
    if (c->linger_until_ms) {
        if (sw->now >= c->linger_until_ms)
            qn_buf_append (&sw->ids, &key, sizeof key);
        return;
    }
    if (!self->proto->timeouts)
        return;
    bool partial = s_in_request (self, c);
    bool slow = c->request_ms && partial && sw->now - c->request_ms > cfg->request_timeout_ms;
    bool idle = !c->in_flight && !partial && sw->now - c->active_ms > cfg->idle_timeout_ms;
    if (slow || idle)
        qn_buf_append (&sw->ids, &key, sizeof key);
}

static void
s_on_sweep (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    s_sweep_t sw = { self, qn_now_ms (), QN_BUF_INIT };
    qn_hashmap_each (self->conns, s_sweep_one, &sw);
    for (size_t i = 0; i < sw.ids.len / sizeof (uint64_t); i++) {
        uint64_t id;
        memcpy (&id, sw.ids.data + i * sizeof id, sizeof id);
        s_conn_t *c = qn_hashmap_get (self->conns, id);
        if (!c)
            continue;
        if (c->linger_until_ms)
            s_close (self, c);          //  Lingered long enough
        else
        if (s_in_request (self, c) && !c->closing) {
            qn_count (self->kernel, self->c_timeouts, 1);
            s_error_reply (self, c, 408, "request timeout");
        }
        else
        if (!c->in_flight)
            s_close (self, c);
    }
    qn_buf_free (&sw.ids);
}

// ------------------------------------------------------------------ lifecycle
static int
s_listen (self_t *self)
{
    char port [16];
    snprintf (port, sizeof port, "%lld", (long long) self->port);
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
    struct addrinfo *ai = NULL;
    const char *host = self->config->host && self->config->host [0] ? self->config->host : NULL;
    int rc = getaddrinfo (host, port, &hints, &ai);
    if (rc) {
        qn_error ("cannot resolve listen address: door=%s host=%s reason=%s", self->name,
                  host ? host : "*", gai_strerror (rc));
        return QN_EIO;
    }
    int fd = socket (ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind (fd, ai->ai_addr, ai->ai_addrlen) || listen (fd, 4096)) {
        qn_error ("cannot listen: door=%s host=%s port=%s reason=%s", self->name,
                  host ? host : "*", port, strerror (errno));
        if (fd >= 0)
            close (fd);
        freeaddrinfo (ai);
        return QN_EIO;
    }
    freeaddrinfo (ai);
    self->listen_fd = fd;
    qn_info ("listening: door=%s host=%s port=%s", self->name, host ? host : "*", port);
    return qn_fd_watch (self->kernel, fd, QN_FD_IN, s_on_accept);
}

static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    int rc = s_listen (self);
    if (rc)
        return rc;
    qn_timer_add (self->kernel, 1000, 1000, s_on_sweep, NULL);
    return 0;
}

static void
s_collect_all (void *arg, uint64_t key, void *value)
{
    (void) value;
    qn_buf_append (arg, &key, sizeof key);
}

//  Graceful stop: no new connections or requests; answer what is in
//  flight (the codec answers parked long-polls at once), then close.
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
    if (self->proto->drained_type) {
        qn_buf_t b = QN_BUF_INIT;
        self->proto->drained_encode (&b);
        qn_send_body (self->kernel, self->codec, self->proto->drained_type, 0, b.data, b.len);
        qn_buf_free (&b);
    }
    qn_buf_t ids = QN_BUF_INIT;
    qn_hashmap_each (self->conns, s_collect_all, &ids);
    for (size_t i = 0; i < ids.len / sizeof (uint64_t); i++) {
        uint64_t id;
        memcpy (&id, ids.data + i * sizeof id, sizeof id);
        s_conn_t *c = qn_hashmap_get (self->conns, id);
        if (!c)
            continue;
        if (!c->in_flight)
            s_close (self, c);
        else {
            c->closing = true;
            s_watch (self, c);
        }
    }
    qn_buf_free (&ids);
    qn_info ("draining: door=%s connections=%u", self->name, self->conn_count);
    return self->conn_count == 0 ? QN_DONE : 0;
}

static void
s_free_conn (void *arg, uint64_t key, void *value)
{
    (void) key;
    s_conn_free (arg, value);
}

static void
s_destroy (void **self_p)
{
    self_t *self = *self_p;
    qn_hashmap_each (self->conns, s_free_conn, self);
    qn_hashmap_destroy (&self->conns);
    qn_hashmap_destroy (&self->by_fd);
    if (self->listen_fd >= 0)
        close (self->listen_fd);
    free (self->read_buf);
    free (self->name);
    free (self->codec);
    free (self);
    *self_p = NULL;
}

qn_actor_t *
qn_door_new (qn_kernel_t *kernel, const qn_config_t *config, const qn_door_def_t *def)
{
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    self->proto = def->proto;
    self->name = qn_strdup (def->name);
    self->codec = qn_strdup (def->codec);
    self->port = def->port;
    self->listen_fd = -1;
    self->conns = qn_hashmap_new ();
    self->by_fd = qn_hashmap_new ();
    self->read_buf = qn_malloc (S_READ_CHUNK);
    const char *p = def->proto->name;
    snprintf (self->c_conns, sizeof self->c_conns, "%s_connections", p);
    snprintf (self->c_refused, sizeof self->c_refused, "%s_connections_refused", p);
    snprintf (self->c_requests, sizeof self->c_requests, "%s_requests", p);
    snprintf (self->c_framing, sizeof self->c_framing, "%s_errors_framing", p);
    snprintf (self->c_timeouts, sizeof self->c_timeouts, "%s_request_timeouts", p);
    //  The table's answer type is this actor's one message of its own.
    self->routes [0] = (qn_route_t) { QN_MSG_START, s_on_start };
    self->routes [1] = (qn_route_t) { QN_MSG_STOP, s_on_stop };
    self->routes [2] = (qn_route_t) { def->proto->response_type, s_on_response };
    qn_actor_def_t adef = {
        .name = self->name, .routes = self->routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &adef);
}
