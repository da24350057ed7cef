/*  actors/proxy/users.c - the proxy's users, passwords and sessions
    Part of the proxy actor (proxy_int.h). A tenant's users log in with a
    password (POST /proxy/v1/login) and get a session, "qs_<id>_<secret>"
    (SHA-256 of the secret stored; also set as the queen_session cookie),
    held to the user's role like a key. The tenant's admin manages its
    users (/proxy/v1/users), the operator any tenant's; the calls arrive
    here from request.c and admin.c. Password work goes to proxy_hasher
    (actors/proxy/hasher.c, its own thread); the request waits in
    self->reqs meanwhile, as for PostgreSQL. The session table is reloaded
    every second with the key table (keys.c) and changed at once here.
    Receives  QN_MSG_PW_DONE replies; the PG_RESULTs of its calls
    Sends     QN_MSG_PW_WORK to proxy_hasher; SELECTs of
              queen_proxy.user_login, session_create, session_revoke,
              admin_user_put
    Owns      the session table (self->sessions, wiped when freed), the
              passwords of the checks in flight (wiped)
    Failure   bad credentials 401 (an unknown user costs what a known one
              does); more than 32 checks in flight 503 with Retry-After;
              hasher or store away 503; never logs a password, a hash or a
              session token
*/
#include "actors/proxy/proxy_int.h"
#include "wire/json.h"
#include "wire/msg_password.h"
#include "wire/msg_types.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_PW_MAX_PENDING    32          //  Password checks queued at the hasher
#define S_PW_TIMEOUT_MS     30000

void
qn_px_session_free_each (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    sodium_memzero (value, sizeof (qn_px_session_t));
    free (value);
}

static void
s_session_put (qn_hashmap_t *map, const qn_px_session_t *from)
{
    qn_px_session_t *old = qn_hashmap_remove (map, qn_px_hash (from->id));
    if (old)
        qn_px_session_free_each (NULL, 0, old);
    qn_px_session_t *ses = qn_zalloc (sizeof *ses);
    *ses = *from;
    qn_hashmap_put (map, qn_px_hash (ses->id), ses);
}

//  [id, tenant, user_name, role, hash, expires_ms] per session.
void
qn_px_on_sessions (qn_px_t *self, const qn_pg_result_t *res, void *arg)
{
    (void) arg;
    if (!res->ok)
        return;                 //  The last table stays in use
    qn_hashmap_t *map = qn_hashmap_new ();
    for (uint32_t r = 0; r < res->row_count; r++) {
        qn_px_session_t ses = { .expires_ms = qn_px_col_int (res, r, 5) };
        qn_px_col_text (res, r, 0, ses.id, sizeof ses.id);
        qn_px_col_text (res, r, 1, ses.tenant, sizeof ses.tenant);
        qn_px_col_text (res, r, 2, ses.user, sizeof ses.user);
        char role [32];
        qn_px_col_text (res, r, 3, role, sizeof role);
        ses.role = qn_role_parse (role, strlen (role));
        qn_px_col_text (res, r, 4, ses.hash, sizeof ses.hash);
        s_session_put (map, &ses);
    }
    qn_hashmap_each (self->sessions, qn_px_session_free_each, NULL);
    qn_hashmap_destroy (&self->sessions);
    self->sessions = map;
}

typedef struct {
    const char *tenant, *user;
    qn_buf_t ids;
} s_drop_t;

static void
s_drop_collect (void *arg, uint64_t key, void *value)
{
    s_drop_t *d = arg;
    qn_px_session_t *ses = value;
    if (!strcmp (ses->tenant, d->tenant) && (!d->user [0] || !strcmp (ses->user, d->user)))
        qn_buf_append (&d->ids, &key, sizeof key);
}

void
qn_px_sessions_drop (qn_px_t *self, const char *tenant, const char *user)
{
    s_drop_t d = { tenant, user, QN_BUF_INIT };
    qn_hashmap_each (self->sessions, s_drop_collect, &d);
    for (size_t i = 0; i < d.ids.len / sizeof (uint64_t); i++) {
        uint64_t key;
        memcpy (&key, d.ids.data + i * sizeof key, sizeof key);
        qn_px_session_free_each (NULL, 0, qn_hashmap_remove (self->sessions, key));
    }
    qn_buf_free (&d.ids);
}

