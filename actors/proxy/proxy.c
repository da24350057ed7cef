/*  actors/proxy/proxy.c - queen-proxy's forwarding actor
    The codec of the proxy's HTTP door: authenticates every request by its
    API key (wire/proxy_keys.h) against the key table it keeps in memory,
    checks the key's role against the route table (wire/proxy_routes.h),
    and forwards what is allowed to a broker of QUEEN_UPSTREAMS with the
    client's identity headers stripped and its own signed assertion
    (wire/tenant_assert.h) set. Answers its own routes (/health,
    /proxy/v1/whoami, /proxy/v1/keys).

    Upstreams: a keep-alive pool of non-blocking connections per broker,
    driven by the actor's own event loop (fd watches): a long-poll waiting
    at a broker holds a socket, never a thread. Each broker is probed with
    GET /health every second. A broker that answers 200 is healthy; one
    that answers 503 (its database is away) is degraded but still takes
    requests: it spools pushes to disk and answers the rest with its own
    error. One that does not answer (connect, write or probe timeout) is
    down. Requests go round-robin to healthy brokers, else to degraded
    ones, never to a down one.
    A request whose connection fails before its response began is retried
    on another broker when that cannot duplicate work: the connection
    could not be made or written, or the request is a GET (pops:
    a lease taken by a broker that died expires). Everything else gets 502.

    Receives  QN_MSG_HTTP_REQUEST / HTTP_CLOSED / HTTP_DRAINED from its
              acceptor; START, STOP
    Sends     QN_MSG_HTTP_RESPONSE to its acceptor (held in order while the
              acceptor is full)
    Owns      upstream sockets and their pools, in-flight requests, the key
              table (refreshed from PostgreSQL every second and changed at
              once by this proxy's own key routes), one PostgreSQL
              connection (queries sent asynchronously, one at a time)
    Failure   bad keys 401, roles 403, cluster-wide routes 403, unknown
              routes 404/405, no broker 503, a broker failing mid-request
              502; never logs a key, an assertion or a secret
*/
#include "actors/actors.h"
#include "base/hashmap.h"
#include "wire/http_api.h"
#include "wire/json.h"
#include "wire/jwt.h"
#include "wire/msg_http.h"
#include "wire/msg_jwks.h"
#include "wire/msg_password.h"
#include "wire/msg_types.h"
#include "wire/proxy_keys.h"
#include "wire/proxy_routes.h"
#include "wire/tenant_assert.h"
#include "wire/token_bucket.h"
#include "wire/url.h"

#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <llhttp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <math.h>
#include <sodium.h>
#include <unistd.h>

#define S_MAX_UPSTREAMS     16
#define S_TICK_MS           250
#define S_HEALTH_EVERY_MS   1000
#define S_HEALTH_TIMEOUT_MS 1500
#define S_KEYS_EVERY_MS     1000
#define S_IDLE_MAX_MS       30000       //  Below the broker's IDLE_TIMEOUT_MS default
#define S_MAX_RESPONSE      (64u * 1024 * 1024)
#define S_PW_MAX_PENDING    32          //  Password checks queued at the hasher
#define S_PW_TIMEOUT_MS     30000
#define S_SESSION_COOKIE    "queen_session"

typedef struct self self_t;
typedef struct s_req s_req_t;
typedef struct s_uconn s_uconn_t;

typedef struct {
    char url [256];
    char host [200];
    char port [8];
    struct sockaddr_storage addr;
    socklen_t addr_len;
    bool reachable;             //  Answered its last probe (any status)
    bool healthy;               //  ... with 200: its database answers
    s_uconn_t *idle;            //  Pooled keep-alive connections
    s_uconn_t *probe;           //  The health probe in flight, or NULL
    int64_t probe_started_ms;
} s_upstream_t;

enum { S_CONNECTING, S_WRITING, S_READING, S_IDLE };

struct s_uconn {
    self_t *self;
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
    s_req_t *req;               //  Not owned; NULL for a probe or when idle
    bool probe;
    int64_t idle_since_ms;
    s_uconn_t *next;            //  In the idle list
};

struct s_req {
    uint64_t id;
    uint64_t conn_id;
    uint32_t seq;
    bool keep_alive;
    char method [16];
    char *target;               //  Owned
    char *content_type;         //  Owned or NULL
    char *body;                 //  Owned
    size_t body_len;
    char tenant [QN_TENANT_MAX + 1];
    qn_role_t role;
    char key_id [QN_KEY_ID_LEN + 1];   //  The key's id, or the session's
    char user [132];            //  A session's user, or ""
    bool session;               //  Authenticated by a session
    bool sso;                   //  Authenticated by an IdP's JWT (user: its sub)
    int attempts;
    bool is_pop;                //  Counted as messages out on a 200
    bool poll_counted;          //  Holds one of the tenant's long-poll slots
    bool operator_;             //  An operator key (no tenant)
    s_uconn_t *uc;
};

//  Per tenant: plan limits (from the key table) and unflushed usage.
typedef struct {
    int64_t requests, messages_in, messages_out, bytes_in, bytes_out, refused;
} s_usage_t;

typedef struct {
    char name [QN_TENANT_MAX + 1];
    qn_bucket_t requests;
    qn_bucket_t messages;
    int64_t max_body_bytes;     //  0: unlimited
    int64_t max_batch;
    int64_t max_long_polls;     //  0: unlimited
    int64_t polls;              //  Pops in flight at the brokers now
    bool active;                //  Enabled, as of the last refresh (SSO needs it)
    s_usage_t usage;            //  Since the last flush
} s_tenant_t;

typedef struct {
    char id [QN_KEY_ID_LEN + 1];
    char tenant [QN_TENANT_MAX + 1];
    qn_role_t role;
    char *hash;                 //  Owned
} s_key_t;

//  A login session (schema/proxy/0003_users.sql): "qs_<id>_<secret>".
typedef struct {
    char id [QN_KEY_ID_LEN + 1];
    char tenant [QN_TENANT_MAX + 1];
    char user [132];
    qn_role_t role;
    char hash [65];             //  SHA-256 of the secret, hex
    int64_t expires_ms;         //  Unix ms
} s_session_t;

typedef void (s_pg_fn) (self_t *self, PGresult *res, void *arg);
typedef struct s_query s_query_t;
struct s_query {
    char *sql;
    char *params [8];
    int nparams;
    s_pg_fn *cb;
    void *arg;
    s_query_t *next;
};

struct self {
    qn_kernel_t *kernel;
    const qn_config_t *config;
    char acceptor [64];
    s_upstream_t ups [S_MAX_UPSTREAMS];
    int up_count;
    int rr;
    qn_hashmap_t *reqs;         //  id -> s_req_t
    uint64_t next_id;
    qn_hashmap_t *fds;          //  fd -> s_uconn_t
    qn_hashmap_t *keys;         //  hash of id -> s_key_t
    qn_hashmap_t *tenants;      //  hash of name -> s_tenant_t
    qn_hashmap_t *sessions;     //  hash of id -> s_session_t
    int pw_pending;             //  Requests at proxy_hasher
    //  SSO passthrough (JWT_ENABLED): an IdP's token names tenant and role.
    bool sso;
    bool jwks_configured;
    qn_jwt_policy_t policy;     //  Strings point into the config
    qn_jwt_keys_t *static_keys; //  Owned: JWT_SECRET, JWT_PUBLIC_KEY
    qn_jwt_keys_t *jwks_keys;   //  Owned: the latest "jwks" event
    int64_t refresh_asked_ms;
    int64_t flushed_ms;
    bool keys_loaded;
    int64_t keys_asked_ms;
    int64_t health_ms;
    uint64_t tick;
    PGconn *pg;
    bool pg_busy;
    s_query_t *q_head, *q_tail;
    //  Responses held while the acceptor is full, in order.
    struct s_held *held_head, *held_tail;
    bool held_waiting;
};

typedef struct s_held {
    struct s_held *next;
    msgpack_sbuffer body;
    qn_frame_t frame;
} s_held_t;

static void s_uconn_close (self_t *self, s_uconn_t *uc);
static void s_forward (self_t *self, s_req_t *req);
static void s_pg_pump (self_t *self);
static void s_on_admin (self_t *self, PGresult *res, void *arg);
static void s_on_logged_out (self_t *self, PGresult *res, void *arg);
static void s_password_route (self_t *self, struct s_req *req, bool login, const char *tenant,
                              const char *user);

// ------------------------------------------------------------------ answering
static int
s_send_held (self_t *self, s_held_t *h)
{
    qn_msg_t msg = {
        .to = self->acceptor, .type = QN_MSG_HTTP_RESPONSE,
        .body = h->body.data, .body_len = h->body.size, .frames = &h->frame, .frame_count = 1
    };
    return qn_send (self->kernel, &msg);
}

static void
s_held_free (s_held_t *h)
{
    msgpack_sbuffer_destroy (&h->body);
    free (h->frame.data);
    free (h);
}

static void
s_on_writable (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    self->held_waiting = false;
    while (self->held_head) {
        s_held_t *h = self->held_head;
        int rc = s_send_held (self, h);
        if (rc == QN_EAGAIN) {
            if (qn_on_writable (self->kernel, self->acceptor, s_on_writable, NULL) == 0)
                self->held_waiting = true;
            return;
        }
        self->held_head = h->next;
        if (!self->held_head)
            self->held_tail = NULL;
        s_held_free (h);
    }
}

//  Sends a serialised response (taken) for the request's connection and seq.
static void
s_respond_raw (self_t *self, uint64_t conn_id, uint32_t seq, bool keep_alive, qn_buf_t *resp)
{
    s_held_t *h = qn_zalloc (sizeof *h);
    msgpack_sbuffer_init (&h->body);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &h->body, msgpack_sbuffer_write);
    qn_msg_http_response_t m = { .conn_id = conn_id, .seq = seq, .close = !keep_alive };
    qn_msg_http_response_encode (&pk, &m);
    size_t len;
    h->frame.data = qn_buf_detach (resp, &len);
    h->frame.len = len;
    int rc = self->held_head ? QN_EAGAIN : s_send_held (self, h);
    if (rc == QN_EAGAIN) {
        if (self->held_tail)
            self->held_tail->next = h;
        else
            self->held_head = h;
        self->held_tail = h;
        if (!self->held_waiting
        &&  qn_on_writable (self->kernel, self->acceptor, s_on_writable, NULL) == 0)
            self->held_waiting = true;
        return;
    }
    s_held_free (h);
}

static void
s_respond_json (self_t *self, uint64_t conn_id, uint32_t seq, bool keep_alive, int status,
                const char *json, size_t len, const char *extra)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_http_response (&b, status, "application/json", extra, json, len, keep_alive);
    s_respond_raw (self, conn_id, seq, keep_alive, &b);
}

static void
s_respond_error (self_t *self, uint64_t conn_id, uint32_t seq, bool keep_alive, int status,
                 const char *msg)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_kstr (&w, "error", msg);
    qn_jw_obj_end (&w);
    s_respond_json (self, conn_id, seq, keep_alive, status, b.data, b.len, NULL);
    qn_buf_free (&b);
}

static s_tenant_t *s_tenant (self_t *self, const char *name);

