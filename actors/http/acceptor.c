/*  actors/http/acceptor.c - the HTTP listener
    Owns the listening socket and every client socket: non-blocking reads
    into one shared buffer, HTTP/1.1 framing (wire/http_api.c over
    llhttp), pipelined requests answered in order, 100-continue, limits
    (body 413, head 431, slow request 408, idle keep-alive close,
    connection cap 503) and graceful close; after an error answer the
    connection lingers (input drained) so the client reads the answer.
    One actor per HTTP door: the broker's own (qn_acceptor_new: "acceptor"
    on PORT, talking to codec_http) and any other door built on HTTP
    framing (qn_http_acceptor_new: its own name, port and codec).
    Receives  QN_MSG_HTTP_RESPONSE from its codec; STOP
    Sends     QN_MSG_HTTP_REQUEST, QN_MSG_HTTP_CLOSED, QN_MSG_HTTP_DRAINED
              to its codec
    Owns      sockets, parsers, output buffers; idle connections hold no
              read buffer, so thousands of keep-alive clients cost little
    Failure   a client error closes that client only; a full codec pauses
              reading (TCP pushes back on the client)
*/
#include "actors/actors.h"
#include "base/hashmap.h"
#include "wire/http_api.h"
#include "wire/json.h"
#include "wire/msg_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <msgpack.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define S_READ_CHUNK      65536
#define S_MAX_IN_FLIGHT   64            //  Pipelined requests per connection
#define S_OUT_SOFT_LIMIT  (1024 * 1024) //  Stop reading while more is unsent
//  After an error answer (413, 431, 400, 408) the client may still be
//  sending its request. Closing with unread input makes the kernel send a
//  reset, which can destroy the answer before the client reads it, so we
//  half-close and read and drop input for up to this long, then close
//  (the "lingering close" of nginx and Apache).
#define S_LINGER_MS       2000

typedef struct {
    uint32_t seq;
    char *data;                 //  Owned
    size_t len;
    bool close;
} s_stash_t;

typedef struct {
    uint64_t id;
    int fd;
    qn_http_parser_t *parser;   //  Owned
    qn_buf_t in;                //  Unparsed input kept while paused
    qn_buf_t out;               //  Unsent output
    size_t out_off;
    uint32_t next_seq;          //  Seq of the next request
    uint32_t write_seq;         //  Seq whose response goes out next
    s_stash_t *stash;           //  Responses that arrived early
    uint32_t stash_len, stash_cap;
    uint32_t in_flight;
    bool paused;                //  Not reading (limits or back-pressure)
    bool closing;               //  Close once in_flight responses are out
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
    int listen_fd;
    qn_hashmap_t *conns;        //  id -> s_conn_t *
    qn_hashmap_t *by_fd;        //  fd + 1 -> s_conn_t * (same objects)
    uint64_t next_id;
    uint32_t conn_count;
    bool draining;
    bool waiting_writable;
    char *read_buf;             //  Shared by all connections
    qn_http_limits_t limits;
    char *name;                 //  This actor's name (owned)
    char *codec;                //  Where requests go (owned)
    int64_t port;
} self_t;

static void s_process (self_t *self, s_conn_t *c, const char *data, size_t len);
static void s_resume (self_t *self, s_conn_t *c);
static void s_queue_response (s_conn_t *c, uint32_t seq, const char *data, size_t len, bool close);

// ------------------------------------------------------------------ connections
static void
s_watch (self_t *self, s_conn_t *c)
{
    bool reading = c->linger_until_ms || !(c->paused || c->closing);
    uint32_t ev = (reading ? QN_FD_IN : 0) | (c->watching_out ? QN_FD_OUT : 0);
    qn_fd_modify (self->kernel, c->fd, ev);
}

static void
s_close (self_t *self, s_conn_t *c)
{
    qn_fd_unwatch (self->kernel, c->fd);
    if (c->in_flight) {
        //  Parked long-polls of this client must free their slots now.
        msgpack_sbuffer b;
        msgpack_sbuffer_init (&b);
        msgpack_packer pk;
        msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
        qn_msg_http_closed_encode (&pk, c->id);
        qn_send_body (self->kernel, self->codec, QN_MSG_HTTP_CLOSED, 0, b.data, b.size);
        msgpack_sbuffer_destroy (&b);
    }
    qn_hashmap_remove (self->conns, c->id);
    qn_hashmap_remove (self->by_fd, (uint64_t) c->fd + 1);
    close (c->fd);
    self->conn_count--;
    qn_gauge_set (self->kernel, "http_connections", self->conn_count);
    qn_http_parser_destroy (&c->parser);
    qn_buf_free (&c->in);
    qn_buf_free (&c->out);
    qn_buf_free (&c->parked_body);
    free (c->parked_frame.data);
    for (uint32_t i = 0; i < c->stash_len; i++)
        free (c->stash [i].data);
    free (c->stash);
    free (c);
    if (self->draining && self->conn_count == 0)
        qn_actor_done (self->kernel);
}

