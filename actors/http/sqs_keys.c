/*  actors/http/sqs_keys.c - admin routes of the SQS door's access keys
    The keys of queen.sqs_keys (migrations/0017_sqs_keys.sql; docs/sqs.md
    "Access keys"), each acting for one tenant over SQS:
      POST /api/v1/system/sqs-keys  {"tenant", "accessKeyId"?, "secretAccessKey"?}
           -> 201 {"accessKeyId", "secretAccessKey", "tenant", "enabled", "createdAt"}
              (the secret is shown here only; generated when not given)
      GET  /api/v1/system/sqs-keys[?tenant=T]
           -> 200 {"keys": [{"accessKeyId", "tenant", "enabled", "createdAt", "disabledAt"}]}
      POST /api/v1/system/sqs-keys/:id/disable
           -> 200 {"accessKeyId", "tenant", "enabled": false, "disabledAt"}
    Under /api/v1/system: admin level, and cluster-wide (a named tenant
    gets 403, actors/http/auth.c): the operator manages every tenant's keys.
    The SQS door picks a new key up at its first use and a disabled one
    within SQS_KEYS_REFRESH_MS (actors/sqs/akeys.c).
    Sends     PG_EXEC sqs_key_create / sqs_key_disable to pg_writer,
              sqs_key_list to pg_reader
    Failure   bad bodies 400, a taken id 409, an unknown id 404, database
              trouble through qn_http_reply_pg_error; always JSON
*/
#include "actors/http/codec.h"
#include "actors/pg/statements.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_TENANT_MAX 64
#define S_ID_MAX     128
#define S_SECRET_MAX 128

