/*  actors/proxy/proxy.c - queen-proxy's forwarding actor
    The codec of the proxy's HTTP door: authenticates every request by its
    API key (wire/proxy_keys.h), session or IdP token, checks the role
    against the route table (wire/proxy_routes.h) and the tenant's plan,
    and forwards what is allowed to a broker of QUEEN_UPSTREAMS with the
    client's identity headers stripped and its own signed assertion
    (wire/tenant_assert.h) set. Answers its own routes (/health,
    /proxy/v1/...). The files of the actor are listed in proxy_int.h;
    this one is the actor itself: state, routes, lifecycle, the periodic
    tick, the answers, client closes and its PostgreSQL calls.

    Receives  QN_MSG_HTTP_REQUEST / HTTP_CLOSED / HTTP_DRAINED from its
              acceptor; QN_MSG_JWKS_KEYS events; START, STOP
    Sends     QN_MSG_HTTP_RESPONSE to its acceptor (held in order while the
              acceptor is full); QN_MSG_PG_EXEC to proxy_pg; QN_MSG_PW_WORK
              to proxy_hasher; QN_MSG_JWKS_REFRESH to jwks
    Owns      upstream sockets and their pools, in-flight requests, the key,
              session and tenant tables (refreshed from PostgreSQL every
              second and changed at once by this proxy's own routes)
    Failure   bad keys 401, roles 403, cluster-wide routes 403, unknown
              routes 404/405, no broker 503, a broker failing mid-request
              502, PostgreSQL away 503 on the routes that need it (the last
              key table stays in use); never logs a key, an assertion or a
              secret. On STOP the unflushed usage is written before the
              actor says it is done.
*/
#include "actors/proxy/proxy_int.h"
#include "actors/pg/call.h"
#include "actors/pg/statements.h"
#include "wire/http_api.h"
#include "wire/json.h"
#include "wire/msg_http.h"
#include "wire/msg_types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_TICK_MS           250
#define S_KEYS_EVERY_MS     1000
#define S_PG_SLACK_MS       5000        //  Beyond the statement timeout

typedef struct qn_px_held {
    struct qn_px_held *next;
    msgpack_sbuffer body;
    qn_frame_t frame;
} s_held_t;

// ------------------------------------------------------------------ answering
static int
s_send_held (qn_px_t *self, s_held_t *h)
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
    qn_px_t *self = self_;
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

void
qn_px_respond_raw (qn_px_t *self, uint64_t conn_id, uint32_t seq, bool keep_alive, qn_buf_t *resp)
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

void
qn_px_respond_json (qn_px_t *self, const qn_px_req_t *req, int status, const char *json,
                    size_t len, const char *extra)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_http_response (&b, status, "application/json", extra, json, len, req->keep_alive);
    qn_px_respond_raw (self, req->conn_id, req->seq, req->keep_alive, &b);
}

void
qn_px_respond_error (qn_px_t *self, const qn_px_req_t *req, int status, const char *msg,
                     const char *extra)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_json_error_body (&b, msg);
    qn_px_respond_json (self, req, status, b.data, b.len, extra);
    qn_buf_free (&b);
}

static void
s_req_destroy (qn_px_req_t *req)
{
    free (req->target);
    free (req->content_type);
    free (req->body);
    free (req);
}

void
qn_px_req_free (qn_px_t *self, qn_px_req_t *req)
{
    if (req->poll_counted)
        qn_px_tenant (self, req->tenant)->polls--;
    qn_hashmap_remove (self->reqs, req->id);
    s_req_destroy (req);
}

void
qn_px_req_error (qn_px_t *self, qn_px_req_t *req, int status, const char *msg)
{
    qn_px_respond_error (self, req, status, msg, NULL);
    qn_px_req_free (self, req);
}

uint64_t
qn_px_hash (const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = s; *p; p++)
        h = (h ^ (unsigned char) *p) * 1099511628211ULL;
    return h;
}

// ------------------------------------------------------------------ PostgreSQL (through proxy_pg)
typedef struct {
    qn_px_pg_fn *cb;
    void *arg;
} s_call_t;

static void s_stop_check (qn_px_t *self);

static void
s_on_pg_result (void *self_, void *arg, const qn_env_t *env)
{
    qn_px_t *self = self_;
    s_call_t *call = arg;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    self->pg_pending--;
    call->cb (self, &res, call->arg);
    qn_pg_result_free (&res);
    free (call);
    s_stop_check (self);
}

