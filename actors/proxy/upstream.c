/*  actors/proxy/upstream.c - the proxy's brokers: pool, health, forwarding
    Part of the proxy actor (proxy_int.h). A keep-alive pool of
    non-blocking connections per broker of QUEEN_UPSTREAMS, driven by the
    actor's own event loop (fd watches): a long-poll waiting at a broker
    holds a socket, never a thread. Each broker is probed with GET /health
    every second. A broker that answers 200 is healthy; one that answers
    503 (its database is away) is degraded but still takes requests: it
    spools pushes to disk and answers the rest with its own error. One
    that does not answer (connect, write or probe timeout) is down.
    Requests go round-robin to healthy brokers, else to degraded ones,
    never to a down one.
    A request whose connection fails before its response began is retried
    on another broker when that cannot duplicate work: the connection
    could not be made or written, or the request is a GET (pops: a lease
    taken by a broker that died expires). Everything else gets 502.
    Responses are parsed with llhttp and rebuilt for the client (hop-by-hop
    headers dropped, Content-Length set).
    Receives  fd events of its sockets (from the kernel)
    Sends     HTTP/1.1 requests with X-Queen-Assertion (wire/tenant_assert.h)
              to the brokers; the rebuilt response through qn_px_respond_raw
    Owns      the upstream connections (self->fds) and the idle pools
    Failure   a broker that cannot be reached is marked down and the
              request retried or answered 502; none reachable: 503; a
              response over 64 MiB or with junk fails like a dead broker
*/
#include "actors/proxy/proxy_int.h"
#include "wire/http_api.h"
#include "wire/tenant_assert.h"

#include <errno.h>
#include <llhttp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define S_HEALTH_EVERY_MS   1000
#define S_HEALTH_TIMEOUT_MS 1500
#define S_IDLE_MAX_MS       30000       //  Below the broker's IDLE_TIMEOUT_MS default
#define S_MAX_RESPONSE      (64u * 1024 * 1024)

enum { S_CONNECTING, S_WRITING, S_READING, S_IDLE };

struct qn_px_uconn {
    qn_px_t *self;
    int fd;
    int up;                     //  Index into self->ups
    int state;
    bool reused;
    qn_buf_t out;
    size_t out_off;
    llhttp_t parser;
    int status;
    qn_buf_t head;              //  Rebuilt response headers
    qn_buf_t field, value;
    bool in_value;
    qn_buf_t body;
    bool complete;
    bool got_bytes;
    qn_px_req_t *req;           //  Not owned; NULL for a probe or when idle
    bool probe;
    int64_t idle_since_ms;
    qn_px_uconn_t *next;        //  In the idle list
};

// ------------------------------------------------------------------ upstream responses (llhttp)
static void
s_header_flush (qn_px_uconn_t *uc)
{
    if (!uc->field.len)
        return;
    static const char *const skip [] = {
        "connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection", NULL
    };
    bool keep = true;
    for (int i = 0; skip [i]; i++)
        if (uc->field.len == strlen (skip [i]) && !strncasecmp (uc->field.data, skip [i], uc->field.len))
            keep = false;
    if (keep) {
        qn_buf_append (&uc->head, uc->field.data, uc->field.len);
        qn_buf_puts (&uc->head, ": ");
        qn_buf_append (&uc->head, uc->value.data, uc->value.len);
        qn_buf_puts (&uc->head, "\r\n");
    }
    qn_buf_reset (&uc->field);
    qn_buf_reset (&uc->value);
    uc->in_value = false;
}

static int
s_on_hfield (llhttp_t *p, const char *at, size_t len)
{
    qn_px_uconn_t *uc = p->data;
    if (uc->in_value)
        s_header_flush (uc);
    qn_buf_append (&uc->field, at, len);
    return 0;
}

static int
s_on_hvalue (llhttp_t *p, const char *at, size_t len)
{
    qn_px_uconn_t *uc = p->data;
    uc->in_value = true;
    qn_buf_append (&uc->value, at, len);
    return uc->head.len + uc->value.len > 64 * 1024 ? -1 : 0;
}