static void
s_req_free (self_t *self, s_req_t *req)
{
    if (req->poll_counted)
        s_tenant (self, req->tenant)->polls--;
    qn_hashmap_remove (self->reqs, req->id);
    free (req->target);
    free (req->content_type);
    free (req->body);
    free (req);
}

//  Answers and frees the request.
static void
s_req_error (self_t *self, s_req_t *req, int status, const char *msg)
{
    s_respond_error (self, req->conn_id, req->seq, req->keep_alive, status, msg);
    s_req_free (self, req);
}

// ------------------------------------------------------------------ tenants: limits and usage
static uint64_t s_key_hash (const char *id);

static s_tenant_t *
s_tenant (self_t *self, const char *name)
{
    s_tenant_t *t = qn_hashmap_get (self->tenants, s_key_hash (name));
    if (t && !strcmp (t->name, name))
        return t;
    t = qn_zalloc (sizeof *t);
    snprintf (t->name, sizeof t->name, "%s", name);
    qn_hashmap_put (self->tenants, s_key_hash (name), t);
    return t;
}

//  The length of the array `member` of a JSON object body, or 0.
static int64_t
s_count_items (const char *body, size_t len, const char *member)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    int64_t n = 0;
    if (len && qn_json_parse (&doc, body, len, 64) == 0 && qn_json_type (&doc, 0) == QN_JSON_OBJECT) {
        int t = qn_json_get (&doc, 0, member);
        if (t >= 0 && qn_json_type (&doc, t) == QN_JSON_ARRAY)
            n = qn_json_size (&doc, t);
    }
    qn_json_doc_free (&doc);
    return n;
}

// ------------------------------------------------------------------ upstream responses (llhttp)
static void
s_header_flush (s_uconn_t *uc)
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
    s_uconn_t *uc = p->data;
    if (uc->in_value)
        s_header_flush (uc);
    qn_buf_append (&uc->field, at, len);
    return 0;
}

static int
s_on_hvalue (llhttp_t *p, const char *at, size_t len)
{
    s_uconn_t *uc = p->data;
    uc->in_value = true;
    qn_buf_append (&uc->value, at, len);
    return uc->head.len + uc->value.len > 64 * 1024 ? -1 : 0;
}

static int
s_on_headers_complete (llhttp_t *p)
{
    s_uconn_t *uc = p->data;
    s_header_flush (uc);
    uc->status = p->status_code;
    return 0;
}

static int
s_on_body (llhttp_t *p, const char *at, size_t len)
{
    s_uconn_t *uc = p->data;
    if (uc->body.len + len > S_MAX_RESPONSE)
        return -1;
    qn_buf_append (&uc->body, at, len);
    return 0;
}

static int
s_on_complete (llhttp_t *p)
{
    s_uconn_t *uc = p->data;
    uc->complete = true;
    return HPE_PAUSED;
}

static llhttp_settings_t s_settings;

static void
s_uconn_reset_response (s_uconn_t *uc)
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

static s_uconn_t *
s_uconn_open (self_t *self, int up)
{
    s_upstream_t *u = &self->ups [up];
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
    s_uconn_t *uc = qn_zalloc (sizeof *uc);
    uc->self = self;
    uc->fd = fd;
    uc->up = up;
    uc->state = S_CONNECTING;
    s_uconn_reset_response (uc);
    qn_hashmap_put (self->fds, (uint64_t) fd, uc);
    qn_fd_watch (self->kernel, fd, QN_FD_OUT, s_on_fd);
    return uc;
}

static void
s_uconn_close (self_t *self, s_uconn_t *uc)
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
s_idle_remove (self_t *self, s_uconn_t *uc)
{
    s_uconn_t **pp = &self->ups [uc->up].idle;
    while (*pp && *pp != uc)
        pp = &(*pp)->next;
    if (*pp)
        *pp = uc->next;
    uc->next = NULL;
}

//  healthy implies reachable.
static void
s_mark (self_t *self, int up, bool reachable, bool healthy)
{
    s_upstream_t *u = &self->ups [up];
    healthy = healthy && reachable;
    if (u->healthy != healthy || u->reachable != reachable)
        qn_info ("upstream %s: url=%s", healthy ? "healthy" : reachable ? "degraded" : "down", u->url);
    u->reachable = reachable;
    u->healthy = healthy;
    if (!reachable)
        while (u->idle) {
            s_uconn_t *uc = u->idle;
            u->idle = uc->next;
            s_uconn_close (self, uc);
        }
}

//  The request on uc failed before its response was complete.
static void
s_uconn_failed (self_t *self, s_uconn_t *uc)
{
    if (uc->probe) {
        self->ups [uc->up].probe = NULL;
        s_mark (self, uc->up, false, false);
        s_uconn_close (self, uc);
        return;
    }
    if (uc->state == S_IDLE) {
        s_idle_remove (self, uc);
        s_uconn_close (self, uc);
        return;
    }
    s_req_t *req = uc->req;
    bool unsent = uc->state == S_CONNECTING || (uc->state == S_WRITING && uc->out_off == 0);
    bool retry = !uc->got_bytes && (unsent || !strcmp (req->method, "GET") || uc->reused);
    if (!uc->reused)
        s_mark (self, uc->up, false, false);
    s_uconn_close (self, uc);
    req->uc = NULL;
    qn_count (self->kernel, "proxy_upstream_failures", 1);
    //  A reused keep-alive connection the broker had closed is retried
    //  once more than the upstream count allows.
    if (retry && req->attempts <= self->up_count) {
        s_forward (self, req);
        return;
    }
    s_req_error (self, req, 502, "Upstream failed");
}

