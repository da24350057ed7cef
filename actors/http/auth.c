/*  actors/http/auth.c - access control for the HTTP API (spec §1.8)
    The check the codec runs after matching a route and before its
    handler: with JWT_ENABLED, a route above "public" whose path is not in
    JWT_SKIP_PATHS needs a bearer token that verifies (wire/jwt.h) and
    whose roles reach the route's level (admin > read-write > read-only).
    The verified `sub` goes on the request (ctx->subject): the push route
    stamps it as the producer identity.
    Tenancy (docs/tenancy.md): the tenant (ctx->tenant) comes only from a
    verified source: the proxy's signed X-Queen-Assertion (wire/
    tenant_assert.h) when TENANT_ASSERTION_SECRET is set (then required on
    every route above public), else the JWT's JWT_TENANT_CLAIM; otherwise
    the default tenant "". A raw X-Queen-Tenant header, or an assertion
    without the secret, is refused with 401; a named tenant on a
    cluster-wide route (system, buffers, postgres-stats, internal,
    ephemeral) 403.
    Keys: JWT_SECRET (HS256) and JWT_PUBLIC_KEY (RS256 / EdDSA) are loaded
    once; JWKS keys arrive as "jwks" events from the jwks actor, which
    fetches them in the background. A token naming an unknown key makes
    us ask the jwks actor to fetch again (at most once a second).
    Receives  "jwks" events (QN_MSG_JWKS_KEYS), through the codec
    Sends     QN_MSG_JWKS_REFRESH to jwks
    Owns      the key sets and parsed skip paths (qn_http_auth_t), which
              the codec owns in turn
    Failure   refuses with 401 {"error": reason} or 403 {"error":
              "Insufficient permissions"}; never logs a token, a secret or
              the Authorization header
*/
#include "actors/http/codec.h"
#include "wire/jwt.h"
#include "wire/msg_jwks.h"
#include "wire/tenant_assert.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define S_MAX_SKIP_PATHS 64
#define S_REFRESH_GAP_MS 1000   //  Least time between two JWKS_REFRESH asks

typedef struct {
    char *segments [QN_URL_MAX_SEGMENTS];   //  Owned, NUL-terminated
    uint32_t count;
    bool prefix;                //  Matches these segments and anything below
} s_skip_t;

struct qn_http_auth {
    qn_kernel_t *kernel;        //  Not owned
    bool enabled;
    bool jwks_configured;
    qn_jwt_policy_t policy;     //  Strings point into the config (lives longer)
    qn_jwt_keys_t *static_keys; //  Owned: JWT_SECRET, JWT_PUBLIC_KEY
    qn_jwt_keys_t *jwks_keys;   //  Owned: the latest "jwks" event, or NULL
    uint64_t jwks_generation;
    s_skip_t skips [S_MAX_SKIP_PATHS];
    uint32_t skip_count;
    int64_t refresh_asked_ms;   //  Monotonic; 0 = never
    const char *assert_secret;  //  TENANT_ASSERTION_SECRET (in the config), or NULL
    size_t assert_secret_len;
    int64_t assert_max_age_s;
};

// ------------------------------------------------------------------ skip paths
//  Parses one entry ("/health", "/dashboard/") into skip; -1 if ignored.
static int
s_skip_parse (s_skip_t *skip, const char *entry, size_t len)
{
    while (len && (*entry == ' ' || *entry == '\t'))
        entry++, len--;
    while (len && (entry [len - 1] == ' ' || entry [len - 1] == '\t'))
        len--;
    if (!len || entry [0] != '/')
        return -1;
    memset (skip, 0, sizeof *skip);
    //  "/" itself is exact; any other entry ending in '/' is a prefix.
    skip->prefix = len > 1 && entry [len - 1] == '/';
    if (skip->prefix)
        len--;
    if (len == 1)
        return skip->prefix ? -1 : 0;       //  "//" would open everything
    size_t at = 1;
    for (;;) {
        const char *slash = memchr (entry + at, '/', len - at);
        size_t n = slash ? (size_t) (slash - (entry + at)) : len - at;
        if (!n || skip->count == QN_URL_MAX_SEGMENTS) {
            for (uint32_t k = 0; k < skip->count; k++)
                free (skip->segments [k]);
            return -1;
        }
        skip->segments [skip->count++] = qn_strndup (entry + at, n);
        if (!slash)
            return 0;
        at += n + 1;
    }
}