static int
s_on_headers_complete (llhttp_t *p)
{
    qn_px_uconn_t *uc = p->data;
    s_header_flush (uc);
    uc->status = p->status_code;
    return 0;
}

static int
s_on_body (llhttp_t *p, const char *at, size_t len)
{
    qn_px_uconn_t *uc = p->data;
    if (uc->body.len + len > S_MAX_RESPONSE)
        return -1;
    qn_buf_append (&uc->body, at, len);
    return 0;
}

static int
s_on_complete (llhttp_t *p)
{
    qn_px_uconn_t *uc = p->data;
    uc->complete = true;
    return HPE_PAUSED;
}

static llhttp_settings_t s_settings;

static void
s_uconn_reset_response (qn_px_uconn_t *uc)
{
    llhttp_init (&uc->parser, HTTP_RESPONSE, &s_settings);
    uc->parser.data = uc;
    uc->status = 0;
    uc->complete = false;
    uc->got_bytes = false;
    uc->in_value = false;
    qn_buf_reset (&uc->head);
    qn_buf_reset (&uc->field);
    qn_buf_reset (&uc->value);
    qn_buf_reset (&uc->body);
}

// ------------------------------------------------------------------ upstream connections
static void s_on_fd (void *self_, int fd, uint32_t events);

static qn_px_uconn_t *
s_uconn_open (qn_px_t *self, int up)
{
    qn_px_upstream_t *u = &self->ups [up];
    int fd = socket (u->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    int one = 1;
    setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc = connect (fd, (struct sockaddr *) &u->addr, u->addr_len);
    if (rc && errno != EINPROGRESS) {
        close (fd);
        return NULL;
    }
    qn_px_uconn_t *uc = qn_zalloc (sizeof *uc);
    uc->self = self;
    uc->fd = fd;
    uc->up = up;
    uc->state = S_CONNECTING;
    s_uconn_reset_response (uc);
    qn_hashmap_put (self->fds, (uint64_t) fd, uc);
    qn_fd_watch (self->kernel, fd, QN_FD_OUT, s_on_fd);
    return uc;
}

void
qn_px_uconn_close (qn_px_t *self, qn_px_uconn_t *uc)
{
    qn_fd_unwatch (self->kernel, uc->fd);
    qn_hashmap_remove (self->fds, (uint64_t) uc->fd);
    close (uc->fd);
    qn_buf_free (&uc->out);
    qn_buf_free (&uc->head);
    qn_buf_free (&uc->field);
    qn_buf_free (&uc->value);
    qn_buf_free (&uc->body);
    free (uc);
}

//  Removes uc from its upstream's idle list (if it is there).
static void
s_idle_remove (qn_px_t *self, qn_px_uconn_t *uc)
{
    qn_px_uconn_t **pp = &self->ups [uc->up].idle;
    while (*pp && *pp != uc)
        pp = &(*pp)->next;
    if (*pp)
        *pp = uc->next;
    uc->next = NULL;
}

//  healthy implies reachable.
static void
s_mark (qn_px_t *self, int up, bool reachable, bool healthy)
{
    qn_px_upstream_t *u = &self->ups [up];
    healthy = healthy && reachable;
    if (u->healthy != healthy || u->reachable != reachable)
        qn_info ("upstream %s: url=%s", healthy ? "healthy" : reachable ? "degraded" : "down", u->url);
    u->reachable = reachable;
    u->healthy = healthy;
    if (!reachable)
        while (u->idle) {
            qn_px_uconn_t *uc = u->idle;
            u->idle = uc->next;
            qn_px_uconn_close (self, uc);
        }
}

//  The request on uc failed before its response was complete.
static void
s_uconn_failed (qn_px_t *self, qn_px_uconn_t *uc)
{
    if (uc->probe) {
        self->ups [uc->up].probe = NULL;
        s_mark (self, uc->up, false, false);
        qn_px_uconn_close (self, uc);
        return;
    }
    if (uc->state == S_IDLE) {
        s_idle_remove (self, uc);
        qn_px_uconn_close (self, uc);
        return;
    }
    qn_px_req_t *req = uc->req;
    bool unsent = uc->state == S_CONNECTING || (uc->state == S_WRITING && uc->out_off == 0);
    bool retry = !uc->got_bytes && (unsent || !strcmp (req->method, "GET") || uc->reused);
    if (!uc->reused)
        s_mark (self, uc->up, false, false);
    qn_px_uconn_close (self, uc);
    req->uc = NULL;
    qn_count (self->kernel, "proxy_upstream_failures", 1);
    //  A reused keep-alive connection the broker had closed is retried
    //  once more than the upstream count allows.
    if (retry && req->attempts <= self->up_count) {
        qn_px_forward (self, req);
        return;
    }
    qn_px_req_error (self, req, 502, "Upstream failed");
}

//  A complete upstream response: rebuild it for the client, pool the
//  connection.
static void
s_uconn_done (qn_px_t *self, qn_px_uconn_t *uc)
{
    if (uc->probe) {
        self->ups [uc->up].probe = NULL;
        s_mark (self, uc->up, true, uc->status == 200);
        qn_px_uconn_close (self, uc);
        return;
    }
    qn_px_req_t *req = uc->req;
    qn_buf_t b = QN_BUF_INIT;
    qn_buf_printf (&b, "HTTP/1.1 %d %s\r\n", uc->status, qn_http_reason (uc->status));
    qn_buf_append (&b, uc->head.data, uc->head.len);
    bool no_body = uc->status < 200 || uc->status == 204 || uc->status == 304;
    if (!no_body)
        qn_buf_printf (&b, "Content-Length: %zu\r\n", uc->body.len);
    qn_buf_puts (&b, req->keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n");
    if (!no_body)
        qn_buf_append (&b, uc->body.data, uc->body.len);
    qn_px_tenant_t *ten = qn_px_tenant (self, req->tenant);
    ten->usage.bytes_out += (int64_t) uc->body.len;
    if (req->is_pop && uc->status == 200)
        ten->usage.messages_out += qn_px_count_items (uc->body.data, uc->body.len, "messages");
    qn_px_respond_raw (self, req->conn_id, req->seq, req->keep_alive, &b);
    qn_count (self->kernel, "proxy_forwarded", 1);
    bool keep = llhttp_should_keep_alive (&uc->parser);
    req->uc = NULL;
    qn_px_req_free (self, req);
    uc->req = NULL;
    if (!keep || !self->ups [uc->up].reachable) {
        qn_px_uconn_close (self, uc);
        return;
    }
    llhttp_resume (&uc->parser);
    s_uconn_reset_response (uc);
    uc->state = S_IDLE;
    uc->idle_since_ms = qn_now_ms ();
    qn_buf_reset (&uc->out);
    uc->out_off = 0;
    uc->next = self->ups [uc->up].idle;
    self->ups [uc->up].idle = uc;
    qn_fd_modify (self->kernel, uc->fd, QN_FD_IN);
}

static void
s_uconn_write (qn_px_t *self, qn_px_uconn_t *uc)
{
    while (uc->out_off < uc->out.len) {
        ssize_t n = send (uc->fd, uc->out.data + uc->out_off, uc->out.len - uc->out_off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            qn_fd_modify (self->kernel, uc->fd, QN_FD_OUT);
            return;
        }
        if (n <= 0) {
            s_uconn_failed (self, uc);
            return;
        }
        uc->out_off += (size_t) n;
    }
    uc->state = S_READING;
    qn_fd_modify (self->kernel, uc->fd, QN_FD_IN);
}

static void
s_uconn_read (qn_px_t *self, qn_px_uconn_t *uc)
{
    char buf [65536];
    for (;;) {
        ssize_t n = recv (uc->fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (uc->state == S_IDLE) {
            //  The broker closed a pooled connection (or sent junk).
            s_idle_remove (self, uc);
            qn_px_uconn_close (self, uc);
            return;
        }
        if (n <= 0) {
            if (n == 0 && llhttp_finish (&uc->parser) == HPE_OK && uc->complete) {
                s_uconn_done (self, uc);
                return;
            }
            s_uconn_failed (self, uc);
            return;
        }
        uc->got_bytes = true;
        llhttp_errno_t e = llhttp_execute (&uc->parser, buf, (size_t) n);
        if (e == HPE_PAUSED && uc->complete) {
            s_uconn_done (self, uc);
            return;
        }
        if (e != HPE_OK) {
            uc->got_bytes = true;       //  Never retried: the broker answered something
            s_uconn_failed (self, uc);
            return;
        }
    }
}

static void
s_on_fd (void *self_, int fd, uint32_t events)
{
    qn_px_t *self = self_;
    qn_px_uconn_t *uc = qn_hashmap_get (self->fds, (uint64_t) fd);
    if (!uc)
        return;
    if (uc->state == S_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        if (getsockopt (fd, SOL_SOCKET, SO_ERROR, &err, &len) || err || (events & QN_FD_ERR)) {
            s_uconn_failed (self, uc);
            return;
        }
        uc->state = S_WRITING;
        s_uconn_write (self, uc);
        return;
    }
    if (uc->state == S_WRITING) {
        if (events & (QN_FD_ERR | QN_FD_HUP)) {
            s_uconn_failed (self, uc);
            return;
        }
        s_uconn_write (self, uc);
        return;
    }
    s_uconn_read (self, uc);
}

// ------------------------------------------------------------------ forwarding
static int
s_pick (qn_px_t *self)
{
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < self->up_count; i++) {
            int up = (self->rr + i) % self->up_count;
            qn_px_upstream_t *u = &self->ups [up];
            if (pass == 0 ? u->healthy : u->reachable) {
                self->rr = up + 1;
                return up;
            }
        }
    return -1;
}

void
qn_px_forward (qn_px_t *self, qn_px_req_t *req)
{
    req->attempts++;
    int up = s_pick (self);
    if (up < 0) {
        qn_px_req_error (self, req, 503, "No upstream available");
        return;
    }
    qn_px_upstream_t *u = &self->ups [up];
    qn_px_uconn_t *uc = u->idle;
    if (uc) {
        u->idle = uc->next;
        uc->next = NULL;
        uc->reused = true;
    }
    else {
        uc = s_uconn_open (self, up);
        if (!uc) {
            s_mark (self, up, false, false);
            if (req->attempts <= self->up_count)
                qn_px_forward (self, req);
            else
                qn_px_req_error (self, req, 502, "Upstream failed");
            return;
        }
    }
    uc->req = req;
    req->uc = uc;
    qn_buf_t a = QN_BUF_INIT;
    const char *secret = self->config->tenant_assertion_secret;
    char subject [160];
    snprintf (subject, sizeof subject, "%s%s", req->session ? "user:" : req->sso ? "sso:" : "",
              req->session || req->sso ? req->user : req->key_id);
    qn_tassert_encode (&a, secret, strlen (secret), req->tenant, req->role, subject,
                       qn_wall_us () / 1000000);
    qn_buf_reset (&uc->out);
    uc->out_off = 0;
    qn_buf_printf (&uc->out, "%s %s HTTP/1.1\r\nHost: %s:%s\r\n", req->method, req->target,
                   u->host, u->port);
    if (req->content_type)
        qn_buf_printf (&uc->out, "Content-Type: %s\r\n", req->content_type);
    qn_buf_puts (&uc->out, "X-Queen-Assertion: ");
    qn_buf_append (&uc->out, a.data, a.len);
    qn_buf_printf (&uc->out, "\r\nContent-Length: %zu\r\nConnection: keep-alive\r\n\r\n", req->body_len);
    qn_buf_append (&uc->out, req->body, req->body_len);
    qn_buf_free (&a);
    if (uc->state == S_IDLE) {
        uc->state = S_WRITING;
        s_uconn_write (self, uc);
    }
}

// ------------------------------------------------------------------ periodic work
static void
s_probe (qn_px_t *self, int up)
{
    qn_px_upstream_t *u = &self->ups [up];
    qn_px_uconn_t *uc = s_uconn_open (self, up);
    if (!uc) {
        s_mark (self, up, false, false);
        return;
    }
    uc->probe = true;
    qn_buf_printf (&uc->out, "GET /health HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n",
                   u->host, u->port);
    u->probe = uc;
    u->probe_started_ms = qn_now_ms ();
}


int
qn_px_upstreams_init (qn_px_t *self, const char *list)
{
    s_settings.on_header_field = s_on_hfield;
    s_settings.on_header_value = s_on_hvalue;
    s_settings.on_headers_complete = s_on_headers_complete;
    s_settings.on_body = s_on_body;
    s_settings.on_message_complete = s_on_complete;
    const char *p = list;
    while (p && *p) {
        const char *comma = strchr (p, ',');
        size_t n = comma ? (size_t) (comma - p) : strlen (p);
        while (n && (*p == ' ' || *p == '\t'))
            p++, n--;
        while (n && (p [n - 1] == ' ' || p [n - 1] == '\t' || p [n - 1] == '/'))
            n--;
        if (n) {
            if (self->up_count == QN_PX_MAX_UPSTREAMS || n >= sizeof self->ups [0].url
            ||  n < 8 || strncmp (p, "http://", 7))
                return -1;
            qn_px_upstream_t *u = &self->ups [self->up_count];
            snprintf (u->url, sizeof u->url, "%.*s", (int) n, p);
            char hostport [256];
            snprintf (hostport, sizeof hostport, "%.*s", (int) (n - 7), p + 7);
            char *colon = strrchr (hostport, ':');
            if (colon && !strchr (colon, '/')) {
                *colon = 0;
                snprintf (u->port, sizeof u->port, "%.7s", colon + 1);
            }
            else
                snprintf (u->port, sizeof u->port, "80");
            snprintf (u->host, sizeof u->host, "%.199s", hostport);
            struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
            if (!u->host [0] || getaddrinfo (u->host, u->port, &hints, &ai) || !ai)
                return -1;
            memcpy (&u->addr, ai->ai_addr, ai->ai_addrlen);
            u->addr_len = ai->ai_addrlen;
            freeaddrinfo (ai);
            u->reachable = u->healthy = true;   //  Until a probe says otherwise
            self->up_count++;
        }
        p = comma ? comma + 1 : NULL;
    }
    return self->up_count ? 0 : -1;
}

void
qn_px_upstreams_tick (qn_px_t *self, int64_t now)
{
    for (int i = 0; i < self->up_count; i++) {
        qn_px_upstream_t *u = &self->ups [i];
        if (u->probe && now - u->probe_started_ms > S_HEALTH_TIMEOUT_MS) {
            qn_px_uconn_t *uc = u->probe;
            u->probe = NULL;
            qn_px_uconn_close (self, uc);
            s_mark (self, i, false, false);
        }
        //  Pooled connections idle too long are closed before the broker does.
        qn_px_uconn_t **pp = &u->idle;
        while (*pp) {
            qn_px_uconn_t *uc = *pp;
            if (now - uc->idle_since_ms > S_IDLE_MAX_MS) {
                *pp = uc->next;
                qn_px_uconn_close (self, uc);
            }
            else
                pp = &uc->next;
        }
    }
    if (now - self->health_ms >= S_HEALTH_EVERY_MS) {
        self->health_ms = now;
        for (int i = 0; i < self->up_count; i++)
            if (!self->ups [i].probe)
                s_probe (self, i);
    }
}

static void
s_close_each (void *arg, uint64_t key, void *value)
{
    (void) key;
    qn_buf_t *list = arg;
    qn_buf_append (list, &value, sizeof value);
}

void
qn_px_upstreams_close (qn_px_t *self)
{
    qn_buf_t list = QN_BUF_INIT;
    qn_hashmap_each (self->fds, s_close_each, &list);
    for (size_t i = 0; i < list.len / sizeof (void *); i++) {
        qn_px_uconn_t *uc;
        memcpy (&uc, list.data + i * sizeof uc, sizeof uc);
        if (uc->req)
            uc->req->uc = NULL;
        qn_px_uconn_close (self, uc);
    }
    qn_buf_free (&list);
    for (int i = 0; i < self->up_count; i++)
        self->ups [i].idle = self->ups [i].probe = NULL;
}
