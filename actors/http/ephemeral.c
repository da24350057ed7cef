/*  actors/http/ephemeral.c - the HTTP routes of the ephemeral queues
    (docs/ephemeral.md). The ephemeral table (actors/ephemeral/table.h)
    lives in codec_http's thread, as the park table does: each route is
    handed to it as a call [op, name, body, timeout_ms, subscriber, max,
    tenant] with the request's context id, and its answer [status, json]
    becomes the HTTP response, at once or when the waiting call is
    answered. No other actor and no database in the path. Names are per
    tenant: the call carries ctx->tenant, and the table scopes every queue
    and topic name (and every inbox) by it.
    Failure   a bad timeout or name is a 400 here; a client that leaves
              while its call waits is forgotten by the table at once
              (HTTP_CLOSED): a receive's taken messages go back to their
              queue, a request's inbox closes (a late reply gets 404)
*/
#include "actors/ephemeral/table.h"
#include "actors/http/state.h"
#include "wire/json.h"
#include "wire/msg_ephemeral.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_WAIT_DEFAULT_MS 30000

//  The table's answer to the call of context corr (def->answer of the
//  codec's table, codec.c).
void
qn_http_eph_answer (void *codec, const char *reply_to, uint64_t corr, int status, const char *json,
                    size_t len)
{
    (void) reply_to;
    qn_http_ctx_t *ctx = qn_codec_request (codec, corr);
    if (!ctx)
        return;                 //  Gone: the table was told (on_cancel) and never answers it
    ctx->on_cancel = NULL;
    ctx->state = NULL;
    if (status == 204)
        qn_http_reply_empty (ctx, 204);
    else
        qn_http_reply_json (ctx, status, json, len);
}

//  The client left while its call waits in the table.
static void
s_on_cancel (qn_http_ctx_t *ctx)
{
    void *handle = ctx->state;
    ctx->state = NULL;
    qn_eph_cancel (qn_codec_eph (ctx->codec), handle);
}

static void
s_call (qn_codec_t *codec, qn_http_ctx_t *ctx, const char *op, bool named)
{
    const char *name = named ? qn_http_param (ctx, 0) : "";
    if (named && !qn_hs_name_ok (ctx, "name", name, strlen (name), false))
        return;
    int64_t timeout = 0;
    bool present = false;
    int64_t max_wait = qn_codec_config (codec)->max_wait_ms;
    if (!qn_hs_query_int (ctx, "timeout", 0, max_wait, &timeout, &present))
        return;
    if (!present)
        timeout = S_WAIT_DEFAULT_MS;
    int64_t max = 0;
    if (!qn_hs_query_int (ctx, "max", 1, 1000, &max, &present))
        return;
    size_t sub_len = 0;
    bool ok = true;
    const char *sub = qn_hs_query_text (ctx, "subscriber", &sub_len, &ok);
    if (!ok)
        return;
    qn_msg_eph_call_t m = {
        .op = { op, strlen (op) }, .name = { name, strlen (name) },
        .body = { ctx->body, ctx->body_len }, .query = { sub, sub ? sub_len : 0 },
        .tenant = { ctx->tenant, strlen (ctx->tenant) }, .timeout_ms = timeout, .max = max
    };
    //  Answered (and ctx freed) inside the call, or a handle of the wait.
    void *waits = qn_eph_call (qn_codec_eph (codec), &m, "", ctx->id);
    if (waits) {
        ctx->state = waits;     //  Not owned: the table's (state_free stays NULL)
        ctx->on_cancel = s_on_cancel;
    }
}

#define S_ROUTE(fn, op, named) \
    static void fn (qn_codec_t *codec, qn_http_ctx_t *ctx) { s_call (codec, ctx, op, named); }
S_ROUTE (s_configure, "configure", true)
S_ROUTE (s_send, "send", true)
S_ROUTE (s_receive, "receive", true)
S_ROUTE (s_request, "request", true)
S_ROUTE (s_reply, "reply", false)
S_ROUTE (s_subscribe, "subscribe", true)
S_ROUTE (s_subscribers, "subscribers", true)
S_ROUTE (s_publish, "publish", true)
S_ROUTE (s_poll, "poll", true)
S_ROUTE (s_stats, "stats", false)

const qn_http_route_t qn_http_routes_ephemeral [] = {
    { "POST", "/api/v1/ephemeral/queues/:name", s_configure, QN_AUTH_ADMIN },
    { "POST", "/api/v1/ephemeral/queues/:name/send", s_send, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/ephemeral/queues/:name/receive", s_receive, QN_AUTH_READ_WRITE },
    { "POST", "/api/v1/ephemeral/queues/:name/request", s_request, QN_AUTH_READ_WRITE },
    { "POST", "/api/v1/ephemeral/reply", s_reply, QN_AUTH_READ_WRITE },
    { "POST", "/api/v1/ephemeral/topics/:name/subscribe", s_subscribe, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/ephemeral/topics/:name/subscribers", s_subscribers, QN_AUTH_READ_ONLY },
    { "POST", "/api/v1/ephemeral/topics/:name/publish", s_publish, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/ephemeral/topics/:name/poll", s_poll, QN_AUTH_READ_WRITE },
    { "GET", "/api/v1/ephemeral/stats", s_stats, QN_AUTH_READ_ONLY },
    { NULL, NULL, NULL, 0 }
};
