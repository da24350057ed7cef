/*  actors/http/codec.h - what the codec_http route files share
    codec_http.c owns the actor: it receives requests from the acceptor,
    matches the route table, and keeps one qn_http_ctx_t per request until
    its handler answers. Route handlers live in codec_http_<area>.c files
    and use only this header: they parse the request, ask pg_writer (or
    another actor) through qn_codec_call, and answer with qn_http_reply_*
    exactly once.
*/
#ifndef QN_ACTORS_CODEC_HTTP_H
#define QN_ACTORS_CODEC_HTTP_H

#include <msgpack.h>

#include "actors/actors.h"
#include "wire/json.h"
#include "wire/msg_pg.h"
#include "wire/url.h"

typedef struct qn_codec qn_codec_t;
typedef struct qn_http_ctx qn_http_ctx_t;
typedef struct qn_park qn_park_t;

typedef enum {
    QN_AUTH_PUBLIC = 0,
    QN_AUTH_READ_ONLY = 1,
    QN_AUTH_READ_WRITE = 2,
    QN_AUTH_ADMIN = 3
} qn_auth_level_t;

#define QN_HTTP_MAX_PARAMS 6     //  = QN_ROUTE_MAX_PARAMS

struct qn_http_ctx {
    qn_codec_t *codec;          //  Not owned
    uint64_t id;                //  Key in the codec's request table
    uint64_t conn_id;
    uint32_t seq;
    bool keep_alive;
    bool cancelled;             //  Client went away: answering is a no-op
    bool answered;
    char method [16];
    qn_url_t url;               //  Owned
    char *body;                 //  Owned request body (NUL-terminated)
    size_t body_len;
    char *authorization;        //  Owned, or NULL
    char *tenant;               //  Owned; "" (the default tenant) unless auth verified one
    char *assertion;            //  Owned: X-Queen-Assertion (the proxy's), or NULL
    bool tenant_header;         //  The request carried a raw X-Queen-Tenant header
    char *subject;              //  Owned: verified JWT `sub` (producer identity), or NULL
    const char *params [QN_HTTP_MAX_PARAMS];    //  Path parameters (decoded)
    size_t param_len [QN_HTTP_MAX_PARAMS];
    int64_t started_ms;         //  Monotonic arrival time
    int64_t started_us;         //  Monotonic, when the codec took it (latency metric)
    const char *route;          //  Matched route pattern (static), or NULL
    void *state;                //  Handler's own, freed with state_free
    void (*state_free) (void *state);
    //  Called (once) when the client goes away while the request waits
    //  elsewhere (e.g. parked); the codec frees ctx right after.
    void (*on_cancel) (qn_http_ctx_t *ctx);
};

//  Called with the result; ctx is NULL if the request is gone (cancelled
//  client or shutdown) — the handler then only frees what `arg` owns.
typedef void (qn_codec_result_fn) (qn_codec_t *codec, qn_http_ctx_t *ctx,
                                   qn_pg_result_t *res, void *arg);
typedef void (qn_route_fn) (qn_codec_t *codec, qn_http_ctx_t *ctx);

typedef struct {
    const char *method;         //  "GET", "POST", ...
    const char *pattern;        //  "/api/v1/pop/queue/:queue"; params in order
    qn_route_fn *fn;
    qn_auth_level_t auth;
} qn_http_route_t;

// ------------------------------------------------------------------ answering
//  Sends a JSON body with `status` (Content-Type application/json).
void qn_http_reply_json (qn_http_ctx_t *ctx, int status, const char *json, size_t len);
//  {"error": msg} with status.
void qn_http_reply_error (qn_http_ctx_t *ctx, int status, const char *msg);
void qn_http_reply_errorf (qn_http_ctx_t *ctx, int status, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));
//  No body (204).
void qn_http_reply_empty (qn_http_ctx_t *ctx, int status);
//  Any content type and extra header lines ("Name: v\r\n").
void qn_http_reply_raw (qn_http_ctx_t *ctx, int status, const char *content_type,
                        const char *extra_headers, const char *body, size_t len);
