/*  actors/http/codec.c - HTTP routing and the JSON API
    Matches each request against the route tables (literal segments win
    over parameters), keeps one context per request until its handler
    answers, and turns answers into serialised HTTP responses for the
    acceptor. Health, metrics and CORS are answered here; the API areas
    live in codec_http_<area>.c.
    Receives  QN_MSG_HTTP_REQUEST, QN_MSG_HTTP_CLOSED, QN_MSG_HTTP_DRAINED,
              PG_RESULT replies, "db", "maintenance" and "committed" events;
              from the mesh, "qconf" (drop cached queue settings),
              "mesh" (its status, shown by /health and /metrics) and
              QN_MSG_MESH_EPH (peers' ephemeral operations)
    Sends     QN_MSG_HTTP_RESPONSE to the acceptor; PG_EXEC / PUSH to
              pg_writer and pg_reader; "committed" events (acks)
    Owns      the request contexts; the parked long-polls (a park table,
              actors/park/park.h, fed "committed" here, used by pop.c);
              responses held while the acceptor is at its high-water mark
              (qn_door_out_t, actors/door/door.h: sent in order when it
              drains); the access-control and
              payload-encryption state (auth.c, seal.c); the ephemeral
              queues' table (actors/ephemeral/table.h, routes in
              ephemeral.c: answered from this thread)
    Failure   a bad request gets a 4xx JSON error; a handler that never
              answers is caught by the request's own deadline
*/
#include "actors/http/codec.h"
#include "actors/ephemeral/table.h"
#include "actors/door/door.h"
#include "actors/park/park.h"
#include "actors/pg/committed.h"
#include "base/hashmap.h"
#include "wire/http_api.h"
#include "wire/msg_db.h"
#include "wire/msg_http.h"
#include "wire/msg_maint.h"
#include "wire/msg_mesh.h"
#include "wire/route.h"
#include "wire/tenant_assert.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct qn_codec {
    qn_kernel_t *kernel;        //  Not owned
    const qn_config_t *config;  //  Not owned
    qn_hashmap_t *requests;     //  ctx id -> qn_http_ctx_t *
    uint64_t next_id;
    bool db_up;
    bool draining;
    //  Maintenance flags as their owner (pg_writer) last reported them
    bool push_maintenance;
    bool pop_maintenance;
    uint64_t maintenance_gen;
    int64_t started_wall_us;
    qn_buf_t out;               //  Reusable response buffer
    qn_http_auth_t *auth;       //  Owned: access control, created on first use
    qn_park_t *park;            //  Owned: parked long-polls
    qn_eph_t *eph;              //  Owned: the ephemeral queues (docs/ephemeral.md)
    qn_http_seal_t *seal;       //  Owned: payload encryption state, created on first use
    qn_door_out_t *out_door;    //  Owned: responses to the acceptor, held (in
                                //  order) while it is full (actors/door/door.h)
    char *mesh_status;          //  Owned: the mesh's last status (JSON), or NULL
    void *metrics_cache;        //  Owned: metrics.c's series handles of answers
    size_t mesh_status_len;
};

typedef struct {
    qn_codec_t *codec;
    uint64_t ctx_id;
    qn_codec_result_fn *cb;
    void *arg;
} s_call_t;


// ------------------------------------------------------------------ contexts
static void
s_ctx_free (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    qn_hashmap_remove (codec->requests, ctx->id);
    if (ctx->state_free && ctx->state)
        ctx->state_free (ctx->state);
    qn_url_free (&ctx->url);
    free (ctx->body);
    free (ctx->authorization);
    free (ctx->tenant);
    free (ctx->assertion);
    free (ctx->subject);
    free (ctx);
}

qn_kernel_t *
qn_codec_kernel (qn_codec_t *codec)
{
    return codec->kernel;
}

const qn_config_t *
qn_codec_config (qn_codec_t *codec)
{
    return codec->config;
}

qn_http_auth_t *
qn_codec_auth (qn_codec_t *codec)
{
    if (!codec->auth)
        codec->auth = qn_http_auth_new (codec->kernel, codec->config);
    return codec->auth;
}

