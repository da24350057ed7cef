/*  wire/sqs_validate.c - what an SQS request must satisfy before any queue is read
    Required members, ranges, batch shape and entry ids, message bodies
    (allowed characters, size) and message attributes (names, data types,
    values), queue names and queue URLs (spec §5, §6.2, §11). Checks that
    need the queue (FIFO rules, the queue's MaximumMessageSize, redrive) are
    the codec's. Pure; the first failure wins, with AWS's wording.
*/
#include "wire/sqs.h"

#include <string.h>
#include <strings.h>

bool
qn_sqs_body_valid (const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *) s;
    size_t i = 0;
    while (i < len) {
        uint32_t c = p [i];
        size_t n;
        if (c < 0x80)
            n = 1;
        else if ((c & 0xE0) == 0xC0) { c &= 0x1F; n = 2; }
        else if ((c & 0xF0) == 0xE0) { c &= 0x0F; n = 3; }
        else if ((c & 0xF8) == 0xF0) { c &= 0x07; n = 4; }
        else return false;
        if (i + n > len)
            return false;
        for (size_t k = 1; k < n; k++) {
            if ((p [i + k] & 0xC0) != 0x80)
                return false;
            c = (c << 6) | (p [i + k] & 0x3F);
        }
        //  Overlong forms and surrogates are not UTF-8.
        if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10FFFF)))
            return false;
        bool ok = c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF)
               || (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF);
        if (!ok)
            return false;
        i += n;
    }
    return true;
}

bool
qn_sqs_queue_name_valid (const char *name, size_t len, bool *fifo)
{
    *fifo = len > 5 && memcmp (name + len - 5, ".fifo", 5) == 0;
    size_t base = *fifo? len - 5: len;
    if (len == 0 || len > 80 || base == 0)
        return false;
    for (size_t i = 0; i < base; i++) {
        char c = name [i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
              || c == '-' || c == '_'))
            return false;
    }
    return true;
}

qn_sqs_str_t
qn_sqs_queue_from_url (const char *url, size_t len, qn_sqs_str_t *account)
{
    qn_sqs_str_t name = { url, 0 };
    if (account)
        *account = (qn_sqs_str_t) { url, 0 };
    if (!url)
        return name;
    //  Skip the scheme and host: the path starts at the first '/' after "//".
    const char *p = url, *end = url + len;
    const char *ss = memmem (url, len, "://", 3);
    if (ss) {
        p = memchr (ss + 3, '/', (size_t) (end - ss - 3));
        if (!p)
            return name;
    }
    //  Cut a query string or fragment, and trailing slashes.
    const char *q = memchr (p, '?', (size_t) (end - p));
    if (q)
        end = q;
    while (end > p && end [-1] == '/')
        end--;
    const char *slash = end;
    while (slash > p && slash [-1] != '/')
        slash--;
    name = (qn_sqs_str_t) { slash, (size_t) (end - slash) };
    if (account && slash > p) {
        const char *a_end = slash - 1, *a = a_end;
        while (a > p && a [-1] != '/')
            a--;
        *account = (qn_sqs_str_t) { a, (size_t) (a_end - a) };
    }
    return name;
}

static bool
s_batch_id_valid (const qn_sqs_str_t *id)
{
    if (!id->ptr || id->len == 0 || id->len > 80)
        return false;
    for (size_t i = 0; i < id->len; i++) {
        char c = id->ptr [i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
              || c == '-' || c == '_'))
            return false;
    }
    return true;
}

bool
qn_sqs_attr_name_valid (const qn_sqs_str_t *n)
{
    if (!n->ptr || n->len == 0 || n->len > 256 || n->ptr [0] == '.' || n->ptr [n->len - 1] == '.')
        return false;
    if ((n->len >= 4 && strncasecmp (n->ptr, "AWS.", 4) == 0)
        || (n->len >= 7 && strncasecmp (n->ptr, "Amazon.", 7) == 0))
        return false;
    for (size_t i = 0; i < n->len; i++) {
        char c = n->ptr [i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
              || c == '-' || c == '_' || c == '.'))
            return false;
        if (c == '.' && i > 0 && n->ptr [i - 1] == '.')
            return false;
    }
    return true;
}

//  "String", "Number", "Binary", optionally followed by "." and a label.
//  Returns 'S', 'N', 'B' or 0.
static char
s_base_type (const qn_sqs_str_t *t)
{
    if (!t->ptr || t->len == 0 || t->len > 256)
        return 0;
    static const char *names [] = { "String", "Number", "Binary" };
    for (int i = 0; i < 3; i++) {
        size_t l = strlen (names [i]);
        if (t->len >= l && memcmp (t->ptr, names [i], l) == 0 && (t->len == l || t->ptr [l] == '.'))
            return names [i][0];
    }
    return 0;
}

