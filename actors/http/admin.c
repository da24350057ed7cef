/*  actors/http/admin.c - the admin and read API (spec 3.14-3.19)
    Resources, messages, dead letters, consumer groups, statistics, status
    and analytics. None of it is the hot path: every route is one plpgsql
    function queen.api_<name> (schema/020_admin.sql) that builds the exact
    JSON of the contract and returns (status, body). This file only
    validates the request and maps path parameters, query parameters and
    body fields to the function's arguments, driven by one table row per
    route; the SQL text comes from the table, never from the client.
    The arguments are checked and turned into SQL parameters in
    actors/http/admin_args.c (admin.h).
    Receives  routed requests from codec_http
    Sends     QN_MSG_PG_EXEC (raw statement, text parameters) to pg_reader
              for reads and to pg_writer for writes; "committed" events
              after writes that make messages deliverable again; "group"
              events (QN_MSG_MESH_GROUP) after a consumer group is deleted
              or sought, which the mesh sends to the peers as GROUP hints
    Owns      nothing beyond one request's call state
    Failure   bad input gets a 400 naming the field before any SQL runs;
              database errors map through qn_http_reply_pg_error
*/
#include "actors/http/admin.h"
#include "actors/mesh/mesh.h"
#include "actors/pg/statements.h"
#include "wire/crypto.h"
#include "wire/ids.h"
#include "wire/json_compact.h"
#include "wire/mesh.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const qn_ha_api_t *api;     //  Not owned (static)
    char *wake_queue;           //  Owned, or NULL
    char *group;                //  Owned, or NULL
} s_call_t;

// ------------------------------------------------------------------ calling
//  Members whose value is a stored payload, returned byte-for-byte as
//  pushed: the message read route's "payload", the dead letters' "data".
static const char *const s_payload_members [] = { "payload", "data", NULL };

//  The function's (status, body) row becomes the answer; a 2xx of a
//  waking route publishes "committed" for its queue first.
static void
s_on_result (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    s_call_t *call = arg;
    if (ctx) {
        const msgpack_object *row = res->row_count ? &res->rows [0] : NULL;
        if (!res->ok)
            qn_http_reply_pg_error (ctx, res);
        else
        if (!row || row->type != MSGPACK_OBJECT_ARRAY || row->via.array.size != 2
        ||  row->via.array.ptr [0].type != MSGPACK_OBJECT_POSITIVE_INTEGER
        ||  row->via.array.ptr [1].type != MSGPACK_OBJECT_STR)
            qn_http_reply_error (ctx, 500, "malformed admin function result");
        else {
            int status = (int) row->via.array.ptr [0].via.u64;
            const msgpack_object *body = &row->via.array.ptr [1];
            if (status >= 200 && status < 300 && call->wake_queue)
                qn_codec_committed (codec, ctx->tenant, call->wake_queue, strlen (call->wake_queue));
            //  Peers drop what they cache of the group (docs/mesh.md).
            if (status >= 200 && status < 300 && call->group)
                qn_mesh_group_publish (qn_codec_kernel (codec), ctx->tenant, call->wake_queue, call->group,
                                       call->api->group);
            //  PostgreSQL's json spelling becomes the broker's compact one;
            //  stored payloads go out as they were pushed.
            qn_buf_t b = QN_BUF_INIT;
            if (qn_json_compact (body->via.str.ptr, body->via.str.size, s_payload_members, &b))
                qn_http_reply_error (ctx, 500, "malformed admin function result");
            else {
                if (status == 200 && call->api->post)
                    call->api->post (codec, &b);
                qn_http_reply_json (ctx, status, b.data, b.len);
            }
            qn_buf_free (&b);
        }
    }
    free (call->wake_queue);
    free (call->group);
    free (call);
}

