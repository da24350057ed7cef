/*  actors/proxy/limits.c - the proxy's plan limits and usage metering
    Part of the proxy actor (proxy_int.h). Per tenant, in this process's
    memory and exact: a request bucket and a message bucket
    (wire/token_bucket.h), the largest body and batch, the long polls in
    flight; the limits come from the plans of queen_proxy (refreshed every
    second with the key table, keys.c, and for tenants with no key yet
    through tenants_active). Every request of a tenant is metered
    (requests, bytes and messages in and out, refusals) and the figures
    are added to queen_proxy.usage every PROXY_USAGE_FLUSH_MS and at
    shutdown. GET /proxy/v1/usage answers the flushed figures plus this
    proxy's unflushed ones.
    Receives  the PG_RESULTs of its calls (through qn_px_query)
    Sends     SELECTs of queen_proxy.usage_add and usage_total
    Owns      the tenant table (self->tenants: limits, buckets, usage)
    Failure   a refused request is 413 or 429 (with Retry-After); a failed
              flush keeps its figures for the next one (at shutdown it is
              logged and they are lost); usage answers 503 without its store
*/
#include "actors/proxy/proxy_int.h"
#include "wire/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

qn_px_tenant_t *
qn_px_tenant (qn_px_t *self, const char *name)
{
    qn_px_tenant_t *t = qn_hashmap_get (self->tenants, qn_px_hash (name));
    if (t && !strcmp (t->name, name))
        return t;
    t = qn_zalloc (sizeof *t);
    snprintf (t->name, sizeof t->name, "%s", name);
    qn_hashmap_put (self->tenants, qn_px_hash (name), t);
    return t;
}

int64_t
qn_px_count_items (const char *body, size_t len, const char *member)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    int64_t n = 0;
    if (len && qn_json_parse (&doc, body, len, 64) == 0 && qn_json_type (&doc, 0) == QN_JSON_OBJECT) {
        int t = qn_json_get (&doc, 0, member);
        if (t >= 0 && qn_json_type (&doc, t) == QN_JSON_ARRAY)
            n = qn_json_size (&doc, t);
    }
    qn_json_doc_free (&doc);
    return n;
}

int
qn_px_limits_check (qn_px_t *self, qn_px_req_t *req, const qn_pr_route_t *route,
                    const char **refuse, char *retry_after, size_t retry_len)
{
    //  Plan limits, in-process and exact; every refusal is metered.
    qn_px_tenant_t *t = qn_px_tenant (self, req->tenant);
    t->usage.requests++;
    t->usage.bytes_in += (int64_t) req->body_len;
    int64_t wait_ms = 0, items = 0;
    int status = 0;
    req->is_pop = route->kind == QN_PR_FORWARD && route->pattern && !strncmp (route->pattern, "/api/v1/pop", 11);
    if (route->kind == QN_PR_FORWARD && !strcmp (route->pattern, "/api/v1/push"))
        items = qn_px_count_items (req->body, req->body_len, "items");
    int64_t now_us = qn_now_ms () * 1000;
    if (t->max_body_bytes && (int64_t) req->body_len > t->max_body_bytes)
        status = 413, *refuse = "Payload exceeds the plan's limit";
    else
    if (t->max_batch && items > t->max_batch)
        status = 413, *refuse = "Batch exceeds the plan's limit";
    else
    if (!qn_bucket_take (&t->requests, now_us, 1, &wait_ms))
        status = 429, *refuse = "Request rate limit exceeded";
    else
    if (items && !qn_bucket_take (&t->messages, now_us, (double) items, &wait_ms))
        status = items > t->messages.burst ? 413 : 429,
        *refuse = items > t->messages.burst ? "Batch exceeds the plan's message rate"
                                            : "Message rate limit exceeded";
    else
    if (req->is_pop && t->max_long_polls && t->polls >= t->max_long_polls)
        status = 429, *refuse = "Long-poll limit exceeded", wait_ms = 1000;
    else {
        t->usage.messages_in += items;
        if (req->is_pop)
            t->polls++, req->poll_counted = true;
    }
    if (status)
        t->usage.refused++;
    if (status == 429)
        snprintf (retry_after, retry_len, "Retry-After: %lld\r\n", (long long) ((wait_ms + 999) / 1000));
    return status;
}

void
qn_px_tenant_limits (qn_px_tenant_t *t, const qn_pg_result_t *res, uint32_t r, uint32_t first)
{
    double rps = (double) qn_px_col_int (res, r, first);
    double mps = (double) qn_px_col_int (res, r, first + 1);
    qn_bucket_set (&t->requests, rps, rps);
    qn_bucket_set (&t->messages, mps, mps);
    t->max_body_bytes = qn_px_col_int (res, r, first + 2);
    t->max_batch = qn_px_col_int (res, r, first + 3);
    t->max_long_polls = qn_px_col_int (res, r, first + 4);
}

static void
s_tenant_inactive (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    ((qn_px_tenant_t *) value)->active = false;
}

