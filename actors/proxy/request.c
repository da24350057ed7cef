/*  actors/proxy/request.c - the proxy's request path
    Part of the proxy actor (proxy_int.h). Every request from the
    acceptor: its identity headers (a client's X-Queen-Tenant or
    X-Queen-Assertion is refused as forged), its credential (an API key in
    Authorization or X-API-Key, a session token or the queen_session
    cookie, or with JWT_ENABLED an identity provider's JWT), the route's
    kind and the role it needs (wire/proxy_routes.h), the tenant's plan
    (limits.c); then one of: the proxy's local routes (answered here or in
    keys.c, users.c, limits.c), the operator's routes (admin.c), or a
    broker (upstream.c).
    Receives  QN_MSG_HTTP_REQUEST; "jwks" events QN_MSG_JWKS_KEYS
    Sends     QN_MSG_JWKS_REFRESH to jwks (a token of an unknown key, at
              most once a second); answers through proxy.c
    Owns      the IdP key set of the last "jwks" event
    Failure   a malformed target 400; no or bad credential 401; role,
              operator or cluster-wide route 403; unknown route 404/405;
              plan limits 413/429; a malformed message is counted and
              dropped. Never logs a key, a token or a session
*/
#include "actors/proxy/proxy_int.h"
#include "wire/http_api.h"
#include "wire/json.h"
#include "wire/msg_http.h"
#include "wire/msg_jwks.h"
#include "wire/msg_types.h"
#include "wire/tenant_assert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void
s_local (qn_px_t *self, qn_px_req_t *req, const qn_pr_route_t *route, const qn_url_t *url)
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
        qn_px_respond_json (self, req, healthy ? 200 : 503, b.data, b.len, NULL);
        qn_buf_free (&b);
        qn_px_req_free (self, req);
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
        qn_px_respond_json (self, req, 200, b.data, b.len, NULL);
        qn_buf_free (&b);
        qn_px_req_free (self, req);
        return;
    }
    if (!strcmp (route->pattern, "/proxy/v1/login")) {
        qn_px_password_route (self, req, true, NULL, NULL);
        return;
    }
    if (!strcmp (route->pattern, "/proxy/v1/logout")) {
        qn_px_logout (self, req);
        return;
    }
    if (!strcmp (route->pattern, "/proxy/v1/users") || !strcmp (route->pattern, "/proxy/v1/users/:user")) {
        qn_px_users_route (self, req, url->seg_count > 3 ? url->segments [3] : NULL);
        return;
    }
    if (!strcmp (route->pattern, "/proxy/v1/usage")) {
        qn_px_usage_route (self, req);
        return;
    }
    qn_px_keys_route (self, req, url);
}

// ------------------------------------------------------------------ SSO passthrough
//  An IdP's JWT (the broker's JWT settings and JWKS fetcher): its tenant
//  claim must name an enabled tenant of this proxy, its roles give admin,
//  read-write or read-only. Returns 0 with the identity in req, or the
//  client-facing reason.
static const char *
s_sso_check (qn_px_t *self, qn_px_req_t *req, const char *token, size_t len)
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
        qn_px_tenant_t *t = qn_hashmap_get (self->tenants, qn_px_hash (res.tenant));
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

int
qn_px_on_jwks (void *self_, const qn_env_t *env)
{
    qn_px_t *self = self_;
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

int
qn_px_on_request (void *self_, const qn_env_t *env)
{
    qn_px_t *self = self_;
    if (self->stopping)
        return 0;               //  The acceptor is gone: nobody to answer
    msgpack_unpacked holder;
    msgpack_unpacked_init (&holder);
    qn_msg_http_request_t m;
    if (qn_msg_http_request_decode (env->body.ptr, env->body.len, &holder, &m)) {
        msgpack_unpacked_destroy (&holder);
        return QN_EPROTO;
    }
    qn_px_req_t *req = qn_zalloc (sizeof *req);
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
    if (!presented && cookie && !qn_cookie_get (cookie, strlen (cookie), QN_PX_SESSION_COOKIE, &cv, &cvlen))
        presented = qn_strndup (cv, cvlen);
    free (cookie);
    qn_url_t url;
    if (qn_url_parse (&url, req->target, strlen (req->target))) {
        free (presented);
        qn_px_req_error (self, req, 400, "Malformed request target");
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
        const qn_px_key_t *k = presented && !is_session && !is_jwt
                         ? qn_px_authenticate (self, presented, strlen (presented)) : NULL;
        const qn_px_session_t *ses = is_session
                                   ? qn_px_session_check (self, presented, strlen (presented), &why) : NULL;
        if (is_jwt)
            why = s_sso_check (self, req, presented, strlen (presented));
        if (!presented || !*presented)
            status = 401, refuse = "Authentication required";
        else
        if (is_jwt ? why != NULL : !k && !ses)
            status = 401, refuse = why;
        else {
            if (!is_jwt) {          //  An IdP token set its identity in s_sso_check
                snprintf (req->tenant, sizeof req->tenant, "%s", k ? k->tenant : ses->tenant);
                snprintf (req->key_id, sizeof req->key_id, "%s", k ? k->id : ses->id);
                req->role = k ? k->role : ses->role;
                req->session = ses != NULL;
                if (ses)
                    snprintf (req->user, sizeof req->user, "%s", ses->user);
                req->operator_ = !req->tenant [0];
            }
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
    if (!refuse && req->tenant [0])
        status = qn_px_limits_check (self, req, &route, &refuse, retry_after, sizeof retry_after);
    if (refuse) {
        qn_count (self->kernel, status == 401 ? "proxy_refused_401" : "proxy_refused_4xx", 1);
        qn_url_free (&url);
        qn_px_respond_error (self, req, status, refuse, retry_after [0] ? retry_after : NULL);
        qn_px_req_free (self, req);
        return 0;
    }
    if (route.kind == QN_PR_LOCAL)
        s_local (self, req, &route, &url);
    else
    if (route.kind == QN_PR_OPERATOR)
        qn_px_admin (self, req, &route, &url);
    else
        qn_px_forward (self, req);
    qn_url_free (&url);
    return 0;
}