//  Builds "SELECT status, body::text FROM queen.<fn> ($1::text, ...)".
static void
s_sql (qn_buf_t *sql, const qn_ha_api_t *api, const qn_ha_req_t *req)
{
    qn_buf_printf (sql, "SELECT status, body::text FROM queen.%s (", api->fn);
    for (int i = 0; i < req->n; i++)
        qn_buf_printf (sql, "%s$%d::%s", i ? ", " : "", i + 1, req->casts [i]);
    qn_buf_puts (sql, ")");
}

//  The parameters: text values and NULLs.
static void
s_params (qn_pg_args_t *args, const qn_ha_req_t *req)
{
    for (int i = 0; i < req->n; i++)
        qn_pg_args_cstr (args, req->vals [i]);
}

//  The generic handler: body, arguments, one call, one answer.
static void
s_run (qn_codec_t *codec, qn_http_ctx_t *ctx, const qn_ha_api_t *api)
{
    qn_ha_req_t req;
    memset (&req, 0, sizeof req);
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    bool have_doc = false;
    qn_buf_t tmp = QN_BUF_INIT;
    if (api->body == QN_HA_BODY_REQUIRED || (api->body == QN_HA_BODY_OPTIONAL && ctx->body_len)) {
        if (qn_http_parse_body (ctx, &doc))
            goto done;              //  Answered
        if (qn_json_type (&doc, 0) != QN_JSON_OBJECT) {
            qn_http_reply_error (ctx, 400, "request body must be a JSON object");
            goto done;
        }
        have_doc = true;
    }
    qn_ha_emit (&req, ctx->tenant, strlen (ctx->tenant), "text");
    for (int i = 0; i < QN_HA_MAX_ARGS && api->args [i].type; i++) {
        int first = req.n;
        if (qn_ha_arg (ctx, &req, &api->args [i], have_doc ? &doc : NULL, &tmp))
            goto done;
        if (api->wake == i + 1 && req.vals [first])
            req.wake_queue = qn_strdup (req.vals [first]);
        if (api->group && i == 0 && req.vals [first])
            req.group = qn_strdup (req.vals [first]);
    }
    qn_buf_t sql = QN_BUF_INIT;
    s_sql (&sql, api, &req);
    qn_pg_args_t params;
    qn_pg_args_init (&params);
    s_params (&params, &req);
    s_call_t *call = qn_zalloc (sizeof *call);
    call->api = api;
    call->wake_queue = req.wake_queue;
    req.wake_queue = NULL;
    call->group = req.group;
    req.group = NULL;
    int rc = qn_codec_exec_args (codec, ctx, api->write ? "pg_writer" : "pg_reader", QN_SQL_RAW,
                                 sql.data, &params, s_on_result, call);
    if (rc) {
        free (call->wake_queue);
        free (call->group);
        free (call);
        qn_http_reply_error (ctx, 503, "database unavailable");
    }
    qn_pg_args_free (&params);
    qn_buf_free (&sql);
done:
    qn_buf_free (&tmp);
    qn_json_doc_free (&doc);
    qn_ha_req_free (&req);
}

