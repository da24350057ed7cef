/*  wire/sqs.h - the Amazon SQS wire protocols (spec shared/spec/sqs.md)
    Pure codecs for the SQS front door: no sockets, threads or logging.
      wire/sqs_decode.c  AWS query (form-encoded Action=..., flattened lists
                         and maps) and AWS JSON 1.0 (X-Amz-Target:
                         AmazonSQS.<Op>) into ONE protocol-neutral request
                         struct; request validation that needs no queue
      wire/sqs_encode.c  answers: one writer API that emits the query
                         protocol's XML or JSON 1.0, and each protocol's
                         error shape (§4.2, §4.3, §9)
      wire/sqs_md5.c     MD5 of bodies and of message attributes exactly as
                         AWS computes them (§10); receipt handles, an
                         HMAC-SHA256-authenticated token over (queue,
                         partition, seq, lease) (§8.1)
    Decoded strings live in one arena owned by the request (sized from the
    input, never reallocated, so pointers stay valid); binary attribute
    values are stored decoded (raw bytes), bodies and names as UTF-8.
    Fails by returning -1 with a qn_sqs_error_t naming the protocol's own
    error code and an AWS-worded message.
*/
#ifndef QN_WIRE_SQS_H
#define QN_WIRE_SQS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define QN_SQS_MAX_ENTRIES      10      //  Batch entries (§5)
#define QN_SQS_MAX_MSG_ATTRS    10      //  Message attributes per message
#define QN_SQS_MAX_SYS_ATTRS    4       //  Message system attributes per message
#define QN_SQS_MAX_QATTRS       32      //  Queue attributes in one request
#define QN_SQS_MAX_TAGS         50
#define QN_SQS_MAX_NAMES        32      //  Attribute-name lists
#define QN_SQS_HANDLE_MAX       96      //  Receipt handle text, with its NUL
#define QN_SQS_MAX_BODY_BYTES   (1024u * 1024u)
//  Largest request body decoded (the biggest legal batch, base64 included)
#define QN_SQS_MAX_REQUEST_BYTES (4u * 1024u * 1024u)

typedef enum { QN_SQS_QUERY = 0, QN_SQS_JSON = 1 } qn_sqs_proto_t;

//  Operations: enum suffix, wire name, has a Result element (query XML).
#define QN_SQS_OPS(X) \
    X (CREATE_QUEUE,                    "CreateQueue",                  1) \
    X (GET_QUEUE_URL,                   "GetQueueUrl",                  1) \
    X (LIST_QUEUES,                     "ListQueues",                   1) \
    X (DELETE_QUEUE,                    "DeleteQueue",                  0) \
    X (PURGE_QUEUE,                     "PurgeQueue",                   0) \
    X (GET_QUEUE_ATTRIBUTES,            "GetQueueAttributes",           1) \
    X (SET_QUEUE_ATTRIBUTES,            "SetQueueAttributes",           0) \
    X (SEND_MESSAGE,                    "SendMessage",                  1) \
    X (SEND_MESSAGE_BATCH,              "SendMessageBatch",             1) \
    X (RECEIVE_MESSAGE,                 "ReceiveMessage",               1) \
    X (DELETE_MESSAGE,                  "DeleteMessage",                0) \
    X (DELETE_MESSAGE_BATCH,            "DeleteMessageBatch",           1) \
    X (CHANGE_MESSAGE_VISIBILITY,       "ChangeMessageVisibility",      0) \
    X (CHANGE_MESSAGE_VISIBILITY_BATCH, "ChangeMessageVisibilityBatch", 1) \
    X (LIST_DEAD_LETTER_SOURCE_QUEUES,  "ListDeadLetterSourceQueues",   1) \
    X (TAG_QUEUE,                       "TagQueue",                     0) \
    X (UNTAG_QUEUE,                     "UntagQueue",                   0) \
    X (LIST_QUEUE_TAGS,                 "ListQueueTags",                1) \
    X (ADD_PERMISSION,                  "AddPermission",                0) \
    X (REMOVE_PERMISSION,               "RemovePermission",             0) \
    X (START_MESSAGE_MOVE_TASK,         "StartMessageMoveTask",         1) \
    X (CANCEL_MESSAGE_MOVE_TASK,        "CancelMessageMoveTask",        1) \
    X (LIST_MESSAGE_MOVE_TASKS,         "ListMessageMoveTasks",         1)

