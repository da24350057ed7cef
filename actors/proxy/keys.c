/*  actors/proxy/keys.c - the proxy's key table and the tenant's key routes
    Part of the proxy actor (proxy_int.h). API keys (wire/proxy_keys.h:
    "qk_<id>_<secret>", Argon2id hash stored) live in queen_proxy.keys; the
    table in memory is reloaded every second (with the sessions, users.c,
    and the tenants' limits, limits.c), and changed at once by this
    proxy's own routes (other proxies follow within one refresh):
      GET    /proxy/v1/keys       the tenant's keys (never a secret)
      POST   /proxy/v1/keys       {"role", "label"}: a new key, shown once
      DELETE /proxy/v1/keys/:id   revokes it
    Receives  the PG_RESULTs of its calls (through qn_px_query)
    Sends     SELECTs of queen_proxy.keys_active2, sessions_active,
              tenants_active, key_create, key_revoke, keys_list
    Owns      the key table (self->keys; each key's hash)
    Failure   a failed refresh keeps the last table (logged); a route whose
              call fails answers 503 "Key store unavailable"; a bad body
              400; never logs a key or a hash
*/
#include "actors/proxy/proxy_int.h"
#include "wire/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
qn_px_key_free_each (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    qn_px_key_t *k = value;
    free (k->hash);
    free (k);
}

static void
s_keys_put (qn_hashmap_t *map, const char *id, const char *tenant, qn_role_t role, const char *hash)
{
    qn_px_key_t *k = qn_zalloc (sizeof *k);
    snprintf (k->id, sizeof k->id, "%s", id);
    snprintf (k->tenant, sizeof k->tenant, "%s", tenant);
    k->role = role;
    k->hash = qn_strdup (hash);
    qn_px_key_t *old = qn_hashmap_remove (map, qn_px_hash (id));
    if (old)
        qn_px_key_free_each (NULL, 0, old);
    qn_hashmap_put (map, qn_px_hash (id), k);
}

void
qn_px_key_drop (qn_px_t *self, const char *id)
{
    qn_px_key_t *k = qn_hashmap_remove (self->keys, qn_px_hash (id));
    if (k)
        qn_px_key_free_each (NULL, 0, k);
}

//  [id, tenant, role, hash, requests_per_s, messages_per_s,
//   max_body_bytes, max_batch, max_long_polls] per key.
static void
s_on_keys (qn_px_t *self, const qn_pg_result_t *res, void *arg)
{
    (void) arg;
    if (!res->ok) {
        qn_warn ("key table not refreshed (the last one stays in use)");
        return;
    }
    qn_hashmap_t *map = qn_hashmap_new ();
    for (uint32_t r = 0; r < res->row_count; r++) {
        char id [QN_KEY_ID_LEN + 1], tenant [QN_TENANT_MAX + 1], role [32], hash [QN_KEY_HASH_MAX];
        qn_px_col_text (res, r, 0, id, sizeof id);
        qn_px_col_text (res, r, 1, tenant, sizeof tenant);
        qn_px_col_text (res, r, 2, role, sizeof role);
        qn_px_col_text (res, r, 3, hash, sizeof hash);
        s_keys_put (map, id, tenant, qn_role_parse (role, strlen (role)), hash);
        qn_px_tenant_limits (qn_px_tenant (self, tenant), res, r, 4);
    }
    if (!self->keys_loaded)
        qn_info ("key table loaded: keys=%u", res->row_count);
    qn_hashmap_each (self->keys, qn_px_key_free_each, NULL);
    qn_hashmap_destroy (&self->keys);
    self->keys = map;
    self->keys_loaded = true;
}

void
qn_px_keys_refresh (qn_px_t *self)
{
    self->keys_asked_ms = qn_now_ms ();
    qn_px_query (self, "SELECT id, tenant, role, hash, requests_per_s, messages_per_s, max_body_bytes,"
                       " max_batch, max_long_polls FROM queen_proxy.keys_active2()", NULL, 0, s_on_keys, NULL);
    qn_px_query (self, "SELECT id, tenant, user_name, role, hash, expires_ms FROM queen_proxy.sessions_active()",
                 NULL, 0, qn_px_on_sessions, NULL);
    qn_px_query (self, "SELECT tenant, requests_per_s, messages_per_s, max_body_bytes, max_batch, max_long_polls"
                       " FROM queen_proxy.tenants_active()", NULL, 0, qn_px_on_tenants, NULL);
}

//  The key of a request: "Authorization: Bearer qk_..." or "X-API-Key".
const qn_px_key_t *
qn_px_authenticate (qn_px_t *self, const char *presented, size_t len)
{
    char id [QN_KEY_ID_LEN + 1];
    const char *secret;
    size_t slen;
    if (qn_key_parse (presented, len, id, &secret, &slen))
        return NULL;
    const qn_px_key_t *k = qn_hashmap_get (self->keys, qn_px_hash (id));
    if (!k || strcmp (k->id, id) || !qn_key_verify (k->hash, secret, slen))
        return NULL;
    return k;
}