//  Limits of enabled tenants, keys or not (users are held to them too):
//  [tenant, requests_per_s, messages_per_s, max_body_bytes, max_batch,
//   max_long_polls].
void
qn_px_on_tenants (qn_px_t *self, const qn_pg_result_t *res, void *arg)
{
    (void) arg;
    if (!res->ok)
        return;
    qn_hashmap_each (self->tenants, s_tenant_inactive, NULL);
    for (uint32_t r = 0; r < res->row_count; r++) {
        char name [QN_TENANT_MAX + 1];
        qn_px_col_text (res, r, 0, name, sizeof name);
        qn_px_tenant_t *t = qn_px_tenant (self, name);
        t->active = true;
        qn_px_tenant_limits (t, res, r, 1);
    }
}

// ------------------------------------------------------------------ usage metering
typedef struct {
    char tenant [QN_TENANT_MAX + 1];
    qn_px_usage_t usage;
    bool final;                 //  At shutdown: nothing is kept back
} s_flush_t;

static bool
s_usage_empty (const qn_px_usage_t *u)
{
    return !u->requests && !u->messages_in && !u->messages_out && !u->bytes_in && !u->bytes_out
        && !u->refused;
}

static void
s_usage_add (qn_px_usage_t *to, const qn_px_usage_t *from)
{
    to->requests += from->requests;
    to->messages_in += from->messages_in;
    to->messages_out += from->messages_out;
    to->bytes_in += from->bytes_in;
    to->bytes_out += from->bytes_out;
    to->refused += from->refused;
}

//  A failed flush puts its figures back, so the next one carries them.
static void
s_on_flushed (qn_px_t *self, const qn_pg_result_t *res, void *arg)
{
    s_flush_t *f = arg;
    char why [256];
    if (qn_pg_result_failed (res, why, sizeof why) && f->final)
        qn_warn ("usage not written at shutdown: tenant=%s error=%s", f->tenant, why);
    else
    if (!res->ok) {
        qn_warn ("usage not written, kept for the next flush: tenant=%s", f->tenant);
        s_usage_add (&qn_px_tenant (self, f->tenant)->usage, &f->usage);
    }
    free (f);
}

typedef struct {
    qn_px_t *self;
    bool final;
} s_flush_walk_t;

static void
s_flush_each (void *arg, uint64_t key, void *value)
{
    (void) key;
    s_flush_walk_t *walk = arg;
    qn_px_tenant_t *t = value;
    if (s_usage_empty (&t->usage))
        return;
    s_flush_t *f = qn_zalloc (sizeof *f);
    snprintf (f->tenant, sizeof f->tenant, "%s", t->name);
    f->usage = t->usage;
    f->final = walk->final;
    memset (&t->usage, 0, sizeof t->usage);
    const qn_px_usage_t *u = &f->usage;
    const int64_t n [6] = { u->requests, u->messages_in, u->messages_out, u->bytes_in, u->bytes_out,
                            u->refused };
    char v [6][24];
    const char *p [7] = { f->tenant };
    for (int i = 0; i < 6; i++) {
        snprintf (v [i], sizeof v [i], "%lld", (long long) n [i]);
        p [i + 1] = v [i];
    }
    qn_px_query (walk->self, "SELECT queen_proxy.usage_add ($1, $2, $3, $4, $5, $6, $7)", p, 7,
                 s_on_flushed, f);
}

void
qn_px_flush (qn_px_t *self, bool final)
{
    self->flushed_ms = qn_now_ms ();
    s_flush_walk_t walk = { self, final };
    qn_hashmap_each (self->tenants, s_flush_each, &walk);
}

// ------------------------------------------------------------------ GET /proxy/v1/usage
//  Flushed figures plus this proxy's unflushed ones.
static void
s_on_usage (qn_px_t *self, const qn_pg_result_t *res, void *arg)
{
    qn_px_keyop_t *op = arg;
    qn_px_req_t *req = qn_px_req_of_result (self, op->req_id, res, true, "Usage store unavailable");
    if (req) {
        const qn_px_usage_t *u = &qn_px_tenant (self, req->tenant)->usage;
        const char *names [6] = { "requests", "messagesIn", "messagesOut", "bytesIn", "bytesOut", "refused" };
        const int64_t mem [6] = { u->requests, u->messages_in, u->messages_out, u->bytes_in,
                                  u->bytes_out, u->refused };
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_obj (&w);
        qn_jw_kstr (&w, "tenant", req->tenant);
        for (uint32_t i = 0; i < 6; i++)
            qn_jw_kint (&w, names [i], qn_px_col_int (res, 0, i) + mem [i]);
        qn_jw_obj_end (&w);
        qn_px_respond_json (self, req, 200, b.data, b.len, NULL);
        qn_buf_free (&b);
        qn_px_req_free (self, req);
    }
    free (op);
}

void
qn_px_usage_route (qn_px_t *self, qn_px_req_t *req)
{
    qn_px_keyop_t *op = qn_zalloc (sizeof *op);
    op->req_id = req->id;
    const char *p [1] = { req->tenant };
    qn_px_query (self, "SELECT requests, messages_in, messages_out, bytes_in, bytes_out, refused"
                       " FROM queen_proxy.usage_total ($1)", p, 1, s_on_usage, op);
}