//  A complete upstream response: rebuild it for the client, pool the
//  connection.
static void
s_uconn_done (self_t *self, s_uconn_t *uc)
{
    if (uc->probe) {
        self->ups [uc->up].probe = NULL;
        s_mark (self, uc->up, true, uc->status == 200);
        s_uconn_close (self, uc);
        return;
    }
    s_req_t *req = uc->req;
    qn_buf_t b = QN_BUF_INIT;
    qn_buf_printf (&b, "HTTP/1.1 %d %s\r\n", uc->status, qn_http_reason (uc->status));
    qn_buf_append (&b, uc->head.data, uc->head.len);
    bool no_body = uc->status < 200 || uc->status == 204 || uc->status == 304;
    if (!no_body)
        qn_buf_printf (&b, "Content-Length: %zu\r\n", uc->body.len);
    qn_buf_puts (&b, req->keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n");
    if (!no_body)
        qn_buf_append (&b, uc->body.data, uc->body.len);
    s_tenant_t *ten = s_tenant (self, req->tenant);
    ten->usage.bytes_out += (int64_t) uc->body.len;
    if (req->is_pop && uc->status == 200)
        ten->usage.messages_out += s_count_items (uc->body.data, uc->body.len, "messages");
    s_respond_raw (self, req->conn_id, req->seq, req->keep_alive, &b);
    qn_count (self->kernel, "proxy_forwarded", 1);
    bool keep = llhttp_should_keep_alive (&uc->parser);
    req->uc = NULL;
    s_req_free (self, req);
    uc->req = NULL;
    if (!keep || !self->ups [uc->up].reachable) {
        s_uconn_close (self, uc);
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
s_uconn_write (self_t *self, s_uconn_t *uc)
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
s_uconn_read (self_t *self, s_uconn_t *uc)
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
            s_uconn_close (self, uc);
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
    self_t *self = self_;
    if (self->pg && fd == PQsocket (self->pg)) {
        if (!PQconsumeInput (self->pg))
            qn_warn ("postgresql connection: %s", PQerrorMessage (self->pg));
        s_pg_pump (self);
        return;
    }
    s_uconn_t *uc = qn_hashmap_get (self->fds, (uint64_t) fd);
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
s_pick (self_t *self)
{
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < self->up_count; i++) {
            int up = (self->rr + i) % self->up_count;
            s_upstream_t *u = &self->ups [up];
            if (pass == 0 ? u->healthy : u->reachable) {
                self->rr = up + 1;
                return up;
            }
        }
    return -1;
}

static void
s_forward (self_t *self, s_req_t *req)
{
    req->attempts++;
    int up = s_pick (self);
    if (up < 0) {
        s_req_error (self, req, 503, "No upstream available");
        return;
    }
    s_upstream_t *u = &self->ups [up];
    s_uconn_t *uc = u->idle;
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
                s_forward (self, req);
            else
                s_req_error (self, req, 502, "Upstream failed");
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

// ------------------------------------------------------------------ PostgreSQL (async, one query at a time)
static void
s_query (self_t *self, const char *sql, const char *const *params, int n, s_pg_fn *cb, void *arg)
{
    s_query_t *q = qn_zalloc (sizeof *q);
    q->sql = qn_strdup (sql);
    for (int i = 0; i < n; i++)
        q->params [i] = params [i] ? qn_strdup (params [i]) : NULL;
    q->nparams = n;
    q->cb = cb;
    q->arg = arg;
    if (self->q_tail)
        self->q_tail->next = q;
    else
        self->q_head = q;
    self->q_tail = q;
    s_pg_pump (self);
}

static void
s_query_free (s_query_t *q)
{
    free (q->sql);
    for (int i = 0; i < q->nparams; i++)
        free (q->params [i]);
    free (q);
}

static void
s_pg_pump (self_t *self)
{
    while (self->pg) {
        if (self->pg_busy) {
            if (PQisBusy (self->pg))
                return;
            PGresult *res = PQgetResult (self->pg), *extra;
            while ((extra = PQgetResult (self->pg)))
                PQclear (extra);
            s_query_t *q = self->q_head;
            self->q_head = q->next;
            if (!self->q_head)
                self->q_tail = NULL;
            self->pg_busy = false;
            q->cb (self, res, q->arg);
            PQclear (res);
            s_query_free (q);
            continue;
        }
        if (!self->q_head)
            return;
        if (PQstatus (self->pg) != CONNECTION_OK)
            PQreset (self->pg);         //  Blocking, at most once per query; logged below
        s_query_t *q = self->q_head;
        if (PQstatus (self->pg) != CONNECTION_OK
        ||  !PQsendQueryParams (self->pg, q->sql, q->nparams, NULL,
                                (const char *const *) q->params, NULL, NULL, 0)) {
            qn_warn ("postgresql unavailable: %s", PQerrorMessage (self->pg));
            self->q_head = q->next;
            if (!self->q_head)
                self->q_tail = NULL;
            q->cb (self, NULL, q->arg);
            s_query_free (q);
            continue;
        }
        self->pg_busy = true;
        qn_fd_unwatch (self->kernel, PQsocket (self->pg));
        qn_fd_watch (self->kernel, PQsocket (self->pg), QN_FD_IN, s_on_fd);
        return;
    }
}

static bool
s_res_ok (PGresult *res)
{
    return res && (PQresultStatus (res) == PGRES_TUPLES_OK || PQresultStatus (res) == PGRES_COMMAND_OK);
}

//  The request waiting for a store's result, or NULL: gone already, or
//  answered 503 with `unavailable` because the result failed (or, when
//  one_row, did not hold exactly one row).
static s_req_t *
s_req_of_result (self_t *self, uint64_t req_id, PGresult *res, bool one_row, const char *unavailable)
{
    s_req_t *req = qn_hashmap_get (self->reqs, req_id);
    if (req && (!s_res_ok (res) || (one_row && PQntuples (res) != 1))) {
        s_req_error (self, req, 503, unavailable);
        return NULL;
    }
    return req;
}

// ------------------------------------------------------------------ the key table
static uint64_t
s_key_hash (const char *id)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = id; *p; p++)
        h = (h ^ (unsigned char) *p) * 1099511628211ULL;
    return h;
}

static void
s_key_free_each (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    s_key_t *k = value;
    free (k->hash);
    free (k);
}

static void
s_keys_put (qn_hashmap_t *map, const char *id, const char *tenant, qn_role_t role, const char *hash)
{
    s_key_t *k = qn_zalloc (sizeof *k);
    snprintf (k->id, sizeof k->id, "%s", id);
    snprintf (k->tenant, sizeof k->tenant, "%s", tenant);
    k->role = role;
    k->hash = qn_strdup (hash);
    s_key_t *old = qn_hashmap_remove (map, s_key_hash (id));
    if (old)
        s_key_free_each (NULL, 0, old);
    qn_hashmap_put (map, s_key_hash (id), k);
}

static void
s_on_keys (self_t *self, PGresult *res, void *arg)
{
    (void) arg;
    if (!s_res_ok (res)) {
        qn_warn ("key table not refreshed (the last one stays in use)");
        return;
    }
    qn_hashmap_t *map = qn_hashmap_new ();
    for (int r = 0; r < PQntuples (res); r++) {
        const char *role = PQgetvalue (res, r, 2);
        s_keys_put (map, PQgetvalue (res, r, 0), PQgetvalue (res, r, 1),
                    qn_role_parse (role, strlen (role)), PQgetvalue (res, r, 3));
        s_tenant_t *t = s_tenant (self, PQgetvalue (res, r, 1));
        double rps = PQgetisnull (res, r, 4) ? 0 : atof (PQgetvalue (res, r, 4));
        double mps = PQgetisnull (res, r, 5) ? 0 : atof (PQgetvalue (res, r, 5));
        qn_bucket_set (&t->requests, rps, rps);
        qn_bucket_set (&t->messages, mps, mps);
        t->max_body_bytes = PQgetisnull (res, r, 6) ? 0 : atoll (PQgetvalue (res, r, 6));
        t->max_batch = PQgetisnull (res, r, 7) ? 0 : atoll (PQgetvalue (res, r, 7));
        t->max_long_polls = PQgetisnull (res, r, 8) ? 0 : atoll (PQgetvalue (res, r, 8));
    }
    if (!self->keys_loaded)
        qn_info ("key table loaded: keys=%d", PQntuples (res));
    qn_hashmap_each (self->keys, s_key_free_each, NULL);
    qn_hashmap_destroy (&self->keys);
    self->keys = map;
    self->keys_loaded = true;
}

static void
s_session_free_each (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    sodium_memzero (value, sizeof (s_session_t));
    free (value);
}

static void
s_session_put (qn_hashmap_t *map, const s_session_t *from)
{
    s_session_t *old = qn_hashmap_remove (map, s_key_hash (from->id));
    if (old)
        s_session_free_each (NULL, 0, old);
    s_session_t *ses = qn_zalloc (sizeof *ses);
    *ses = *from;
    qn_hashmap_put (map, s_key_hash (ses->id), ses);
}

static void
s_on_sessions (self_t *self, PGresult *res, void *arg)
{
    (void) arg;
    if (!s_res_ok (res))
        return;                 //  The last table stays in use
    qn_hashmap_t *map = qn_hashmap_new ();
    for (int r = 0; r < PQntuples (res); r++) {
        s_session_t ses = { .expires_ms = atoll (PQgetvalue (res, r, 5)) };
        snprintf (ses.id, sizeof ses.id, "%s", PQgetvalue (res, r, 0));
        snprintf (ses.tenant, sizeof ses.tenant, "%s", PQgetvalue (res, r, 1));
        snprintf (ses.user, sizeof ses.user, "%s", PQgetvalue (res, r, 2));
        const char *role = PQgetvalue (res, r, 3);
        ses.role = qn_role_parse (role, strlen (role));
        snprintf (ses.hash, sizeof ses.hash, "%s", PQgetvalue (res, r, 4));
        s_session_put (map, &ses);
    }
    qn_hashmap_each (self->sessions, s_session_free_each, NULL);
    qn_hashmap_destroy (&self->sessions);
    self->sessions = map;
}

static void
s_tenant_inactive (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    ((s_tenant_t *) value)->active = false;
}

//  Limits of enabled tenants, keys or not (users are held to them too).
static void
s_on_tenants (self_t *self, PGresult *res, void *arg)
{
    (void) arg;
    if (!s_res_ok (res))
        return;
    qn_hashmap_each (self->tenants, s_tenant_inactive, NULL);
    for (int r = 0; r < PQntuples (res); r++) {
        s_tenant_t *t = s_tenant (self, PQgetvalue (res, r, 0));
        t->active = true;
        double rps = PQgetisnull (res, r, 1) ? 0 : atof (PQgetvalue (res, r, 1));
        double mps = PQgetisnull (res, r, 2) ? 0 : atof (PQgetvalue (res, r, 2));
        qn_bucket_set (&t->requests, rps, rps);
        qn_bucket_set (&t->messages, mps, mps);
        t->max_body_bytes = PQgetisnull (res, r, 3) ? 0 : atoll (PQgetvalue (res, r, 3));
        t->max_batch = PQgetisnull (res, r, 4) ? 0 : atoll (PQgetvalue (res, r, 4));
        t->max_long_polls = PQgetisnull (res, r, 5) ? 0 : atoll (PQgetvalue (res, r, 5));
    }
}

static void
s_keys_refresh (self_t *self)
{
    self->keys_asked_ms = qn_now_ms ();
    s_query (self, "SELECT id, tenant, role, hash, requests_per_s, messages_per_s, max_body_bytes,"
                   " max_batch, max_long_polls FROM queen_proxy.keys_active2()", NULL, 0, s_on_keys, NULL);
    s_query (self, "SELECT id, tenant, user_name, role, hash, expires_ms FROM queen_proxy.sessions_active()",
             NULL, 0, s_on_sessions, NULL);
    s_query (self, "SELECT tenant, requests_per_s, messages_per_s, max_body_bytes, max_batch, max_long_polls"
                   " FROM queen_proxy.tenants_active()", NULL, 0, s_on_tenants, NULL);
}

// ------------------------------------------------------------------ usage metering
typedef struct {
    char tenant [QN_TENANT_MAX + 1];
    s_usage_t usage;
} s_flush_t;

static bool
s_usage_empty (const s_usage_t *u)
{
    return !u->requests && !u->messages_in && !u->messages_out && !u->bytes_in && !u->bytes_out
        && !u->refused;
}

static void
s_usage_params (const char *tenant, const s_usage_t *u, char v [6][24], const char *p [7])
{
    const int64_t n [6] = { u->requests, u->messages_in, u->messages_out, u->bytes_in, u->bytes_out,
                            u->refused };
    p [0] = tenant;
    for (int i = 0; i < 6; i++) {
        snprintf (v [i], sizeof v [i], "%lld", (long long) n [i]);
        p [i + 1] = v [i];
    }
}

#define S_USAGE_SQL "SELECT queen_proxy.usage_add ($1, $2, $3, $4, $5, $6, $7)"

static void
s_usage_add (s_usage_t *to, const s_usage_t *from)
{
    to->requests += from->requests;
    to->messages_in += from->messages_in;
    to->messages_out += from->messages_out;
    to->bytes_in += from->bytes_in;
    to->bytes_out += from->bytes_out;
    to->refused += from->refused;
}

//  A failed flush puts its figures back, so the next one carries them.
static void
s_on_flushed (self_t *self, PGresult *res, void *arg)
{
    s_flush_t *f = arg;
    if (!s_res_ok (res)) {
        qn_warn ("usage not written, kept for the next flush: tenant=%s", f->tenant);
        s_usage_add (&s_tenant (self, f->tenant)->usage, &f->usage);
    }
    free (f);
}

static void
s_flush_each (void *arg, uint64_t key, void *value)
{
    (void) key;
    self_t *self = arg;
    s_tenant_t *t = value;
    if (s_usage_empty (&t->usage))
        return;
    s_flush_t *f = qn_zalloc (sizeof *f);
    snprintf (f->tenant, sizeof f->tenant, "%s", t->name);
    f->usage = t->usage;
    memset (&t->usage, 0, sizeof t->usage);
    char v [6][24];
    const char *p [7];
    s_usage_params (f->tenant, &f->usage, v, p);
    s_query (self, S_USAGE_SQL, p, 7, s_on_flushed, f);
}

static void
s_flush (self_t *self)
{
    self->flushed_ms = qn_now_ms ();
    qn_hashmap_each (self->tenants, s_flush_each, self);
}

//  At shutdown: blocking, after the query in flight (if any) is done.
static void
s_flush_sync_each (void *arg, uint64_t key, void *value)
{
    (void) key;
    self_t *self = arg;
    s_tenant_t *t = value;
    if (s_usage_empty (&t->usage))
        return;
    char v [6][24];
    const char *p [7];
    s_usage_params (t->name, &t->usage, v, p);
    PGresult *res = PQexecParams (self->pg, S_USAGE_SQL, 7, NULL, p, NULL, NULL, 0);
    if (!s_res_ok (res))
        qn_warn ("usage not written at shutdown: tenant=%s error=%s", t->name, PQerrorMessage (self->pg));
    else
        memset (&t->usage, 0, sizeof t->usage);
    PQclear (res);
}

static void
s_flush_sync (self_t *self)
{
    if (!self->pg)
        return;
    PQsetnonblocking (self->pg, 0);
    //  Finish what is queued (its callbacks run), then write what is left.
    while (self->q_head) {
        if (self->pg_busy) {
            PGresult *res = PQgetResult (self->pg), *extra;
            while ((extra = PQgetResult (self->pg)))
                PQclear (extra);
            s_query_t *q = self->q_head;
            self->q_head = q->next;
            if (!self->q_head)
                self->q_tail = NULL;
            self->pg_busy = false;
            q->cb (self, res, q->arg);
            PQclear (res);
            s_query_free (q);
        }
        else
            s_pg_pump (self);
    }
    qn_hashmap_each (self->tenants, s_flush_sync_each, self);
}

// ------------------------------------------------------------------ the proxy's own routes
typedef struct {
    uint64_t req_id;
    qn_key_new_t key;
    qn_role_t role;
    int ok_status;              //  Admin routes: the status of a success
    bool with_key;              //  Admin routes: add the new key to the answer
    bool refresh;               //  Admin routes: reload the key table after
    bool revoke;                //  Admin routes: drop key.id from the table
    char drop_tenant [136];     //  Admin routes: drop this user's (or
    char drop_user [136];       //  tenant's) sessions from the table
} s_keyop_t;

typedef struct {
    const char *tenant, *user;
    qn_buf_t ids;
} s_drop_t;

static void
s_drop_collect (void *arg, uint64_t key, void *value)
{
    s_drop_t *d = arg;
    s_session_t *ses = value;
    if (!strcmp (ses->tenant, d->tenant) && (!d->user [0] || !strcmp (ses->user, d->user)))
        qn_buf_append (&d->ids, &key, sizeof key);
}

//  Ends the sessions of a user (user "": of every user of the tenant).
static void
s_sessions_drop (self_t *self, const char *tenant, const char *user)
{
    s_drop_t d = { tenant, user, QN_BUF_INIT };
    qn_hashmap_each (self->sessions, s_drop_collect, &d);
    for (size_t i = 0; i < d.ids.len / sizeof (uint64_t); i++) {
        uint64_t key;
        memcpy (&key, d.ids.data + i * sizeof key, sizeof key);
        s_session_free_each (NULL, 0, qn_hashmap_remove (self->sessions, key));
    }
    qn_buf_free (&d.ids);
}

static void
s_on_key_created (self_t *self, PGresult *res, void *arg)
{
    s_keyop_t *op = arg;
    s_req_t *req = s_req_of_result (self, op->req_id, res, false, "Key store unavailable");
    if (req) {
        s_keys_put (self->keys, op->key.id, req->tenant, op->role, op->key.hash);
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_obj (&w);
        qn_jw_kstr (&w, "id", op->key.id);
        qn_jw_kstr (&w, "key", op->key.key);
        qn_jw_kstr (&w, "tenant", req->tenant);
        qn_jw_kstr (&w, "role", qn_role_name (op->role));
        qn_jw_obj_end (&w);
        s_respond_json (self, req->conn_id, req->seq, req->keep_alive, 201, b.data, b.len, NULL);
        qn_buf_free (&b);
        s_req_free (self, req);
    }
    memset (&op->key, 0, sizeof op->key);
    free (op);
}

static void
s_on_key_revoked (self_t *self, PGresult *res, void *arg)
{
    s_keyop_t *op = arg;
    s_req_t *req = s_req_of_result (self, op->req_id, res, false, "Key store unavailable");
    if (req) {
        bool revoked = PQntuples (res) == 1 && !strcmp (PQgetvalue (res, 0, 0), "t");
        if (!revoked)
            s_req_error (self, req, 404, "Key not found");
        else {
            //  At once for this proxy; other proxies within one refresh.
            s_key_t *k = qn_hashmap_remove (self->keys, s_key_hash (op->key.id));
            if (k)
                s_key_free_each (NULL, 0, k);
            const char json [] = "{\"revoked\":true}";
            s_respond_json (self, req->conn_id, req->seq, req->keep_alive, 200, json, sizeof json - 1, NULL);
            s_req_free (self, req);
        }
    }
    free (op);
}

static void
s_on_keys_listed (self_t *self, PGresult *res, void *arg)
{
    s_keyop_t *op = arg;
    s_req_t *req = s_req_of_result (self, op->req_id, res, false, "Key store unavailable");
    if (req) {
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_obj (&w);
        qn_jw_key (&w, "keys");
        qn_jw_arr (&w);
        for (int r = 0; r < PQntuples (res); r++) {
            qn_jw_obj (&w);
            qn_jw_kstr (&w, "id", PQgetvalue (res, r, 0));
            qn_jw_kstr (&w, "role", PQgetvalue (res, r, 1));
            qn_jw_kstr (&w, "label", PQgetvalue (res, r, 2));
            qn_jw_kbool (&w, "revoked", !PQgetisnull (res, r, 4));
            qn_jw_obj_end (&w);
        }
        qn_jw_arr_end (&w);
        qn_jw_obj_end (&w);
        s_respond_json (self, req->conn_id, req->seq, req->keep_alive, 200, b.data, b.len, NULL);
        qn_buf_free (&b);
        s_req_free (self, req);
    }
    free (op);
}

//  Flushed figures plus this proxy's unflushed ones.
static void
s_on_usage (self_t *self, PGresult *res, void *arg)
{
    s_keyop_t *op = arg;
    s_req_t *req = s_req_of_result (self, op->req_id, res, true, "Usage store unavailable");
    if (req) {
        const s_usage_t *u = &s_tenant (self, req->tenant)->usage;
        const char *names [6] = { "requests", "messagesIn", "messagesOut", "bytesIn", "bytesOut", "refused" };
        const int64_t mem [6] = { u->requests, u->messages_in, u->messages_out, u->bytes_in,
                                  u->bytes_out, u->refused };
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_obj (&w);
        qn_jw_kstr (&w, "tenant", req->tenant);
        for (int i = 0; i < 6; i++)
            qn_jw_kint (&w, names [i], atoll (PQgetvalue (res, 0, i)) + mem [i]);
        qn_jw_obj_end (&w);
        s_respond_json (self, req->conn_id, req->seq, req->keep_alive, 200, b.data, b.len, NULL);
        qn_buf_free (&b);
        s_req_free (self, req);
    }
    free (op);
}

static void
s_local (self_t *self, s_req_t *req, const qn_pr_route_t *route, const qn_url_t *url)
{
    if (!strcmp (route->pattern, "/health")) {
        int healthy = 0, reachable = 0;
        for (int i = 0; i < self->up_count; i++) {
            healthy += self->ups [i].healthy;
            reachable += self->ups [i].reachable;
        }
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_obj (&w);
        qn_jw_kstr (&w, "status", healthy ? "healthy" : "degraded");
        qn_jw_kint (&w, "upstreams", self->up_count);
        qn_jw_kint (&w, "healthyUpstreams", healthy);
        qn_jw_kint (&w, "reachableUpstreams", reachable);
        qn_jw_obj_end (&w);
        s_respond_json (self, req->conn_id, req->seq, req->keep_alive, healthy ? 200 : 503,
                        b.data, b.len, NULL);
        qn_buf_free (&b);
        s_req_free (self, req);
        return;
    }
    if (!strcmp (route->pattern, "/proxy/v1/whoami")) {
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_obj (&w);
        qn_jw_kstr (&w, "tenant", req->tenant);
        qn_jw_kstr (&w, "role", qn_role_name (req->role));
        if (req->session) {
            qn_jw_kstr (&w, "user", req->user);
            qn_jw_kstr (&w, "sessionId", req->key_id);
        }
        else
        if (req->sso) {
            qn_jw_kstr (&w, "user", req->user);
            qn_jw_kstr (&w, "via", "sso");
        }
        else
            qn_jw_kstr (&w, "keyId", req->key_id);
        qn_jw_obj_end (&w);
        s_respond_json (self, req->conn_id, req->seq, req->keep_alive, 200, b.data, b.len, NULL);
        qn_buf_free (&b);
        s_req_free (self, req);
        return;
    }
    if (!strcmp (route->pattern, "/proxy/v1/login")) {
        s_password_route (self, req, true, NULL, NULL);
        return;
    }
    if (!strcmp (route->pattern, "/proxy/v1/users") && !strcmp (req->method, "POST")) {
        s_password_route (self, req, false, req->tenant, NULL);
        return;
    }
    if (!strcmp (route->pattern, "/proxy/v1/users/:user") && !strcmp (req->method, "PUT")) {
        s_password_route (self, req, false, req->tenant, url->segments [3]);
        return;
    }
    s_keyop_t *op = qn_zalloc (sizeof *op);
    op->req_id = req->id;
    if (!strcmp (route->pattern, "/proxy/v1/logout")) {
        if (!req->session) {
            free (op);
            s_req_error (self, req, 400, "Not a session: log out ends the session that calls it");
            return;
        }
        snprintf (op->key.id, sizeof op->key.id, "%s", req->key_id);
        const char *p [1] = { req->key_id };
        s_query (self, "SELECT queen_proxy.session_revoke ($1)", p, 1, s_on_logged_out, op);
        return;
    }
    if (!strcmp (route->pattern, "/proxy/v1/users")) {
        op->ok_status = 200;
        const char *p [1] = { req->tenant };
        s_query (self, "SELECT queen_proxy.admin_users ($1)", p, 1, s_on_admin, op);
        return;
    }
    if (!strcmp (route->pattern, "/proxy/v1/users/:user")) {
        op->ok_status = 200;
        snprintf (op->drop_tenant, sizeof op->drop_tenant, "%s", req->tenant);
        snprintf (op->drop_user, sizeof op->drop_user, "%s", url->segments [3]);
        const char *p [2] = { req->tenant, url->segments [3] };
        s_query (self, "SELECT queen_proxy.admin_user_delete ($1, $2)", p, 2, s_on_admin, op);
        return;
    }
    if (!strcmp (route->pattern, "/proxy/v1/usage")) {
        const char *p [1] = { req->tenant };
        s_query (self, "SELECT requests, messages_in, messages_out, bytes_in, bytes_out, refused"
                       " FROM queen_proxy.usage_total ($1)", p, 1, s_on_usage, op);
        return;
    }
    if (!strcmp (req->method, "GET")) {
        const char *p [1] = { req->tenant };
        s_query (self, "SELECT id, role, label, created_at, revoked_at FROM queen_proxy.keys_list ($1)",
                 p, 1, s_on_keys_listed, op);
        return;
    }
    if (!strcmp (req->method, "DELETE")) {
        snprintf (op->key.id, sizeof op->key.id, "%.*s", (int) url->seg_len [3], url->segments [3]);
        const char *p [2] = { req->tenant, op->key.id };
        s_query (self, "SELECT queen_proxy.key_revoke ($1, $2)", p, 2, s_on_key_revoked, op);
        return;
    }
    //  POST /proxy/v1/keys {"role": "...", "label": "..."}
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    qn_buf_t role = QN_BUF_INIT, label = QN_BUF_INIT;
    int t;
    const char *bad = NULL;
    if (qn_json_parse (&doc, req->body, req->body_len, 8) || qn_json_type (&doc, 0) != QN_JSON_OBJECT)
        bad = "Request body must be a JSON object";
    else
    if ((t = qn_json_get (&doc, 0, "role")) < 0 || qn_json_str (&doc, t, &role)
    ||  (op->role = qn_role_parse (role.data, role.len)) == QN_ROLE_NONE)
        bad = "role must be one of admin, read-write, read-only, producer, consumer";
    else
    if ((t = qn_json_get (&doc, 0, "label")) >= 0
    &&  (qn_json_str (&doc, t, &label) || label.len > 200))
        bad = "label must be a string of at most 200 bytes";
    else
    if (qn_key_generate (&op->key))
        bad = NULL, op->role = QN_ROLE_NONE;
    qn_json_doc_free (&doc);
    if (bad || op->role == QN_ROLE_NONE) {
        s_req_error (self, req, bad ? 400 : 500, bad ? bad : "Key generation failed");
        qn_buf_free (&role);
        qn_buf_free (&label);
        free (op);
        return;
    }
    const char *p [5] = { op->key.id, req->tenant, qn_role_name (op->role), op->key.hash,
                          label.len ? label.data : "" };
    s_query (self, "SELECT queen_proxy.key_create ($1, $2, $3, $4, $5)", p, 5, s_on_key_created, op);
    qn_buf_free (&role);
    qn_buf_free (&label);
}

// ------------------------------------------------------------------ administration (operator keys)
//  The admin functions of schema/proxy/0002_plans_admin.sql validate and
//  answer in JSON; SQLSTATE QN4xx carries the HTTP status of a refusal.
static void
s_on_admin (self_t *self, PGresult *res, void *arg)
{
    s_keyop_t *op = arg;
    s_req_t *req = qn_hashmap_get (self->reqs, op->req_id);
    const char *state = res ? PQresultErrorField (res, PG_DIAG_SQLSTATE) : NULL;
    if (!req)
        ;
    else
    if (!s_res_ok (res)) {
        const char *msg = PQresultErrorField (res, PG_DIAG_MESSAGE_PRIMARY);
        if (state && state [0] == 'Q' && state [1] == 'N' && state [2] == '4' && msg)
            s_req_error (self, req, 400 + (state [3] - '0') * 10 + (state [4] - '0'), msg);
        else
        if (state && !strncmp (state, "22", 2))
            s_req_error (self, req, 400, "Request body must be a JSON object");
        else {
            if (res)
                qn_warn ("admin route failed: sqlstate=%s", state ? state : "");
            s_req_error (self, req, 503, "Proxy store unavailable");
        }
    }
    else {
        const char *json = PQntuples (res) == 1 ? PQgetvalue (res, 0, 0) : "{}";
        qn_buf_t b = QN_BUF_INIT;
        if (op->with_key && json [0] == '{' && json [1] != '}') {
            //  The key, shown once: its secret is in no table.
            qn_buf_printf (&b, "{\"key\": \"%s\", ", op->key.key);
            qn_buf_puts (&b, json + 1);
        }
        else
            qn_buf_puts (&b, json);
        if (op->revoke) {
            s_key_t *k = qn_hashmap_remove (self->keys, s_key_hash (op->key.id));
            if (k)
                s_key_free_each (NULL, 0, k);
        }
        if (op->drop_tenant [0])
            s_sessions_drop (self, op->drop_tenant, op->drop_user);
        s_respond_json (self, req->conn_id, req->seq, req->keep_alive, op->ok_status, b.data, b.len, NULL);
        if (b.data)
            sodium_memzero (b.data, b.len);
        qn_buf_free (&b);
        s_req_free (self, req);
        if (op->refresh)
            s_keys_refresh (self);
    }
    memset (&op->key, 0, sizeof op->key);
    free (op);
}

static bool
s_json_object (const char *body, size_t len)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    bool ok = len && qn_json_parse (&doc, body, len, 16) == 0 && qn_json_type (&doc, 0) == QN_JSON_OBJECT;
    qn_json_doc_free (&doc);
    return ok;
}