//  Up to 38 significant digits, optional sign, fraction and exponent.
static bool
s_number_valid (const char *s, size_t n)
{
    size_t i = 0, digits = 0;
    if (i < n && (s [i] == '+' || s [i] == '-'))
        i++;
    size_t int_start = i;
    while (i < n && s [i] >= '0' && s [i] <= '9') { digits++; i++; }
    bool any = i > int_start;
    if (i < n && s [i] == '.') {
        i++;
        size_t f = i;
        while (i < n && s [i] >= '0' && s [i] <= '9') { digits++; i++; }
        any = any || i > f;
    }
    if (!any)
        return false;
    if (i < n && (s [i] == 'e' || s [i] == 'E')) {
        i++;
        if (i < n && (s [i] == '+' || s [i] == '-'))
            i++;
        size_t e = i;
        while (i < n && s [i] >= '0' && s [i] <= '9' && i - e < 4)
            i++;
        if (i == e)
            return false;
    }
    return i == n && digits <= 38 + 2;     //  Leading/trailing zeros are trimmed by SQS
}

static int
s_check_attrs (const qn_sqs_attr_t *attrs, uint32_t count, bool system, size_t *bytes,
               qn_sqs_error_t *err)
{
    for (uint32_t i = 0; i < count; i++) {
        const qn_sqs_attr_t *a = &attrs [i];
        int nl = (int) (a->name.len > 256? 256: a->name.len);
        const char *nm = a->name.ptr? a->name.ptr: "";
        if (system && !(a->name.ptr && a->name.len == 14 && memcmp (a->name.ptr, "AWSTraceHeader", 14) == 0))
            return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                "Message system attribute name '%.*s' is invalid.", nl, nm);
        if (!system && !qn_sqs_attr_name_valid (&a->name))
            return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                "Message (user) attribute name '%.*s' is invalid.", nl, nm);
        for (uint32_t j = 0; j < i; j++)
            if (attrs [j].name.len == a->name.len && memcmp (attrs [j].name.ptr, a->name.ptr, a->name.len) == 0)
                return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                    "Message (user) attribute name '%.*s' is duplicated.", nl, nm);
        if (a->list_value)
            return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                "Message attribute list values in SendMessage operation are not supported.");
        char base = s_base_type (&a->data_type);
        if (!a->data_type.ptr || a->data_type.len == 0)
            return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                "The message attribute '%.*s' must contain non-empty message attribute type.",
                                nl, nm);
        if (!base || (system && !(a->data_type.len == 6 && base == 'S')))
            return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                "The type of message (user) attribute '%.*s' is invalid. You must use only the following supported type prefixes: Binary, Number, String.",
                                nl, nm);
        if (!a->value.ptr || a->value.len == 0 || (base == 'B') != a->binary)
            return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                "The message attribute '%.*s' must contain a non-empty message attribute value for message attribute type '%.*s'.",
                                nl, nm, (int) (a->data_type.len > 64? 64: a->data_type.len), a->data_type.ptr);
        if (base == 'N' && !s_number_valid (a->value.ptr, a->value.len))
            return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                "Can't cast the value of message (user) attribute '%.*s' to a number.", nl, nm);
        if (base != 'B' && !qn_sqs_body_valid (a->value.ptr, a->value.len))
            return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                "Message (user) attribute '%.*s' value contains invalid characters.", nl, nm);
        *bytes += a->name.len + a->data_type.len + a->value.len;
    }
    return 0;
}

static bool
s_id_chars_valid (const qn_sqs_str_t *s)
{
    if (s->len == 0 || s->len > 128)
        return false;
    for (size_t i = 0; i < s->len; i++)
        if (s->ptr [i] < '!' || s->ptr [i] > '~')
            return false;
    return true;
}

//  Size in bytes of a message as SQS counts it (body + attributes).
static size_t
s_message_bytes (const qn_sqs_entry_t *e)
{
    size_t n = e->body.len;
    for (uint32_t i = 0; i < e->attr_count; i++)
        n += e->attrs [i].name.len + e->attrs [i].data_type.len + e->attrs [i].value.len;
    return n;
}

