/*  wire/sqs_decode.c - SQS requests: AWS query and JSON 1.0 decoders, validation
    Both protocols fill the same qn_sqs_request_t (wire/sqs.h). Strings are
    copied, decoded (%XX and '+' for forms, JSON escapes, base64 for binary
    attribute values), into one arena sized from the input so that it never
    moves. Query lists and maps are flattened with 1-based indices
    (`Attribute.2.Name`, `SendMessageBatchRequestEntry.3.MessageAttribute.1
    .Value.StringValue`); the decoded arrays keep the contiguous prefix from
    index 1 (spec §4.1). Pure; fails with the protocol's error code.
*/
#include "wire/sqs.h"
#include "wire/json.h"

#include <ctype.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------------ tables
static const struct { const char *name; bool result; } s_ops [] = {
    { NULL, false },
#define X(e, n, r) { n, r },
    QN_SQS_OPS (X)
#undef X
};

static const struct {
    const char *query; int status; const char *shape; bool sender;
} s_codes [] = {
    { "", 200, "", true },
#define X(e, c, s, t, f) { c, s, t, f },
    QN_SQS_ERRORS (X)
#undef X
};

const char *
qn_sqs_op_name (qn_sqs_op_t op)
{
    return op > QN_SQS_OP_NONE && op < QN_SQS_OP_COUNT? s_ops [op].name: NULL;
}

qn_sqs_op_t
qn_sqs_op_lookup (const char *name, size_t len)
{
    for (int op = 1; op < QN_SQS_OP_COUNT; op++)
        if (strlen (s_ops [op].name) == len && memcmp (s_ops [op].name, name, len) == 0)
            return (qn_sqs_op_t) op;
    return QN_SQS_OP_NONE;
}

bool
qn_sqs_op_unsupported (qn_sqs_op_t op)
{
    return op == QN_SQS_OP_ADD_PERMISSION || op == QN_SQS_OP_REMOVE_PERMISSION
        || op == QN_SQS_OP_START_MESSAGE_MOVE_TASK || op == QN_SQS_OP_CANCEL_MESSAGE_MOVE_TASK
        || op == QN_SQS_OP_LIST_MESSAGE_MOVE_TASKS;
}

const char *
qn_sqs_code_query (qn_sqs_code_t code)
{
    return code > 0 && code < QN_SQS_E_COUNT? s_codes [code].query: "InternalFailure";
}

const char *
qn_sqs_code_shape (qn_sqs_code_t code)
{
    return code > 0 && code < QN_SQS_E_COUNT? s_codes [code].shape: "InternalFailure";
}

int
qn_sqs_code_status (qn_sqs_code_t code)
{
    return code > 0 && code < QN_SQS_E_COUNT? s_codes [code].status: 500;
}

bool
qn_sqs_code_sender (qn_sqs_code_t code)
{
    return code > 0 && code < QN_SQS_E_COUNT? s_codes [code].sender: false;
}

int
qn_sqs_fail (qn_sqs_error_t *err, qn_sqs_code_t code, const char *fmt, ...)
{
    err->code = code;
    va_list ap;
    va_start (ap, fmt);
    vsnprintf (err->message, sizeof err->message, fmt, ap);
    va_end (ap);
    return -1;
}

// ------------------------------------------------------------------ the request
static void
s_request_init (qn_sqs_request_t *req, size_t input_len)
{
    memset (req, 0, sizeof *req);
    req->max_results = req->max_messages = req->visibility_timeout = -1;
    req->wait_time_seconds = -1;
    for (int i = 0; i < QN_SQS_MAX_ENTRIES; i++)
        req->entries [i].delay_seconds = req->entries [i].visibility_timeout = -1;
    //  Every decoded string is at most as long as its text in the input and
    //  costs one NUL: 2 * len bounds the arena, so it never reallocates.
    req->arena_cap = 2 * input_len + 256;
    req->arena = qn_malloc (req->arena_cap);
}

void
qn_sqs_request_free (qn_sqs_request_t *req)
{
    free (req->arena);
    req->arena = NULL;
    req->arena_len = req->arena_cap = 0;
}

//  Reserves n + 1 bytes of the arena; NULL if it would overflow (cannot
//  happen within the bound above; checked anyway).
static char *
s_arena (qn_sqs_request_t *req, size_t n)
{
    if (n + 1 > req->arena_cap - req->arena_len)
        return NULL;
    char *p = req->arena + req->arena_len;
    req->arena_len += n + 1;
    p [n] = 0;
    return p;
}