const char *
qn_px_key_fields (qn_json_doc_t *doc, qn_px_keyop_t *op, qn_buf_t *label)
{
    qn_buf_t role = QN_BUF_INIT;
    const char *bad = NULL;
    int t;
    if ((t = qn_json_get (doc, 0, "role")) < 0 || qn_json_str (doc, t, &role)
    ||  (op->role = qn_role_parse (role.data, role.len)) == QN_ROLE_NONE)
        bad = "role must be one of admin, read-write, read-only, producer, consumer";
    else
    if ((t = qn_json_get (doc, 0, "label")) >= 0
    &&  (qn_json_str (doc, t, label) || label->len > 200))
        bad = "label must be a string of at most 200 bytes";
    qn_buf_free (&role);
    return bad;
}

// ------------------------------------------------------------------ /proxy/v1/keys
static void
s_on_key_created (qn_px_t *self, const qn_pg_result_t *res, void *arg)
{
    qn_px_keyop_t *op = arg;
    qn_px_req_t *req = qn_px_req_of_result (self, op->req_id, res, false, "Key store unavailable");
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
        qn_px_respond_json (self, req, 201, b.data, b.len, NULL);
        qn_buf_free (&b);
        qn_px_req_free (self, req);
    }
    memset (&op->key, 0, sizeof op->key);
    free (op);
}

static void
s_on_key_revoked (qn_px_t *self, const qn_pg_result_t *res, void *arg)
{
    qn_px_keyop_t *op = arg;
    qn_px_req_t *req = qn_px_req_of_result (self, op->req_id, res, false, "Key store unavailable");
    if (req) {
        const msgpack_object *o = qn_pg_result_col (res, 0, 0);
        bool revoked = res->row_count == 1 && o && o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean;
        if (!revoked)
            qn_px_req_error (self, req, 404, "Key not found");
        else {
            //  At once for this proxy; other proxies within one refresh.
            qn_px_key_drop (self, op->key.id);
            const char json [] = "{\"revoked\":true}";
            qn_px_respond_json (self, req, 200, json, sizeof json - 1, NULL);
            qn_px_req_free (self, req);
        }
    }
    free (op);
}

//  [id, role, label, created_at, revoked_at] per key.
static void
s_on_keys_listed (qn_px_t *self, const qn_pg_result_t *res, void *arg)
{
    qn_px_keyop_t *op = arg;
    qn_px_req_t *req = qn_px_req_of_result (self, op->req_id, res, false, "Key store unavailable");
    if (req) {
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_obj (&w);
        qn_jw_key (&w, "keys");
        qn_jw_arr (&w);
        for (uint32_t r = 0; r < res->row_count; r++) {
            static const char *const names [3] = { "id", "role", "label" };
            qn_jw_obj (&w);
            for (uint32_t c = 0; c < 3; c++) {
                size_t len;
                const char *v = qn_px_col_str (res, r, c, &len);
                qn_jw_key (&w, names [c]);
                qn_jw_strn (&w, v, len);
            }
            qn_jw_kbool (&w, "revoked", !qn_px_col_null (res, r, 4));
            qn_jw_obj_end (&w);
        }
        qn_jw_arr_end (&w);
        qn_jw_obj_end (&w);
        qn_px_respond_json (self, req, 200, b.data, b.len, NULL);
        qn_buf_free (&b);
        qn_px_req_free (self, req);
    }
    free (op);
}

void
qn_px_keys_route (qn_px_t *self, qn_px_req_t *req, const qn_url_t *url)
{
    qn_px_keyop_t *op = qn_zalloc (sizeof *op);
    op->req_id = req->id;
    if (!strcmp (req->method, "GET")) {
        const char *p [1] = { req->tenant };
        qn_px_query (self, "SELECT id, role, label, created_at, revoked_at FROM queen_proxy.keys_list ($1)",
                     p, 1, s_on_keys_listed, op);
        return;
    }
    if (!strcmp (req->method, "DELETE")) {
        snprintf (op->key.id, sizeof op->key.id, "%.*s", (int) url->seg_len [3], url->segments [3]);
        const char *p [2] = { req->tenant, op->key.id };
        qn_px_query (self, "SELECT queen_proxy.key_revoke ($1, $2)", p, 2, s_on_key_revoked, op);
        return;
    }
    //  POST /proxy/v1/keys {"role": "...", "label": "..."}
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    qn_buf_t label = QN_BUF_INIT;
    const char *bad = NULL;
    int status = 400;
    if (qn_json_parse (&doc, req->body, req->body_len, 8) || qn_json_type (&doc, 0) != QN_JSON_OBJECT)
        bad = "Request body must be a JSON object";
    else
        bad = qn_px_key_fields (&doc, op, &label);
    qn_json_doc_free (&doc);
    if (!bad && qn_key_generate (&op->key))
        status = 500, bad = "Key generation failed";
    if (bad) {
        qn_px_req_error (self, req, status, bad);
        qn_buf_free (&label);
        free (op);
        return;
    }
    const char *p [5] = { op->key.id, req->tenant, qn_role_name (op->role), op->key.hash,
                          label.len ? label.data : "" };
    qn_px_query (self, "SELECT queen_proxy.key_create ($1, $2, $3, $4, $5)", p, 5, s_on_key_created, op);
    qn_buf_free (&label);
}