static void
s_skips_load (qn_http_auth_t *self, const char *list)
{
    const char *p = list;
    while (p && *p && self->skip_count < S_MAX_SKIP_PATHS) {
        const char *comma = strchr (p, ',');
        size_t n = comma ? (size_t) (comma - p) : strlen (p);
        if (s_skip_parse (&self->skips [self->skip_count], p, n) == 0)
            self->skip_count++;
        else
        if (n)
            qn_warn ("auth: skip path ignored (must start with /, no empty segment): entry=%.*s", (int) n, p);
        p = comma ? comma + 1 : NULL;
    }
}

//  Compares decoded path segments, so an encoded "%2F" inside a segment
//  never makes a path look like it sits under a skipped prefix.
static bool
s_skipped (const qn_http_auth_t *self, const qn_url_t *url)
{
    for (uint32_t i = 0; i < self->skip_count; i++) {
        const s_skip_t *s = &self->skips [i];
        if (url->seg_count < s->count || (!s->prefix && url->seg_count != s->count))
            continue;
        uint32_t k = 0;
        while (k < s->count && strlen (s->segments [k]) == url->seg_len [k]
           &&  !memcmp (s->segments [k], url->segments [k], url->seg_len [k]))
            k++;
        if (k == s->count)
            return true;
    }
    return false;
}

// ------------------------------------------------------------------ state
qn_http_auth_t *
qn_http_auth_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    qn_http_auth_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->enabled = config->jwt_enabled;
    self->jwks_configured = config->jwt_jwks_url [0] != 0;
    qn_jwt_alg_t alg = QN_JWT_AUTO;
    qn_jwt_alg_parse (config->jwt_algorithm, &alg);     //  Checked by config.c
    self->policy = (qn_jwt_policy_t) {
        .algorithm = alg,
        .issuer = config->jwt_issuer,
        .audience = config->jwt_audience,
        .clock_skew_s = config->jwt_clock_skew_s,
        .role_claim = config->jwt_roles_claim,
        .roles_claim = config->jwt_roles_array_claim,
        .role_admin = config->jwt_role_admin,
        .role_read_write = config->jwt_role_read_write,
        .role_read_only = config->jwt_role_read_only,
        .tenant_claim = config->jwt_tenant_claim
    };
    if (config->tenant_assertion_secret [0]) {
        self->assert_secret = config->tenant_assertion_secret;
        self->assert_secret_len = strlen (config->tenant_assertion_secret);
        qn_info ("auth: tenant assertions required (queen-proxy in front)");
    }
    self->assert_max_age_s = config->tenant_assertion_max_age_s;
    self->static_keys = qn_jwt_keys_new ();
    if (config->jwt_secret [0])
        qn_jwt_keys_add_secret (self->static_keys, config->jwt_secret,
                                strlen (config->jwt_secret), NULL);
    char err [128];
    if (config->jwt_public_key [0]
    &&  qn_jwt_keys_add_pem (self->static_keys, config->jwt_public_key,
                             strlen (config->jwt_public_key), NULL, err, sizeof err))
        qn_warn ("auth: JWT_PUBLIC_KEY not loaded: %s", err);
    s_skips_load (self, config->jwt_skip_paths);
    if (self->enabled)
        qn_info ("auth: jwt enabled: algorithm=%s static_keys=%zu jwks=%s issuer=%s audience=%s "
                 "skip_paths=%u", qn_jwt_alg_name (alg), qn_jwt_keys_count (self->static_keys),
                 self->jwks_configured ? "yes" : "no",
                 config->jwt_issuer [0] ? config->jwt_issuer : "(any)",
                 config->jwt_audience [0] ? config->jwt_audience : "(any)", self->skip_count);
    return self;
}

void
qn_http_auth_destroy (qn_http_auth_t **self_p)
{
    qn_http_auth_t *self = *self_p;
    if (!self)
        return;
    qn_jwt_keys_destroy (&self->static_keys);
    qn_jwt_keys_destroy (&self->jwks_keys);
    for (uint32_t i = 0; i < self->skip_count; i++)
        for (uint32_t k = 0; k < self->skips [i].count; k++)
            free (self->skips [i].segments [k]);
    free (self);
    *self_p = NULL;
}