static void
s_admin (self_t *self, s_req_t *req, const qn_pr_route_t *route, const qn_url_t *url)
{
    const char *pat = route->pattern, *m = req->method;
    char name [136] = "", id [136] = "";
    if (url->seg_count > 4)
        snprintf (name, sizeof name, "%s", url->segments [4]);
    if (url->seg_count > 6)
        snprintf (id, sizeof id, "%s", url->segments [6]);
    bool get = !strcmp (m, "GET"), post = !strcmp (m, "POST"), del = !strcmp (m, "DELETE");
    if (!get && !del && !s_json_object (req->body, req->body_len)) {
        s_req_error (self, req, 400, "Request body must be a JSON object");
        return;
    }
    s_keyop_t *op = qn_zalloc (sizeof *op);
    op->req_id = req->id;
    op->ok_status = post ? 201 : 200;
    op->refresh = !get;
    const char *p [5] = { NULL };
    const char *sql = NULL;
    int n = 0;
    if (!strcmp (pat, "/proxy/v1/admin/plans")) {
        sql = get ? "SELECT queen_proxy.admin_plans ()" : "SELECT queen_proxy.admin_plan_put (NULL, $1, true)";
        p [0] = req->body, n = get ? 0 : 1;
    }
    else
    if (!strcmp (pat, "/proxy/v1/admin/plans/:plan")) {
        sql = get ? "SELECT queen_proxy.admin_plan ($1)"
            : del ? "SELECT queen_proxy.admin_plan_delete ($1)"
                  : "SELECT queen_proxy.admin_plan_put ($1, $2, false)";
        p [0] = name, p [1] = req->body, n = get || del ? 1 : 2;
    }
    else
    if (!strcmp (pat, "/proxy/v1/admin/tenants") && get)
        sql = "SELECT queen_proxy.admin_tenants ()";
    else
    if (!strcmp (pat, "/proxy/v1/admin/tenants/:tenant")) {
        sql = get ? "SELECT queen_proxy.admin_tenant ($1)"
            : del ? "SELECT queen_proxy.admin_tenant_delete ($1)"
                  : "SELECT queen_proxy.admin_tenant_update ($1, $2)";
        p [0] = name, p [1] = req->body, n = get || del ? 1 : 2;
        if (del)            //  Its sessions end here at once (a disabled tenant's within the refresh)
            snprintf (op->drop_tenant, sizeof op->drop_tenant, "%s", name);
    }
    else
    if (!strcmp (pat, "/proxy/v1/admin/tenants/:tenant/keys") && get) {
        sql = "SELECT queen_proxy.admin_keys ($1)";
        p [0] = name, n = 1;
    }
    else
    if (!strcmp (pat, "/proxy/v1/admin/tenants/:tenant/users") && get) {
        sql = "SELECT queen_proxy.admin_users ($1)";
        p [0] = name, n = 1;
    }
    else
    if (!strcmp (pat, "/proxy/v1/admin/tenants/:tenant/users") || (!strcmp (pat, "/proxy/v1/admin/tenants/:tenant/users/:user") && !del)) {
        free (op);
        s_password_route (self, req, false, name, post ? NULL : id);
        return;
    }
    else
    if (!strcmp (pat, "/proxy/v1/admin/tenants/:tenant/users/:user")) {
        sql = "SELECT queen_proxy.admin_user_delete ($1, $2)";
        snprintf (op->drop_tenant, sizeof op->drop_tenant, "%s", name);
        snprintf (op->drop_user, sizeof op->drop_user, "%s", id);
        p [0] = name, p [1] = id, n = 2;
    }
    else
    if (!strcmp (pat, "/proxy/v1/admin/tenants/:tenant/keys/:id")) {
        sql = "SELECT CASE WHEN queen_proxy.key_revoke ($1, $2) THEN jsonb_build_object ('revoked', true)"
              " ELSE queen_proxy._raise_not_found ('Key not found') END";
        snprintf (op->key.id, sizeof op->key.id, "%.16s", id);
        op->revoke = true;
        p [0] = name, p [1] = id, n = 2;
    }
    else {
        //  POST .../tenants (a tenant and its first admin key) or
        //  POST .../tenants/:tenant/keys {"role", "label"}: the key is made here.
        bool tenant = !strcmp (pat, "/proxy/v1/admin/tenants");
        qn_json_doc_t doc;
        qn_json_doc_init (&doc);
        qn_buf_t role = QN_BUF_INIT, label = QN_BUF_INIT;
        const char *bad = NULL;
        int t;
        op->role = QN_ROLE_ADMIN;
        qn_json_parse (&doc, req->body, req->body_len, 16);
        if (!tenant
        &&  ((t = qn_json_get (&doc, 0, "role")) < 0 || qn_json_str (&doc, t, &role)
         ||  (op->role = qn_role_parse (role.data, role.len)) == QN_ROLE_NONE))
            bad = "role must be one of admin, read-write, read-only, producer, consumer";
        else
        if (!tenant && (t = qn_json_get (&doc, 0, "label")) >= 0
        &&  (qn_json_str (&doc, t, &label) || label.len > 200))
            bad = "label must be a string of at most 200 bytes";
        qn_json_doc_free (&doc);
        int status = bad ? 400 : 0;
        if (!bad && qn_key_generate (&op->key))
            status = 500, bad = "Key generation failed";
        if (bad) {
            s_req_error (self, req, status, bad);
            qn_buf_free (&role);
            qn_buf_free (&label);
            free (op);
            return;
        }
        op->with_key = true;
        if (tenant) {
            const char *tp [3] = { req->body, op->key.id, op->key.hash };
            s_query (self, "SELECT queen_proxy.admin_tenant_create ($1, $2, $3)", tp, 3, s_on_admin, op);
        }
        else {
            const char *kp [5] = { name, op->key.id, qn_role_name (op->role), op->key.hash,
                                   label.len ? label.data : "" };
            s_query (self, "SELECT queen_proxy.admin_key_create ($1, $2, $3, $4, $5)", kp, 5, s_on_admin, op);
        }
        qn_buf_free (&role);
        qn_buf_free (&label);
        return;
    }
    s_query (self, sql, p, n, s_on_admin, op);
}