// ------------------------------------------------------------------ decryption
//  The message read route: an encrypted payload goes out decrypted (spec
//  2.10) with the key ring of QUEEN_ENCRYPTION_KEY and
//  QUEEN_ENCRYPTION_OLD_KEYS. One that does not decrypt (no such key,
//  altered) stays in its stored, encrypted form, with `isEncrypted: true`
//  and a `decryptionError` member saying why: never garbage.
static void
s_post_message (qn_codec_t *codec, qn_buf_t *body)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    bool enc = false;
    if (qn_json_parse (&doc, body->data, body->len, 64) == 0
    &&  qn_json_type (&doc, 0) == QN_JSON_OBJECT
    &&  qn_json_bool (&doc, qn_json_get (&doc, 0, "isEncrypted"), &enc) == 0 && enc) {
        const qn_config_t *cfg = qn_codec_config (codec);
        qn_crypto_keys_t *ring = qn_crypto_keys_new ();
        qn_crypto_keys_load (ring, cfg->queen_encryption_key, cfg->queen_encryption_old_keys, NULL, 0);
        size_t len;
        const char *raw = qn_json_raw (&doc, qn_json_get (&doc, 0, "payload"), &len);
        qn_buf_t plain = QN_BUF_INIT, out = QN_BUF_INIT;
        char why [256] = "payload missing";
        if (raw && qn_crypto_open_json (ring, raw, len, &plain, why, sizeof why) == 0) {
            qn_buf_append (&out, body->data, (size_t) (raw - body->data));
            qn_buf_append (&out, plain.data, plain.len);
            qn_buf_append (&out, raw + len, body->len - (size_t) (raw + len - body->data));
        }
        else {
            //  Insert the reason before the closing brace of the object.
            qn_warn ("payload not decrypted: sent as stored: reason=%s", why);
            size_t end = doc.toks [0].start + doc.toks [0].len - 1;
            qn_buf_append (&out, body->data, end);
            qn_buf_puts (&out, ",\"decryptionError\":");
            qn_jw_t w;
            qn_jw_init (&w, &out);
            qn_jw_str (&w, why);
            qn_buf_append (&out, body->data + end, body->len - end);
        }
        qn_buf_free (body);
        *body = out;
        qn_buf_free (&plain);
        qn_crypto_keys_destroy (&ring);
    }
    qn_json_doc_free (&doc);
}

// ------------------------------------------------------------------ the routes
//  Argument shorthands.
#define P_NAME(i, n)        { .type = QN_HA_NAME, .src = QN_HA_PATH, .index = i, .name = n, .required = true }
#define Q_NAME(n)           { .type = QN_HA_NAME, .src = QN_HA_QUERY, .name = n }
#define Q_TS(n)             { .type = QN_HA_TS, .src = QN_HA_QUERY, .name = n }
#define Q_LIMIT(d)          { .type = QN_HA_INT, .src = QN_HA_QUERY, .name = "limit", .min = 1, .max = QN_HA_LIMIT_MAX, .dflt = d }
#define Q_OFFSET            { .type = QN_HA_INT, .src = QN_HA_QUERY, .name = "offset", .min = 0, .max = QN_HA_OFFSET_MAX, .dflt = "0" }
#define Q_DELETE_META       { .type = QN_HA_BOOL, .src = QN_HA_QUERY, .name = "deleteMetadata", .dflt = "true" }
#define CONST(v)            { .type = QN_HA_CONST, .choices = v }