// ------------------------------------------------------------------ the check
//  The token of an Authorization value: after a case-insensitive "Bearer "
//  prefix, else the whole value; surrounding blanks dropped. NULL if none.
static const char *
s_token (const char *header, size_t *len)
{
    if (!header)
        return NULL;
    const char *t = header;
    if (!strncasecmp (t, "bearer", 6) && (t [6] == ' ' || t [6] == '\t' || t [6] == 0))
        t += 6;
    while (*t == ' ' || *t == '\t')
        t++;
    size_t n = strlen (t);
    while (n && (t [n - 1] == ' ' || t [n - 1] == '\t' || t [n - 1] == '\r' || t [n - 1] == '\n'))
        n--;
    *len = n;
    return n ? t : NULL;
}

//  Asks the jwks actor for a fresh fetch (a token named a key we lack).
static void
s_ask_refresh (qn_http_auth_t *self)
{
    int64_t now = qn_now_ms ();
    if (self->refresh_asked_ms && now - self->refresh_asked_ms < S_REFRESH_GAP_MS)
        return;
    self->refresh_asked_ms = now;
    //  A hint: if jwks is busy or gone, the periodic refresh still comes.
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &b, msgpack_sbuffer_write);
    qn_msg_jwks_refresh_encode (&pk);
    qn_send_body (self->kernel, "jwks", QN_MSG_JWKS_REFRESH, 0, b.data, b.size);
    msgpack_sbuffer_destroy (&b);
}

static int
s_refuse (qn_codec_t *codec, qn_http_ctx_t *ctx, int status, const char *reason)
{
    //  The reason is ours (wire/jwt.h messages), never token bytes.
    qn_debug ("auth refused: status=%d method=%s path=%s reason=%s", status, ctx->method,
              ctx->url.path ? ctx->url.path : "", reason);
    qn_count (qn_codec_kernel (codec), status == 401 ? "auth_refused_401" : "auth_refused_403", 1);
    qn_http_reply_error (ctx, status, reason);
    return 1;
}

//  Routes whose answer or effect spans the whole cell (maintenance, the
//  spool, PostgreSQL's own statistics, the internal wake-up): never for a
//  named tenant, only for the default tenant (the operator).
static const char *const s_cluster_routes [] [4] = {
    { "api", "v1", "system", NULL },
    { "api", "v1", "status", "buffers" },
    { "api", "v1", "analytics", "postgres-stats" },
    { "internal", NULL, NULL, NULL },
    //  Ephemeral names are per tenant; the broker's ephemeral memory
    //  figures are the operator's (docs/ephemeral.md).
    { "api", "v1", "ephemeral", "stats" },
};

static bool
s_cluster_route (const qn_url_t *url)
{
    for (size_t i = 0; i < sizeof s_cluster_routes / sizeof s_cluster_routes [0]; i++) {
        uint32_t k = 0;
        while (k < 4 && s_cluster_routes [i] [k] && k < url->seg_count
           &&  strlen (s_cluster_routes [i] [k]) == url->seg_len [k]
           &&  !memcmp (s_cluster_routes [i] [k], url->segments [k], url->seg_len [k]))
            k++;
        if (k == 4 || !s_cluster_routes [i] [k])
            return true;
    }
    return false;
}

//  A named tenant on a cluster-wide route: 403.
static int
s_tenant_scope (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    if (ctx->tenant [0] && s_cluster_route (&ctx->url))
        return s_refuse (codec, ctx, 403, "Not available to tenants");
    return 0;
}