static int
s_copy (qn_sqs_request_t *req, const char *s, size_t n, qn_sqs_str_t *out, qn_sqs_error_t *err)
{
    char *p = s_arena (req, n);
    if (!p)
        return qn_sqs_fail (err, QN_SQS_E_MALFORMED, "request too large");
    memcpy (p, s, n);
    out->ptr = p;
    out->len = n;
    return 0;
}

static int
s_hexval (int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

//  Form decoding: '+' is a space, %XX a byte.
static int
s_form_decode (qn_sqs_request_t *req, const char *s, size_t n, qn_sqs_str_t *out,
               qn_sqs_error_t *err)
{
    char *p = s_arena (req, n);
    if (!p)
        return qn_sqs_fail (err, QN_SQS_E_MALFORMED, "request too large");
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s [i] == '+')
            p [o++] = ' ';
        else
        if (s [i] == '%') {
            int hi = i + 2 < n? s_hexval ((unsigned char) s [i + 1]): -1;
            int lo = hi >= 0? s_hexval ((unsigned char) s [i + 2]): -1;
            if (lo < 0)
                return qn_sqs_fail (err, QN_SQS_E_MALFORMED,
                                    "malformed percent-encoding in the request body");
            p [o++] = (char) (hi * 16 + lo);
            i += 2;
        }
        else
            p [o++] = s [i];
    }
    p [o] = 0;
    req->arena_len -= n - o;            //  Give back what decoding saved
    out->ptr = p;
    out->len = o;
    return 0;
}

//  Standard base64 (padded) into the arena.
static int
s_base64 (qn_sqs_request_t *req, const char *s, size_t n, qn_sqs_str_t *out, qn_sqs_error_t *err)
{
    char *p = s_arena (req, n);
    if (!p)
        return qn_sqs_fail (err, QN_SQS_E_MALFORMED, "request too large");
    size_t bin_len = 0;
    const char *end = NULL;
    if (sodium_base642bin ((unsigned char *) p, n + 1, s, n, NULL, &bin_len, &end,
                           sodium_base64_VARIANT_ORIGINAL) != 0 || end != s + n)
        return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                            "Value for parameter BinaryValue is invalid. Reason: not valid base64.");
    req->arena_len -= n - bin_len;
    p [bin_len] = 0;
    out->ptr = p;
    out->len = bin_len;
    return 0;
}

static int
s_int (const qn_sqs_str_t *v, const char *param, int64_t *out, qn_sqs_error_t *err)
{
    const char *s = v->ptr;
    size_t n = v->len, i = 0;
    bool neg = false;
    if (n > 0 && (s [0] == '-' || s [0] == '+')) {
        neg = s [0] == '-';
        i = 1;
    }
    if (i >= n || n - i > 18)
        goto bad;
    int64_t x = 0;
    for (; i < n; i++) {
        if (s [i] < '0' || s [i] > '9')
            goto bad;
        x = x * 10 + (s [i] - '0');
    }
    *out = neg? -x: x;
    return 0;
bad:
    return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                        "Value %.*s for parameter %s is invalid. Reason: must be an integer.",
                        (int) (n > 64? 64: n), s? s: "", param);
}

// ------------------------------------------------------------------ query protocol
//  Matches `name` = prefix "." N [rest]; returns N (>= 1) and the rest
//  ("" or ".Field..."), or 0 when it does not match.
static long
s_indexed (const char *name, size_t nlen, const char *prefix, const char **rest, size_t *rest_len)
{
    size_t pl = strlen (prefix);
    if (nlen < pl + 2 || memcmp (name, prefix, pl) != 0 || name [pl] != '.')
        return 0;
    size_t i = pl + 1;
    long n = 0;
    while (i < nlen && name [i] >= '0' && name [i] <= '9' && n < 100000)
        n = n * 10 + (name [i++] - '0');
    if (i == pl + 1 || (i < nlen && name [i] != '.'))
        return 0;
    *rest = name + i;
    *rest_len = nlen - i;
    return n;
}

static bool
s_is (const char *s, size_t n, const char *lit)
{
    return strlen (lit) == n && memcmp (s, lit, n) == 0;
}