// ------------------------------------------------------------------ users, passwords and sessions
//  Password work goes to proxy_hasher (its own thread); the request waits
//  in self->reqs meanwhile, as for PostgreSQL.
typedef struct {
    uint64_t req_id;
    int kind;                   //  S_PW_LOGIN or S_PW_USER
    char tenant [QN_TENANT_MAX + 1];
    char user [QN_PX_USER_MAX];
    qn_role_t role;
    bool replace;               //  S_PW_USER: PUT (an existing user)
    char *password;             //  Owned, wiped
    size_t password_len;
    char hash [QN_KEY_HASH_MAX];
    qn_px_session_t ses;        //  S_PW_LOGIN: the session being made
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
s_pw_request (qn_px_t *self, qn_px_req_t *req, s_pwop_t *op, int what, const char *hash)
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
        qn_px_req_error (self, req, 503, "Password service busy");
        s_pwop_free (op);
        return;
    }
    self->pw_pending++;
}

static void
s_cookie (qn_buf_t *b, const char *token, int64_t max_age_s)
{
    qn_buf_printf (b, "Set-Cookie: " QN_PX_SESSION_COOKIE "=%s; Path=/; Max-Age=%lld; HttpOnly; Secure;"
                      " SameSite=Strict\r\n", token, (long long) max_age_s);
}

static void
s_on_session_created (qn_px_t *self, const qn_pg_result_t *res, void *arg)
{
    s_pwop_t *op = arg;
    qn_px_req_t *req = qn_px_req_of_result (self, op->req_id, res, true, "Session store unavailable");
    if (req) {
        op->ses.expires_ms = qn_px_col_int (res, 0, 0);
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
        qn_px_respond_json (self, req, 200, b.data, b.len, extra.data);
        sodium_memzero (b.data, b.len);
        sodium_memzero (extra.data, extra.len);
        qn_buf_free (&b);
        qn_buf_free (&extra);
        qn_px_req_free (self, req);
    }
    s_pwop_free (op);
}