//  The proxy's assertion (wire/tenant_assert.h): the tenant, role and
//  subject it vouches for. Only with TENANT_ASSERTION_SECRET; the proxy
//  has authenticated the client, so no JWT is looked at.
static int
s_assertion (qn_http_auth_t *self, qn_codec_t *codec, qn_http_ctx_t *ctx, qn_auth_level_t level)
{
    if (!self->assert_secret)
        return s_refuse (codec, ctx, 401, "Unverifiable tenant");
    qn_tassert_t a;
    int rc = qn_tassert_verify (ctx->assertion, strlen (ctx->assertion), self->assert_secret,
                                self->assert_secret_len, qn_wall_us () / 1000000,
                                self->assert_max_age_s, &a);
    if (rc != QN_TASSERT_OK) {
        s_refuse (codec, ctx, 401, a.err);
        qn_tassert_free (&a);
        return 1;
    }
    if (a.level < (int) level) {
        qn_tassert_free (&a);
        return s_refuse (codec, ctx, 403, "Insufficient permissions");
    }
    free (ctx->tenant);
    ctx->tenant = qn_strdup (a.tenant);
    free (ctx->subject);
    ctx->subject = a.subject;           //  Taken
    a.subject = NULL;
    qn_count (qn_codec_kernel (codec), "auth_assertion_ok", 1);
    return s_tenant_scope (codec, ctx);
}

int
qn_http_auth (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_auth_level_t level)
{
    qn_http_auth_t *self = qn_codec_auth (codec);
    //  A tenant the broker cannot verify is refused on every route, with or
    //  without tenancy configured: a raw tenant header is never trusted.
    if (ctx->tenant_header)
        return s_refuse (codec, ctx, 401, "Unverifiable tenant");
    if (ctx->assertion)
        return s_assertion (self, codec, ctx, level);
    //  Behind a proxy, an assertion is required, unless the broker also
    //  validates JWTs itself (operators: a token without tenant claim is
    //  the default tenant, the one that reaches cluster-wide routes).
    if (self->assert_secret && level != QN_AUTH_PUBLIC && !self->enabled)
        return s_refuse (codec, ctx, 401, "Tenant assertion required");
    if (!self->enabled || level == QN_AUTH_PUBLIC || s_skipped (self, &ctx->url))
        return 0;
    size_t len = 0;
    const char *token = s_token (ctx->authorization, &len);
    if (!token)
        return s_refuse (codec, ctx, 401, "Authentication required");
    const qn_jwt_keys_t *sets [2] = { self->static_keys, self->jwks_keys };
    qn_jwt_policy_t policy = self->policy;
    policy.now_s = qn_wall_us () / 1000000;
    qn_jwt_result_t res;
    int rc = qn_jwt_verify (token, len, sets, 2, &policy, &res);
    if (rc == QN_JWT_ENOKEY && self->jwks_configured && res.alg != QN_JWT_HS256)
        s_ask_refresh (self);
    if (rc != QN_JWT_OK) {
        s_refuse (codec, ctx, 401, res.err);
        qn_jwt_result_free (&res);
        return 1;
    }
    if (res.level < (int) level) {
        qn_jwt_result_free (&res);
        return s_refuse (codec, ctx, 403, "Insufficient permissions");
    }
    free (ctx->subject);
    ctx->subject = res.subject;         //  Taken
    res.subject = NULL;
    if (res.tenant [0]) {
        free (ctx->tenant);
        ctx->tenant = qn_strdup (res.tenant);
    }
    qn_count (qn_codec_kernel (codec), "auth_ok", 1);
    return s_tenant_scope (codec, ctx);
}

// ------------------------------------------------------------------ jwks events
//  [generation, jwks json (bin or str)]: a set with no usable key keeps
//  the previous one (the jwks actor only publishes usable sets anyway).
int
qn_http_auth_on_jwks (qn_codec_t *codec, const qn_env_t *env)
{
    qn_http_auth_t *self = qn_codec_auth (codec);
    qn_msg_jwks_keys_t msg;
    int rc = QN_EPROTO;
    if (qn_msg_jwks_keys_decode (env->body.ptr, env->body.len, &msg))
        goto done;
    qn_jwt_keys_t *keys = qn_jwt_keys_new ();
    char err [128];
    int added = qn_jwt_keys_add_jwks (keys, msg.json, msg.json_len, err, sizeof err);
    if (added <= 0) {
        qn_warn ("auth: jwks event ignored: %s", added < 0 ? err : "no usable key");
        qn_jwt_keys_destroy (&keys);
        goto done;
    }
    uint64_t generation = msg.generation;
    if (generation != self->jwks_generation)
        qn_info ("auth: jwks keys updated: generation=%llu keys=%d",
                 (unsigned long long) generation, added);
    self->jwks_generation = generation;
    qn_jwt_keys_destroy (&self->jwks_keys);
    self->jwks_keys = keys;
    rc = 0;
done:
    return rc;
}