void
qn_px_query (qn_px_t *self, const char *sql, const char *const *params, int n,
             qn_px_pg_fn *cb, void *arg)
{
    qn_pg_args_t args;
    qn_pg_args_init (&args);
    for (int i = 0; i < n; i++)
        qn_pg_args_cstr (&args, params [i]);
    s_call_t *call = qn_zalloc (sizeof *call);
    call->cb = cb;
    call->arg = arg;
    uint32_t timeout_ms = (uint32_t) self->config->db_statement_timeout_ms + S_PG_SLACK_MS;
    int rc = qn_pg_call (self->kernel, QN_PX_PG, &self->call, QN_SQL_RAW, sql, &args, timeout_ms,
                         s_on_pg_result, call);
    qn_pg_args_free (&args);
    self->pg_pending++;
    if (rc) {
        qn_warn ("postgresql call not sent: %s", qn_strerror (rc));
        s_on_pg_result (self, call, NULL);
    }
}

qn_px_req_t *
qn_px_req_of_result (qn_px_t *self, uint64_t req_id, const qn_pg_result_t *res, bool one_row,
                     const char *unavailable)
{
    qn_px_req_t *req = qn_hashmap_get (self->reqs, req_id);
    if (req && (!res->ok || (one_row && res->row_count != 1))) {
        qn_px_req_error (self, req, 503, unavailable);
        return NULL;
    }
    return req;
}

const char *
qn_px_col_str (const qn_pg_result_t *res, uint32_t r, uint32_t c, size_t *len)
{
    const msgpack_object *o = qn_pg_result_col (res, r, c);
    bool str = o && o->type == MSGPACK_OBJECT_STR;
    *len = str ? o->via.str.size : 0;
    return str ? o->via.str.ptr : "";
}

void
qn_px_col_text (const qn_pg_result_t *res, uint32_t r, uint32_t c, char *out, size_t size)
{
    size_t len;
    const char *p = qn_px_col_str (res, r, c, &len);
    snprintf (out, size, "%.*s", (int) len, p);
}

int64_t
qn_px_col_int (const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    int64_t v = 0;
    return qn_pg_call_int (qn_pg_result_col (res, r, c), &v) ? v : 0;
}

bool
qn_px_col_null (const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    const msgpack_object *o = qn_pg_result_col (res, r, c);
    return !o || o->type == MSGPACK_OBJECT_NIL;
}

// ------------------------------------------------------------------ clients going away
typedef struct {
    uint64_t conn_id;
    qn_buf_t ids;
} s_gone_t;

static void
s_collect (void *arg, uint64_t key, void *value)
{
    s_gone_t *g = arg;
    qn_px_req_t *req = value;
    if (req->conn_id == g->conn_id)
        qn_buf_append (&g->ids, &key, sizeof key);
}

//  The client went away: its forwarded requests' upstream connections are
//  closed (a parked pop at a broker ends there too), never pooled.
static int
s_on_closed (void *self_, const qn_env_t *env)
{
    qn_px_t *self = self_;
    s_gone_t g = { 0, QN_BUF_INIT };
    if (qn_msg_http_closed_decode (env->body.ptr, env->body.len, &g.conn_id))
        return QN_EPROTO;
    qn_hashmap_each (self->reqs, s_collect, &g);
    for (size_t i = 0; i < g.ids.len / sizeof (uint64_t); i++) {
        uint64_t id;
        memcpy (&id, g.ids.data + i * sizeof id, sizeof id);
        qn_px_req_t *req = qn_hashmap_get (self->reqs, id);
        if (req && req->uc)
            qn_px_uconn_close (self, req->uc);
        //  A request waiting on PostgreSQL is freed by its callback's lookup.
        if (req)
            qn_px_req_free (self, req);
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
    qn_px_req_t *req = value;
    if (req->is_pop && req->uc)
        qn_buf_append (arg, &key, sizeof key);
}

static int
s_on_drained (void *self_, const qn_env_t *env)
{
    (void) env;
    qn_px_t *self = self_;
    qn_buf_t ids = QN_BUF_INIT;
    qn_hashmap_each (self->reqs, s_collect_pops, &ids);
    for (size_t i = 0; i < ids.len / sizeof (uint64_t); i++) {
        uint64_t id;
        memcpy (&id, ids.data + i * sizeof id, sizeof id);
        qn_px_req_t *req = qn_hashmap_get (self->reqs, id);
        qn_px_uconn_close (self, req->uc);
        req->uc = NULL;
        qn_buf_t b = QN_BUF_INIT;
        qn_http_response (&b, 204, NULL, NULL, NULL, 0, false);
        qn_px_respond_raw (self, req->conn_id, req->seq, false, &b);
        qn_px_req_free (self, req);
    }
    qn_buf_free (&ids);
    return 0;
}

// ------------------------------------------------------------------ periodic work and lifecycle
static void
s_on_tick (void *self_, void *arg)
{
    (void) arg;
    qn_px_t *self = self_;
    if (self->stopping)
        return;
    int64_t now = qn_now_ms ();
    qn_px_upstreams_tick (self, now);
    if (now - self->keys_asked_ms >= S_KEYS_EVERY_MS && !self->pg_pending)
        qn_px_keys_refresh (self);
    if (now - self->flushed_ms >= self->config->proxy_usage_flush_ms)
        qn_px_flush (self, false);
}

static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    qn_px_t *self = self_;
    if (self->sso)
        qn_subscribe (self->kernel, "jwks");
    qn_timer_add (self->kernel, S_TICK_MS, S_TICK_MS, s_on_tick, NULL);
    s_on_tick (self, NULL);
    return 0;
}