qn_park_t *
qn_codec_park (qn_codec_t *codec)
{
    return codec->park;
}

void **
qn_codec_metrics_cache (qn_codec_t *codec)
{
    return &codec->metrics_cache;
}

qn_eph_t *
qn_codec_eph (qn_codec_t *codec)
{
    return codec->eph;
}

qn_http_seal_t *
qn_codec_seal (qn_codec_t *codec)
{
    if (!codec->seal)
        codec->seal = qn_http_seal_new (codec->config);
    return codec->seal;
}

bool
qn_codec_db_up (qn_codec_t *codec)
{
    return codec->db_up;
}

qn_http_ctx_t *
qn_codec_request (qn_codec_t *codec, uint64_t ctx_id)
{
    qn_http_ctx_t *ctx = qn_hashmap_get (codec->requests, ctx_id);
    return ctx && !ctx->cancelled ? ctx : NULL;
}

bool
qn_codec_push_maintenance (qn_codec_t *codec)
{
    return codec->push_maintenance;
}

bool
qn_codec_pop_maintenance (qn_codec_t *codec)
{
    return codec->pop_maintenance;
}

void
qn_codec_maintenance_seen (qn_codec_t *codec, bool push, bool pop, uint64_t gen)
{
    if (gen < codec->maintenance_gen)
        return;
    codec->maintenance_gen = gen;
    codec->push_maintenance = push;
    codec->pop_maintenance = pop;
}

bool
qn_codec_draining (qn_codec_t *codec)
{
    return codec->draining;
}

const char *
qn_http_param (qn_http_ctx_t *ctx, int i)
{
    return i >= 0 && i < QN_HTTP_MAX_PARAMS ? ctx->params [i] : NULL;
}

const char *
qn_http_header (qn_http_ctx_t *ctx, const char *name)
{
    if (!strcasecmp (name, "authorization"))
        return ctx->authorization;
    return NULL;
}

// ------------------------------------------------------------------ answering
//  Responses go to the acceptor in the order they were made; at its
//  high-water mark they are held and sent when it drains (qn_door_out_t).
void
qn_http_reply_raw (qn_http_ctx_t *ctx, int status, const char *content_type,
                   const char *extra_headers, const char *body, size_t len)
{
    qn_codec_t *codec = ctx->codec;
    if (ctx->answered)
        return;
    ctx->answered = true;
    if (!ctx->cancelled) {
        bool keep = ctx->keep_alive && !codec->draining;
        qn_buf_t *out = &codec->out;
        qn_buf_reset (out);
        qn_http_response (out, status, content_type, extra_headers, body, len, keep);
        qn_buf_t head = QN_BUF_INIT;
        msgpack_packer pk;
        msgpack_packer_init (&pk, &head, qn_door_buf_write);
        qn_msg_http_response_t m = { .conn_id = ctx->conn_id, .seq = ctx->seq, .close = !keep };
        qn_msg_http_response_encode (&pk, &m);
        qn_frame_t frame;
        frame.data = qn_buf_detach (out, &frame.len);
        qn_door_out_send (codec->out_door, head.data, head.len, &frame);
        qn_buf_free (&head);
        static const char *const names [] = {
            "http_responses_0xx", "http_responses_1xx", "http_responses_2xx", "http_responses_3xx",
            "http_responses_4xx", "http_responses_5xx", "http_responses_6xx", "http_responses_7xx",
            "http_responses_8xx", "http_responses_9xx"
        };
        qn_count (codec->kernel, names [(status / 100) % 10], 1);
        qn_http_metrics_answered (codec, ctx, status);
    }
    s_ctx_free (codec, ctx);
}

// ------------------------------------------------------------------ asking
static void
s_on_call_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) self_;
    s_call_t *call = arg;
    qn_codec_t *codec = call->codec;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    qn_http_ctx_t *ctx = qn_hashmap_get (codec->requests, call->ctx_id);
    if (ctx && ctx->cancelled)
        ctx = NULL;
    call->cb (codec, ctx, &res, call->arg);
    //  A cancelled request is freed once its last call came back.
    qn_http_ctx_t *gone = qn_hashmap_get (codec->requests, call->ctx_id);
    if (gone && gone->cancelled && !gone->on_cancel)
        s_ctx_free (codec, gone);
    qn_pg_result_free (&res);
    free (call);
}

