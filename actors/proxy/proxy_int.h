/*  actors/proxy/proxy_int.h - what the files of the proxy actor share
    One actor ("proxy", queen-proxy's codec; docs/tenancy.md) in seven
    files, split by concern:
      proxy.c     the actor: state, routes, lifecycle, the periodic tick,
                  answers (held in order while the acceptor is full),
                  client closes and the drain, its PostgreSQL calls
      request.c   the request path: headers, authentication (key, session,
                  IdP token), roles, the proxy's own local routes, dispatch
      limits.c    per tenant: plan limits (buckets, sizes, long polls),
                  usage metering and its flush to queen_proxy.usage
      keys.c      the key table (refreshed every second) and the tenant's
                  /proxy/v1/keys routes
      admin.c     the operator's /proxy/v1/admin/... routes
      users.c     users, passwords (through proxy_hasher) and sessions
      upstream.c  the broker pool: health (healthy / degraded / down),
                  round-robin, keep-alive connections, forwarding
    PostgreSQL is reached through the actor "proxy_pg" (actors/pg/writer.c
    under another name, one connection) with qn_pg_call (actors/pg/call.h);
    results are wire/msg_pg.h's qn_pg_result_t. Nothing here is used
    outside actors/proxy/.
*/
#ifndef QN_ACTORS_PROXY_INT_H
#define QN_ACTORS_PROXY_INT_H

#include "actors/actors.h"
#include "base/hashmap.h"
#include "wire/json.h"
#include "wire/jwt.h"
#include "wire/msg_pg.h"
#include "wire/proxy_keys.h"
#include "wire/proxy_routes.h"
#include "wire/token_bucket.h"
#include "wire/url.h"

#include <msgpack.h>
#include <sys/socket.h>

#define QN_PX_PG            "proxy_pg"  //  The proxy's PostgreSQL actor
#define QN_PX_MAX_UPSTREAMS 16
#define QN_PX_USER_MAX      132         //  Bytes of a user name, NUL included
#define QN_PX_SESSION_COOKIE "queen_session"

typedef struct qn_px qn_px_t;
typedef struct qn_px_req qn_px_req_t;
typedef struct qn_px_uconn qn_px_uconn_t;   //  upstream.c

// ------------------------------------------------------------------ state
typedef struct {
    char url [256];
    char host [200];
    char port [8];
    struct sockaddr_storage addr;
    socklen_t addr_len;
    bool reachable;             //  Answered its last probe (any status)
    bool healthy;               //  ... with 200: its database answers
    qn_px_uconn_t *idle;        //  Pooled keep-alive connections
    qn_px_uconn_t *probe;       //  The health probe in flight, or NULL
    int64_t probe_started_ms;
} qn_px_upstream_t;

struct qn_px_req {
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
    char user [QN_PX_USER_MAX]; //  A session's user, or ""
    bool session;               //  Authenticated by a session
    bool sso;                   //  Authenticated by an IdP's JWT (user: its sub)
    int attempts;
    bool is_pop;                //  Counted as messages out on a 200
    bool poll_counted;          //  Holds one of the tenant's long-poll slots
    bool operator_;             //  An operator key (no tenant)
    qn_px_uconn_t *uc;
};

//  Per tenant: plan limits (from the key table) and unflushed usage.
typedef struct {
    int64_t requests, messages_in, messages_out, bytes_in, bytes_out, refused;
} qn_px_usage_t;

typedef struct {
    char name [QN_TENANT_MAX + 1];
    qn_bucket_t requests;
    qn_bucket_t messages;
    int64_t max_body_bytes;     //  0: unlimited
    int64_t max_batch;
    int64_t max_long_polls;     //  0: unlimited
    int64_t polls;              //  Pops in flight at the brokers now
    bool active;                //  Enabled, as of the last refresh (SSO needs it)
    qn_px_usage_t usage;        //  Since the last flush
} qn_px_tenant_t;

typedef struct {
    char id [QN_KEY_ID_LEN + 1];
    char tenant [QN_TENANT_MAX + 1];
    qn_role_t role;
    char *hash;                 //  Owned
} qn_px_key_t;

