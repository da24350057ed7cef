/*  actors/http/admin.c - the admin and read API (spec 3.14-3.19)
    Resources, messages, dead letters, consumer groups, statistics, status
    and analytics. None of it is the hot path: every route is one plpgsql
    function queen.api_<name> (schema/020_admin.sql) that builds the exact
    JSON of the contract and returns (status, body). This file only
    validates the request and maps path parameters, query parameters and
    body fields to the function's arguments, driven by one table row per
    route; the SQL text comes from the table, never from the client.
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
#include "actors/http/codec.h"
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

#define S_MAX_ARGS      10
#define S_MAX_SQL       16      //  SQL parameters (an argument may bind two)
#define S_NAME_MAX      255     //  Names: queue, partition, group (spec 1.9)
#define S_TEXT_MAX      255     //  transactionId, enum values
#define S_MAX_IDS       10000
#define S_LIMIT_MAX     10000
#define S_OFFSET_MAX    INT32_MAX

typedef enum {
    S_PATH = 0,                 //  Path parameter `index`
    S_QUERY,                    //  Query parameter; empty = absent (spec 1.5)
    S_BODY,                     //  Member of the JSON body object; null = absent
    S_ANY                       //  Query parameter, else body member
} s_src_t;

typedef enum {
    S_NAME = 1,                 //  <= 255 bytes of UTF-8                -> text
    S_INT,                      //  integer in [min, max]                -> int
    S_BOOL,                     //  boolean                              -> bool
    S_TS,                       //  ISO-8601 timestamp                   -> timestamptz
    S_TS_SENT,                  //  timestamp: text as sent, and parsed  -> text, timestamptz
    S_ENUM,                     //  one of `choices` ("a|b")             -> text
    S_PARTITION_ID,             //  partition UUID (-1: not one of ours) -> bigint
    S_TXN,                      //  transactionId, and its seq when it
                                //  is a message id                      -> text, bigint
    S_IDS,                      //  message / dead-letter ids            -> bigint[], bigint[]
    S_OFFSET,                   //  message id or offset number          -> bigint
    S_CONST                     //  the fixed text `choices`             -> text
} s_type_t;

typedef struct {
    s_type_t type;
    s_src_t src;
    const char *name;           //  Query / body key; the path parameter's name
    int index;                  //  S_PATH: parameter index
    bool required;
    int64_t min, max;           //  S_INT bounds; S_NAME: max bytes when > 0 (else 255)
    const char *dflt;           //  Value when absent ("200", "true", "hour"); NULL = SQL NULL
    const char *choices;        //  S_ENUM choices; S_CONST value
    const char *missing;        //  Error when required and absent
} s_arg_t;

typedef enum { S_NO_BODY = 0, S_BODY_OPTIONAL, S_BODY_REQUIRED } s_body_t;

//  Rewrites a 200 body in place before it is sent (e.g. decryption).
typedef void (s_post_fn) (qn_codec_t *codec, qn_buf_t *body);

typedef struct {
    const char *fn;             //  queen.<fn> (p_tenant, args...)
    bool write;                 //  pg_writer, else pg_reader
    s_body_t body;
    int wake;                   //  1 + index of the argument naming the queue
                                //  to wake after a 2xx answer; 0 = none
    int group;                  //  QN_MESH_GROUP_* to publish after a 2xx answer
                                //  (argument 0 names the group); 0 = none
    s_post_fn *post;            //  Or NULL
    s_arg_t args [S_MAX_ARGS];
} s_api_t;

//  One request's SQL parameters, built from the arguments.
typedef struct {
    char *vals [S_MAX_SQL];     //  Owned; NULL = SQL NULL
    const char *casts [S_MAX_SQL];
    int n;
    char *wake_queue;           //  Owned copy of the queue to wake, or NULL
    char *group;                //  Owned copy of the group of a group hint, or NULL
} s_req_t;

typedef struct {
    const s_api_t *api;         //  Not owned (static)
    char *wake_queue;           //  Owned, or NULL
    char *group;                //  Owned, or NULL
} s_call_t;

// ------------------------------------------------------------------ parameters
//  Appends one SQL parameter (a copy of val, or SQL NULL) with its cast.
static void
s_emit (s_req_t *req, const char *val, size_t len, const char *cast)
{
    assert (req->n < S_MAX_SQL);
    req->vals [req->n] = val ? qn_strndup (val, len) : NULL;
    req->casts [req->n] = cast;
    req->n++;
}

//  Appends an integer parameter.
static void
s_emit_int (s_req_t *req, int64_t v, const char *cast)
{
    char num [32];
    int len = snprintf (num, sizeof num, "%" PRId64, v);
    s_emit (req, num, (size_t) len, cast);
}

//  Frees what the request's parameters own.
static void
s_req_free (s_req_t *req)
{
    for (int i = 0; i < req->n; i++)
        free (req->vals [i]);
    free (req->wake_queue);
    free (req->group);
}

//  The raw input of an argument: text (path, query, or an unescaped body
//  string in `tmp`) or a body token. Returns false when absent.
typedef struct {
    const char *text;           //  NUL-terminated, or NULL for a non-string body value
    size_t len;
    int tok;                    //  Body token, or -1
    bool has_nul;               //  Body string held a \u0000
} s_in_t;

static bool
s_input (qn_http_ctx_t *ctx, const s_arg_t *arg, const qn_json_doc_t *doc, qn_buf_t *tmp, s_in_t *in)
{
    memset (in, 0, sizeof *in);
    in->tok = -1;
    if (arg->src == S_PATH) {
        in->text = qn_http_param (ctx, arg->index);
        in->len = ctx->param_len [arg->index];
        return in->text != NULL;
    }
    if (arg->src == S_QUERY || arg->src == S_ANY) {
        size_t len = 0;
        const char *v = qn_url_param (&ctx->url, arg->name, &len);
        if (v && len) {
            in->text = v;
            in->len = len;
            return true;
        }
    }
    if ((arg->src == S_BODY || arg->src == S_ANY) && doc) {
        int tok = qn_json_get (doc, 0, arg->name);
        if (tok < 0 || qn_json_is_null (doc, tok))
            return false;
        in->tok = tok;
        if (qn_json_type (doc, tok) == QN_JSON_STRING) {
            qn_buf_reset (tmp);
            in->has_nul = qn_json_str (doc, tok, tmp) == 1;
            in->text = tmp->data ? tmp->data : "";
            in->len = tmp->len;
        }
        return true;
    }
    return false;
}

//  A name or free text: a string of at most `max` bytes of UTF-8.
static int
s_check_text (qn_http_ctx_t *ctx, const s_arg_t *arg, const s_in_t *in, size_t max)
{
    if (!in->text) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: must be a string", arg->name);
        return -1;
    }
    if (in->len > max) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: longer than %zu bytes", arg->name, max);
        return -1;
    }
    if (in->has_nul || !qn_utf8_valid (in->text, in->len)) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: not valid UTF-8 text", arg->name);
        return -1;
    }
    return 0;
}

//  Decimal integer from text ("12", "-3"); false if not one.
static bool
s_parse_int (const char *s, size_t len, int64_t *out)
{
    if (!len || len > (size_t) (19 + (s [0] == '-' || s [0] == '+')))
        return false;
    char tmp [24];
    memcpy (tmp, s, len);
    tmp [len] = 0;
    char *end;
    long long v = strtoll (tmp, &end, 10);
    if (*end || end == tmp || !((tmp [0] >= '0' && tmp [0] <= '9') || tmp [0] == '-' || tmp [0] == '+'))
        return false;
    *out = v;
    return true;
}

//  An integer within the argument's bounds -> int.
static int
s_arg_int (qn_http_ctx_t *ctx, s_req_t *req, const s_arg_t *arg, const qn_json_doc_t *doc, const s_in_t *in)
{
    int64_t v = 0;
    bool ok;
    if (in->tok >= 0 && !in->text)
        ok = qn_json_int (doc, in->tok, &v) == 0;
    else
        ok = s_parse_int (in->text, in->len, &v);
    if (!ok && arg->src != S_BODY && arg->dflt) {
        //  Spec 1.5: an unparsable query integer means "use the default".
        s_parse_int (arg->dflt, strlen (arg->dflt), &v);
        ok = true;
    }
    if (!ok) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: must be an integer", arg->name);
        return -1;
    }
    if (v < arg->min || v > arg->max) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: must be between %" PRId64 " and %" PRId64,
                              arg->name, arg->min, arg->max);
        return -1;
    }
    s_emit_int (req, v, "int");
    return 0;
}

//  A JSON boolean (body) or a spec 1.5 query boolean -> bool.
static int
s_arg_bool (qn_http_ctx_t *ctx, s_req_t *req, const s_arg_t *arg, const qn_json_doc_t *doc, const s_in_t *in)
{
    bool v;
    if (in->tok >= 0) {
        if (qn_json_bool (doc, in->tok, &v)) {
            qn_http_reply_errorf (ctx, 400, "Invalid %s: must be a boolean", arg->name);
            return -1;
        }
    }
    else
        //  Spec 1.5: "true" or "1" is true, any other value false.
        v = (in->len == 4 && !strcmp (in->text, "true")) || (in->len == 1 && in->text [0] == '1');
    s_emit (req, v ? "true" : "false", v ? 4 : 5, "bool");
    return 0;
}

//  An ISO-8601 timestamp -> timestamptz (and, when `sent`, the text as
//  sent first).
static int
s_arg_ts (qn_http_ctx_t *ctx, s_req_t *req, const s_arg_t *arg, const s_in_t *in, bool sent)
{
    int64_t us;
    if (!in->text) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: must be a timestamp string", arg->name);
        return -1;
    }
    if (in->len > 64 || qn_ts_parse (in->text, in->len, &us)) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: not a timestamp", arg->name);
        return -1;
    }
    if (sent) {
        if (s_check_text (ctx, arg, in, 64))
            return -1;
        s_emit (req, in->text, in->len, "text");
    }
    char ts [32];
    qn_ts_us (us, ts);
    s_emit (req, ts, strlen (ts), "timestamptz");
    return 0;
}

//  One of the argument's choices -> text.
static int
s_arg_enum (qn_http_ctx_t *ctx, s_req_t *req, const s_arg_t *arg, const s_in_t *in)
{
    if (s_check_text (ctx, arg, in, S_TEXT_MAX))
        return -1;
    for (const char *c = arg->choices; *c; ) {
        const char *bar = strchr (c, '|');
        size_t len = bar ? (size_t) (bar - c) : strlen (c);
        if (len == in->len && !memcmp (c, in->text, len)) {
            s_emit (req, in->text, in->len, "text");
            return 0;
        }
        c += len + (bar ? 1 : 0);
    }
    char list [128];
    snprintf (list, sizeof list, "%s", arg->choices);
    for (char *p = list; *p; p++)
        if (*p == '|')
            *p = ',';
    qn_http_reply_errorf (ctx, 400, "Invalid %s: must be one of %s", arg->name, list);
    return -1;
}

//  One element of an id list: a message id (seq) or a dead-letter id.
static int
s_id_add (const char *s, size_t len, qn_buf_t *seqs, qn_buf_t *dlq, int *count)
{
    int64_t id;
    if (len == QN_ID_STR_LEN && !qn_id_parse (QN_ID_MESSAGE, s, len, &id))
        qn_buf_printf (seqs, "%s%" PRId64, seqs->len > 1 ? "," : "", id);
    else
    if (len == QN_ID_STR_LEN && !qn_id_parse (QN_ID_DEAD_LETTER, s, len, &id))
        qn_buf_printf (dlq, "%s%" PRId64, dlq->len > 1 ? "," : "", id);
    else
        return -1;
    return ++*count > S_MAX_IDS ? -1 : 0;
}

//  ids: a JSON array of id strings, or a comma-separated query value.
static int
s_arg_ids (qn_http_ctx_t *ctx, s_req_t *req, const s_arg_t *arg, const qn_json_doc_t *doc, const s_in_t *in)
{
    qn_buf_t seqs = QN_BUF_INIT, dlq = QN_BUF_INIT;
    qn_buf_putc (&seqs, '{');
    qn_buf_putc (&dlq, '{');
    int count = 0, rc = 0;
    if (in->tok >= 0 && !in->text) {
        if (qn_json_type (doc, in->tok) != QN_JSON_ARRAY)
            rc = -1;
        for (int t = rc ? -1 : qn_json_first (doc, in->tok); t >= 0 && !rc;
             t = qn_json_next_sibling (doc, in->tok, t)) {
            size_t len;
            const char *raw = qn_json_raw (doc, t, &len);
            //  Ids never need escapes: take the text between the quotes.
            if (qn_json_type (doc, t) != QN_JSON_STRING || len < 2
            ||  s_id_add (raw + 1, len - 2, &seqs, &dlq, &count))
                rc = -1;
        }
    }
    else
        for (const char *p = in->text, *end = in->text + in->len; p < end && !rc; ) {
            const char *comma = memchr (p, ',', (size_t) (end - p));
            const char *stop = comma ? comma : end;
            if (s_id_add (p, (size_t) (stop - p), &seqs, &dlq, &count))
                rc = -1;
            p = stop + 1;
        }
    if (rc)
        qn_http_reply_errorf (ctx, 400, "Invalid %s: must be a list of at most %d message or "
                              "dead-letter ids", arg->name, S_MAX_IDS);
    else {
        qn_buf_putc (&seqs, '}');
        qn_buf_putc (&dlq, '}');
        s_emit (req, seqs.data, seqs.len, "bigint[]");
        s_emit (req, dlq.data, dlq.len, "bigint[]");
    }
    qn_buf_free (&seqs);
    qn_buf_free (&dlq);
    return rc;
}

//  A partition seek offset: a message id, or the offset as a number or
//  decimal string.
static int
s_arg_offset (qn_http_ctx_t *ctx, s_req_t *req, const s_arg_t *arg, const qn_json_doc_t *doc, const s_in_t *in)
{
    int64_t v;
    bool ok;
    if (in->tok >= 0 && !in->text)
        ok = qn_json_int (doc, in->tok, &v) == 0;
    else
        ok = (in->len == QN_ID_STR_LEN && !qn_id_parse (QN_ID_MESSAGE, in->text, in->len, &v))
          || s_parse_int (in->text, in->len, &v);
    if (!ok || v < 0) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: must be a message id or a non-negative integer",
                              arg->name);
        return -1;
    }
    s_emit_int (req, v, "bigint");
    return 0;
}

//  Validates one argument and appends its SQL parameter(s). Returns 0, or
//  -1 after answering 400.
static int
s_arg (qn_http_ctx_t *ctx, s_req_t *req, const s_arg_t *arg, const qn_json_doc_t *doc, qn_buf_t *tmp)
{
    s_in_t in;
    if (arg->type == S_CONST) {
        s_emit (req, arg->choices, strlen (arg->choices), "text");
        return 0;
    }
    if (!s_input (ctx, arg, doc, tmp, &in)) {
        if (arg->required) {
            if (arg->missing)
                qn_http_reply_error (ctx, 400, arg->missing);
            else
                qn_http_reply_errorf (ctx, 400, "%s is required", arg->name);
            return -1;
        }
        if (arg->dflt) {
            in.text = arg->dflt;
            in.len = strlen (arg->dflt);
        }
        else {
            //  Absent, no default: SQL NULL (twice for two-parameter types).
            const char *cast = arg->type == S_INT ? "int" : arg->type == S_BOOL ? "bool"
                             : arg->type == S_TS ? "timestamptz" : arg->type == S_OFFSET ? "bigint" : "text";
            if (arg->type == S_IDS) {
                s_emit (req, NULL, 0, "bigint[]");
                s_emit (req, NULL, 0, "bigint[]");
            }
            else
            if (arg->type == S_TS_SENT) {
                s_emit (req, NULL, 0, "text");
                s_emit (req, NULL, 0, "timestamptz");
            }
            else
                s_emit (req, NULL, 0, cast);
            return 0;
        }
    }
    if (in.has_nul) {
        qn_http_reply_errorf (ctx, 400, "Invalid %s: contains a NUL character", arg->name);
        return -1;
    }
    switch (arg->type) {
        case S_NAME:
            if (s_check_text (ctx, arg, &in, arg->max > 0 ? (size_t) arg->max : S_NAME_MAX))
                return -1;
            s_emit (req, in.text, in.len, "text");
            return 0;
        case S_INT:
            return s_arg_int (ctx, req, arg, doc, &in);
        case S_BOOL:
            return s_arg_bool (ctx, req, arg, doc, &in);
        case S_TS:
            return s_arg_ts (ctx, req, arg, &in, false);
        case S_TS_SENT:
            return s_arg_ts (ctx, req, arg, &in, true);
        case S_ENUM:
            return s_arg_enum (ctx, req, arg, &in);
        case S_PARTITION_ID: {
            int64_t id;
            if (!in.text || !qn_uuid_valid (in.text, in.len)) {
                qn_http_reply_errorf (ctx, 400, "Invalid %s: not a UUID", arg->name);
                return -1;
            }
            if (qn_id_parse (QN_ID_PARTITION, in.text, in.len, &id))
                id = -1;            //  A UUID, but none of ours: not found
            s_emit_int (req, id, "bigint");
            return 0;
        }
        case S_TXN: {
            int64_t seq;
            if (s_check_text (ctx, arg, &in, S_TEXT_MAX))
                return -1;
            s_emit (req, in.text, in.len, "text");
            if (in.len == QN_ID_STR_LEN && !qn_id_parse (QN_ID_MESSAGE, in.text, in.len, &seq))
                s_emit_int (req, seq, "bigint");
            else
                s_emit (req, NULL, 0, "bigint");
            return 0;
        }
        case S_IDS:
            return s_arg_ids (ctx, req, arg, doc, &in);
        case S_OFFSET:
            return s_arg_offset (ctx, req, arg, doc, &in);
        default:
            qn_http_reply_error (ctx, 500, "bad route table");
            return -1;
    }
}

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
s_sql (qn_buf_t *sql, const s_api_t *api, const s_req_t *req)
{
    qn_buf_printf (sql, "SELECT status, body::text FROM queen.%s (", api->fn);
    for (int i = 0; i < req->n; i++)
        qn_buf_printf (sql, "%s$%d::%s", i ? ", " : "", i + 1, req->casts [i]);
    qn_buf_puts (sql, ")");
}

//  The parameters: text values and NULLs.
static void
s_params (qn_pg_args_t *args, const s_req_t *req)
{
    for (int i = 0; i < req->n; i++)
        qn_pg_args_cstr (args, req->vals [i]);
}

//  The generic handler: body, arguments, one call, one answer.
static void
s_run (qn_codec_t *codec, qn_http_ctx_t *ctx, const s_api_t *api)
{
    s_req_t req;
    memset (&req, 0, sizeof req);
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    bool have_doc = false;
    qn_buf_t tmp = QN_BUF_INIT;
    if (api->body == S_BODY_REQUIRED || (api->body == S_BODY_OPTIONAL && ctx->body_len)) {
        if (qn_http_parse_body (ctx, &doc))
            goto done;              //  Answered
        if (qn_json_type (&doc, 0) != QN_JSON_OBJECT) {
            qn_http_reply_error (ctx, 400, "request body must be a JSON object");
            goto done;
        }
        have_doc = true;
    }
    s_emit (&req, ctx->tenant, strlen (ctx->tenant), "text");
    for (int i = 0; i < S_MAX_ARGS && api->args [i].type; i++) {
        int first = req.n;
        if (s_arg (ctx, &req, &api->args [i], have_doc ? &doc : NULL, &tmp))
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
    s_req_free (&req);
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
#define P_NAME(i, n)        { .type = S_NAME, .src = S_PATH, .index = i, .name = n, .required = true }
#define Q_NAME(n)           { .type = S_NAME, .src = S_QUERY, .name = n }
#define Q_TS(n)             { .type = S_TS, .src = S_QUERY, .name = n }
#define Q_LIMIT(d)          { .type = S_INT, .src = S_QUERY, .name = "limit", .min = 1, .max = S_LIMIT_MAX, .dflt = d }
#define Q_OFFSET            { .type = S_INT, .src = S_QUERY, .name = "offset", .min = 0, .max = S_OFFSET_MAX, .dflt = "0" }
#define Q_DELETE_META       { .type = S_BOOL, .src = S_QUERY, .name = "deleteMetadata", .dflt = "true" }
#define CONST(v)            { .type = S_CONST, .choices = v }

//  Defines the handler `name` for the route spec given as designated
//  initializers of s_api_t.
#define S_API(name, ...) \
    static const s_api_t name##_api = { __VA_ARGS__ }; \
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
                 { .type = S_NAME, .src = S_QUERY, .name = "cursor", .max = 20 + S_NAME_MAX },
                 Q_LIMIT ("50") })
S_API (s_kv_buckets, .fn = "api_kv_buckets", .args = { Q_NAME ("after"), Q_LIMIT ("100") })
S_API (s_dead_letters, .fn = "api_dead_letters",
       .args = { Q_NAME ("queue"), Q_NAME ("consumerGroup"), Q_NAME ("partition"), Q_TS ("from"), Q_TS ("to"),
                 { .type = S_NAME, .src = S_QUERY, .name = "cursor", .max = 40 },
                 { .type = S_INT, .src = S_QUERY, .name = "limit", .min = 1, .max = 1000, .dflt = "100" } })
S_API (s_streams, .fn = "api_streams")
S_API (s_namespaces, .fn = "api_namespaces")
S_API (s_tasks, .fn = "api_tasks")

//  Messages (3.15)
S_API (s_messages, .fn = "api_messages",
       .args = { Q_NAME ("queue"), Q_NAME ("partition"), Q_NAME ("ns"), Q_NAME ("task"),
                 { .type = S_ENUM, .src = S_QUERY, .name = "status",
                   .choices = "pending|processing|completed|dead_letter" },
                 Q_TS ("from"), Q_TS ("to"), Q_LIMIT ("200"), Q_OFFSET })
S_API (s_message, .fn = "api_message", .post = s_post_message,
       .args = { { .type = S_PARTITION_ID, .src = S_PATH, .index = 0, .name = "partitionId", .required = true },
                 { .type = S_TXN, .src = S_PATH, .index = 1, .name = "transactionId", .required = true } })
S_API (s_message_delete, .fn = "api_message_delete", .write = true,
       .args = { { .type = S_PARTITION_ID, .src = S_PATH, .index = 0, .name = "partitionId", .required = true },
                 { .type = S_TXN, .src = S_PATH, .index = 1, .name = "transactionId", .required = true } })

//  Dead letters (3.16 and the replay extension)
S_API (s_dlq, .fn = "api_dlq",
       .args = { Q_NAME ("queue"), Q_NAME ("consumerGroup"), Q_NAME ("partition"), Q_TS ("from"),
                 Q_TS ("to"), Q_LIMIT ("100"), Q_OFFSET })
S_API (s_dlq_requeue, .fn = "api_dlq_requeue", .write = true, .body = S_BODY_REQUIRED, .wake = 1,
       .args = { { .type = S_NAME, .src = S_BODY, .name = "queue", .required = true },
                 { .type = S_NAME, .src = S_BODY, .name = "consumerGroup" },
                 { .type = S_NAME, .src = S_BODY, .name = "partition" },
                 { .type = S_IDS, .src = S_BODY, .name = "ids" } })
S_API (s_dlq_delete, .fn = "api_dlq_delete", .write = true, .body = S_BODY_OPTIONAL,
       .args = { { .type = S_NAME, .src = S_ANY, .name = "queue", .required = true },
                 { .type = S_NAME, .src = S_ANY, .name = "consumerGroup" },
                 { .type = S_NAME, .src = S_ANY, .name = "partition" },
                 { .type = S_IDS, .src = S_ANY, .name = "ids" } })

//  Consumer groups (3.19)
S_API (s_groups, .fn = "api_groups")
S_API (s_groups_lagging, .fn = "api_groups_lagging",
       .args = { { .type = S_INT, .src = S_QUERY, .name = "minLagSeconds", .min = 0, .max = INT32_MAX,
                   .dflt = "3600" } })
S_API (s_group, .fn = "api_group", .args = { P_NAME (0, "group") })
S_API (s_group_delete, .fn = "api_group_delete", .write = true, .group = QN_MESH_GROUP_DELETED,
       .args = { P_NAME (0, "group"), Q_DELETE_META })
S_API (s_group_subscription, .fn = "api_group_subscription", .write = true, .body = S_BODY_REQUIRED,
       .args = { P_NAME (0, "group"),
                 { .type = S_TS_SENT, .src = S_BODY, .name = "subscriptionTimestamp", .required = true,
                   .missing = "Missing subscriptionTimestamp in request body" } })
S_API (s_group_queue_delete, .fn = "api_group_queue_delete", .write = true, .wake = 2,
       .group = QN_MESH_GROUP_DELETED,
       .args = { P_NAME (0, "group"), P_NAME (1, "queue"), Q_DELETE_META })
S_API (s_group_seek, .fn = "api_group_seek", .write = true, .body = S_BODY_REQUIRED, .wake = 2,
       .group = QN_MESH_GROUP_SOUGHT,
       .args = { P_NAME (0, "group"), P_NAME (1, "queue"),
                 { .type = S_BOOL, .src = S_BODY, .name = "toEnd" },
                 { .type = S_TS, .src = S_BODY, .name = "timestamp" } })
S_API (s_group_partition_seek, .fn = "api_group_partition_seek", .write = true,
       .body = S_BODY_OPTIONAL, .wake = 2, .group = QN_MESH_GROUP_SOUGHT,
       .args = { P_NAME (0, "group"), P_NAME (1, "queue"), P_NAME (2, "partition"),
                 { .type = S_OFFSET, .src = S_BODY, .name = "offset" },
                 { .type = S_TS, .src = S_BODY, .name = "timestamp" } })
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
       .args = { { .type = S_ENUM, .src = S_QUERY, .name = "interval", .choices = "minute|hour|day",
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
