/*  actors/proxy/admin.c - the operator's routes of the proxy
    Part of the proxy actor (proxy_int.h). An operator key (a key of no
    tenant) reaches /proxy/v1/admin/... and nothing else: plans, tenants,
    their keys and users. The SQL functions of schema/proxy/ validate and
    answer in JSON (SQLSTATE QN4xx carries the HTTP status of a refusal);
    this file maps routes to them, makes the keys (a new key's secret is
    shown once and stored nowhere) and sends passwords to users.c. A
    change reloads the key table at once; a deleted tenant's or user's
    sessions end here at once.
    Receives  the PG_RESULTs of its calls (through qn_px_query)
    Sends     SELECTs of queen_proxy.admin_* (and key_revoke)
    Owns      nothing beyond a call's qn_px_keyop_t
    Failure   a body that is not a JSON object 400; the functions'
              refusals 4xx with their message; the store away 503 (logged
              with its SQLSTATE); never logs a key
*/
#include "actors/proxy/proxy_int.h"
#include "wire/json.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  The admin functions of schema/proxy/0002_plans_admin.sql validate and
//  answer in JSON; SQLSTATE QN4xx carries the HTTP status of a refusal.
void
qn_px_on_admin (qn_px_t *self, const qn_pg_result_t *res, void *arg)
{
    qn_px_keyop_t *op = arg;
    qn_px_req_t *req = qn_hashmap_get (self->reqs, op->req_id);
    const char *state = res->sqlstate;
    if (!req)
        ;
    else
    if (!res->ok) {
        const char *msg = res->message;
        if (state [0] == 'Q' && state [1] == 'N' && state [2] == '4' && state [3] && state [4])
            qn_px_req_error (self, req, 400 + (state [3] - '0') * 10 + (state [4] - '0'), msg);
        else
        if (!strncmp (state, "22", 2))
            qn_px_req_error (self, req, 400, "Request body must be a JSON object");
        else {
            char why [256];
            qn_pg_result_failed (res, why, sizeof why);
            qn_warn ("admin route failed: %s", why);
            qn_px_req_error (self, req, 503, "Proxy store unavailable");
        }
    }
    else {
        size_t len = 2;
        const char *json = res->row_count == 1 ? qn_px_col_str (res, 0, 0, &len) : "{}";
        qn_buf_t b = QN_BUF_INIT;
        if (op->with_key && len >= 2 && json [0] == '{' && json [1] != '}') {
            //  The key, shown once: its secret is in no table.
            qn_buf_printf (&b, "{\"key\": \"%s\", ", op->key.key);
            qn_buf_append (&b, json + 1, len - 1);
        }
        else
            qn_buf_append (&b, json, len);
        if (op->revoke)
            qn_px_key_drop (self, op->key.id);
        if (op->drop_tenant [0])
            qn_px_sessions_drop (self, op->drop_tenant, op->drop_user);
        qn_px_respond_json (self, req, op->ok_status, b.data, b.len, NULL);
        if (b.data)
            sodium_memzero (b.data, b.len);
        qn_buf_free (&b);
        qn_px_req_free (self, req);
        if (op->refresh)
            qn_px_keys_refresh (self);
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

void
qn_px_admin (qn_px_t *self, qn_px_req_t *req, const qn_pr_route_t *route, const qn_url_t *url)
{
    const char *pat = route->pattern, *m = req->method;
    char name [136] = "", id [136] = "";
    if (url->seg_count > 4)
        snprintf (name, sizeof name, "%s", url->segments [4]);
    if (url->seg_count > 6)
        snprintf (id, sizeof id, "%s", url->segments [6]);
    bool get = !strcmp (m, "GET"), post = !strcmp (m, "POST"), del = !strcmp (m, "DELETE");
    if (!get && !del && !s_json_object (req->body, req->body_len)) {
        qn_px_req_error (self, req, 400, "Request body must be a JSON object");
        return;
    }
    qn_px_keyop_t *op = qn_zalloc (sizeof *op);
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
    if (!strcmp (pat, "/proxy/v1/admin/tenants/:tenant/users")
    ||  (!strcmp (pat, "/proxy/v1/admin/tenants/:tenant/users/:user") && !del)) {
        free (op);
        qn_px_password_route (self, req, false, name, post ? NULL : id);
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
        qn_buf_t label = QN_BUF_INIT;
        const char *bad = NULL;
        op->role = QN_ROLE_ADMIN;
        qn_json_parse (&doc, req->body, req->body_len, 16);
        if (!tenant)
            bad = qn_px_key_fields (&doc, op, &label);
        qn_json_doc_free (&doc);
        int status = bad ? 400 : 0;
        if (!bad && qn_key_generate (&op->key))
            status = 500, bad = "Key generation failed";
        if (bad) {
            qn_px_req_error (self, req, status, bad);
            qn_buf_free (&label);
            free (op);
            return;
        }
        op->with_key = true;
        if (tenant) {
            const char *tp [3] = { req->body, op->key.id, op->key.hash };
            qn_px_query (self, "SELECT queen_proxy.admin_tenant_create ($1, $2, $3)", tp, 3, qn_px_on_admin, op);
        }
        else {
            const char *kp [5] = { name, op->key.id, qn_role_name (op->role), op->key.hash,
                                   label.len ? label.data : "" };
            qn_px_query (self, "SELECT queen_proxy.admin_key_create ($1, $2, $3, $4, $5)", kp, 5, qn_px_on_admin,
                         op);
        }
        qn_buf_free (&label);
        return;
    }
    qn_px_query (self, sql, p, n, qn_px_on_admin, op);
}