//  Maps a failed database result to an HTTP answer: 22xxx/23xxx/custom
//  client classes -> 4xx with the message, 08xxx/57xxx/53xxx -> 503,
//  timeouts -> 503, others -> 500.
void qn_http_reply_pg_error (qn_http_ctx_t *ctx, const qn_pg_result_t *res);

// ------------------------------------------------------------------ asking
//  Sends `type` with `body` to actor `to` and calls cb with its PG_RESULT
//  reply (or a timed-out result). Returns 0, or an error after which cb is
//  NOT called (the caller answers 503).
int qn_codec_call (qn_codec_t *codec, qn_http_ctx_t *ctx, const char *to, uint16_t type,
                   const void *body, size_t len, uint32_t timeout_ms,
                   qn_codec_result_fn *cb, void *arg);
//  QN_MSG_PG_EXEC of a catalogue statement (or QN_SQL_RAW with `sql`)
//  with the parameters built in `args` (wire/msg_pg.h); cb as above.
int qn_codec_exec_args (qn_codec_t *codec, qn_http_ctx_t *ctx, const char *to, uint32_t stmt_id,
                        const char *sql, const qn_pg_args_t *args,
                        qn_codec_result_fn *cb, void *arg);
//  Publishes a "committed" event for (tenant, queue) so parked pops wake
//  (actors/pg/committed.h: for commits the codec alone knows of, acks).
void qn_codec_committed (qn_codec_t *codec, const char *tenant, const char *queue, size_t queue_len);

// ------------------------------------------------------------------ request helpers
qn_kernel_t *qn_codec_kernel (qn_codec_t *codec);
const qn_config_t *qn_codec_config (qn_codec_t *codec);
bool qn_codec_db_up (qn_codec_t *codec);
//  Parses the body as JSON into doc (max depth 64). On failure answers
//  400 per the contract ("Empty request body", "Invalid JSON: ...") and
//  returns -1.
int qn_http_parse_body (qn_http_ctx_t *ctx, qn_json_doc_t *doc);
//  The path parameter at index i as a NUL-terminated string.
const char *qn_http_param (qn_http_ctx_t *ctx, int i);
//  A request header (case-insensitive), or NULL. Only Authorization and
//  the proxy's tenant header are kept.
const char *qn_http_header (qn_http_ctx_t *ctx, const char *name);

//  The request with this id, or NULL (answered, or client gone).
qn_http_ctx_t *qn_codec_request (qn_codec_t *codec, uint64_t ctx_id);
//  The maintenance flags as last reported by their owner (pg_writer):
//  pop maintenance is applied by the pop routes; both are shown by the
//  system routes. Pushes never read them (pg_writer routes pushes).
bool qn_codec_push_maintenance (qn_codec_t *codec);
bool qn_codec_pop_maintenance (qn_codec_t *codec);
bool qn_codec_draining (qn_codec_t *codec);
//  The maintenance flags as their owner (pg_writer) reported them: its
//  "maintenance" events, and its reply to a set made through this codec
//  (which may arrive before the event): the one with the higher gen wins.
void qn_codec_maintenance_seen (qn_codec_t *codec, bool push, bool pop, uint64_t gen);

// ------------------------------------------------------------------ access control
//  actors/http/auth.c (spec §1.8). The state (keys, policy, skip paths)
//  belongs to the codec, created on first use through qn_codec_auth.
typedef struct qn_http_auth qn_http_auth_t;
qn_http_auth_t *qn_codec_auth (qn_codec_t *codec);
qn_http_auth_t *qn_http_auth_new (qn_kernel_t *kernel, const qn_config_t *config);
void qn_http_auth_destroy (qn_http_auth_t **self_p);
//  Runs before the route handler: returns 0 to go on (with ctx->subject
//  set when a token was verified), or 1 after answering 401 or 403.
int qn_http_auth (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_auth_level_t level);
//  "jwks" event (QN_MSG_JWKS_KEYS): takes the new JWKS key set.
int qn_http_auth_on_jwks (qn_codec_t *codec, const qn_env_t *env);