int
qn_codec_call (qn_codec_t *codec, qn_http_ctx_t *ctx, const char *to, uint16_t type,
               const void *body, size_t len, uint32_t timeout_ms,
               qn_codec_result_fn *cb, void *arg)
{
    s_call_t *call = qn_zalloc (sizeof *call);
    call->codec = codec;
    call->ctx_id = ctx->id;
    call->cb = cb;
    call->arg = arg;
    qn_msg_t msg = { .to = to, .type = type, .body = body, .body_len = len };
    int rc = qn_request (codec->kernel, &msg, timeout_ms, s_on_call_reply, call);
    if (rc)
        free (call);
    return rc;
}

//  Client-side deadline a little past the server's statement timeout.
static uint32_t
s_exec_timeout (qn_codec_t *codec)
{
    return (uint32_t) codec->config->db_statement_timeout_ms + 2000;
}

int
qn_codec_exec_args (qn_codec_t *codec, qn_http_ctx_t *ctx, const char *to, uint32_t stmt_id,
                    const char *sql, const qn_pg_args_t *args,
                    qn_codec_result_fn *cb, void *arg)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_pg_exec_encode (&b, stmt_id, sql, args);
    int rc = qn_codec_call (codec, ctx, to, QN_MSG_PG_EXEC, b.data, b.size,
                            s_exec_timeout (codec), cb, arg);
    msgpack_sbuffer_destroy (&b);
    return rc;
}

void
qn_codec_committed (qn_codec_t *codec, const char *tenant, const char *queue, size_t queue_len)
{
    qn_committed_publish (codec->kernel, tenant, strlen (tenant), queue, queue_len);
}

// ------------------------------------------------------------------ core routes
static void
s_health (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_kstr (&w, "status", codec->db_up ? "healthy" : "unhealthy");
    qn_jw_kstr (&w, "database", codec->db_up ? "connected" : "disconnected");
    qn_jw_kstr (&w, "server", "Queen (C, actor kernel)");
    qn_jw_kint (&w, "worker_id", 0);
    qn_jw_kstr (&w, "version", "0.1.0");
    qn_jw_key (&w, "shared_state");
    qn_jw_obj (&w);
    qn_jw_kbool (&w, "enabled", false);
    qn_jw_obj_end (&w);
    qn_jw_key (&w, "queen");
    qn_jw_obj (&w);
    qn_jw_kint (&w, "worker_id", 0);
    qn_jw_kstr (&w, "status", codec->draining ? "draining" : "active");
    qn_jw_obj_end (&w);
    if (codec->mesh_status)
        qn_jw_kraw (&w, "mesh", codec->mesh_status, codec->mesh_status_len);
    qn_jw_obj_end (&w);
    qn_http_reply_json (ctx, codec->db_up ? 200 : 503, b.data, b.len);
    qn_buf_free (&b);
}