//  `rest` is ".Name", ".Value.DataType", ".Value.StringValue", ...
static int
s_query_attr (qn_sqs_request_t *req, qn_sqs_attr_t *a, const char *rest, size_t rl,
              const qn_sqs_str_t *v, qn_sqs_error_t *err)
{
    if (s_is (rest, rl, ".Name"))
        a->name = *v;
    else
    if (s_is (rest, rl, ".Value.DataType"))
        a->data_type = *v;
    else
    if (s_is (rest, rl, ".Value.StringValue")) {
        a->value = *v;
        a->binary = false;
    }
    else
    if (s_is (rest, rl, ".Value.BinaryValue")) {
        if (s_base64 (req, v->ptr, v->len, &a->value, err))
            return -1;
        a->binary = true;
    }
    else
    if (rl > 21 && (memcmp (rest, ".Value.StringListValue", 22) == 0
                    || memcmp (rest, ".Value.BinaryListValue", 22) == 0))
        a->list_value = true;
    return 0;
}

static bool
s_attr_present (const qn_sqs_attr_t *a)
{
    return a->name.ptr || a->data_type.ptr || a->value.ptr || a->list_value;
}

//  An entry-level member (the whole name for single operations, the part
//  after "<Entry>.N." for batches).
static int
s_query_entry (qn_sqs_request_t *req, qn_sqs_entry_t *e, const char *name, size_t nl,
               const qn_sqs_str_t *v, qn_sqs_error_t *err)
{
    const char *rest;
    size_t rl;
    long n;
    if (s_is (name, nl, "Id"))
        e->id = *v;
    else
    if (s_is (name, nl, "MessageBody"))
        e->body = *v;
    else
    if (s_is (name, nl, "DelaySeconds"))
        return s_int (v, "DelaySeconds", &e->delay_seconds, err);
    else
    if (s_is (name, nl, "MessageDeduplicationId"))
        e->dedup_id = *v;
    else
    if (s_is (name, nl, "MessageGroupId"))
        e->group_id = *v;
    else
    if (s_is (name, nl, "ReceiptHandle"))
        e->receipt_handle = *v;
    else
    if (s_is (name, nl, "VisibilityTimeout"))
        return s_int (v, "VisibilityTimeout", &e->visibility_timeout, err);
    else
    if ((n = s_indexed (name, nl, "MessageAttribute", &rest, &rl)) > 0) {
        if (n > QN_SQS_MAX_MSG_ATTRS)
            return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                "Number of message attributes [%ld] exceeds the allowed maximum [%d].",
                                n, QN_SQS_MAX_MSG_ATTRS);
        return s_query_attr (req, &e->attrs [n - 1], rest, rl, v, err);
    }
    else
    if ((n = s_indexed (name, nl, "MessageSystemAttribute", &rest, &rl)) > 0) {
        if (n > QN_SQS_MAX_SYS_ATTRS)
            return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                "Too many message system attributes.");
        return s_query_attr (req, &e->sys_attrs [n - 1], rest, rl, v, err);
    }
    return 0;                           //  Unknown members are ignored
}

static int
s_query_list (qn_sqs_str_t *arr, long n, long cap, const qn_sqs_str_t *v, const char *what,
              qn_sqs_error_t *err)
{
    if (n > cap)
        return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE, "Too many %s.", what);
    arr [n - 1] = *v;
    return 0;
}

static int
s_query_kv (qn_sqs_kv_t *arr, long n, long cap, const char *rest, size_t rl, const char *key_name,
            const qn_sqs_str_t *v, const char *what, qn_sqs_error_t *err)
{
    if (n > cap)
        return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE, "Too many %s.", what);
    if (s_is (rest, rl, key_name))
        arr [n - 1].key = *v;
    else
    if (s_is (rest, rl, ".Value"))
        arr [n - 1].value = *v;
    return 0;
}

static const char *
s_batch_prefix (qn_sqs_op_t op)
{
    switch (op) {
        case QN_SQS_OP_SEND_MESSAGE_BATCH: return "SendMessageBatchRequestEntry";
        case QN_SQS_OP_DELETE_MESSAGE_BATCH: return "DeleteMessageBatchRequestEntry";
        case QN_SQS_OP_CHANGE_MESSAGE_VISIBILITY_BATCH: return "ChangeMessageVisibilityBatchRequestEntry";
        default: return NULL;
    }
}