// ------------------------------------------------------------------ payload encryption
//  actors/http/seal.c: the key ring and the queue-encryption cache belong
//  to the codec, created on first use through qn_codec_seal.
typedef struct qn_http_seal qn_http_seal_t;
qn_http_seal_t *qn_codec_seal (qn_codec_t *codec);
qn_http_seal_t *qn_http_seal_new (const qn_config_t *config);
void qn_http_seal_destroy (qn_http_seal_t **self_p);
//  The mesh says a queue's settings changed on another broker (or, with
//  queue NULL, that every cached setting may be stale): forget them, so
//  the next push asks the database again.
void qn_http_seal_forget (qn_codec_t *codec, const char *tenant, size_t tenant_len,
                          const char *queue, size_t queue_len);

//  Route tables of the actors/http/<area>.c files, NULL-method terminated.
//  The codec lists every area in one table (codec.c s_areas): a missing
//  area file is a link error.
//  metrics.c: the Prometheus exposition, and the per-route HTTP series
//  (counted for every answer by qn_http_reply_raw).
void qn_http_metrics_render (qn_codec_t *codec, qn_buf_t *b, double uptime_s);
void qn_http_metrics_answered (qn_codec_t *codec, qn_http_ctx_t *ctx, int status);
//  A slot the codec owns (freed with it) where metrics.c keeps the series
//  handles of answers, found once by name.
void **qn_codec_metrics_cache (qn_codec_t *codec);

extern const qn_http_route_t qn_http_routes_core [];
extern const qn_http_route_t qn_http_routes_push [];    //  configure, push, lease
extern const qn_http_route_t qn_http_routes_ack [];     //  ack, ack/batch
extern const qn_http_route_t qn_http_routes_txn [];     //  transaction
extern const qn_http_route_t qn_http_routes_pop [];     //  pop routes
extern const qn_http_route_t qn_http_routes_admin [];   //  resources, messages, dlq, groups, status
extern const qn_http_route_t qn_http_routes_system [];  //  maintenance, buffers
extern const qn_http_route_t qn_http_routes_state [];   //  kv, timers
extern const qn_http_route_t qn_http_routes_streams []; //  /streams/v1/*
extern const qn_http_route_t qn_http_routes_ephemeral []; //  /api/v1/ephemeral/* (ephemeral.c)
extern const qn_http_route_t qn_http_routes_dashboard [];  //  GET /, /dashboard/:file
extern const qn_http_route_t qn_http_routes_sqs_keys [];   //  /api/v1/system/sqs-keys (sqs_keys.c)

//  The codec's parked long-polls (actors/park/park.h): owned by the codec,
//  run in its thread, fed its "committed" events; the pop area parks there.
qn_park_t *qn_codec_park (qn_codec_t *codec);
//  The park's callbacks (qn_park_fn), in the pop area (actors/http/pop.c):
//  run a parked pop again / answer it 204. `codec` is the qn_codec_t.
void qn_http_pop_wake (void *codec, uint64_t ctx_id);
void qn_http_pop_expire (void *codec, uint64_t ctx_id);

//  The ephemeral queues' table (actors/ephemeral/table.h): owned by the
//  codec, run in its thread, fed the mesh's QN_MSG_MESH_EPH; the routes
//  (actors/http/ephemeral.c) call it directly. Its answers come to
//  qn_http_eph_answer (ephemeral.c) with the request's context id.
typedef struct qn_eph qn_eph_t;
qn_eph_t *qn_codec_eph (qn_codec_t *codec);
void qn_http_eph_answer (void *codec, const char *reply_to, uint64_t corr, int status,
                         const char *json, size_t len);

#endif