static int64_t
s_rss_bytes (void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen ("/proc/self/statm", "r");
    if (f) {
        if (fscanf (f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose (f);
    }
    return (int64_t) rss * sysconf (_SC_PAGESIZE);
}

static void
s_metrics (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    qn_kernel_t *k = codec->kernel;
    struct rusage ru;
    getrusage (RUSAGE_SELF, &ru);
    double uptime = (double) (qn_wall_us () - codec->started_wall_us) / 1e6;
    int64_t requests = qn_counter (k, "http_requests");
    int64_t messages = qn_counter (k, "messages_pushed");
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_kdouble (&w, "uptime", uptime);
    qn_jw_key (&w, "requests");
    qn_jw_obj (&w);
    qn_jw_kint (&w, "total", requests);
    qn_jw_kdouble (&w, "rate", uptime > 0 ? (double) requests / uptime : 0);
    qn_jw_obj_end (&w);
    qn_jw_key (&w, "messages");
    qn_jw_obj (&w);
    qn_jw_kint (&w, "total", messages);
    qn_jw_kdouble (&w, "rate", uptime > 0 ? (double) messages / uptime : 0);
    qn_jw_obj_end (&w);
    qn_jw_key (&w, "database");
    qn_jw_obj (&w);
    qn_jw_kint (&w, "poolSize", codec->config->db_pool_size);
    qn_jw_kint (&w, "idleConnections", 0);
    qn_jw_kint (&w, "waitingRequests", qn_counter (k, "pg_writer_queued"));
    qn_jw_obj_end (&w);
    qn_jw_key (&w, "memory");
    qn_jw_obj (&w);
    qn_jw_kint (&w, "rss", s_rss_bytes ());
    qn_jw_kint (&w, "heapTotal", 0);
    qn_jw_kint (&w, "heapUsed", 0);
    qn_jw_kint (&w, "external", 0);
    qn_jw_kint (&w, "arrayBuffers", 0);
    qn_jw_obj_end (&w);
    qn_jw_key (&w, "cpu");
    qn_jw_obj (&w);
    qn_jw_kint (&w, "user", (int64_t) ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec);
    qn_jw_kint (&w, "system", (int64_t) ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec);
    qn_jw_obj_end (&w);
    if (codec->mesh_status)
        qn_jw_kraw (&w, "mesh", codec->mesh_status, codec->mesh_status_len);
    qn_jw_obj_end (&w);
    qn_http_reply_json (ctx, 200, b.data, b.len);
    qn_buf_free (&b);
}

//  The text exposition format (actors/http/metrics.c renders it).
static void
s_metrics_prometheus (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_http_metrics_render (codec, &b, (double) (qn_wall_us () - codec->started_wall_us) / 1e6);
    qn_http_reply_raw (ctx, 200, "text/plain; version=0.0.4; charset=utf-8",
                       "Cache-Control: no-cache\r\n", b.data, b.len);
    qn_buf_free (&b);
}

static void
s_options (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    (void) codec;
    qn_http_reply_empty (ctx, 204);
}

const qn_http_route_t qn_http_routes_core [] = {
    { "GET", "/health", s_health, QN_AUTH_PUBLIC },
    { "GET", "/metrics", s_metrics, QN_AUTH_PUBLIC },
    { "GET", "/metrics/prometheus", s_metrics_prometheus, QN_AUTH_PUBLIC },
    { NULL, NULL, NULL, 0 }
};

// ------------------------------------------------------------------ routing
//  Every route area of the HTTP front door, named once: an area whose file
//  is not linked in is a link error, never a silent 404.
static const qn_http_route_t *const s_areas [] = {
    qn_http_routes_core,        //  health, metrics (this file)
    qn_http_routes_push,        //  configure, push, lease (push.c)
    qn_http_routes_ack,         //  ack, ack/batch (ack.c)
    qn_http_routes_txn,         //  transaction (txn.c)
    qn_http_routes_pop,         //  pop (pop.c)
    qn_http_routes_admin,       //  resources, messages, dlq, groups, status (admin.c)
    qn_http_routes_system,      //  maintenance, buffers (system.c)
    qn_http_routes_state,       //  kv, timers (state.c)
    qn_http_routes_streams,     //  /streams/v1/* (streams.c)
    qn_http_routes_ephemeral,   //  /api/v1/ephemeral/* (ephemeral.c; docs/ephemeral.md)
    qn_http_routes_sqs_keys,    //  /api/v1/system/sqs-keys (sqs_keys.c; docs/sqs.md)
    qn_http_routes_dashboard    //  GET /, /dashboard/:file (dashboard.c)
};

//  How many segments each route's pattern has (its '/'s), counted once: a
//  pattern matches only a target with as many, so s_route skips the others
//  without comparing them (most of the ~100 routes, for every request).
#define S_AREAS (sizeof s_areas / sizeof s_areas [0])
#define S_AREA_ROUTES 64        //  Routes of an area counted; later ones are always compared
static uint8_t s_route_segs [S_AREAS][S_AREA_ROUTES];
static pthread_once_t s_route_segs_once = PTHREAD_ONCE_INIT;

static void
s_count_route_segs (void)
{
    for (size_t t = 0; t < S_AREAS; t++)
        for (size_t i = 0; i < S_AREA_ROUTES && s_areas [t][i].method; i++) {
            unsigned n = 0;
            for (const char *p = s_areas [t][i].pattern; *p; p++)
                n += *p == '/';
            s_route_segs [t][i] = (uint8_t) (!strcmp (s_areas [t][i].pattern, "/") ? 0 : n < 255 ? n : 255);
        }
}

static const qn_http_route_t *
s_route (qn_http_ctx_t *ctx, bool *path_known)
{
    pthread_once (&s_route_segs_once, s_count_route_segs);
    const qn_http_route_t *const *tables = s_areas;
    const qn_http_route_t *best = NULL;
    int best_literals = -1;
    const char *params [QN_HTTP_MAX_PARAMS];
    size_t lens [QN_HTTP_MAX_PARAMS];
    *path_known = false;
    for (size_t t = 0; t < S_AREAS; t++)
        for (const qn_http_route_t *r = tables [t]; r->method; r++) {
            size_t i = (size_t) (r - tables [t]);
            if (i < S_AREA_ROUTES && s_route_segs [t][i] != 255 && s_route_segs [t][i] != ctx->url.seg_count)
                continue;
            int lit = qn_route_match (r->pattern, &ctx->url, ctx->params, ctx->param_len);
            if (lit < 0)
                continue;
            *path_known = true;
            if (strcmp (r->method, ctx->method) || lit <= best_literals)
                continue;
            best = r;
            best_literals = lit;
            memcpy (params, ctx->params, sizeof params);
            memcpy (lens, ctx->param_len, sizeof lens);
        }
    if (best) {
        memcpy (ctx->params, params, sizeof params);
        memcpy (ctx->param_len, lens, sizeof lens);
    }
    return best;
}

static int
s_on_request (void *self_, const qn_env_t *env)
{
    qn_codec_t *codec = self_;
    msgpack_unpacked holder;
    msgpack_unpacked_init (&holder);
    qn_msg_http_request_t m;
    if (qn_msg_http_request_decode (env->body.ptr, env->body.len, &holder, &m)) {
        msgpack_unpacked_destroy (&holder);
        return QN_EPROTO;
    }
    qn_http_ctx_t *ctx = qn_zalloc (sizeof *ctx);
    ctx->codec = codec;
    ctx->id = ++codec->next_id;
    ctx->conn_id = m.conn_id;
    ctx->seq = m.seq;
    ctx->keep_alive = m.keep_alive;
    ctx->started_ms = env->received_ms;
    ctx->started_us = qn_now_us ();
    ctx->tenant = qn_strdup ("");
    snprintf (ctx->method, sizeof ctx->method, "%.*s", (int) m.method_len, m.method);
    for (uint32_t i = 0; i < m.header_count; i++) {
        qn_http_header_t h;
        qn_msg_http_request_header (&m, i, &h);
        if (h.name_len == 13 && !strncasecmp (h.name, "authorization", 13)) {
            free (ctx->authorization);
            ctx->authorization = qn_strndup (h.value, h.value_len);
        }
        else
        if (h.name_len == sizeof QN_TASSERT_HEADER - 1
        &&  !strncasecmp (h.name, QN_TASSERT_HEADER, h.name_len)) {
            free (ctx->assertion);          //  Two of them: the last is checked
            ctx->assertion = qn_strndup (h.value, h.value_len);
        }
        else
        if (h.name_len == sizeof QN_TENANT_HEADER - 1
        &&  !strncasecmp (h.name, QN_TENANT_HEADER, h.name_len))
            ctx->tenant_header = true;
    }
    const char *body = env->frame_count ? env->frames [0].ptr : "";
    ctx->body_len = env->frame_count ? env->frames [0].len : 0;
    ctx->body = qn_strndup (body, ctx->body_len);
    qn_hashmap_put (codec->requests, ctx->id, ctx);
    int rc = qn_url_parse (&ctx->url, m.target, m.target_len);
    msgpack_unpacked_destroy (&holder);
    if (rc) {
        qn_http_reply_error (ctx, 400, "Malformed request target");
        return 0;
    }
    if (!strcmp (ctx->method, "OPTIONS")) {
        s_options (codec, ctx);
        return rc;
    }
    bool known;
    const qn_http_route_t *route = s_route (ctx, &known);
    if (!route) {
        if (known)
            qn_http_reply_error (ctx, 405, "Method not allowed");
        else
            qn_http_reply_error (ctx, 404, "Not found");
        return rc;
    }
    ctx->route = route->pattern;
    if (qn_http_auth (codec, ctx, route->auth))
        return rc;
    route->fn (codec, ctx);
    return rc;
}

static uint64_t
s_conn_of (const void *request)
{
    return ((const qn_http_ctx_t *) request)->conn_id;
}

//  A request of a client that went away: a parked one is freed now, the
//  others when their pending call returns.
static void
s_cancel (void *arg, void *request)
{
    qn_http_ctx_t *ctx = request;
    ctx->cancelled = true;
    if (ctx->on_cancel) {
        ctx->on_cancel (ctx);
        s_ctx_free (arg, ctx);
    }
}

static int
s_on_closed (void *self_, const qn_env_t *env)
{
    qn_codec_t *codec = self_;
    uint64_t conn_id;
    if (qn_msg_http_closed_decode (env->body.ptr, env->body.len, &conn_id))
        return QN_EPROTO;
    qn_door_cancel_conn (codec->requests, conn_id, s_conn_of, s_cancel, codec);
    qn_count (codec->kernel, "http_client_gone", 1);
    return 0;
}

static int
s_on_drained (void *self_, const qn_env_t *env)
{
    qn_codec_t *codec = self_;
    if (qn_msg_http_drained_decode (env->body.ptr, env->body.len))
        return QN_EPROTO;
    codec->draining = true;
    //  SIGTERM does not wait for long-polls: answer them now.
    qn_park_drain (codec->park);
    return 0;
}

static int
s_on_db (void *self_, const qn_env_t *env)
{
    qn_codec_t *codec = self_;
    bool up;
    if (qn_msg_db_health_decode (env->body.ptr, env->body.len, &up))
        return QN_EPROTO;
    codec->db_up = up;
    return 0;
}

//  "maintenance" from the flags' owner (pg_writer): pop maintenance is
//  applied here (qn_codec_pop_maintenance), both flags are shown.
static int
s_on_maintenance (void *self_, const qn_env_t *env)
{
    qn_msg_maint_state_t m;
    if (qn_msg_maint_state_decode (env->body.ptr, env->body.len, &m))
        return QN_EPROTO;
    qn_codec_maintenance_seen (self_, m.push, m.pop, m.gen);
    return 0;
}

//  "committed" [tenant, queue(, partition)]: wakes parked long-polls.
static int
s_on_committed (void *self_, const qn_env_t *env)
{
    qn_codec_t *codec = self_;
    return qn_park_on_committed (codec->park, env);
}

//  "qconf" from the mesh: a peer changed a queue's settings, or every
//  cached setting may be stale (docs/mesh.md). Ours are ignored.
static int
s_on_qconf (void *self_, const qn_env_t *env)
{
    qn_msg_mesh_qconf_t m;
    if (env->from.len != 4 || memcmp (env->from.ptr, "mesh", 4))
        return 0;
    if (qn_msg_mesh_qconf_decode (env->body.ptr, env->body.len, &m))
        return QN_EPROTO;
    qn_http_seal_forget (self_, m.tenant, m.tenant_len, m.queue, m.queue_len);
    return 0;
}

static int
s_on_stale (void *self_, const qn_env_t *env)
{
    (void) env;
    qn_http_seal_forget (self_, NULL, 0, NULL, 0);
    return 0;
}

//  "mesh": its status, shown by /health and /metrics.
static int
s_on_mesh_status (void *self_, const qn_env_t *env)
{
    qn_codec_t *codec = self_;
    const char *json;
    size_t len;
    if (qn_msg_mesh_status_decode (env->body.ptr, env->body.len, &json, &len))
        return QN_EPROTO;
    free (codec->mesh_status);
    codec->mesh_status = qn_strndup (json, len);
    codec->mesh_status_len = len;
    return 0;
}

static int
s_on_jwks (void *self_, const qn_env_t *env)
{
    return qn_http_auth_on_jwks (self_, env);
}

static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    qn_codec_t *codec = self_;
    qn_subscribe (codec->kernel, "db");
    qn_subscribe (codec->kernel, "maintenance");
    qn_subscribe (codec->kernel, "jwks");
    qn_subscribe (codec->kernel, "qconf");         //  mesh (docs/mesh.md)
    qn_subscribe (codec->kernel, "mesh");
    qn_park_start (codec->park);
    qn_eph_start (codec->eph);
    return 0;
}

//  A peer's ephemeral operation, from the mesh.
static int
s_on_mesh_eph (void *self_, const qn_env_t *env)
{
    qn_codec_t *codec = self_;
    return qn_eph_peer (codec->eph, env->body.ptr, env->body.len);
}

static void
s_free_ctx (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    qn_http_ctx_t *ctx = value;
    if (ctx->state_free && ctx->state)
        ctx->state_free (ctx->state);
    qn_url_free (&ctx->url);
    free (ctx->body);
    free (ctx->authorization);
    free (ctx->tenant);
    free (ctx->assertion);
    free (ctx->subject);
    free (ctx);
}

static void
s_destroy (void **self_p)
{
    qn_codec_t *codec = *self_p;
    qn_hashmap_each (codec->requests, s_free_ctx, NULL);
    qn_hashmap_destroy (&codec->requests);
    qn_door_out_destroy (&codec->out_door);
    qn_buf_free (&codec->out);
    qn_http_auth_destroy (&codec->auth);
    qn_park_destroy (&codec->park);
    qn_eph_destroy (&codec->eph);
    qn_http_seal_destroy (&codec->seal);
    free (codec->mesh_status);
    free (codec->metrics_cache);
    free (codec);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_HTTP_REQUEST, s_on_request },
    { QN_MSG_HTTP_CLOSED, s_on_closed },
    { QN_MSG_HTTP_DRAINED, s_on_drained },
    { QN_MSG_DB_HEALTH, s_on_db },
    { QN_MSG_MAINT_STATE, s_on_maintenance },
    { QN_MSG_COMMITTED, s_on_committed },
    { QN_MSG_JWKS_KEYS, s_on_jwks },
    { QN_MSG_MESH_QCONF, s_on_qconf },
    { QN_MSG_MESH_STALE, s_on_stale },
    { QN_MSG_MESH_STATUS, s_on_mesh_status },
    { QN_MSG_MESH_EPH, s_on_mesh_eph },
    { 0, NULL }
};

qn_actor_t *
qn_codec_http_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    qn_codec_t *codec = qn_zalloc (sizeof *codec);
    codec->kernel = kernel;
    codec->config = config;
    codec->requests = qn_hashmap_new ();
    codec->db_up = true;            //  main connected and applied the schema
    codec->started_wall_us = qn_wall_us ();
    codec->out_door = qn_door_out_new (kernel, "acceptor", QN_MSG_HTTP_RESPONSE, "http_responses_held");
    //  A pop runs at most a statement timeout (its call's deadline is
    //  2 s past it): a woken pop silent for longer is gone.
    qn_park_def_t park = {
        .counter_prefix = "pop", .gauge = "parked_pops",
        .wake = qn_http_pop_wake, .expire = qn_http_pop_expire, .arg = codec,
        .attempt_ms = config->db_statement_timeout_ms + 5000
    };
    codec->park = qn_park_new (kernel, &park);
    qn_eph_def_t eph = { .answer = qn_http_eph_answer, .arg = codec, .coalesce = true };
    codec->eph = qn_eph_new (kernel, config, &eph);
    qn_actor_def_t def = {
        .name = "codec_http", .routes = s_routes, .self = codec, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}