//  Closes c, or after an error answer starts its lingering close: the
//  write side is shut (the client sees the end of the answer) and input is
//  read and dropped until the client closes or S_LINGER_MS pass.
static void
s_finish (self_t *self, s_conn_t *c)
{
    if (!c->linger || c->linger_until_ms || shutdown (c->fd, SHUT_WR)) {
        s_close (self, c);
        return;
    }
    c->linger_until_ms = qn_now_ms () + S_LINGER_MS;
    s_watch (self, c);
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
    if (c->paused && !c->parked && c->in_flight < S_MAX_IN_FLIGHT)
        s_resume (self, c);
    return true;
}

//  Answers the request being parsed with an error, then the connection
//  closes. The answer takes that request's place in line: answers to
//  earlier pipelined requests still in flight go out before it.
static void
s_error_reply (self_t *self, s_conn_t *c, int status, const char *msg)
{
    qn_buf_t body = QN_BUF_INIT, response = QN_BUF_INIT;
    qn_json_error_body (&body, msg);
    qn_http_response (&response, status, "application/json", NULL, body.data, body.len, false);
    c->in_flight++;
    s_queue_response (c, c->next_seq++, response.data, response.len, true);
    qn_buf_free (&body);
    qn_buf_free (&response);
    c->closing = true;
    c->linger = true;
    s_watch (self, c);
    qn_count (self->kernel, "http_errors_framing", 1);
}

// ------------------------------------------------------------------ requests
static int
s_sbuf_write (void *data, const char *buf, size_t len)
{
    qn_buf_append ((qn_buf_t *) data, buf, len);
    return 0;
}

static int
s_send_parked (self_t *self, s_conn_t *c)
{
    qn_msg_t msg = {
        .to = self->codec, .type = QN_MSG_HTTP_REQUEST,
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
    return rc;
}

static void s_on_codec_writable (void *self_, void *arg);

//  Hands a complete request to the codec. Returns false if the connection
//  must stop reading (codec full, or pipelining limit).
static bool
s_dispatch (self_t *self, s_conn_t *c)
{
    qn_http_request_t *req = qn_http_parser_request (c->parser);
    msgpack_packer pk;
    qn_buf_reset (&c->parked_body);
    msgpack_packer_init (&pk, &c->parked_body, s_sbuf_write);
    qn_msg_http_request_t m = {
        .conn_id = c->id, .seq = c->next_seq,
        .method = req->method, .method_len = strlen (req->method),
        .target = req->target.data ? req->target.data : "/", .target_len = req->target.len,
        .keep_alive = req->keep_alive && !self->draining,
        .headers = req->headers, .header_count = req->header_count
    };
    qn_msg_http_request_encode (&pk, &m);
    qn_buf_t body = QN_BUF_INIT;
    qn_http_request_take_body (req, &body);
    c->parked_frame.data = body.data;
    c->parked_frame.len = body.len;
    if (!req->keep_alive)
        c->closing = true;          //  Answer this one, then close
    c->next_seq++;
    c->in_flight++;
    c->parked = true;
    qn_http_parser_next (c->parser);
    c->request_ms = 0;
    qn_count (self->kernel, "http_requests", 1);
    if (s_send_parked (self, c) == QN_EAGAIN) {
        if (!self->waiting_writable) {
            self->waiting_writable = true;
            qn_on_writable (self->kernel, self->codec, s_on_codec_writable, NULL);
        }
        return false;
    }
    return c->in_flight < S_MAX_IN_FLIGHT && c->out.len - c->out_off < S_OUT_SOFT_LIMIT
        && !c->closing;
}

static void
s_pause (self_t *self, s_conn_t *c, const char *rest, size_t len)
{
    if (len)
        qn_buf_append (&c->in, rest, len);
    if (!c->paused) {
        c->paused = true;
        s_watch (self, c);
    }
}

//  Feeds bytes to the parser, dispatching every complete request.
static void
s_process (self_t *self, s_conn_t *c, const char *data, size_t len)
{
    while (len > 0 || qn_http_parser_in_request (c->parser)) {
        if (!c->request_ms)
            c->request_ms = qn_now_ms ();
        size_t used = 0;
        qn_http_rc_t rc = qn_http_parser_feed (c->parser, data, len, &used);
        data += used;
        len -= used;
        if (rc == QN_HTTP_NEED_MORE)
            return;
        if (rc == QN_HTTP_CONTINUE) {
            qn_buf_puts (&c->out, QN_HTTP_100_CONTINUE);
            if (!s_flush (self, c))
                return;
            continue;
        }
        if (rc == QN_HTTP_ERROR) {
            s_error_reply (self, c, qn_http_parser_error_status (c->parser),
                           qn_http_parser_error (c->parser));
            s_flush (self, c);
            return;
        }
        if (!s_dispatch (self, c)) {
            if (!c->closing)
                s_pause (self, c, data, len);
            return;
        }
        if (!len)
            return;
    }
}

static void
s_resume (self_t *self, s_conn_t *c)
{
    c->paused = false;
    s_watch (self, c);
    if (c->in.len) {
        qn_buf_t pending = c->in;
        qn_buf_init (&c->in);
        s_process (self, c, pending.data, pending.len);
        qn_buf_free (&pending);
    }
}

static void
s_collect_parked (void *arg, uint64_t key, void *value)
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
    qn_hashmap_each (self->conns, s_collect_parked, &ids);
    size_t n = ids.len / sizeof (uint64_t);
    for (size_t i = 0; i < n && !self->waiting_writable; i++) {
        uint64_t id;
        memcpy (&id, ids.data + i * sizeof id, sizeof id);
        s_conn_t *c = qn_hashmap_get (self->conns, id);
        if (!c)
            continue;
        if (c->parked && s_send_parked (self, c) == QN_EAGAIN) {
            self->waiting_writable = true;
            qn_on_writable (self->kernel, self->codec, s_on_codec_writable, NULL);
            break;
        }
        if (c->paused && !c->closing && c->in_flight < S_MAX_IN_FLIGHT
        &&  c->out.len - c->out_off < S_OUT_SOFT_LIMIT)
            s_resume (self, c);
    }
    qn_buf_free (&ids);
}