static int
s_query_param (qn_sqs_request_t *req, const qn_sqs_str_t *k, const qn_sqs_str_t *v,
               bool *entry_seen, qn_sqs_error_t *err)
{
    const char *name = k->ptr, *rest;
    size_t nl = k->len, rl;
    long n;
    const char *bp = s_batch_prefix (req->op);
    if (s_is (name, nl, "Action") || s_is (name, nl, "Version"))
        return 0;
    if (s_is (name, nl, "QueueUrl")) req->queue_url = *v;
    else if (s_is (name, nl, "QueueName")) req->queue_name = *v;
    else if (s_is (name, nl, "QueueNamePrefix")) req->queue_name_prefix = *v;
    else if (s_is (name, nl, "NextToken")) req->next_token = *v;
    else if (s_is (name, nl, "QueueOwnerAWSAccountId")) req->owner_account = *v;
    else if (s_is (name, nl, "ReceiveRequestAttemptId")) req->receive_attempt_id = *v;
    else if (s_is (name, nl, "MaxResults"))
        return s_int (v, "MaxResults", &req->max_results, err);
    else if (s_is (name, nl, "MaxNumberOfMessages"))
        return s_int (v, "MaxNumberOfMessages", &req->max_messages, err);
    else if (s_is (name, nl, "WaitTimeSeconds"))
        return s_int (v, "WaitTimeSeconds", &req->wait_time_seconds, err);
    else if (s_is (name, nl, "VisibilityTimeout")) {
        if (s_int (v, "VisibilityTimeout", &req->visibility_timeout, err))
            return -1;
        req->entries [0].visibility_timeout = req->visibility_timeout;
        *entry_seen = true;
    }
    else if ((n = s_indexed (name, nl, "Attribute", &rest, &rl)) > 0)
        return s_query_kv (req->attributes, n, QN_SQS_MAX_QATTRS, rest, rl, ".Name", v,
                           "queue attributes", err);
    else if ((n = s_indexed (name, nl, "Tag", &rest, &rl)) > 0)
        return s_query_kv (req->tags, n, QN_SQS_MAX_TAGS, rest, rl, ".Key", v, "tags", err);
    else if ((n = s_indexed (name, nl, "TagKey", &rest, &rl)) > 0 && rl == 0)
        return s_query_list (req->tag_keys, n, QN_SQS_MAX_TAGS, v, "tag keys", err);
    else if (((n = s_indexed (name, nl, "AttributeName", &rest, &rl)) > 0
              || (n = s_indexed (name, nl, "MessageSystemAttributeName", &rest, &rl)) > 0)
             && rl == 0) {
        //  Both lists land in one array: the legacy one first, the current
        //  one after QN_SQS_MAX_NAMES / 2 (compacted later).
        bool sys = name [0] == 'M';
        if (n > QN_SQS_MAX_NAMES / 2)
            return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE, "Too many attribute names.");
        req->attribute_names [(sys? QN_SQS_MAX_NAMES / 2: 0) + n - 1] = *v;
    }
    else if ((n = s_indexed (name, nl, "MessageAttributeName", &rest, &rl)) > 0 && rl == 0)
        return s_query_list (req->message_attribute_names, n, QN_SQS_MAX_NAMES, v,
                             "message attribute names", err);
    else if (bp && (n = s_indexed (name, nl, bp, &rest, &rl)) > 0 && rl > 1) {
        if (n > QN_SQS_MAX_ENTRIES)
            return qn_sqs_fail (err, QN_SQS_E_TOO_MANY_ENTRIES,
                                "Maximum number of entries per request are %d. You have sent %ld.",
                                QN_SQS_MAX_ENTRIES, n);
        entry_seen [n - 1] = true;
        return s_query_entry (req, &req->entries [n - 1], rest + 1, rl - 1, v, err);
    }
    else if (!bp) {
        entry_seen [0] = true;
        return s_query_entry (req, &req->entries [0], name, nl, v, err);
    }
    return 0;
}

static uint32_t
s_count_strs (const qn_sqs_str_t *a, uint32_t cap)
{
    uint32_t n = 0;
    while (n < cap && a [n].ptr)
        n++;
    return n;
}