// ------------------------------------------------------------------ users, passwords and sessions
//  Password work goes to proxy_hasher (its own thread); the request waits
//  in self->reqs meanwhile, as for PostgreSQL.
typedef struct {
    uint64_t req_id;
    int kind;                   //  S_PW_LOGIN or S_PW_USER
    char tenant [QN_TENANT_MAX + 1];
    char user [132];
    qn_role_t role;
    bool replace;               //  S_PW_USER: PUT (an existing user)
    char *password;             //  Owned, wiped
    size_t password_len;
    char hash [QN_KEY_HASH_MAX];
    s_session_t ses;            //  S_PW_LOGIN: the session being made
    char token [QN_KEY_LEN + 1];
} s_pwop_t;

enum { S_PW_LOGIN, S_PW_USER };

static void
s_pwop_free (s_pwop_t *op)
{
    if (op->password) {
        sodium_memzero (op->password, op->password_len);
        free (op->password);
    }
    sodium_memzero (op, sizeof *op);
    free (op);
}

static void s_on_pw_done (void *self_, void *arg, const qn_env_t *env);

//  Sends op's password to the hasher; on failure answers and frees.
static void
s_pw_request (self_t *self, s_req_t *req, s_pwop_t *op, int what, const char *hash)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_pw_work_t w = { .op = what, .password = op->password, .password_len = op->password_len,
                           .hash = hash, .hash_len = strlen (hash) };
    qn_msg_pw_work_encode (&pk, &w);
    qn_msg_t msg = { .to = "proxy_hasher", .type = QN_MSG_PW_WORK, .body = b.data, .body_len = b.size };
    int rc = qn_request (self->kernel, &msg, S_PW_TIMEOUT_MS, s_on_pw_done, op);
    sodium_memzero (b.data, b.size);
    msgpack_sbuffer_destroy (&b);
    if (rc) {
        s_req_error (self, req, 503, "Password service busy");
        s_pwop_free (op);
        return;
    }
    self->pw_pending++;
}

static void
s_cookie (qn_buf_t *b, const char *token, int64_t max_age_s)
{
    qn_buf_printf (b, "Set-Cookie: " S_SESSION_COOKIE "=%s; Path=/; Max-Age=%lld; HttpOnly; Secure;"
                      " SameSite=Strict\r\n", token, (long long) max_age_s);
}