//  The hasher's answer: a login's verification or a user's new hash.
static void
s_on_pw_done (void *self_, void *arg, const qn_env_t *env)
{
    qn_px_t *self = self_;
    s_pwop_t *op = arg;
    self->pw_pending--;
    qn_px_req_t *req = qn_hashmap_get (self->reqs, op->req_id);
    qn_msg_pw_done_t d;
    bool answered = env && qn_msg_pw_done_decode (env->body.ptr, env->body.len, &d) == 0;
    if (!req) {
        s_pwop_free (op);
        return;
    }
    if (!answered) {
        qn_px_req_error (self, req, 503, "Password service unavailable");
        s_pwop_free (op);
        return;
    }
    if (op->kind == S_PW_LOGIN) {
        if (!d.ok) {
            qn_count (self->kernel, "proxy_login_failures", 1);
            qn_px_req_error (self, req, 401, "Invalid credentials");
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
        qn_px_query (self, "SELECT queen_proxy.session_create ($1, $2, $3, $4, $5)", p, 5,
                 s_on_session_created, op);
        return;
    }
    //  S_PW_USER: store the user with the new hash.
    if (!d.ok || d.hash_len >= sizeof op->hash) {
        qn_px_req_error (self, req, 500, "Password hashing failed");
        s_pwop_free (op);
        return;
    }
    qn_px_keyop_t *kop = qn_zalloc (sizeof *kop);
    kop->req_id = op->req_id;
    kop->ok_status = op->replace ? 200 : 201;
    if (op->replace) {
        snprintf (kop->drop_tenant, sizeof kop->drop_tenant, "%s", op->tenant);
        snprintf (kop->drop_user, sizeof kop->drop_user, "%s", op->user);
    }
    snprintf (op->hash, sizeof op->hash, "%.*s", (int) d.hash_len, d.hash);
    const char *p [5] = { op->tenant, op->user, qn_role_name (op->role), op->hash,
                          op->replace ? "true" : "false" };
    qn_px_query (self, "SELECT queen_proxy.admin_user_put ($1, $2, $3, $4, $5)", p, 5, qn_px_on_admin, kop);
    s_pwop_free (op);
}

static void
s_on_login_user (qn_px_t *self, const qn_pg_result_t *res, void *arg)
{
    s_pwop_t *op = arg;
    qn_px_req_t *req = qn_hashmap_get (self->reqs, op->req_id);
    if (!req) {
        s_pwop_free (op);
        return;
    }
    if (!res->ok) {
        qn_px_req_error (self, req, 503, "User store unavailable");
        s_pwop_free (op);
        return;
    }
    //  An unknown user or tenant verifies against the hasher's dummy, at
    //  the same cost, and fails the same way.
    char hash [QN_KEY_HASH_MAX] = "";
    if (res->row_count == 1) {
        char role [32];
        qn_px_col_text (res, 0, 0, role, sizeof role);
        op->role = qn_role_parse (role, strlen (role));
        qn_px_col_text (res, 0, 1, hash, sizeof hash);
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
void
qn_px_password_route (qn_px_t *self, qn_px_req_t *req, bool login, const char *tenant,
                      const char *user)
{
    if (self->pw_pending >= S_PW_MAX_PENDING) {
        qn_px_respond_error (self, req, 503, "Too many password checks in progress", "Retry-After: 1\r\n");
        qn_px_req_free (self, req);
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
        qn_px_req_error (self, req, 400, bad);
        s_pwop_free (op);
        return;
    }
    if (login) {
        const char *p [2] = { op->tenant, op->user };
        qn_px_query (self, "SELECT role, hash FROM queen_proxy.user_login ($1, $2)", p, 2,
                     s_on_login_user, op);
    }
    else
        s_pw_request (self, req, op, QN_PW_HASH, "");
}

static void
s_on_logged_out (qn_px_t *self, const qn_pg_result_t *res, void *arg)
{
    qn_px_keyop_t *op = arg;
    qn_px_req_t *req = qn_px_req_of_result (self, op->req_id, res, false, "Session store unavailable");
    if (req) {
        qn_px_session_t *ses = qn_hashmap_remove (self->sessions, qn_px_hash (op->key.id));
        if (ses)
            qn_px_session_free_each (NULL, 0, ses);
        qn_buf_t extra = QN_BUF_INIT;
        s_cookie (&extra, "", 0);
        const char json [] = "{\"loggedOut\":true}";
        qn_px_respond_json (self, req, 200, json, sizeof json - 1, extra.data);
        qn_buf_free (&extra);
        qn_px_req_free (self, req);
    }
    free (op);
}

//  The tenant admin's /proxy/v1/users (GET, POST) and /proxy/v1/users/:user
//  (PUT, DELETE); user is the path's user or NULL.
void
qn_px_users_route (qn_px_t *self, qn_px_req_t *req, const char *user)
{
    bool get = !strcmp (req->method, "GET"), del = !strcmp (req->method, "DELETE");
    if (!get && !del) {
        qn_px_password_route (self, req, false, req->tenant, user);
        return;
    }
    qn_px_keyop_t *op = qn_zalloc (sizeof *op);
    op->req_id = req->id;
    op->ok_status = 200;
    if (get) {
        const char *p [1] = { req->tenant };
        qn_px_query (self, "SELECT queen_proxy.admin_users ($1)", p, 1, qn_px_on_admin, op);
        return;
    }
    snprintf (op->drop_tenant, sizeof op->drop_tenant, "%s", req->tenant);
    snprintf (op->drop_user, sizeof op->drop_user, "%s", user ? user : "");
    const char *p [2] = { req->tenant, user };
    qn_px_query (self, "SELECT queen_proxy.admin_user_delete ($1, $2)", p, 2, qn_px_on_admin, op);
}

//  POST /proxy/v1/logout: ends the session that calls it.
void
qn_px_logout (qn_px_t *self, qn_px_req_t *req)
{
    if (!req->session) {
        qn_px_req_error (self, req, 400, "Not a session: log out ends the session that calls it");
        return;
    }
    qn_px_keyop_t *op = qn_zalloc (sizeof *op);
    op->req_id = req->id;
    snprintf (op->key.id, sizeof op->key.id, "%s", req->key_id);
    const char *p [1] = { req->key_id };
    qn_px_query (self, "SELECT queen_proxy.session_revoke ($1)", p, 1, s_on_logged_out, op);
}

//  A presented "qs_..." session token: 0 and the session, or -1 with why.
const qn_px_session_t *
qn_px_session_check (qn_px_t *self, const char *token, size_t len, const char **why)
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
    qn_px_session_t *ses = qn_hashmap_get (self->sessions, qn_px_hash (id));
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