//  Defines the handler `name` for the route spec given as designated
//  initializers of qn_ha_api_t.
#define S_API(name, ...) \
    static const qn_ha_api_t name##_api = { __VA_ARGS__ }; \
    static void name (qn_codec_t *codec, qn_http_ctx_t *ctx) { s_run (codec, ctx, &name##_api); }

//  Resources (3.14)
S_API (s_overview, .fn = "api_overview")
S_API (s_queues, .fn = "api_queues")
S_API (s_queue, .fn = "api_queue", .args = { P_NAME (0, "queue") })
S_API (s_queue_delete, .fn = "api_queue_delete", .write = true, .args = { P_NAME (0, "queue") })
S_API (s_partition_delete, .fn = "api_partition_delete", .write = true,
       .args = { P_NAME (0, "queue"), P_NAME (1, "partition") })
//  Dashboard reads (schema/functions/66_stats.sql): O(partitions), paged
S_API (s_queue_summaries, .fn = "api_queue_summaries")
S_API (s_queue_partitions, .fn = "api_queue_partitions",
       .args = { P_NAME (0, "queue"), Q_NAME ("search"), Q_NAME ("after"), Q_LIMIT ("50") })
S_API (s_queue_messages, .fn = "api_queue_messages",
       .args = { P_NAME (0, "queue"), Q_NAME ("partition"), Q_TS ("from"), Q_TS ("to"),
                 { .type = QN_HA_NAME, .src = QN_HA_QUERY, .name = "cursor", .max = 20 + QN_HA_NAME_MAX },
                 Q_LIMIT ("50") })
S_API (s_kv_buckets, .fn = "api_kv_buckets", .args = { Q_NAME ("after"), Q_LIMIT ("100") })
S_API (s_dead_letters, .fn = "api_dead_letters",
       .args = { Q_NAME ("queue"), Q_NAME ("consumerGroup"), Q_NAME ("partition"), Q_TS ("from"), Q_TS ("to"),
                 { .type = QN_HA_NAME, .src = QN_HA_QUERY, .name = "cursor", .max = 40 },
                 { .type = QN_HA_INT, .src = QN_HA_QUERY, .name = "limit", .min = 1, .max = 1000, .dflt = "100" } })
S_API (s_streams, .fn = "api_streams")
S_API (s_namespaces, .fn = "api_namespaces")
S_API (s_tasks, .fn = "api_tasks")

//  Messages (3.15)
S_API (s_messages, .fn = "api_messages",
       .args = { Q_NAME ("queue"), Q_NAME ("partition"), Q_NAME ("ns"), Q_NAME ("task"),
                 { .type = QN_HA_ENUM, .src = QN_HA_QUERY, .name = "status",
                   .choices = "pending|processing|completed|dead_letter" },
                 Q_TS ("from"), Q_TS ("to"), Q_LIMIT ("200"), Q_OFFSET })
S_API (s_message, .fn = "api_message", .post = s_post_message,
       .args = { { .type = QN_HA_PARTITION_ID, .src = QN_HA_PATH, .index = 0, .name = "partitionId", .required = true },
                 { .type = QN_HA_TXN, .src = QN_HA_PATH, .index = 1, .name = "transactionId", .required = true } })
S_API (s_message_delete, .fn = "api_message_delete", .write = true,
       .args = { { .type = QN_HA_PARTITION_ID, .src = QN_HA_PATH, .index = 0, .name = "partitionId", .required = true },
                 { .type = QN_HA_TXN, .src = QN_HA_PATH, .index = 1, .name = "transactionId", .required = true } })

//  Dead letters (3.16 and the replay extension)
S_API (s_dlq, .fn = "api_dlq",
       .args = { Q_NAME ("queue"), Q_NAME ("consumerGroup"), Q_NAME ("partition"), Q_TS ("from"),
                 Q_TS ("to"), Q_LIMIT ("100"), Q_OFFSET })
S_API (s_dlq_requeue, .fn = "api_dlq_requeue", .write = true, .body = QN_HA_BODY_REQUIRED, .wake = 1,
       .args = { { .type = QN_HA_NAME, .src = QN_HA_BODY, .name = "queue", .required = true },
                 { .type = QN_HA_NAME, .src = QN_HA_BODY, .name = "consumerGroup" },
                 { .type = QN_HA_NAME, .src = QN_HA_BODY, .name = "partition" },
                 { .type = QN_HA_IDS, .src = QN_HA_BODY, .name = "ids" } })
S_API (s_dlq_delete, .fn = "api_dlq_delete", .write = true, .body = QN_HA_BODY_OPTIONAL,
       .args = { { .type = QN_HA_NAME, .src = QN_HA_ANY, .name = "queue", .required = true },
                 { .type = QN_HA_NAME, .src = QN_HA_ANY, .name = "consumerGroup" },
                 { .type = QN_HA_NAME, .src = QN_HA_ANY, .name = "partition" },
                 { .type = QN_HA_IDS, .src = QN_HA_ANY, .name = "ids" } })

//  Consumer groups (3.19)
S_API (s_groups, .fn = "api_groups")
S_API (s_groups_lagging, .fn = "api_groups_lagging",
       .args = { { .type = QN_HA_INT, .src = QN_HA_QUERY, .name = "minLagSeconds", .min = 0, .max = INT32_MAX,
                   .dflt = "3600" } })
S_API (s_group, .fn = "api_group", .args = { P_NAME (0, "group") })
S_API (s_group_delete, .fn = "api_group_delete", .write = true, .group = QN_MESH_GROUP_DELETED,
       .args = { P_NAME (0, "group"), Q_DELETE_META })
S_API (s_group_subscription, .fn = "api_group_subscription", .write = true, .body = QN_HA_BODY_REQUIRED,
       .args = { P_NAME (0, "group"),
                 { .type = QN_HA_TS_SENT, .src = QN_HA_BODY, .name = "subscriptionTimestamp", .required = true,
                   .missing = "Missing subscriptionTimestamp in request body" } })
S_API (s_group_queue_delete, .fn = "api_group_queue_delete", .write = true, .wake = 2,
       .group = QN_MESH_GROUP_DELETED,
       .args = { P_NAME (0, "group"), P_NAME (1, "queue"), Q_DELETE_META })
S_API (s_group_seek, .fn = "api_group_seek", .write = true, .body = QN_HA_BODY_REQUIRED, .wake = 2,
       .group = QN_MESH_GROUP_SOUGHT,
       .args = { P_NAME (0, "group"), P_NAME (1, "queue"),
                 { .type = QN_HA_BOOL, .src = QN_HA_BODY, .name = "toEnd" },
                 { .type = QN_HA_TS, .src = QN_HA_BODY, .name = "timestamp" } })
S_API (s_group_partition_seek, .fn = "api_group_partition_seek", .write = true,
       .body = QN_HA_BODY_OPTIONAL, .wake = 2, .group = QN_MESH_GROUP_SOUGHT,
       .args = { P_NAME (0, "group"), P_NAME (1, "queue"), P_NAME (2, "partition"),
                 { .type = QN_HA_OFFSET, .src = QN_HA_BODY, .name = "offset" },
                 { .type = QN_HA_TS, .src = QN_HA_BODY, .name = "timestamp" } })
S_API (s_stats_refresh, .fn = "api_stats_refresh", .write = true)

//  Status and analytics (3.18)
S_API (s_status, .fn = "api_status",
       .args = { Q_TS ("from"), Q_TS ("to"), Q_NAME ("queue"), Q_NAME ("namespace"), Q_NAME ("task") })
S_API (s_status_queues, .fn = "api_status_queues",
       .args = { Q_NAME ("namespace"), Q_NAME ("task"), Q_LIMIT ("100"), Q_OFFSET })
S_API (s_status_queue, .fn = "api_status_queue", .args = { P_NAME (0, "queue") })
S_API (s_status_queue_messages, .fn = "api_status_queue_messages",
       .args = { P_NAME (0, "queue"), Q_LIMIT ("50"), Q_OFFSET })
S_API (s_status_analytics, .fn = "api_status_analytics",
       .args = { { .type = QN_HA_ENUM, .src = QN_HA_QUERY, .name = "interval", .choices = "minute|hour|day",
                   .dflt = "hour" },
                 Q_TS ("from"), Q_TS ("to"), Q_NAME ("queue"), Q_NAME ("namespace"), Q_NAME ("task") })
S_API (s_queue_lag, .fn = "api_analytics_queue_lag",
       .args = { Q_TS ("from"), Q_TS ("to"), Q_NAME ("queue") })
S_API (s_postgres_stats, .fn = "api_analytics_postgres_stats")
S_API (s_system_metrics, .fn = "api_analytics_empty",
       .args = { CONST ("system-metrics"), Q_TS ("from"), Q_TS ("to") })
S_API (s_worker_metrics, .fn = "api_analytics_empty",
       .args = { CONST ("worker-metrics"), Q_TS ("from"), Q_TS ("to") })
S_API (s_queue_ops, .fn = "api_analytics_empty",
       .args = { CONST ("queue-ops"), Q_TS ("from"), Q_TS ("to") })
S_API (s_parked_replicas, .fn = "api_analytics_empty",
       .args = { CONST ("queue-parked-replicas"), Q_TS ("from"), Q_TS ("to") })
S_API (s_retention, .fn = "api_analytics_empty",
       .args = { CONST ("retention"), Q_TS ("from"), Q_TS ("to") })

#define RO QN_AUTH_READ_ONLY
#define RW QN_AUTH_READ_WRITE
#define AD QN_AUTH_ADMIN

const qn_http_route_t qn_http_routes_admin [] = {
    { "GET",    "/api/v1/resources/overview", s_overview, RO },
    { "GET",    "/api/v1/resources/queues", s_queues, RO },
    { "GET",    "/api/v1/resources/queues/:queue", s_queue, RO },
    { "DELETE", "/api/v1/resources/queues/:queue", s_queue_delete, AD },
    { "DELETE", "/api/v1/resources/queues/:queue/partitions/:partition", s_partition_delete, AD },
    { "GET",    "/api/v1/resources/queue-summaries", s_queue_summaries, RO },
    { "GET",    "/api/v1/resources/queues/:queue/partitions", s_queue_partitions, RO },
    { "GET",    "/api/v1/resources/queues/:queue/messages", s_queue_messages, RO },
    { "GET",    "/api/v1/resources/kv-buckets", s_kv_buckets, RO },
    { "GET",    "/api/v1/resources/dead-letters", s_dead_letters, RO },
    { "GET",    "/api/v1/resources/streams", s_streams, RO },
    { "GET",    "/api/v1/resources/namespaces", s_namespaces, RO },
    { "GET",    "/api/v1/resources/tasks", s_tasks, RO },
    { "GET",    "/api/v1/messages", s_messages, RO },
    { "GET",    "/api/v1/messages/:partitionId/:transactionId", s_message, RO },
    { "DELETE", "/api/v1/messages/:partitionId/:transactionId", s_message_delete, RW },
    { "GET",    "/api/v1/dlq", s_dlq, RO },
    { "POST",   "/api/v1/dlq/requeue", s_dlq_requeue, RW },
    { "DELETE", "/api/v1/dlq", s_dlq_delete, AD },
    { "GET",    "/api/v1/consumer-groups", s_groups, RO },
    { "GET",    "/api/v1/consumer-groups/lagging", s_groups_lagging, RO },
    { "GET",    "/api/v1/consumer-groups/:group", s_group, RO },
    { "DELETE", "/api/v1/consumer-groups/:group", s_group_delete, AD },
    { "POST",   "/api/v1/consumer-groups/:group/subscription", s_group_subscription, RW },
    { "DELETE", "/api/v1/consumer-groups/:group/queues/:queue", s_group_queue_delete, AD },
    { "POST",   "/api/v1/consumer-groups/:group/queues/:queue/seek", s_group_seek, RW },
    { "POST",   "/api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek",
                s_group_partition_seek, RW },
    { "POST",   "/api/v1/stats/refresh", s_stats_refresh, AD },
    { "GET",    "/api/v1/status", s_status, RO },
    { "GET",    "/api/v1/status/queues", s_status_queues, RO },
    { "GET",    "/api/v1/status/queues/:queue", s_status_queue, RO },
    { "GET",    "/api/v1/status/queues/:queue/messages", s_status_queue_messages, RO },
    { "GET",    "/api/v1/status/analytics", s_status_analytics, RO },
    { "GET",    "/api/v1/analytics/queue-lag", s_queue_lag, RO },
    { "GET",    "/api/v1/analytics/postgres-stats", s_postgres_stats, RO },
    { "GET",    "/api/v1/analytics/system-metrics", s_system_metrics, RO },
    { "GET",    "/api/v1/analytics/worker-metrics", s_worker_metrics, RO },
    { "GET",    "/api/v1/analytics/queue-ops", s_queue_ops, RO },
    { "GET",    "/api/v1/analytics/queue-parked-replicas", s_parked_replicas, RO },
    { "GET",    "/api/v1/analytics/retention", s_retention, RO },
    { NULL, NULL, NULL, 0 }
};