//  "" or 1..64 of [A-Za-z0-9._-] (the tenant names of docs/tenancy.md).
static bool
s_name_ok (const char *s, size_t len, size_t max, bool empty_ok)
{
    if (len == 0)
        return empty_ok;
    if (len > max)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s [i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
              || c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

//  Printable ASCII without space or ':' (SQS_CREDENTIALS' separator).
static bool
s_secret_ok (const char *s, size_t len)
{
    if (len == 0 || len > S_SECRET_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (s [i] <= 0x20 || s [i] >= 0x7f || s [i] == ':')
            return false;
    return true;
}

//  An access key id like AWS's: "QNAK" and 16 of [A-Z2-7] (80 random bits).
static void
s_new_id (char out [21])
{
    static const char b32 [] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    memcpy (out, "QNAK", 4);
    for (int i = 0; i < 16; i++)
        out [4 + i] = b32 [randombytes_uniform (32)];
    out [20] = 0;
}

//  A secret of 40 characters (240 random bits, base64url).
static void
s_new_secret (char out [41])
{
    uint8_t raw [30];
    randombytes_buf (raw, sizeof raw);
    sodium_bin2base64 (out, 41, raw, sizeof raw, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero (raw, sizeof raw);
}

static const char *
s_cell (const qn_pg_result_t *res, uint32_t r, uint32_t c, size_t *len)
{
    const msgpack_object *o = qn_pg_result_col (res, r, c);
    *len = 0;
    if (o && o->type == MSGPACK_OBJECT_STR) {
        *len = o->via.str.size;
        return o->via.str.ptr;
    }
    return NULL;
}

static void
s_kstr_cell (qn_jw_t *w, const char *k, const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    size_t len;
    const char *p = s_cell (res, r, c, &len);
    qn_jw_key (w, k);
    if (p)
        qn_jw_strn (w, p, len);
    else
        qn_jw_null (w);
}

static void
s_reply_doc (qn_http_ctx_t *ctx, int status, qn_buf_t *b)
{
    qn_http_reply_json (ctx, status, b->data, b->len);
    qn_buf_free (b);
}

// ------------------------------------------------------------------ create
typedef struct {
    char secret [S_SECRET_MAX + 1];
} s_create_t;

static void
s_on_created (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    s_create_t *st = arg;
    if (ctx) {
        size_t len;
        const char *status = s_cell (res, 0, 0, &len);
        if (!res->ok)
            qn_http_reply_pg_error (ctx, res);
        else
        if (!res->row_count || !status)
            qn_http_reply_error (ctx, 500, "the database returned no row");
        else
        if (len == 6 && !memcmp (status, "exists", 6))
            qn_http_reply_error (ctx, 409, "accessKeyId already exists");
        else {
            qn_buf_t b = QN_BUF_INIT;
            qn_jw_t w;
            qn_jw_init (&w, &b);
            qn_jw_obj (&w);
            s_kstr_cell (&w, "accessKeyId", res, 0, 1);
            qn_jw_kstr (&w, "secretAccessKey", st->secret);
            s_kstr_cell (&w, "tenant", res, 0, 2);
            qn_jw_kbool (&w, "enabled", true);
            s_kstr_cell (&w, "createdAt", res, 0, 3);
            qn_jw_obj_end (&w);
            s_reply_doc (ctx, 201, &b);
        }
    }
    sodium_memzero (st->secret, sizeof st->secret);
    free (st);
}

//  A string member of the body: its value in out (NUL-terminated), absent
//  (1), or not a string / holding a NUL (-1).
static int
s_member (const qn_json_doc_t *doc, const char *key, qn_buf_t *out)
{
    int t = qn_json_get (doc, 0, key);
    if (t < 0)
        return 1;
    if (qn_json_type (doc, t) != QN_JSON_STRING || qn_json_str (doc, t, out) != 0)
        return -1;
    return 0;
}

static void
s_create (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    if (qn_http_parse_body (ctx, &doc)) {
        qn_json_doc_free (&doc);
        return;
    }
    qn_buf_t tenant = QN_BUF_INIT, id = QN_BUF_INIT, secret = QN_BUF_INIT;
    const char *err = NULL;
    int rt, ri = 1, rs = 1;
    if (qn_json_type (&doc, 0) != QN_JSON_OBJECT)
        err = "body must be a JSON object";
    else
    if ((rt = s_member (&doc, "tenant", &tenant)) != 0)
        err = "tenant (string) is required";
    else
    if (!s_name_ok (tenant.data? tenant.data: "", tenant.len, S_TENANT_MAX, true))
        err = "tenant must be \"\" or 1 to 64 of A-Z a-z 0-9 . _ -";
    else
    if ((ri = s_member (&doc, "accessKeyId", &id)) < 0
        || (ri == 0 && !s_name_ok (id.data, id.len, S_ID_MAX, false)))
        err = "accessKeyId must be 1 to 128 of A-Z a-z 0-9 . _ -";
    else
    if ((rs = s_member (&doc, "secretAccessKey", &secret)) < 0
        || (rs == 0 && !s_secret_ok (secret.data, secret.len)))
        err = "secretAccessKey must be 1 to 128 printable ASCII characters without space or ':'";
    qn_json_doc_free (&doc);
    if (err) {
        qn_http_reply_error (ctx, 400, err);
        qn_buf_free (&tenant);
        qn_buf_free (&id);
        if (secret.data)
            sodium_memzero (secret.data, secret.len);
        qn_buf_free (&secret);
        return;
    }
    char new_id [21];
    s_create_t *st = qn_zalloc (sizeof *st);
    if (ri != 0)
        s_new_id (new_id);
    if (rs != 0)
        s_new_secret (st->secret);
    else
        snprintf (st->secret, sizeof st->secret, "%s", secret.data);
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, ri != 0? new_id: id.data);
    qn_pg_args_cstr (&a, st->secret);
    qn_pg_args_cstr (&a, tenant.data? tenant.data: "");
    int rc = qn_codec_exec_args (codec, ctx, "pg_writer", QN_SQL_SQS_KEY_CREATE, NULL, &a,
                                 s_on_created, st);
    qn_pg_args_free (&a);
    qn_buf_free (&tenant);
    qn_buf_free (&id);
    if (secret.data)
        sodium_memzero (secret.data, secret.len);
    qn_buf_free (&secret);
    if (rc) {
        sodium_memzero (st->secret, sizeof st->secret);
        free (st);
        qn_http_reply_errorf (ctx, 503, "database unavailable: %s", qn_strerror (rc));
    }
}

// ------------------------------------------------------------------ list
static void
s_on_list (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    (void) arg;
    if (!ctx)
        return;
    if (!res->ok) {
        qn_http_reply_pg_error (ctx, res);
        return;
    }
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_key (&w, "keys");
    qn_jw_arr (&w);
    for (uint32_t r = 0; r < res->row_count; r++) {
        const msgpack_object *en = qn_pg_result_col (res, r, 2);
        qn_jw_obj (&w);
        s_kstr_cell (&w, "accessKeyId", res, r, 0);
        s_kstr_cell (&w, "tenant", res, r, 1);
        qn_jw_kbool (&w, "enabled", en && en->type == MSGPACK_OBJECT_BOOLEAN && en->via.boolean);
        s_kstr_cell (&w, "createdAt", res, r, 3);
        s_kstr_cell (&w, "disabledAt", res, r, 4);
        qn_jw_obj_end (&w);
    }
    qn_jw_arr_end (&w);
    qn_jw_obj_end (&w);
    s_reply_doc (ctx, 200, &b);
}

static void
s_list (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    size_t len = 0;
    const char *tenant = qn_url_param (&ctx->url, "tenant", &len);
    if (tenant && !s_name_ok (tenant, len, S_TENANT_MAX, true)) {
        qn_http_reply_error (ctx, 400, "tenant must be \"\" or 1 to 64 of A-Z a-z 0-9 . _ -");
        return;
    }
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, tenant);       //  NULL: every tenant
    int rc = qn_codec_exec_args (codec, ctx, "pg_reader", QN_SQL_SQS_KEY_LIST, NULL, &a,
                                 s_on_list, NULL);
    qn_pg_args_free (&a);
    if (rc)
        qn_http_reply_errorf (ctx, 503, "database unavailable: %s", qn_strerror (rc));
}

// ------------------------------------------------------------------ disable
static void
s_on_disabled (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    (void) arg;
    if (!ctx)
        return;
    if (!res->ok) {
        qn_http_reply_pg_error (ctx, res);
        return;
    }
    if (!res->row_count) {
        qn_http_reply_error (ctx, 404, "access key not found");
        return;
    }
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    s_kstr_cell (&w, "accessKeyId", res, 0, 0);
    s_kstr_cell (&w, "tenant", res, 0, 1);
    qn_jw_kbool (&w, "enabled", false);
    s_kstr_cell (&w, "disabledAt", res, 0, 2);
    qn_jw_obj_end (&w);
    s_reply_doc (ctx, 200, &b);
}

static void
s_disable (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    const char *id = qn_http_param (ctx, 0);
    if (!s_name_ok (id, strlen (id), S_ID_MAX, false)) {
        qn_http_reply_error (ctx, 404, "access key not found");
        return;
    }
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, id);
    int rc = qn_codec_exec_args (codec, ctx, "pg_writer", QN_SQL_SQS_KEY_DISABLE, NULL, &a,
                                 s_on_disabled, NULL);
    qn_pg_args_free (&a);
    if (rc)
        qn_http_reply_errorf (ctx, 503, "database unavailable: %s", qn_strerror (rc));
}

const qn_http_route_t qn_http_routes_sqs_keys [] = {
    { "POST", "/api/v1/system/sqs-keys", s_create, QN_AUTH_ADMIN },
    { "GET", "/api/v1/system/sqs-keys", s_list, QN_AUTH_ADMIN },
    { "POST", "/api/v1/system/sqs-keys/:id/disable", s_disable, QN_AUTH_ADMIN },
    { NULL, NULL, NULL, 0 }
};