static void
s_on_session_created (self_t *self, PGresult *res, void *arg)
{
    s_pwop_t *op = arg;
    s_req_t *req = s_req_of_result (self, op->req_id, res, true, "Session store unavailable");
    if (req) {
        op->ses.expires_ms = atoll (PQgetvalue (res, 0, 0));
        s_session_put (self->sessions, &op->ses);       //  At once on this proxy
        qn_buf_t b = QN_BUF_INIT, extra = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_obj (&w);
        qn_jw_kstr (&w, "token", op->token);
        qn_jw_kstr (&w, "tenant", op->tenant);
        qn_jw_kstr (&w, "user", op->user);
        qn_jw_kstr (&w, "role", qn_role_name (op->role));
        qn_jw_kint (&w, "expiresAt", op->ses.expires_ms);
        qn_jw_obj_end (&w);
        s_cookie (&extra, op->token, self->config->proxy_session_ttl_ms / 1000);
        s_respond_json (self, req->conn_id, req->seq, req->keep_alive, 200, b.data, b.len, extra.data);
        sodium_memzero (b.data, b.len);
        sodium_memzero (extra.data, extra.len);
        qn_buf_free (&b);
        qn_buf_free (&extra);
        s_req_free (self, req);
    }
    s_pwop_free (op);
}

//  The hasher's answer: a login's verification or a user's new hash.
static void
s_on_pw_done (void *self_, void *arg, const qn_env_t *env)
{
    self_t *self = self_;
    s_pwop_t *op = arg;
    self->pw_pending--;
    s_req_t *req = qn_hashmap_get (self->reqs, op->req_id);
    qn_msg_pw_done_t d;
    bool answered = env && qn_msg_pw_done_decode (env->body.ptr, env->body.len, &d) == 0;
    if (!req) {
        s_pwop_free (op);
        return;
    }
    if (!answered) {
        s_req_error (self, req, 503, "Password service unavailable");
        s_pwop_free (op);
        return;
    }
    if (op->kind == S_PW_LOGIN) {
        if (!d.ok) {
            qn_count (self->kernel, "proxy_login_failures", 1);
            s_req_error (self, req, 401, "Invalid credentials");
            s_pwop_free (op);
            return;
        }
        //  A session: 8 random bytes of id, 32 of secret; SHA-256 stored.
        unsigned char id [QN_KEY_ID_LEN / 2], secret [32], digest [crypto_hash_sha256_BYTES];
        randombytes_buf (id, sizeof id);
        randombytes_buf (secret, sizeof secret);
        sodium_bin2hex (op->ses.id, sizeof op->ses.id, id, sizeof id);
        qn_buf_t sb = QN_BUF_INIT;
        qn_b64url_encode (&sb, secret, sizeof secret);
        crypto_hash_sha256 (digest, (const unsigned char *) sb.data, sb.len);
        sodium_bin2hex (op->ses.hash, sizeof op->ses.hash, digest, sizeof digest);
        snprintf (op->token, sizeof op->token, "qs_%s_%.*s", op->ses.id, (int) sb.len, sb.data);
        sodium_memzero (sb.data, sb.len);
        sodium_memzero (secret, sizeof secret);
        qn_buf_free (&sb);
        snprintf (op->ses.tenant, sizeof op->ses.tenant, "%s", op->tenant);
        snprintf (op->ses.user, sizeof op->ses.user, "%s", op->user);
        op->ses.role = op->role;
        char ttl [24];
        snprintf (ttl, sizeof ttl, "%lld", (long long) self->config->proxy_session_ttl_ms);
        const char *p [5] = { op->ses.id, op->tenant, op->user, op->ses.hash, ttl };
        s_query (self, "SELECT queen_proxy.session_create ($1, $2, $3, $4, $5)", p, 5,
                 s_on_session_created, op);
        return;
    }
    //  S_PW_USER: store the user with the new hash.
    if (!d.ok || d.hash_len >= sizeof op->hash) {
        s_req_error (self, req, 500, "Password hashing failed");
        s_pwop_free (op);
        return;
    }
    s_keyop_t *kop = qn_zalloc (sizeof *kop);
    kop->req_id = op->req_id;
    kop->ok_status = op->replace ? 200 : 201;
    if (op->replace) {
        snprintf (kop->drop_tenant, sizeof kop->drop_tenant, "%s", op->tenant);
        snprintf (kop->drop_user, sizeof kop->drop_user, "%s", op->user);
    }
    snprintf (op->hash, sizeof op->hash, "%.*s", (int) d.hash_len, d.hash);
    const char *p [5] = { op->tenant, op->user, qn_role_name (op->role), op->hash,
                          op->replace ? "true" : "false" };
    s_query (self, "SELECT queen_proxy.admin_user_put ($1, $2, $3, $4, $5)", p, 5, s_on_admin, kop);
    s_pwop_free (op);
}

static void
s_on_login_user (self_t *self, PGresult *res, void *arg)
{
    s_pwop_t *op = arg;
    s_req_t *req = qn_hashmap_get (self->reqs, op->req_id);
    if (!req) {
        s_pwop_free (op);
        return;
    }
    if (!s_res_ok (res)) {
        s_req_error (self, req, 503, "User store unavailable");
        s_pwop_free (op);
        return;
    }
    //  An unknown user or tenant verifies against the hasher's dummy, at
    //  the same cost, and fails the same way.
    char hash [QN_KEY_HASH_MAX] = "";
    if (PQntuples (res) == 1) {
        const char *role = PQgetvalue (res, 0, 0);
        op->role = qn_role_parse (role, strlen (role));
        snprintf (hash, sizeof hash, "%s", PQgetvalue (res, 0, 1));
    }
    s_pw_request (self, req, op, QN_PW_VERIFY, hash);
}

//  A string member of a JSON object, at most max bytes, into a new buffer.
static int
s_json_member (qn_json_doc_t *doc, const char *name, size_t max, qn_buf_t *out)
{
    int t = qn_json_get (doc, 0, name);
    return t < 0 || qn_json_str (doc, t, out) || !out->len || out->len > max || memchr (out->data, 0, out->len)
         ? -1 : 0;
}

//  POST /proxy/v1/login {"tenant", "user", "password"}.
//  POST /proxy/v1/users, PUT /proxy/v1/users/:user (the tenant's admin) and
//  the operator's .../admin/tenants/:tenant/users[/:user]:
//  {"name" (POST), "role", "password"}.
static void
s_password_route (self_t *self, s_req_t *req, bool login, const char *tenant, const char *user)
{
    if (self->pw_pending >= S_PW_MAX_PENDING) {
        const char json [] = "{\"error\":\"Too many password checks in progress\"}";
        s_respond_json (self, req->conn_id, req->seq, req->keep_alive, 503, json, sizeof json - 1,
                        "Retry-After: 1\r\n");
        s_req_free (self, req);
        return;
    }
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    qn_buf_t t = QN_BUF_INIT, u = QN_BUF_INIT, pw = QN_BUF_INIT, role = QN_BUF_INIT;
    const char *bad = NULL;
    s_pwop_t *op = qn_zalloc (sizeof *op);
    op->req_id = req->id;
    op->kind = login ? S_PW_LOGIN : S_PW_USER;
    if (!req->body_len || qn_json_parse (&doc, req->body, req->body_len, 8)
    ||  qn_json_type (&doc, 0) != QN_JSON_OBJECT)
        bad = "Request body must be a JSON object";
    else
    if (login && (s_json_member (&doc, "tenant", QN_TENANT_MAX, &t) || !qn_tenant_name_ok (t.data, t.len)))
        bad = "tenant must be a tenant name";
    else
    if (!user && s_json_member (&doc, login ? "user" : "name", 128, &u))
        bad = login ? "user must be a string of 1 to 128 bytes" : "name must be a string of 1 to 128 bytes";
    else
    if (!login && (s_json_member (&doc, "role", 16, &role)
               ||  (op->role = qn_role_parse (role.data, role.len)) == QN_ROLE_NONE))
        bad = "role must be one of admin, read-write, read-only, producer, consumer";
    else
    if (s_json_member (&doc, "password", QN_PW_MAX_LEN, &pw) || (!login && pw.len < 8))
        bad = login ? "password must be a string" : "password must be 8 to 1024 bytes";
    qn_json_doc_free (&doc);
    if (!bad) {
        snprintf (op->tenant, sizeof op->tenant, "%.*s", login ? (int) t.len : (int) strlen (tenant),
                  login ? t.data : tenant);
        snprintf (op->user, sizeof op->user, "%.*s", user ? (int) strlen (user) : (int) u.len,
                  user ? user : u.data);
        op->replace = user != NULL;
        op->password = pw.data;
        op->password_len = pw.len;
        pw.data = NULL;
    }
    if (pw.data)
        sodium_memzero (pw.data, pw.len);
    qn_buf_free (&pw);
    qn_buf_free (&t);
    qn_buf_free (&u);
    qn_buf_free (&role);
    if (bad) {
        s_req_error (self, req, 400, bad);
        s_pwop_free (op);
        return;
    }
    if (login) {
        const char *p [2] = { op->tenant, op->user };
        s_query (self, "SELECT role, hash FROM queen_proxy.user_login ($1, $2)", p, 2, s_on_login_user, op);
    }
    else
        s_pw_request (self, req, op, QN_PW_HASH, "");
}

static void
s_on_logged_out (self_t *self, PGresult *res, void *arg)
{
    s_keyop_t *op = arg;
    s_req_t *req = s_req_of_result (self, op->req_id, res, false, "Session store unavailable");
    if (req) {
        s_session_t *ses = qn_hashmap_remove (self->sessions, s_key_hash (op->key.id));
        if (ses)
            s_session_free_each (NULL, 0, ses);
        qn_buf_t extra = QN_BUF_INIT;
        s_cookie (&extra, "", 0);
        const char json [] = "{\"loggedOut\":true}";
        s_respond_json (self, req->conn_id, req->seq, req->keep_alive, 200, json, sizeof json - 1, extra.data);
        qn_buf_free (&extra);
        s_req_free (self, req);
    }
    free (op);
}

//  A presented "qs_..." session token: 0 and the session, or -1 with why.
static s_session_t *
s_session_check (self_t *self, const char *token, size_t len, const char **why)
{
    *why = "Invalid session";
    if (len != QN_KEY_LEN || memcmp (token, "qs_", 3))
        return NULL;
    char as_key [QN_KEY_LEN + 1];
    memcpy (as_key, token, len);
    as_key [0] = 'q', as_key [1] = 'k';         //  The same shape as a key
    char id [QN_KEY_ID_LEN + 1];
    const char *secret;
    size_t slen;
    if (qn_key_parse (as_key, len, id, &secret, &slen))
        return NULL;
    s_session_t *ses = qn_hashmap_get (self->sessions, s_key_hash (id));
    if (!ses || strcmp (ses->id, id))
        return NULL;
    unsigned char digest [crypto_hash_sha256_BYTES];
    char hex [65];
    crypto_hash_sha256 (digest, (const unsigned char *) token + 4 + QN_KEY_ID_LEN, QN_KEY_SECRET_LEN);
    sodium_bin2hex (hex, sizeof hex, digest, sizeof digest);
    if (sodium_memcmp (hex, ses->hash, 64))
        return NULL;
    if (ses->expires_ms <= qn_wall_us () / 1000) {
        *why = "Session expired";
        return NULL;
    }
    return ses;
}