//  Stopping: once the calls in flight are answered (their callbacks run,
//  a failed flush puts its figures back), what is left is written once;
//  the actor is done when that is answered too.
static void
s_stop_check (qn_px_t *self)
{
    if (!self->stopping || self->pg_pending || self->flushing)
        return;
    if (!self->final_flushed) {
        self->final_flushed = true;
        self->flushing = true;          //  A call failing at once lands here again
        qn_px_flush (self, true);
        self->flushing = false;
    }
    if (!self->pg_pending)
        qn_actor_done (self->kernel);
}

static int
s_on_stop (void *self_, const qn_env_t *env)
{
    (void) env;
    qn_px_t *self = self_;
    qn_px_upstreams_close (self);
    self->stopping = true;
    s_stop_check (self);
    return 0;
}

static void
s_req_free_each (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    s_req_destroy (value);
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
    qn_px_t *self = *self_p;
    if (!self)
        return;
    qn_hashmap_each (self->reqs, s_req_free_each, NULL);
    qn_hashmap_destroy (&self->reqs);
    qn_hashmap_destroy (&self->fds);
    if (self->keys)
        qn_hashmap_each (self->keys, qn_px_key_free_each, NULL);
    qn_hashmap_destroy (&self->keys);
    qn_hashmap_each (self->tenants, s_tenant_free_each, NULL);
    qn_hashmap_destroy (&self->tenants);
    if (self->sessions)
        qn_hashmap_each (self->sessions, qn_px_session_free_each, NULL);
    qn_hashmap_destroy (&self->sessions);
    while (self->held_head) {
        s_held_t *h = self->held_head;
        self->held_head = h->next;
        s_held_free (h);
    }
    msgpack_sbuffer_destroy (&self->call);
    qn_jwt_keys_destroy (&self->static_keys);
    qn_jwt_keys_destroy (&self->jwks_keys);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_STOP, s_on_stop },
    { QN_MSG_HTTP_REQUEST, qn_px_on_request },
    { QN_MSG_HTTP_CLOSED, s_on_closed },
    { QN_MSG_HTTP_DRAINED, s_on_drained },
    { QN_MSG_JWKS_KEYS, qn_px_on_jwks },
    { 0, NULL }
};

static void
s_sso_init (qn_px_t *self, const qn_config_t *config)
{
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

qn_actor_t *
qn_proxy_new (qn_kernel_t *kernel, const qn_config_t *config, const char *acceptor)
{
    qn_px_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    snprintf (self->acceptor, sizeof self->acceptor, "%s", acceptor);
    self->reqs = qn_hashmap_new ();
    self->fds = qn_hashmap_new ();
    self->keys = qn_hashmap_new ();
    self->tenants = qn_hashmap_new ();
    self->sessions = qn_hashmap_new ();
    msgpack_sbuffer_init (&self->call);
    self->sso = config->jwt_enabled;
    if (self->sso)
        s_sso_init (self, config);
    self->flushed_ms = qn_now_ms ();
    if (qn_px_upstreams_init (self, config->queen_upstreams)) {
        qn_error ("QUEEN_UPSTREAMS must be a comma-separated list of http://host:port");
        s_destroy ((void **) &self);
        return NULL;
    }
    qn_info ("upstreams=%d", self->up_count);
    return qn_actor_spawn (kernel, &(qn_actor_def_t) {
        .name = "proxy", .routes = s_routes, .self = self, .destroy = s_destroy
    });
}