int
qn_sqs_validate_message (const qn_sqs_entry_t *e, size_t max_bytes, qn_sqs_error_t *err)
{
    if (!e->body.ptr || e->body.len == 0)
        return qn_sqs_fail (err, QN_SQS_E_MISSING_PARAMETER,
                            "The request must contain the parameter MessageBody.");
    if (!qn_sqs_body_valid (e->body.ptr, e->body.len))
        return qn_sqs_fail (err, QN_SQS_E_INVALID_MESSAGE_CONTENTS,
                            "Invalid binary character in the message body. Allowed: #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF");
    size_t bytes = e->body.len;
    if (s_check_attrs (e->attrs, e->attr_count, false, &bytes, err)
        || s_check_attrs (e->sys_attrs, e->sys_attr_count, true, &bytes, err))
        return -1;
    if (max_bytes == 0)
        max_bytes = 262144;
    if (s_message_bytes (e) > max_bytes)
        return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                            "One or more parameters are invalid. Reason: Message must be shorter than %zu bytes.",
                            max_bytes);
    if (e->delay_seconds != -1 && (e->delay_seconds < 0 || e->delay_seconds > 900))
        return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                            "Value %lld for parameter DelaySeconds is invalid. Reason: must be between 0 and 900, if provided.",
                            (long long) e->delay_seconds);
    if (e->group_id.ptr && !s_id_chars_valid (&e->group_id))
        return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                            "Value for parameter MessageGroupId is invalid. Reason: 1 to 128 printable ASCII characters.");
    if (e->dedup_id.ptr && !s_id_chars_valid (&e->dedup_id))
        return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                            "Value for parameter MessageDeduplicationId is invalid. Reason: 1 to 128 printable ASCII characters.");
    return 0;
}

static int
s_range (int64_t v, int64_t lo, int64_t hi, const char *param, qn_sqs_error_t *err)
{
    if (v == -1 || (v >= lo && v <= hi))
        return 0;
    return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                        "Value %lld for parameter %s is invalid. Reason: must be between %lld and %lld, if provided.",
                        (long long) v, param, (long long) lo, (long long) hi);
}

static int
s_missing (qn_sqs_error_t *err, const char *param)
{
    return qn_sqs_fail (err, QN_SQS_E_MISSING_PARAMETER, "The request must contain the parameter %s.", param);
}

static bool
s_needs_queue (qn_sqs_op_t op)
{
    return op != QN_SQS_OP_CREATE_QUEUE && op != QN_SQS_OP_GET_QUEUE_URL && op != QN_SQS_OP_LIST_QUEUES;
}

//  Batches: whole-request shape, then each entry's own checks into
//  entries [i].error.
static int
s_validate_batch (qn_sqs_request_t *req, qn_sqs_error_t *err)
{
    if (req->entry_count == 0)
        return qn_sqs_fail (err, QN_SQS_E_EMPTY_BATCH, "There should be at least one %s in the request.",
                            req->op == QN_SQS_OP_SEND_MESSAGE_BATCH? "SendMessageBatchRequestEntry":
                            req->op == QN_SQS_OP_DELETE_MESSAGE_BATCH? "DeleteMessageBatchRequestEntry":
                            "ChangeMessageVisibilityBatchRequestEntry");
    size_t total = 0;
    for (uint32_t i = 0; i < req->entry_count; i++) {
        qn_sqs_entry_t *e = &req->entries [i];
        if (!s_batch_id_valid (&e->id))
            return qn_sqs_fail (err, QN_SQS_E_INVALID_BATCH_ENTRY_ID,
                                "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.");
        for (uint32_t j = 0; j < i; j++)
            if (req->entries [j].id.len == e->id.len && memcmp (req->entries [j].id.ptr, e->id.ptr, e->id.len) == 0)
                return qn_sqs_fail (err, QN_SQS_E_BATCH_IDS_NOT_DISTINCT,
                                    "Id %.*s repeated.", (int) e->id.len, e->id.ptr);
        total += s_message_bytes (e);
    }
    if (req->op == QN_SQS_OP_SEND_MESSAGE_BATCH && total > QN_SQS_MAX_BODY_BYTES)
        return qn_sqs_fail (err, QN_SQS_E_BATCH_TOO_LONG,
                            "Batch requests cannot be longer than %u bytes. You have sent %zu bytes.",
                            QN_SQS_MAX_BODY_BYTES, total);
    for (uint32_t i = 0; i < req->entry_count; i++) {
        qn_sqs_entry_t *e = &req->entries [i];
        if (req->op == QN_SQS_OP_SEND_MESSAGE_BATCH)
            qn_sqs_validate_message (e, QN_SQS_MAX_BODY_BYTES, &e->error);
        else
        if (!e->receipt_handle.ptr || e->receipt_handle.len == 0)
            s_missing (&e->error, "ReceiptHandle");
        else
        if (req->op == QN_SQS_OP_CHANGE_MESSAGE_VISIBILITY_BATCH) {
            if (e->visibility_timeout == -1)
                s_missing (&e->error, "VisibilityTimeout");
            else
                s_range (e->visibility_timeout, 0, 43200, "VisibilityTimeout", &e->error);
        }
    }
    return 0;
}