//  A login session (schema/proxy/0003_users.sql): "qs_<id>_<secret>".
typedef struct {
    char id [QN_KEY_ID_LEN + 1];
    char tenant [QN_TENANT_MAX + 1];
    char user [QN_PX_USER_MAX];
    qn_role_t role;
    char hash [65];             //  SHA-256 of the secret, hex
    int64_t expires_ms;         //  Unix ms
} qn_px_session_t;

//  A route waiting on PostgreSQL: the request stays in self->reqs by id
//  (a client that went away leaves its callback nothing to answer).
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
} qn_px_keyop_t;

struct qn_px {
    qn_kernel_t *kernel;
    const qn_config_t *config;
    char acceptor [64];
    qn_px_upstream_t ups [QN_PX_MAX_UPSTREAMS];
    int up_count;
    int rr;
    qn_hashmap_t *reqs;         //  id -> qn_px_req_t
    uint64_t next_id;
    qn_hashmap_t *fds;          //  fd -> qn_px_uconn_t
    qn_hashmap_t *keys;         //  hash of id -> qn_px_key_t
    qn_hashmap_t *tenants;      //  hash of name -> qn_px_tenant_t
    qn_hashmap_t *sessions;     //  hash of id -> qn_px_session_t
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
    //  PostgreSQL calls (proxy.c)
    msgpack_sbuffer call;       //  Reused PG_EXEC body
    int pg_pending;             //  Calls waiting for their answer
    bool stopping;              //  STOP came: the last usage is being written
    bool final_flushed;
    bool flushing;              //  Writing the last usage now
    //  Responses held while the acceptor is full, in order.
    struct qn_px_held *held_head, *held_tail;
    bool held_waiting;
};

// ------------------------------------------------------------------ proxy.c
//  Sends a serialised response (taken) for the request's connection and seq.
void qn_px_respond_raw (qn_px_t *self, uint64_t conn_id, uint32_t seq, bool keep_alive, qn_buf_t *resp);
void qn_px_respond_json (qn_px_t *self, const qn_px_req_t *req, int status, const char *json,
                         size_t len, const char *extra);
void qn_px_respond_error (qn_px_t *self, const qn_px_req_t *req, int status, const char *msg,
                          const char *extra);
void qn_px_req_free (qn_px_t *self, qn_px_req_t *req);
//  Answers {"error": msg} and frees the request.
void qn_px_req_error (qn_px_t *self, qn_px_req_t *req, int status, const char *msg);

//  A PostgreSQL call's answer: res is never NULL; res->ok false when the
//  call failed or no answer came in time.
typedef void (qn_px_pg_fn) (qn_px_t *self, const qn_pg_result_t *res, void *arg);
//  Runs sql with text parameters (a NULL one is SQL NULL) on proxy_pg;
//  cb always runs once, with a failed result when it could not be sent.
void qn_px_query (qn_px_t *self, const char *sql, const char *const *params, int n,
                  qn_px_pg_fn *cb, void *arg);
//  The request waiting for a store's result, or NULL: gone already, or
//  answered 503 with `unavailable` because the result failed (or, when
//  one_row, did not hold exactly one row).
qn_px_req_t *qn_px_req_of_result (qn_px_t *self, uint64_t req_id, const qn_pg_result_t *res,
                                  bool one_row, const char *unavailable);
//  Column c of row r as text (not NUL-ended): "" and 0 for NULL or not a string.
const char *qn_px_col_str (const qn_pg_result_t *res, uint32_t r, uint32_t c, size_t *len);
//  The same into out, NUL-ended and cut to fit.
void qn_px_col_text (const qn_pg_result_t *res, uint32_t r, uint32_t c, char *out, size_t size);
//  Column c of row r as an integer (0 for NULL or not an integer).
int64_t qn_px_col_int (const qn_pg_result_t *res, uint32_t r, uint32_t c);
bool qn_px_col_null (const qn_pg_result_t *res, uint32_t r, uint32_t c);
//  FNV-1a of a key id, session id or tenant name (the tables' keys).
uint64_t qn_px_hash (const char *s);

// ------------------------------------------------------------------ request.c
int qn_px_on_request (void *self_, const qn_env_t *env);
int qn_px_on_jwks (void *self_, const qn_env_t *env);