static uint32_t
s_count_kvs (const qn_sqs_kv_t *a, uint32_t cap)
{
    uint32_t n = 0;
    while (n < cap && (a [n].key.ptr || a [n].value.ptr))
        n++;
    return n;
}

static uint32_t
s_count_attrs (const qn_sqs_attr_t *a, uint32_t cap)
{
    uint32_t n = 0;
    while (n < cap && s_attr_present (&a [n]))
        n++;
    return n;
}

//  Compacts the decoded arrays to their contiguous prefixes.
static void
s_query_finish (qn_sqs_request_t *req, const bool *entry_seen)
{
    req->attribute_count = s_count_kvs (req->attributes, QN_SQS_MAX_QATTRS);
    req->tag_count = s_count_kvs (req->tags, QN_SQS_MAX_TAGS);
    req->tag_key_count = s_count_strs (req->tag_keys, QN_SQS_MAX_TAGS);
    req->message_attribute_name_count = s_count_strs (req->message_attribute_names, QN_SQS_MAX_NAMES);
    const uint32_t half = QN_SQS_MAX_NAMES / 2;
    uint32_t legacy = s_count_strs (req->attribute_names, half);
    uint32_t current = s_count_strs (req->attribute_names + half, half);
    memmove (req->attribute_names + legacy, req->attribute_names + half, current * sizeof (qn_sqs_str_t));
    req->attribute_name_count = legacy + current;
    uint32_t n = 0;
    while (n < QN_SQS_MAX_ENTRIES && entry_seen [n])
        n++;
    req->entry_count = n;
    for (uint32_t i = 0; i < n; i++) {
        qn_sqs_entry_t *e = &req->entries [i];
        e->attr_count = s_count_attrs (e->attrs, QN_SQS_MAX_MSG_ATTRS);
        e->sys_attr_count = s_count_attrs (e->sys_attrs, QN_SQS_MAX_SYS_ATTRS);
    }
}

int
qn_sqs_decode_query (const char *body, size_t len, qn_sqs_request_t *req, qn_sqs_error_t *err)
{
    s_request_init (req, len);
    req->proto = QN_SQS_QUERY;
    memset (err, 0, sizeof *err);
    if (len > QN_SQS_MAX_REQUEST_BYTES)
        return qn_sqs_fail (err, QN_SQS_E_MALFORMED, "request body too large");
    //  First pass: the Action, which decides how the names read.
    const char *p = body, *end = body + len;
    qn_sqs_str_t action = { NULL, 0 };
    while (p < end) {
        const char *amp = memchr (p, '&', (size_t) (end - p));
        const char *stop = amp? amp: end;
        const char *eq = memchr (p, '=', (size_t) (stop - p));
        if (eq && eq - p == 6 && memcmp (p, "Action", 6) == 0) {
            if (s_form_decode (req, eq + 1, (size_t) (stop - eq - 1), &action, err))
                return -1;
            break;
        }
        p = stop + 1;
    }
    if (!action.ptr || action.len == 0)
        return qn_sqs_fail (err, QN_SQS_E_MISSING_ACTION, "No action was supplied with this request.");
    req->op = qn_sqs_op_lookup (action.ptr, action.len);
    if (req->op == QN_SQS_OP_NONE)
        return qn_sqs_fail (err, QN_SQS_E_INVALID_ACTION,
                            "The action %.*s is not valid for this web service.",
                            (int) (action.len > 64? 64: action.len), action.ptr);
    if (qn_sqs_op_unsupported (req->op))
        return qn_sqs_fail (err, QN_SQS_E_UNSUPPORTED_OPERATION,
                            "%s is not supported by this endpoint.", qn_sqs_op_name (req->op));
    req->batch = s_batch_prefix (req->op) != NULL;
    bool entry_seen [QN_SQS_MAX_ENTRIES] = { false };
    for (p = body; p < end; ) {
        const char *amp = memchr (p, '&', (size_t) (end - p));
        const char *stop = amp? amp: end;
        if (stop > p) {
            const char *eq = memchr (p, '=', (size_t) (stop - p));
            const char *kend = eq? eq: stop;
            qn_sqs_str_t k, v;
            if (s_form_decode (req, p, (size_t) (kend - p), &k, err))
                return -1;
            if (s_form_decode (req, eq? eq + 1: stop, eq? (size_t) (stop - eq - 1): 0, &v, err))
                return -1;
            if (s_query_param (req, &k, &v, entry_seen, err))
                return -1;
        }
        p = stop + 1;
    }
    s_query_finish (req, entry_seen);
    return 0;
}