// ------------------------------------------------------------------ SSO passthrough
//  An IdP's JWT (the broker's JWT settings and JWKS fetcher): its tenant
//  claim must name an enabled tenant of this proxy, its roles give admin,
//  read-write or read-only. Returns 0 with the identity in req, or the
//  client-facing reason.
static const char *
s_sso_check (self_t *self, s_req_t *req, const char *token, size_t len)
{
    const qn_jwt_keys_t *sets [2] = { self->static_keys, self->jwks_keys };
    qn_jwt_policy_t policy = self->policy;
    policy.now_s = qn_wall_us () / 1000000;
    qn_jwt_result_t res;
    int rc = qn_jwt_verify (token, len, sets, 2, &policy, &res);
    static char why [192];
    const char *refuse = NULL;
    if (rc == QN_JWT_ENOKEY && self->jwks_configured && res.alg != QN_JWT_HS256) {
        int64_t now = qn_now_ms ();
        if (!self->refresh_asked_ms || now - self->refresh_asked_ms >= 1000) {
            self->refresh_asked_ms = now;
            msgpack_sbuffer b;
            msgpack_sbuffer_init (&b);
            msgpack_packer pk;
            msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
            qn_msg_jwks_refresh_encode (&pk);
            qn_send_body (self->kernel, "jwks", QN_MSG_JWKS_REFRESH, 0, b.data, b.size);
            msgpack_sbuffer_destroy (&b);
        }
    }
    if (rc != QN_JWT_OK) {
        snprintf (why, sizeof why, "%s", res.err);
        refuse = why;
    }
    else
    if (!res.tenant [0])
        refuse = "Token names no tenant";
    else {
        s_tenant_t *t = qn_hashmap_get (self->tenants, s_key_hash (res.tenant));
        if (!t || strcmp (t->name, res.tenant) || !t->active)
            refuse = "Token names an unknown or disabled tenant";
        else
        if (res.level == QN_JWT_LEVEL_NONE)
            refuse = "Token grants no role";
    }
    if (!refuse) {
        snprintf (req->tenant, sizeof req->tenant, "%s", res.tenant);
        req->role = res.level == QN_JWT_LEVEL_ADMIN ? QN_ROLE_ADMIN
                  : res.level == QN_JWT_LEVEL_READ_WRITE ? QN_ROLE_READ_WRITE : QN_ROLE_READ_ONLY;
        snprintf (req->user, sizeof req->user, "%s", res.subject ? res.subject : "");
        req->sso = true;
    }
    qn_jwt_result_free (&res);
    return refuse;
}

static int
s_on_jwks (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    qn_msg_jwks_keys_t msg;
    if (qn_msg_jwks_keys_decode (env->body.ptr, env->body.len, &msg))
        return QN_EPROTO;
    qn_jwt_keys_t *keys = qn_jwt_keys_new ();
    char err [128];
    int added = qn_jwt_keys_add_jwks (keys, msg.json, msg.json_len, err, sizeof err);
    if (added <= 0) {
        qn_warn ("sso: jwks event ignored: %s", added < 0 ? err : "no usable key");
        qn_jwt_keys_destroy (&keys);
        return 0;
    }
    qn_jwt_keys_destroy (&self->jwks_keys);
    self->jwks_keys = keys;
    return 0;
}

// ------------------------------------------------------------------ requests
//  The key of a request: "Authorization: Bearer qk_..." or "X-API-Key".
static const s_key_t *
s_authenticate (self_t *self, const char *presented, size_t len)
{
    char id [QN_KEY_ID_LEN + 1];
    const char *secret;
    size_t slen;
    if (qn_key_parse (presented, len, id, &secret, &slen))
        return NULL;
    const s_key_t *k = qn_hashmap_get (self->keys, s_key_hash (id));
    if (!k || strcmp (k->id, id) || !qn_key_verify (k->hash, secret, slen))
        return NULL;
    return k;
}

static int
s_on_request (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    msgpack_unpacked holder;
    msgpack_unpacked_init (&holder);
    qn_msg_http_request_t m;
    if (qn_msg_http_request_decode (env->body.ptr, env->body.len, &holder, &m)) {
        msgpack_unpacked_destroy (&holder);
        return QN_EPROTO;
    }
    s_req_t *req = qn_zalloc (sizeof *req);
    req->id = ++self->next_id;
    req->conn_id = m.conn_id;
    req->seq = m.seq;
    req->keep_alive = m.keep_alive;
    snprintf (req->method, sizeof req->method, "%.*s", (int) m.method_len, m.method);
    req->target = qn_strndup (m.target, m.target_len);
    req->body_len = env->frame_count ? env->frames [0].len : 0;
    req->body = qn_strndup (env->frame_count ? env->frames [0].ptr : "", req->body_len);
    qn_hashmap_put (self->reqs, req->id, req);
    bool forged = false;
    char *presented = NULL, *cookie = NULL;
    for (uint32_t i = 0; i < m.header_count; i++) {
        qn_http_header_t h;
        qn_msg_http_request_header (&m, i, &h);
        if ((h.name_len == sizeof QN_TENANT_HEADER - 1 && !strncasecmp (h.name, QN_TENANT_HEADER, h.name_len))
        ||  (h.name_len == sizeof QN_TASSERT_HEADER - 1 && !strncasecmp (h.name, QN_TASSERT_HEADER, h.name_len)))
            forged = true;
        else
        if (h.name_len == 12 && !strncasecmp (h.name, "content-type", 12)) {
            free (req->content_type);
            req->content_type = qn_strndup (h.value, h.value_len);
        }
        else
        if (h.name_len == 13 && !strncasecmp (h.name, "authorization", 13)) {
            const char *v = h.value;
            size_t n = h.value_len;
            if (n >= 7 && !strncasecmp (v, "bearer ", 7))
                v += 7, n -= 7;
            free (presented);
            presented = qn_strndup (v, n);
        }
        else
        if (h.name_len == 9 && !strncasecmp (h.name, "x-api-key", 9)) {
            free (presented);
            presented = qn_strndup (h.value, h.value_len);
        }
        else
        if (h.name_len == 6 && !strncasecmp (h.name, "cookie", 6) && !cookie)
            cookie = qn_strndup (h.value, h.value_len);
    }
    msgpack_unpacked_destroy (&holder);
    //  Without a key or token in the headers, a session cookie.
    const char *cv;
    size_t cvlen;
    if (!presented && cookie && !qn_cookie_get (cookie, strlen (cookie), S_SESSION_COOKIE, &cv, &cvlen))
        presented = qn_strndup (cv, cvlen);
    free (cookie);
    qn_url_t url;
    if (qn_url_parse (&url, req->target, strlen (req->target))) {
        free (presented);
        s_req_error (self, req, 400, "Malformed request target");
        return 0;
    }
    qn_pr_route_t route = qn_proxy_route (req->method, &url);
    const char *refuse = NULL;
    int status = 0;
    if (forged)
        status = 401, refuse = "Unverifiable tenant";
    else
    if (route.kind == QN_PR_UNKNOWN)
        status = route.path_known ? 405 : 404, refuse = route.path_known ? "Method not allowed" : "Not found";
    else
    if (!route.public_) {
        bool is_session = presented && !strncmp (presented, "qs_", 3);
        bool is_jwt = presented && self->sso && strncmp (presented, "qk_", 3) && !is_session
                   && strchr (presented, '.');
        const char *why = "Invalid API key";
        const s_key_t *k = presented && !is_session && !is_jwt
                         ? s_authenticate (self, presented, strlen (presented)) : NULL;
        const s_session_t *ses = is_session ? s_session_check (self, presented, strlen (presented), &why) : NULL;
        if (is_jwt)
            why = s_sso_check (self, req, presented, strlen (presented));
        if (!presented || !*presented)
            status = 401, refuse = "Authentication required";
        else
        if (is_jwt && why)
            status = 401, refuse = why;
        else
        if (is_jwt) {
            if (route.kind == QN_PR_OPERATOR)
                status = 403, refuse = "Operator key required";
            else
            if (route.kind == QN_PR_CLUSTER)
                status = 403, refuse = "Not available to tenants";
            else
            if (!qn_proxy_route_allows (&route, req->role))
                status = 403, refuse = "Insufficient permissions";
        }
        else
        if (!k && !ses)
            status = 401, refuse = why;
        else {
            snprintf (req->tenant, sizeof req->tenant, "%s", k ? k->tenant : ses->tenant);
            snprintf (req->key_id, sizeof req->key_id, "%s", k ? k->id : ses->id);
            req->role = k ? k->role : ses->role;
            req->session = ses != NULL;
            if (ses)
                snprintf (req->user, sizeof req->user, "%s", ses->user);
            req->operator_ = !req->tenant [0];
            if (req->operator_ && route.kind != QN_PR_OPERATOR && strcmp (route.pattern, "/proxy/v1/whoami"))
                status = 403, refuse = "Operator keys reach only the proxy's administration";
            else
            if (!req->operator_ && route.kind == QN_PR_OPERATOR)
                status = 403, refuse = "Operator key required";
            else
            if (route.kind == QN_PR_CLUSTER)
                status = 403, refuse = "Not available to tenants";
            else
            if (!qn_proxy_route_allows (&route, req->role))
                status = 403, refuse = "Insufficient permissions";
        }
    }
    free (presented);
    char retry_after [64] = "";
    if (!refuse && req->tenant [0]) {
        //  Plan limits, in-process and exact; every refusal is metered.
        s_tenant_t *t = s_tenant (self, req->tenant);
        t->usage.requests++;
        t->usage.bytes_in += (int64_t) req->body_len;
        int64_t wait_ms = 0, items = 0;
        req->is_pop = route.kind == QN_PR_FORWARD && route.pattern && !strncmp (route.pattern, "/api/v1/pop", 11);
        if (route.kind == QN_PR_FORWARD && !strcmp (route.pattern, "/api/v1/push"))
            items = s_count_items (req->body, req->body_len, "items");
        int64_t now_us = qn_now_ms () * 1000;
        if (t->max_body_bytes && (int64_t) req->body_len > t->max_body_bytes)
            status = 413, refuse = "Payload exceeds the plan's limit";
        else
        if (t->max_batch && items > t->max_batch)
            status = 413, refuse = "Batch exceeds the plan's limit";
        else
        if (!qn_bucket_take (&t->requests, now_us, 1, &wait_ms))
            status = 429, refuse = "Request rate limit exceeded";
        else
        if (items && !qn_bucket_take (&t->messages, now_us, (double) items, &wait_ms))
            status = items > t->messages.burst ? 413 : 429,
            refuse = items > t->messages.burst ? "Batch exceeds the plan's message rate"
                                               : "Message rate limit exceeded";
        else
        if (req->is_pop && t->max_long_polls && t->polls >= t->max_long_polls)
            status = 429, refuse = "Long-poll limit exceeded", wait_ms = 1000;
        else {
            t->usage.messages_in += items;
            if (req->is_pop)
                t->polls++, req->poll_counted = true;
        }
        if (refuse)
            t->usage.refused++;
        if (status == 429)
            snprintf (retry_after, sizeof retry_after, "Retry-After: %lld\r\n",
                      (long long) ((wait_ms + 999) / 1000));
    }
    if (refuse) {
        qn_count (self->kernel, status == 401 ? "proxy_refused_401" : "proxy_refused_4xx", 1);
        qn_url_free (&url);
        if (retry_after [0]) {
            qn_buf_t b = QN_BUF_INIT;
            qn_jw_t w;
            qn_jw_init (&w, &b);
            qn_jw_obj (&w);
            qn_jw_kstr (&w, "error", refuse);
            qn_jw_obj_end (&w);
            s_respond_json (self, req->conn_id, req->seq, req->keep_alive, status, b.data, b.len, retry_after);
            qn_buf_free (&b);
            s_req_free (self, req);
            return 0;
        }
        s_req_error (self, req, status, refuse);
        return 0;
    }
    if (route.kind == QN_PR_LOCAL)
        s_local (self, req, &route, &url);
    else
    if (route.kind == QN_PR_OPERATOR)
        s_admin (self, req, &route, &url);
    else
        s_forward (self, req);
    qn_url_free (&url);
    return 0;
}