static void
s_on_client (void *self_, int fd, uint32_t events);

static void
s_on_client_fd (self_t *self, s_conn_t *c, uint32_t events)
{
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
    s_process (self, c, self->read_buf, (size_t) n);
}

static void
s_on_client (void *self_, int fd, uint32_t events)
{
    self_t *self = self_;
    s_conn_t *c = qn_hashmap_get (self->by_fd, (uint64_t) fd + 1);
    if (c)
        s_on_client_fd (self, c, events);
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
            static const char busy [] =
                "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                "Content-Length: 32\r\nConnection: close\r\n\r\n{\"error\":\"too many connections\"}";
            ssize_t w = write (cfd, busy, sizeof busy - 1);
            (void) w;
            close (cfd);
            qn_count (self->kernel, "http_connections_refused", 1);
            continue;
        }
        int one = 1;
        setsockopt (cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        s_conn_t *c = qn_zalloc (sizeof *c);
        c->id = ++self->next_id;
        c->fd = cfd;
        c->parser = qn_http_parser_new (&self->limits);
        c->active_ms = qn_now_ms ();
        qn_hashmap_put (self->conns, c->id, c);
        qn_hashmap_put (self->by_fd, (uint64_t) cfd + 1, c);
        self->conn_count++;
        qn_gauge_set (self->kernel, "http_connections", self->conn_count);
        qn_fd_watch (self->kernel, cfd, QN_FD_IN, s_on_client);
    }
}

// ------------------------------------------------------------------ responses
//  Appends a response, or stashes it until the ones before it are out.
static void
s_queue_response (s_conn_t *c, uint32_t seq, const char *data, size_t len, bool close)
{
    if (seq != c->write_seq) {
        if (c->stash_len == c->stash_cap) {
            c->stash_cap = c->stash_cap ? c->stash_cap * 2 : 4;
            c->stash = qn_realloc (c->stash, c->stash_cap * sizeof *c->stash);
        }
        s_stash_t *s = &c->stash [c->stash_len++];
        s->seq = seq;
        s->data = qn_strndup (data, len);
        s->len = len;
        s->close = close;
        return;
    }
    qn_buf_append (&c->out, data, len);
    c->write_seq++;
    c->in_flight--;
    if (close)
        c->closing = true;
    //  Earlier arrivals that are now next in line.
    bool moved = true;
    while (moved) {
        moved = false;
        for (uint32_t i = 0; i < c->stash_len; i++)
            if (c->stash [i].seq == c->write_seq) {
                s_stash_t s = c->stash [i];
                c->stash [i] = c->stash [--c->stash_len];
                qn_buf_append (&c->out, s.data, s.len);
                free (s.data);
                c->write_seq++;
                c->in_flight--;
                if (s.close)
                    c->closing = true;
                moved = true;
                break;
            }
    }
}