// ------------------------------------------------------------------ JSON 1.0
typedef struct {
    qn_sqs_request_t *req;
    qn_json_doc_t *doc;
    qn_buf_t scratch;
    qn_sqs_error_t *err;
} s_jctx_t;

static int
s_jwrong (s_jctx_t *c, const char *member, const char *type)
{
    return qn_sqs_fail (c->err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                        "Value for parameter %s is invalid. Reason: expected a %s.", member, type);
}

static int
s_jstr (s_jctx_t *c, int tok, const char *member, qn_sqs_str_t *out)
{
    if (qn_json_type (c->doc, tok) != QN_JSON_STRING)
        return s_jwrong (c, member, "string");
    qn_buf_reset (&c->scratch);
    qn_json_str (c->doc, tok, &c->scratch);
    return s_copy (c->req, c->scratch.data? c->scratch.data: "", c->scratch.len, out, c->err);
}

static int
s_jint (s_jctx_t *c, int tok, const char *member, int64_t *out)
{
    if (qn_json_type (c->doc, tok) != QN_JSON_NUMBER || qn_json_int (c->doc, tok, out) != 0)
        return s_jwrong (c, member, "integer");
    return 0;
}

static int
s_jstr_list (s_jctx_t *c, int tok, const char *member, qn_sqs_str_t *arr, uint32_t *count,
             uint32_t cap)
{
    if (qn_json_type (c->doc, tok) != QN_JSON_ARRAY)
        return s_jwrong (c, member, "list");
    for (int t = qn_json_first (c->doc, tok); t >= 0; t = qn_json_next_sibling (c->doc, tok, t)) {
        if (*count >= cap)
            return qn_sqs_fail (c->err, QN_SQS_E_INVALID_PARAMETER_VALUE, "Too many %s.", member);
        if (s_jstr (c, t, member, &arr [(*count)++]))
            return -1;
    }
    return 0;
}

static int
s_jmap (s_jctx_t *c, int tok, const char *member, qn_sqs_kv_t *arr, uint32_t *count, uint32_t cap)
{
    if (qn_json_type (c->doc, tok) != QN_JSON_OBJECT)
        return s_jwrong (c, member, "map");
    for (int t = qn_json_first (c->doc, tok); t >= 0; t = qn_json_next_sibling (c->doc, tok, t)) {
        if (*count >= cap)
            return qn_sqs_fail (c->err, QN_SQS_E_INVALID_PARAMETER_VALUE, "Too many %s.", member);
        qn_sqs_kv_t *kv = &arr [(*count)++];
        if (s_jstr (c, t, member, &kv->key) || s_jstr (c, t + 1, member, &kv->value))
            return -1;
    }
    return 0;
}

static int
s_jattrs (s_jctx_t *c, int tok, const char *member, qn_sqs_attr_t *arr, uint32_t *count,
          uint32_t cap)
{
    if (qn_json_type (c->doc, tok) != QN_JSON_OBJECT)
        return s_jwrong (c, member, "map");
    for (int t = qn_json_first (c->doc, tok); t >= 0; t = qn_json_next_sibling (c->doc, tok, t)) {
        if (*count >= cap)
            return qn_sqs_fail (c->err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                "Number of message attributes exceeds the allowed maximum [%u].", cap);
        qn_sqs_attr_t *a = &arr [(*count)++];
        int v = t + 1;
        if (s_jstr (c, t, member, &a->name))
            return -1;
        if (qn_json_type (c->doc, v) != QN_JSON_OBJECT)
            return s_jwrong (c, member, "MessageAttributeValue structure");
        int m;
        if ((m = qn_json_get (c->doc, v, "DataType")) >= 0 && s_jstr (c, m, "DataType", &a->data_type))
            return -1;
        if ((m = qn_json_get (c->doc, v, "StringValue")) >= 0
            && s_jstr (c, m, "StringValue", &a->value))
            return -1;
        if ((m = qn_json_get (c->doc, v, "BinaryValue")) >= 0) {
            qn_sqs_str_t b64;
            if (s_jstr (c, m, "BinaryValue", &b64) || s_base64 (c->req, b64.ptr, b64.len, &a->value, c->err))
                return -1;
            a->binary = true;
        }
        if (qn_json_get (c->doc, v, "StringListValues") >= 0
            || qn_json_get (c->doc, v, "BinaryListValues") >= 0)
            a->list_value = true;
    }
    return 0;
}