typedef struct {
    uint64_t conn_id;
    qn_buf_t ids;
} s_gone_t;

static void
s_collect (void *arg, uint64_t key, void *value)
{
    s_gone_t *g = arg;
    s_req_t *req = value;
    if (req->conn_id == g->conn_id)
        qn_buf_append (&g->ids, &key, sizeof key);
}

//  The client went away: its forwarded requests' upstream connections are
//  closed (a parked pop at a broker ends there too), never pooled.
static int
s_on_closed (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    s_gone_t g = { 0, QN_BUF_INIT };
    if (qn_msg_http_closed_decode (env->body.ptr, env->body.len, &g.conn_id))
        return QN_EPROTO;
    qn_hashmap_each (self->reqs, s_collect, &g);
    for (size_t i = 0; i < g.ids.len / sizeof (uint64_t); i++) {
        uint64_t id;
        memcpy (&id, g.ids.data + i * sizeof id, sizeof id);
        s_req_t *req = qn_hashmap_get (self->reqs, id);
        if (req && req->uc) {
            s_uconn_close (self, req->uc);
            s_req_free (self, req);
        }
        //  A request waiting on PostgreSQL is freed by its callback's lookup.
        else
        if (req)
            s_req_free (self, req);
    }
    qn_buf_free (&g.ids);
    return 0;
}

//  Stopping: a long-poll waiting at a broker is answered empty now (204,
//  as a draining broker answers its parked pops) instead of holding the
//  shutdown; its lease, if the broker was already answering, expires.
//  Other in-flight requests finish at their brokers.
static void
s_collect_pops (void *arg, uint64_t key, void *value)
{
    s_req_t *req = value;
    if (req->is_pop && req->uc)
        qn_buf_append (arg, &key, sizeof key);
}

static int
s_on_drained (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    qn_buf_t ids = QN_BUF_INIT;
    qn_hashmap_each (self->reqs, s_collect_pops, &ids);
    for (size_t i = 0; i < ids.len / sizeof (uint64_t); i++) {
        uint64_t id;
        memcpy (&id, ids.data + i * sizeof id, sizeof id);
        s_req_t *req = qn_hashmap_get (self->reqs, id);
        s_uconn_close (self, req->uc);
        req->uc = NULL;
        qn_buf_t b = QN_BUF_INIT;
        qn_http_response (&b, 204, NULL, NULL, NULL, 0, false);
        s_respond_raw (self, req->conn_id, req->seq, false, &b);
        s_req_free (self, req);
    }
    qn_buf_free (&ids);
    return 0;
}

// ------------------------------------------------------------------ periodic work
static void
s_probe (self_t *self, int up)
{
    s_upstream_t *u = &self->ups [up];
    s_uconn_t *uc = s_uconn_open (self, up);
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

static void
s_on_tick (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    int64_t now = qn_now_ms ();
    for (int i = 0; i < self->up_count; i++) {
        s_upstream_t *u = &self->ups [i];
        if (u->probe && now - u->probe_started_ms > S_HEALTH_TIMEOUT_MS) {
            s_uconn_t *uc = u->probe;
            u->probe = NULL;
            s_uconn_close (self, uc);
            s_mark (self, i, false, false);
        }
        //  Pooled connections idle too long are closed before the broker does.
        s_uconn_t **pp = &u->idle;
        while (*pp) {
            s_uconn_t *uc = *pp;
            if (now - uc->idle_since_ms > S_IDLE_MAX_MS) {
                *pp = uc->next;
                s_uconn_close (self, uc);
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
    if (now - self->keys_asked_ms >= S_KEYS_EVERY_MS && !self->q_head)
        s_keys_refresh (self);
    if (now - self->flushed_ms >= self->config->proxy_usage_flush_ms)
        s_flush (self);
}

// ------------------------------------------------------------------ lifecycle
static int
s_parse_upstreams (self_t *self, const char *list)
{
    const char *p = list;
    while (p && *p) {
        const char *comma = strchr (p, ',');
        size_t n = comma ? (size_t) (comma - p) : strlen (p);
        while (n && (*p == ' ' || *p == '\t'))
            p++, n--;
        while (n && (p [n - 1] == ' ' || p [n - 1] == '\t' || p [n - 1] == '/'))
            n--;
        if (n) {
            if (self->up_count == S_MAX_UPSTREAMS || n >= sizeof self->ups [0].url
            ||  n < 8 || strncmp (p, "http://", 7))
                return -1;
            s_upstream_t *u = &self->ups [self->up_count];
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

static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    if (self->sso)
        qn_subscribe (self->kernel, "jwks");
    qn_timer_add (self->kernel, S_TICK_MS, S_TICK_MS, s_on_tick, NULL);
    s_on_tick (self, NULL);
    return 0;
}

static void
s_close_each (void *arg, uint64_t key, void *value)
{
    (void) key;
    qn_buf_t *list = arg;
    qn_buf_append (list, &value, sizeof value);
}

static int
s_on_stop (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    qn_buf_t list = QN_BUF_INIT;
    qn_hashmap_each (self->fds, s_close_each, &list);
    for (size_t i = 0; i < list.len / sizeof (void *); i++) {
        s_uconn_t *uc;
        memcpy (&uc, list.data + i * sizeof uc, sizeof uc);
        s_uconn_close (self, uc);
    }
    qn_buf_free (&list);
    for (int i = 0; i < self->up_count; i++)
        self->ups [i].idle = self->ups [i].probe = NULL;
    s_flush_sync (self);
    return QN_DONE;
}

static void
s_req_free_each (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    s_req_t *req = value;
    free (req->target);
    free (req->content_type);
    free (req->body);
    free (req);
}

static void
s_tenant_free_each (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    free (value);
}

static void
s_destroy (void **self_p)
{
    self_t *self = *self_p;
    if (!self)
        return;
    qn_hashmap_each (self->reqs, s_req_free_each, NULL);
    qn_hashmap_destroy (&self->reqs);
    qn_hashmap_destroy (&self->fds);
    if (self->keys)
        qn_hashmap_each (self->keys, s_key_free_each, NULL);
    qn_hashmap_destroy (&self->keys);
    qn_hashmap_each (self->tenants, s_tenant_free_each, NULL);
    qn_hashmap_destroy (&self->tenants);
    if (self->sessions)
        qn_hashmap_each (self->sessions, s_session_free_each, NULL);
    qn_hashmap_destroy (&self->sessions);
    while (self->q_head) {
        s_query_t *q = self->q_head;
        self->q_head = q->next;
        if (q->cb == s_on_key_created || q->cb == s_on_key_revoked || q->cb == s_on_keys_listed
        ||  q->cb == s_on_usage || q->cb == s_on_flushed || q->cb == s_on_admin
        ||  q->cb == s_on_logged_out)
            free (q->arg);
        else
        if (q->cb == s_on_login_user || q->cb == s_on_session_created)
            s_pwop_free (q->arg);
        s_query_free (q);
    }
    while (self->held_head) {
        s_held_t *h = self->held_head;
        self->held_head = h->next;
        s_held_free (h);
    }
    if (self->pg)
        PQfinish (self->pg);
    qn_jwt_keys_destroy (&self->static_keys);
    qn_jwt_keys_destroy (&self->jwks_keys);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_STOP, s_on_stop },
    { QN_MSG_HTTP_REQUEST, s_on_request },
    { QN_MSG_HTTP_CLOSED, s_on_closed },
    { QN_MSG_HTTP_DRAINED, s_on_drained },
    { QN_MSG_JWKS_KEYS, s_on_jwks },
    { 0, NULL }
};

qn_actor_t *
qn_proxy_new (qn_kernel_t *kernel, const qn_config_t *config, const char *acceptor)
{
    s_settings.on_header_field = s_on_hfield;
    s_settings.on_header_value = s_on_hvalue;
    s_settings.on_headers_complete = s_on_headers_complete;
    s_settings.on_body = s_on_body;
    s_settings.on_message_complete = s_on_complete;
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    snprintf (self->acceptor, sizeof self->acceptor, "%s", acceptor);
    self->reqs = qn_hashmap_new ();
    self->fds = qn_hashmap_new ();
    self->keys = qn_hashmap_new ();
    self->tenants = qn_hashmap_new ();
    self->sessions = qn_hashmap_new ();
    self->sso = config->jwt_enabled;
    if (self->sso) {
        qn_jwt_alg_t alg = QN_JWT_AUTO;
        qn_jwt_alg_parse (config->jwt_algorithm, &alg);     //  Checked by config.c
        self->jwks_configured = config->jwt_jwks_url [0] != 0;
        self->policy = (qn_jwt_policy_t) {
            .algorithm = alg, .issuer = config->jwt_issuer, .audience = config->jwt_audience,
            .clock_skew_s = config->jwt_clock_skew_s, .role_claim = config->jwt_roles_claim,
            .roles_claim = config->jwt_roles_array_claim, .role_admin = config->jwt_role_admin,
            .role_read_write = config->jwt_role_read_write, .role_read_only = config->jwt_role_read_only,
            .tenant_claim = config->jwt_tenant_claim
        };
        self->static_keys = qn_jwt_keys_new ();
        char err [256];
        if (config->jwt_secret [0])
            qn_jwt_keys_add_secret (self->static_keys, config->jwt_secret, strlen (config->jwt_secret), NULL);
        if (config->jwt_public_key [0]
        &&  qn_jwt_keys_add_pem (self->static_keys, config->jwt_public_key, strlen (config->jwt_public_key),
                                 NULL, err, sizeof err))
            qn_warn ("sso: JWT_PUBLIC_KEY not loaded: %s", err);
        qn_info ("sso: IdP tokens accepted: jwks=%s", self->jwks_configured ? "yes" : "no");
    }
    self->flushed_ms = qn_now_ms ();
    if (s_parse_upstreams (self, config->queen_upstreams)) {
        qn_error ("QUEEN_UPSTREAMS must be a comma-separated list of http://host:port");
        s_destroy ((void **) &self);
        return NULL;
    }
    qn_pg_params_t p;
    qn_pg_params (config, &p, 5);
    self->pg = PQconnectdbParams (p.keys, p.values, 0);
    if (PQstatus (self->pg) != CONNECTION_OK) {
        qn_error ("cannot connect to PostgreSQL: %s", PQerrorMessage (self->pg));
        s_destroy ((void **) &self);
        return NULL;
    }
    PQsetnonblocking (self->pg, 1);
    qn_info ("upstreams=%d", self->up_count);
    return qn_actor_spawn (kernel, &(qn_actor_def_t) {
        .name = "proxy", .routes = s_routes, .self = self, .destroy = s_destroy
    });
}