typedef enum {
    QN_SQS_OP_NONE = 0,
#define X(e, n, r) QN_SQS_OP_##e,
    QN_SQS_OPS (X)
#undef X
    QN_SQS_OP_COUNT
} qn_sqs_op_t;

//  Errors (§9): enum suffix, query Code, HTTP status, JSON __type shape,
//  sender fault.
#define QN_SQS_ERRORS(X) \
    X (NON_EXISTENT_QUEUE,   "AWS.SimpleQueueService.NonExistentQueue", 400, "QueueDoesNotExist", 1) \
    X (QUEUE_ALREADY_EXISTS, "QueueAlreadyExists",                      400, "QueueNameExists", 1) \
    X (RECEIPT_HANDLE_INVALID, "ReceiptHandleIsInvalid",                404, "ReceiptHandleIsInvalid", 1) \
    X (MESSAGE_NOT_INFLIGHT, "AWS.SimpleQueueService.MessageNotInflight", 400, "MessageNotInflight", 1) \
    X (PURGE_IN_PROGRESS,    "AWS.SimpleQueueService.PurgeQueueInProgress", 403, "PurgeQueueInProgress", 1) \
    X (EMPTY_BATCH,          "AWS.SimpleQueueService.EmptyBatchRequest", 400, "EmptyBatchRequest", 1) \
    X (TOO_MANY_ENTRIES,     "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", 400, "TooManyEntriesInBatchRequest", 1) \
    X (BATCH_IDS_NOT_DISTINCT, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", 400, "BatchEntryIdsNotDistinct", 1) \
    X (INVALID_BATCH_ENTRY_ID, "AWS.SimpleQueueService.InvalidBatchEntryId", 400, "InvalidBatchEntryId", 1) \
    X (BATCH_TOO_LONG,       "AWS.SimpleQueueService.BatchRequestTooLong", 400, "BatchRequestTooLong", 1) \
    X (INVALID_ATTRIBUTE_NAME, "InvalidAttributeName",                  400, "InvalidAttributeName", 1) \
    X (INVALID_ATTRIBUTE_VALUE, "InvalidAttributeValue",                400, "InvalidAttributeValue", 1) \
    X (INVALID_MESSAGE_CONTENTS, "InvalidMessageContents",              400, "InvalidMessageContents", 1) \
    X (UNSUPPORTED_OPERATION, "AWS.SimpleQueueService.UnsupportedOperation", 400, "UnsupportedOperation", 1) \
    X (INVALID_PARAMETER_VALUE, "InvalidParameterValue",                400, "InvalidParameterValue", 1) \
    X (MISSING_PARAMETER,    "MissingParameter",                        400, "MissingParameter", 1) \
    X (MISSING_ACTION,       "MissingAction",                           400, "MissingAction", 1) \
    X (INVALID_ACTION,       "InvalidAction",                           400, "InvalidAction", 1) \
    X (UNKNOWN_OPERATION,    "UnknownOperationException",               400, "UnknownOperationException", 1) \
    X (MALFORMED,            "MalformedQueryString",                    400, "SerializationException", 1) \
    X (MISSING_AUTH_TOKEN,   "MissingAuthenticationToken",              403, "MissingAuthenticationToken", 1) \
    X (INCOMPLETE_SIGNATURE, "IncompleteSignature",                     400, "IncompleteSignature", 1) \
    X (INVALID_CLIENT_TOKEN_ID, "InvalidClientTokenId",                 403, "InvalidClientTokenId", 1) \
    X (SIGNATURE_DOES_NOT_MATCH, "SignatureDoesNotMatch",               403, "SignatureDoesNotMatch", 1) \
    X (REQUEST_EXPIRED,      "RequestExpired",                          400, "RequestExpired", 1) \
    X (OVER_LIMIT,           "OverLimit",                               403, "OverLimit", 1) \
    X (INTERNAL_FAILURE,     "InternalFailure",                         500, "InternalFailure", 0) \
    X (SERVICE_UNAVAILABLE,  "ServiceUnavailable",                      503, "ServiceUnavailable", 0)

typedef enum {
    QN_SQS_OK = 0,
#define X(e, c, s, t, f) QN_SQS_E_##e,
    QN_SQS_ERRORS (X)
#undef X
    QN_SQS_E_COUNT
} qn_sqs_code_t;

typedef struct {
    qn_sqs_code_t code;
    char message [256];
} qn_sqs_error_t;

//  A decoded string: ptr NULL means absent. Arena strings are NUL-terminated.
typedef struct {
    const char *ptr;
    size_t len;
} qn_sqs_str_t;

//  A message attribute. value holds the StringValue's UTF-8 bytes, or the
//  BinaryValue's decoded bytes when binary is true.
typedef struct {
    qn_sqs_str_t name;
    qn_sqs_str_t data_type;
    qn_sqs_str_t value;
    bool binary;
    bool list_value;            //  StringListValues / BinaryListValues were sent
} qn_sqs_attr_t;

//  True when n is a legal message attribute name (1-256 of [A-Za-z0-9_.-],
//  no leading, trailing or doubled '.', not AWS. / Amazon. in any case).
bool qn_sqs_attr_name_valid (const qn_sqs_str_t *n);

typedef struct {
    qn_sqs_str_t key;
    qn_sqs_str_t value;
} qn_sqs_kv_t;

//  One message of a send, or one handle of a delete / visibility change.
//  Single operations use entries [0].
typedef struct {
    qn_sqs_str_t id;                    //  Batch entry id
    qn_sqs_str_t body;
    int64_t delay_seconds;              //  -1 when absent
    qn_sqs_attr_t attrs [QN_SQS_MAX_MSG_ATTRS];
    uint32_t attr_count;
    qn_sqs_attr_t sys_attrs [QN_SQS_MAX_SYS_ATTRS];
    uint32_t sys_attr_count;
    qn_sqs_str_t dedup_id;
    qn_sqs_str_t group_id;
    qn_sqs_str_t receipt_handle;
    int64_t visibility_timeout;         //  -1 when absent
    qn_sqs_error_t error;               //  Per-entry decode failure (code 0: none)
} qn_sqs_entry_t;

typedef struct {
    qn_sqs_op_t op;
    qn_sqs_proto_t proto;
    bool batch;                         //  A *Batch operation
    qn_sqs_str_t queue_url;
    qn_sqs_str_t queue_name;
    qn_sqs_str_t queue_name_prefix;
    qn_sqs_str_t next_token;
    qn_sqs_str_t owner_account;
    qn_sqs_str_t receive_attempt_id;
    int64_t max_results;                //  -1 when absent (all int64 below too)
    int64_t max_messages;
    int64_t visibility_timeout;
    int64_t wait_time_seconds;
    qn_sqs_kv_t attributes [QN_SQS_MAX_QATTRS];  //  Queue attributes (Create/Set)
    uint32_t attribute_count;
    qn_sqs_kv_t tags [QN_SQS_MAX_TAGS];
    uint32_t tag_count;
    qn_sqs_str_t tag_keys [QN_SQS_MAX_TAGS];
    uint32_t tag_key_count;
    //  GetQueueAttributes AttributeNames; ReceiveMessage AttributeNames and
    //  MessageSystemAttributeNames (the union).
    qn_sqs_str_t attribute_names [QN_SQS_MAX_NAMES];
    uint32_t attribute_name_count;
    qn_sqs_str_t message_attribute_names [QN_SQS_MAX_NAMES];
    uint32_t message_attribute_name_count;
    qn_sqs_entry_t entries [QN_SQS_MAX_ENTRIES];
    uint32_t entry_count;
    char *arena;                        //  Owned: storage of every string above
    size_t arena_len, arena_cap;
} qn_sqs_request_t;

// ------------------------------------------------------------------ names and errors
//  Wire name of an operation ("SendMessage"), or NULL.
const char *
    qn_sqs_op_name (qn_sqs_op_t op);
//  Operation by wire name; QN_SQS_OP_NONE if unknown.
qn_sqs_op_t
    qn_sqs_op_lookup (const char *name, size_t len);
//  True for the operations we refuse with UnsupportedOperation (§11).
bool
    qn_sqs_op_unsupported (qn_sqs_op_t op);
const char *
    qn_sqs_code_query (qn_sqs_code_t code);
const char *
    qn_sqs_code_shape (qn_sqs_code_t code);
int
    qn_sqs_code_status (qn_sqs_code_t code);
bool
    qn_sqs_code_sender (qn_sqs_code_t code);
//  Fills `err` and returns -1 (so decoders can `return qn_sqs_fail (...)`).
int
    qn_sqs_fail (qn_sqs_error_t *err, qn_sqs_code_t code, const char *fmt, ...)
    __attribute__ ((format (printf, 3, 4)));

// ------------------------------------------------------------------ decoding
//  Decodes a query-protocol request: `body` is the form body (for GET the
//  query string). Returns 0, or -1 with `err` (MissingAction, InvalidAction,
//  UnsupportedOperation, InvalidParameterValue for a non-integer...). The
//  request must be freed with qn_sqs_request_free either way.
int
    qn_sqs_decode_query (const char *body, size_t len, qn_sqs_request_t *req,
                         qn_sqs_error_t *err);
//  Decodes a JSON 1.0 request: `target` is the X-Amz-Target header value.
int
    qn_sqs_decode_json (const char *target, size_t target_len, const char *body,
                        size_t len, qn_sqs_request_t *req, qn_sqs_error_t *err);
//  Checks what needs no queue: required members, ranges, batch shape,
//  entry ids, message attribute names/types/values, body characters and
//  size against `max_message_bytes` (0 = 256 KiB). Whole-request failures
//  return -1 with `err`; per-entry failures of batches are left in
//  entries [i].error (and make single operations fail with that error).
int
    qn_sqs_validate (qn_sqs_request_t *req, qn_sqs_error_t *err);
//  Per-message checks shared with the codec (body chars and size, attributes).
int
    qn_sqs_validate_message (const qn_sqs_entry_t *e, size_t max_bytes, qn_sqs_error_t *err);
//  CreateQueue / SetQueueAttributes attributes (§6.1): unknown names,
//  FIFO-only names on a standard queue and FifoQueue outside CreateQueue
//  -> InvalidAttributeName; values out of range -> InvalidAttributeValue.
int
    qn_sqs_queue_attrs_check (const qn_sqs_kv_t *kv, uint32_t n, bool fifo, bool create,
                              qn_sqs_error_t *err);
void
    qn_sqs_request_free (qn_sqs_request_t *req);
//  True if `s` is valid UTF-8 made only of SQS's allowed characters (§6.2).
bool
    qn_sqs_body_valid (const char *s, size_t len);
//  The queue name addressed: last segment of QueueUrl, else of `path`
//  (the request path); empty when neither names one. The account segment
//  (the one before the name) goes to *account when not NULL.
qn_sqs_str_t
    qn_sqs_queue_from_url (const char *url, size_t len, qn_sqs_str_t *account);
//  CreateQueue name rule: 1-80 of [A-Za-z0-9_-], optionally ending ".fifo".
bool
    qn_sqs_queue_name_valid (const char *name, size_t len, bool *fifo);

// ------------------------------------------------------------------ answers
//  One writer for both protocols. XML lists and maps are flattened the way
//  the query protocol's models say; JSON uses arrays and objects.
typedef struct {
    qn_sqs_proto_t proto;
    qn_buf_t *out;                      //  Not owned
    const char *op;                     //  Wire name of the operation
    bool has_result;
    uint32_t depth;
    struct {
        uint8_t kind;                   //  Internal frame kind
        const char *xml;                //  Element name of list items / map entries
        bool need_comma;
    } stack [8];
} qn_sqs_w_t;

//  Starts the answer of `op` (writes the XML prologue or the JSON '{').
void
    qn_sqs_w_begin (qn_sqs_w_t *w, qn_sqs_proto_t proto, qn_buf_t *out, qn_sqs_op_t op);
//  Ends it; `request_id` goes into the XML ResponseMetadata.
void
    qn_sqs_w_end (qn_sqs_w_t *w, const char *request_id);
//  Member `key` with a string / integer / boolean value.
void
    qn_sqs_w_str (qn_sqs_w_t *w, const char *key, const char *s, size_t len);
void
    qn_sqs_w_cstr (qn_sqs_w_t *w, const char *key, const char *s);
void
    qn_sqs_w_int (qn_sqs_w_t *w, const char *key, int64_t v);
void
    qn_sqs_w_bool (qn_sqs_w_t *w, const char *key, bool v);
//  A list member: JSON `"json_key":[`; XML items are `<xml_item>` elements.
void
    qn_sqs_w_list (qn_sqs_w_t *w, const char *json_key, const char *xml_item);
//  A string item of the current list.
void
    qn_sqs_w_item_str (qn_sqs_w_t *w, const char *s, size_t len);
//  A structure item of the current list (JSON '{', XML `<xml_item>`).
void
    qn_sqs_w_item_obj (qn_sqs_w_t *w);
void
    qn_sqs_w_item_obj_end (qn_sqs_w_t *w);
void
    qn_sqs_w_list_end (qn_sqs_w_t *w);
//  A string map: JSON `"json_key":{`; XML `<xml_entry><Name>k</Name><Value>v</Value></xml_entry>`.
void
    qn_sqs_w_map (qn_sqs_w_t *w, const char *json_key, const char *xml_entry);
void
    qn_sqs_w_map_str (qn_sqs_w_t *w, const char *k, size_t klen, const char *v, size_t vlen);
void
    qn_sqs_w_map_end (qn_sqs_w_t *w);
//  Writes a message attribute map entry (MessageAttributes; value base64
//  for binary types).
void
    qn_sqs_w_map_attr (qn_sqs_w_t *w, const qn_sqs_attr_t *a);
//  A batch failure item of the current list ("Failed" / BatchResultErrorEntry).
void
    qn_sqs_w_failed (qn_sqs_w_t *w, const char *id, size_t id_len, const qn_sqs_error_t *err);
//  A whole error answer in the protocol's shape. Returns the HTTP status;
//  for JSON, `query_error` (if not NULL, >= 128 bytes) receives the value of
//  the x-amzn-query-error header ("<Code>;Sender").
int
    qn_sqs_write_error (qn_sqs_proto_t proto, const qn_sqs_error_t *err,
                        const char *request_id, qn_buf_t *out, char *query_error,
                        size_t query_error_len);
//  Content-Type of the protocol's answers.
const char *
    qn_sqs_content_type (qn_sqs_proto_t proto);
//  XML text escaping (& < > " ' and CR as &#xD;).
void
    qn_sqs_xml_escape (qn_buf_t *out, const char *s, size_t len);

// ------------------------------------------------------------------ checksums
//  Lowercase hex MD5 of `len` bytes.
void
    qn_sqs_md5_hex (const void *data, size_t len, char out [33]);
//  MD5OfMessageAttributes of `count` attributes (any order; sorted inside).
void
    qn_sqs_md5_attrs (const qn_sqs_attr_t *attrs, uint32_t count, char out [33]);

// ------------------------------------------------------------------ stored metadata
//  {"name":["DataType","value or base64"],...} (wire/sqs_meta.c).
void
    qn_sqs_attrs_to_json (const qn_sqs_attr_t *attrs, uint32_t count, qn_buf_t *out);
//  Parses that JSON back: strings are stored in `store` (NUL-separated) and
//  the attributes point into it (do not grow `store` while they are used).
//  Returns 0, or -1 when the JSON is not of that shape.
int
    qn_sqs_attrs_from_json (const char *json, size_t len, qn_sqs_attr_t *attrs, uint32_t cap,
                            uint32_t *count, qn_buf_t *store);
//  ReceiveMessage name filters: "All", ".*", "prefix.*" or the exact name.
bool
    qn_sqs_name_wanted (const qn_sqs_str_t *names, uint32_t count, const char *name, size_t len);

// ------------------------------------------------------------------ receipt handles
#define QN_SQS_HANDLE_KEY_LEN   32

typedef struct {
    int32_t queue_id;
    int64_t partition_id;
    int64_t seq;
    uint8_t lease_id [16];              //  The native lease (a UUID)
} qn_sqs_handle_t;

//  Writes the base64url token (no padding, NUL-terminated) into `out`.
void
    qn_sqs_handle_encode (const qn_sqs_handle_t *h, const uint8_t key [QN_SQS_HANDLE_KEY_LEN],
                          char out [QN_SQS_HANDLE_MAX]);
//  0 if `text` is an authentic handle made with `key`, else -1.
int
    qn_sqs_handle_decode (const char *text, size_t len,
                          const uint8_t key [QN_SQS_HANDLE_KEY_LEN], qn_sqs_handle_t *out);

#endif