static int
s_jentry (s_jctx_t *c, int obj, qn_sqs_entry_t *e)
{
    int t;
    const qn_json_doc_t *d = c->doc;
    if ((t = qn_json_get (d, obj, "Id")) >= 0 && s_jstr (c, t, "Id", &e->id)) return -1;
    if ((t = qn_json_get (d, obj, "MessageBody")) >= 0 && s_jstr (c, t, "MessageBody", &e->body)) return -1;
    if ((t = qn_json_get (d, obj, "DelaySeconds")) >= 0 && s_jint (c, t, "DelaySeconds", &e->delay_seconds)) return -1;
    if ((t = qn_json_get (d, obj, "MessageDeduplicationId")) >= 0
        && s_jstr (c, t, "MessageDeduplicationId", &e->dedup_id)) return -1;
    if ((t = qn_json_get (d, obj, "MessageGroupId")) >= 0 && s_jstr (c, t, "MessageGroupId", &e->group_id)) return -1;
    if ((t = qn_json_get (d, obj, "ReceiptHandle")) >= 0 && s_jstr (c, t, "ReceiptHandle", &e->receipt_handle)) return -1;
    if ((t = qn_json_get (d, obj, "VisibilityTimeout")) >= 0
        && s_jint (c, t, "VisibilityTimeout", &e->visibility_timeout)) return -1;
    if ((t = qn_json_get (d, obj, "MessageAttributes")) >= 0
        && s_jattrs (c, t, "MessageAttributes", e->attrs, &e->attr_count, QN_SQS_MAX_MSG_ATTRS)) return -1;
    if ((t = qn_json_get (d, obj, "MessageSystemAttributes")) >= 0
        && s_jattrs (c, t, "MessageSystemAttributes", e->sys_attrs, &e->sys_attr_count,
                     QN_SQS_MAX_SYS_ATTRS)) return -1;
    return 0;
}