int
qn_sqs_validate (qn_sqs_request_t *req, qn_sqs_error_t *err)
{
    memset (err, 0, sizeof *err);
    if (s_needs_queue (req->op) && (!req->queue_url.ptr || req->queue_url.len == 0))
        return s_missing (err, "QueueUrl");
    qn_sqs_entry_t *e0 = &req->entries [0];
    switch (req->op) {
        case QN_SQS_OP_CREATE_QUEUE: {
            bool fifo;
            if (!req->queue_name.ptr)
                return s_missing (err, "QueueName");
            if (!qn_sqs_queue_name_valid (req->queue_name.ptr, req->queue_name.len, &fifo))
                return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                    "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length");
            for (uint32_t i = 0; i < req->attribute_count; i++)
                if (!req->attributes [i].key.ptr || !req->attributes [i].value.ptr)
                    return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                        "Every queue attribute needs a name and a value.");
            return 0;
        }
        case QN_SQS_OP_GET_QUEUE_URL:
            return req->queue_name.ptr? 0: s_missing (err, "QueueName");
        case QN_SQS_OP_LIST_QUEUES:
        case QN_SQS_OP_LIST_DEAD_LETTER_SOURCE_QUEUES:
            return s_range (req->max_results, 1, 1000, "MaxResults", err);
        case QN_SQS_OP_SET_QUEUE_ATTRIBUTES:
            if (req->attribute_count == 0)
                return s_missing (err, "Attribute.1.Name");
            for (uint32_t i = 0; i < req->attribute_count; i++)
                if (!req->attributes [i].key.ptr || !req->attributes [i].value.ptr)
                    return qn_sqs_fail (err, QN_SQS_E_INVALID_PARAMETER_VALUE,
                                        "Every queue attribute needs a name and a value.");
            return 0;
        case QN_SQS_OP_SEND_MESSAGE:
            return qn_sqs_validate_message (e0, QN_SQS_MAX_BODY_BYTES, err);
        case QN_SQS_OP_RECEIVE_MESSAGE:
            return s_range (req->max_messages, 1, 10, "MaxNumberOfMessages", err)
                || s_range (req->visibility_timeout, 0, 43200, "VisibilityTimeout", err)
                || s_range (req->wait_time_seconds, 0, 20, "WaitTimeSeconds", err)? -1: 0;
        case QN_SQS_OP_DELETE_MESSAGE:
            return e0->receipt_handle.ptr && e0->receipt_handle.len? 0: s_missing (err, "ReceiptHandle");
        case QN_SQS_OP_CHANGE_MESSAGE_VISIBILITY:
            if (!e0->receipt_handle.ptr || e0->receipt_handle.len == 0)
                return s_missing (err, "ReceiptHandle");
            if (e0->visibility_timeout == -1)
                return s_missing (err, "VisibilityTimeout");
            return s_range (e0->visibility_timeout, 0, 43200, "VisibilityTimeout", err);
        case QN_SQS_OP_SEND_MESSAGE_BATCH:
        case QN_SQS_OP_DELETE_MESSAGE_BATCH:
        case QN_SQS_OP_CHANGE_MESSAGE_VISIBILITY_BATCH:
            return s_validate_batch (req, err);
        case QN_SQS_OP_TAG_QUEUE:
            return req->tag_count? 0: s_missing (err, "Tags");
        case QN_SQS_OP_UNTAG_QUEUE:
            return req->tag_key_count? 0: s_missing (err, "TagKeys");
        default:
            return 0;
    }
}