// ------------------------------------------------------------------ limits.c
qn_px_tenant_t *qn_px_tenant (qn_px_t *self, const char *name);
//  The length of the array `member` of a JSON object body, or 0.
int64_t qn_px_count_items (const char *body, size_t len, const char *member);
//  Meters an authenticated tenant request and checks it against the
//  plan: 0, or the refusal's status with *refuse (and for 429 the
//  Retry-After header line in retry_after).
int qn_px_limits_check (qn_px_t *self, qn_px_req_t *req, const qn_pr_route_t *route,
                        const char **refuse, char *retry_after, size_t retry_len);
//  Sets the tenant's limits from columns first.. first + 4 of row r:
//  requests_per_s, messages_per_s, max_body_bytes, max_batch,
//  max_long_polls (NULL: unlimited).
void qn_px_tenant_limits (qn_px_tenant_t *t, const qn_pg_result_t *res, uint32_t r, uint32_t first);
void qn_px_on_tenants (qn_px_t *self, const qn_pg_result_t *res, void *arg);
//  Writes every tenant's unflushed usage (at shutdown: once, nothing kept back).
void qn_px_flush (qn_px_t *self, bool final);
//  GET /proxy/v1/usage.
void qn_px_usage_route (qn_px_t *self, qn_px_req_t *req);

// ------------------------------------------------------------------ keys.c
void qn_px_keys_refresh (qn_px_t *self);
void qn_px_key_free_each (void *arg, uint64_t key, void *value);
void qn_px_key_drop (qn_px_t *self, const char *id);
//  The key presented ("qk_..."), or NULL.
const qn_px_key_t *qn_px_authenticate (qn_px_t *self, const char *presented, size_t len);
//  The role and label of a new key in a parsed JSON object body (sets
//  op->role; label gets the label when given): NULL, or what is wrong.
const char *qn_px_key_fields (qn_json_doc_t *doc, qn_px_keyop_t *op, qn_buf_t *label);
//  /proxy/v1/keys and /proxy/v1/keys/:id (the tenant's own keys).
void qn_px_keys_route (qn_px_t *self, qn_px_req_t *req, const qn_url_t *url);

// ------------------------------------------------------------------ admin.c
void qn_px_admin (qn_px_t *self, qn_px_req_t *req, const qn_pr_route_t *route, const qn_url_t *url);
//  The answer of an admin function of schema/proxy/ (JSON, or a QN4xx refusal).
void qn_px_on_admin (qn_px_t *self, const qn_pg_result_t *res, void *arg);

// ------------------------------------------------------------------ users.c
void qn_px_on_sessions (qn_px_t *self, const qn_pg_result_t *res, void *arg);
void qn_px_session_free_each (void *arg, uint64_t key, void *value);
//  Ends the sessions of a user (user "": of every user of the tenant).
void qn_px_sessions_drop (qn_px_t *self, const char *tenant, const char *user);
//  A presented "qs_..." session token, or NULL with why.
const qn_px_session_t *qn_px_session_check (qn_px_t *self, const char *token, size_t len,
                                            const char **why);
//  Login, user creation and password change (tenant/user: from the route).
void qn_px_password_route (qn_px_t *self, qn_px_req_t *req, bool login, const char *tenant,
                           const char *user);
void qn_px_logout (qn_px_t *self, qn_px_req_t *req);
//  The tenant admin's /proxy/v1/users[/:user] (user: the path's, or NULL).
void qn_px_users_route (qn_px_t *self, qn_px_req_t *req, const char *user);

// ------------------------------------------------------------------ upstream.c
//  Parses QUEEN_UPSTREAMS (every broker healthy until probed): 0 or -1.
int qn_px_upstreams_init (qn_px_t *self, const char *list);
//  Sends the request to a broker (round-robin, healthy before degraded);
//  answers 503 when none is reachable.
void qn_px_forward (qn_px_t *self, qn_px_req_t *req);
//  Probes, probe timeouts and the pools' idle limit.
void qn_px_upstreams_tick (qn_px_t *self, int64_t now_ms);
void qn_px_uconn_close (qn_px_t *self, qn_px_uconn_t *uc);
//  Closes every upstream connection (STOP).
void qn_px_upstreams_close (qn_px_t *self);

#endif