static int
s_on_response (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    qn_msg_http_response_t m;
    if (env->frame_count != 1
    ||  qn_msg_http_response_decode (env->body.ptr, env->body.len, &m))
        return QN_EPROTO;
    s_conn_t *c = qn_hashmap_get (self->conns, m.conn_id);
    if (!c)
        return 0;                       //  Client already gone
    s_queue_response (c, m.seq, env->frames [0].ptr, env->frames [0].len,
                      m.close || self->draining);
    s_flush (self, c);
    return 0;
}

// ------------------------------------------------------------------ timeouts
typedef struct {
    self_t *self;
    int64_t now;
    qn_buf_t ids;
} s_sweep_t;

static void
s_sweep_one (void *arg, uint64_t key, void *value)
{
    s_sweep_t *sw = arg;
    s_conn_t *c = value;
    const qn_config_t *cfg = sw->self->config;
    if (c->linger_until_ms) {
        if (sw->now >= c->linger_until_ms)
            qn_buf_append (&sw->ids, &key, sizeof key);
        return;
    }
    bool slow = c->request_ms && qn_http_parser_in_request (c->parser)
             && sw->now - c->request_ms > cfg->request_timeout_ms;
    bool idle = !c->in_flight && !qn_http_parser_in_request (c->parser)
             && sw->now - c->active_ms > cfg->idle_timeout_ms;
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
        if (qn_http_parser_in_request (c->parser) && !c->closing) {
            qn_count (self->kernel, "http_request_timeouts", 1);
            s_error_reply (self, c, 408, "request timeout");
            if (c->in_flight == 0 && s_flush (self, c) && c->out.len == 0)
                s_close (self, c);
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
        qn_error ("cannot resolve listen address: host=%s reason=%s", host ? host : "*", gai_strerror (rc));
        return QN_EIO;
    }
    int fd = socket (ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind (fd, ai->ai_addr, ai->ai_addrlen) || listen (fd, 4096)) {
        qn_error ("cannot listen: host=%s port=%s reason=%s", host ? host : "*", port, strerror (errno));
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
s_close_idle (void *arg, uint64_t key, void *value)
{
    (void) key;
    s_conn_t *c = value;
    qn_buf_t *ids = arg;
    if (!c->in_flight)
        qn_buf_append (ids, &c->id, sizeof c->id);
    else
        c->closing = true;
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
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_http_drained_encode (&pk);
    qn_send_body (self->kernel, self->codec, QN_MSG_HTTP_DRAINED, 0, b.data, b.size);
    msgpack_sbuffer_destroy (&b);
    qn_buf_t ids = QN_BUF_INIT;
    qn_hashmap_each (self->conns, s_close_idle, &ids);
    for (size_t i = 0; i < ids.len / sizeof (uint64_t); i++) {
        uint64_t id;
        memcpy (&id, ids.data + i * sizeof id, sizeof id);
        s_conn_t *c = qn_hashmap_get (self->conns, id);
        if (c)
            s_close (self, c);
    }
    qn_buf_free (&ids);
    qn_info ("draining: connections=%u", self->conn_count);
    return self->conn_count == 0 ? QN_DONE : 0;
}

static void
s_free_conn (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    s_conn_t *c = value;
    close (c->fd);
    qn_http_parser_destroy (&c->parser);
    qn_buf_free (&c->in);
    qn_buf_free (&c->out);
    qn_buf_free (&c->parked_body);
    free (c->parked_frame.data);
    for (uint32_t i = 0; i < c->stash_len; i++)
        free (c->stash [i].data);
    free (c->stash);
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
    free (self->read_buf);
    free (self->name);
    free (self->codec);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_STOP, s_on_stop },
    { QN_MSG_HTTP_RESPONSE, s_on_response },
    { 0, NULL }
};

qn_actor_t *
qn_http_acceptor_new (qn_kernel_t *kernel, const qn_config_t *config, const qn_http_door_t *door)
{
    self_t *self = qn_zalloc (sizeof *self);
    self->name = qn_strdup (door->name);
    self->codec = qn_strdup (door->codec);
    self->port = door->port;
    self->kernel = kernel;
    self->config = config;
    self->listen_fd = -1;
    self->conns = qn_hashmap_new ();
    self->by_fd = qn_hashmap_new ();
    self->read_buf = qn_malloc (S_READ_CHUNK);
    self->limits.max_body_bytes = (size_t) config->max_body_bytes;
    self->limits.max_header_bytes = (size_t) config->max_header_bytes;
    self->limits.max_headers = 100;
    qn_actor_def_t def = {
        .name = self->name, .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}

qn_actor_t *
qn_acceptor_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    qn_http_door_t door = { .name = "acceptor", .codec = "codec_http", .port = config->port };
    return qn_http_acceptor_new (kernel, config, &door);
}