// ------------------------------------------------------------------ queue attributes
//  Settable queue attributes (§6.1): name, minimum, maximum (integers), or
//  kind 'b' (boolean), 'j' (RedrivePolicy JSON), 's' (any string), 'e'
//  (one of `values`); fifo_only; create_only.
static const struct {
    const char *name;
    char kind;
    int64_t lo, hi;
    const char *values;
    bool fifo_only, create_only;
} s_qattrs [] = {
    { "VisibilityTimeout", 'i', 0, 43200, NULL, false, false },
    { "DelaySeconds", 'i', 0, 900, NULL, false, false },
    { "MaximumMessageSize", 'i', 1024, 1048576, NULL, false, false },
    { "MessageRetentionPeriod", 'i', 60, 1209600, NULL, false, false },
    { "ReceiveMessageWaitTimeSeconds", 'i', 0, 20, NULL, false, false },
    { "RedrivePolicy", 'j', 0, 0, NULL, false, false },
    { "RedriveAllowPolicy", 's', 0, 0, NULL, false, false },
    { "Policy", 's', 0, 0, NULL, false, false },
    { "FifoQueue", 'b', 0, 0, NULL, false, true },
    { "ContentBasedDeduplication", 'b', 0, 0, NULL, true, false },
    { "DeduplicationScope", 'e', 0, 0, "queue|messageGroup", true, false },
    { "FifoThroughputLimit", 'e', 0, 0, "perQueue|perMessageGroupId", true, false },
    { "KmsMasterKeyId", 's', 0, 0, NULL, false, false },
    { "KmsDataKeyReusePeriodSeconds", 'i', 60, 86400, NULL, false, false },
    { "SqsManagedSseEnabled", 'b', 0, 0, NULL, false, false },
};

static bool
s_str_is (const qn_sqs_str_t *s, const char *lit)
{
    return s->ptr && s->len == strlen (lit) && memcmp (s->ptr, lit, s->len) == 0;
}

static bool
s_int_in (const qn_sqs_str_t *v, int64_t lo, int64_t hi)
{
    if (!v->ptr || v->len == 0 || v->len > 12)
        return false;
    int64_t x = 0;
    for (size_t i = 0; i < v->len; i++) {
        if (v->ptr [i] < '0' || v->ptr [i] > '9')
            return false;
        x = x * 10 + (v->ptr [i] - '0');
    }
    return x >= lo && x <= hi;
}

//  {"deadLetterTargetArn":"arn:aws:sqs:...:name","maxReceiveCount":N|"N"}
//  (checked loosely here: the two members present; the codec reads them).
static bool
s_redrive_ok (const qn_sqs_str_t *v)
{
    if (v->len == 0)
        return true;                    //  "" removes the policy
    return memmem (v->ptr, v->len, "deadLetterTargetArn", 19)
        && memmem (v->ptr, v->len, "maxReceiveCount", 15)
        && v->ptr [0] == '{';
}

int
qn_sqs_queue_attrs_check (const qn_sqs_kv_t *kv, uint32_t n, bool fifo, bool create,
                          qn_sqs_error_t *err)
{
    for (uint32_t i = 0; i < n; i++) {
        const qn_sqs_str_t *k = &kv [i].key, *v = &kv [i].value;
        size_t a = 0, count = sizeof s_qattrs / sizeof s_qattrs [0];
        while (a < count && !s_str_is (k, s_qattrs [a].name))
            a++;
        int kl = (int) (k->len > 128? 128: k->len);
        if (a == count || (s_qattrs [a].fifo_only && !fifo) || (s_qattrs [a].create_only && !create))
            return qn_sqs_fail (err, QN_SQS_E_INVALID_ATTRIBUTE_NAME,
                                "Unknown Attribute %.*s.", kl, k->ptr? k->ptr: "");
        bool ok = true;
        switch (s_qattrs [a].kind) {
            case 'i': ok = s_int_in (v, s_qattrs [a].lo, s_qattrs [a].hi); break;
            case 'b': ok = s_str_is (v, "true") || s_str_is (v, "false"); break;
            case 'j': ok = s_redrive_ok (v); break;
            case 'e': {
                const char *vals = s_qattrs [a].values, *bar;
                ok = false;
                while (!ok && vals) {
                    bar = strchr (vals, '|');
                    size_t l = bar? (size_t) (bar - vals): strlen (vals);
                    ok = v->len == l && memcmp (v->ptr, vals, l) == 0;
                    vals = bar? bar + 1: NULL;
                }
                break;
            }
            default: break;
        }
        if (ok && s_str_is (k, "FifoQueue"))
            ok = s_str_is (v, fifo? "true": "false");
        if (!ok)
            return qn_sqs_fail (err, QN_SQS_E_INVALID_ATTRIBUTE_VALUE,
                                "Invalid value for the parameter %.*s.", kl, k->ptr);
    }
    return 0;
}