static int
s_jrequest (s_jctx_t *c)
{
    qn_sqs_request_t *req = c->req;
    const qn_json_doc_t *d = c->doc;
    int t;
    static const struct { const char *key; size_t off; } strs [] = {
        { "QueueUrl", offsetof (qn_sqs_request_t, queue_url) },
        { "QueueName", offsetof (qn_sqs_request_t, queue_name) },
        { "QueueNamePrefix", offsetof (qn_sqs_request_t, queue_name_prefix) },
        { "NextToken", offsetof (qn_sqs_request_t, next_token) },
        { "QueueOwnerAWSAccountId", offsetof (qn_sqs_request_t, owner_account) },
        { "ReceiveRequestAttemptId", offsetof (qn_sqs_request_t, receive_attempt_id) },
    };
    for (size_t i = 0; i < sizeof strs / sizeof strs [0]; i++)
        if ((t = qn_json_get (d, 0, strs [i].key)) >= 0
            && s_jstr (c, t, strs [i].key, (qn_sqs_str_t *) ((char *) req + strs [i].off)))
            return -1;
    static const struct { const char *key; size_t off; } ints [] = {
        { "MaxResults", offsetof (qn_sqs_request_t, max_results) },
        { "MaxNumberOfMessages", offsetof (qn_sqs_request_t, max_messages) },
        { "VisibilityTimeout", offsetof (qn_sqs_request_t, visibility_timeout) },
        { "WaitTimeSeconds", offsetof (qn_sqs_request_t, wait_time_seconds) },
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints [0]; i++)
        if ((t = qn_json_get (d, 0, ints [i].key)) >= 0
            && s_jint (c, t, ints [i].key, (int64_t *) ((char *) req + ints [i].off)))
            return -1;
    if ((t = qn_json_get (d, 0, "Attributes")) >= 0
        && s_jmap (c, t, "Attributes", req->attributes, &req->attribute_count, QN_SQS_MAX_QATTRS))
        return -1;
    //  CreateQueue names its tags "tags", TagQueue "Tags".
    if ((t = qn_json_get (d, 0, "tags")) >= 0
        && s_jmap (c, t, "tags", req->tags, &req->tag_count, QN_SQS_MAX_TAGS))
        return -1;
    if ((t = qn_json_get (d, 0, "Tags")) >= 0
        && s_jmap (c, t, "Tags", req->tags, &req->tag_count, QN_SQS_MAX_TAGS))
        return -1;
    if ((t = qn_json_get (d, 0, "TagKeys")) >= 0
        && s_jstr_list (c, t, "TagKeys", req->tag_keys, &req->tag_key_count, QN_SQS_MAX_TAGS))
        return -1;
    if ((t = qn_json_get (d, 0, "AttributeNames")) >= 0
        && s_jstr_list (c, t, "AttributeNames", req->attribute_names, &req->attribute_name_count,
                        QN_SQS_MAX_NAMES))
        return -1;
    if ((t = qn_json_get (d, 0, "MessageSystemAttributeNames")) >= 0
        && s_jstr_list (c, t, "MessageSystemAttributeNames", req->attribute_names,
                        &req->attribute_name_count, QN_SQS_MAX_NAMES))
        return -1;
    if ((t = qn_json_get (d, 0, "MessageAttributeNames")) >= 0
        && s_jstr_list (c, t, "MessageAttributeNames", req->message_attribute_names,
                        &req->message_attribute_name_count, QN_SQS_MAX_NAMES))
        return -1;
    if (req->batch) {
        if ((t = qn_json_get (d, 0, "Entries")) >= 0) {
            if (qn_json_type (d, t) != QN_JSON_ARRAY)
                return s_jwrong (c, "Entries", "list");
            if (qn_json_size (d, t) > QN_SQS_MAX_ENTRIES)
                return qn_sqs_fail (c->err, QN_SQS_E_TOO_MANY_ENTRIES,
                                    "Maximum number of entries per request are %d. You have sent %lld.",
                                    QN_SQS_MAX_ENTRIES, (long long) qn_json_size (d, t));
            for (int e = qn_json_first (d, t); e >= 0; e = qn_json_next_sibling (d, t, e)) {
                if (qn_json_type (d, e) != QN_JSON_OBJECT)
                    return s_jwrong (c, "Entries", "list of structures");
                if (s_jentry (c, e, &req->entries [req->entry_count++]))
                    return -1;
            }
        }
    }
    else {
        if (s_jentry (c, 0, &req->entries [0]))
            return -1;
        req->entry_count = 1;
        req->entries [0].visibility_timeout = req->visibility_timeout;
    }
    return 0;
}

int
qn_sqs_decode_json (const char *target, size_t target_len, const char *body, size_t len,
                    qn_sqs_request_t *req, qn_sqs_error_t *err)
{
    s_request_init (req, len);
    req->proto = QN_SQS_JSON;
    memset (err, 0, sizeof *err);
    if (target_len <= 10 || memcmp (target, "AmazonSQS.", 10) != 0
        || (req->op = qn_sqs_op_lookup (target + 10, target_len - 10)) == QN_SQS_OP_NONE)
        return qn_sqs_fail (err, QN_SQS_E_UNKNOWN_OPERATION, "Unknown operation %.*s",
                            (int) (target_len > 80? 80: target_len), target);
    if (qn_sqs_op_unsupported (req->op))
        return qn_sqs_fail (err, QN_SQS_E_UNSUPPORTED_OPERATION,
                            "%s is not supported by this endpoint.", qn_sqs_op_name (req->op));
    req->batch = s_batch_prefix (req->op) != NULL;
    if (len > QN_SQS_MAX_REQUEST_BYTES)
        return qn_sqs_fail (err, QN_SQS_E_MALFORMED, "request body too large");
    if (len == 0) {
        body = "{}";
        len = 2;
    }
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    int rc;
    if (qn_json_parse (&doc, body, len, 32) != 0)
        rc = qn_sqs_fail (err, QN_SQS_E_MALFORMED, "Malformed JSON: %s", doc.err);
    else
    if (qn_json_type (&doc, 0) != QN_JSON_OBJECT)
        rc = qn_sqs_fail (err, QN_SQS_E_MALFORMED, "The request body must be a JSON object.");
    else {
        s_jctx_t c = { req, &doc, QN_BUF_INIT, err };
        rc = s_jrequest (&c);
        qn_buf_free (&c.scratch);
    }
    qn_json_doc_free (&doc);
    return rc;
}
