/*  test/unit/test_wire_sqs.c - SQS codecs (wire/sqs*.c)
    Checksums against the vectors AWS SDKs validate (spec §10), the query
    and JSON decoders on bodies captured from awscli 2.9 and the SDK v3,
    validation failures with their codes, the XML and JSON writers and
    error shapes, and receipt handles (round trip, tampering, wrong key).
    Inputs sit at the end of exact-size heap blocks so ASan catches a read
    past them.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "wire/sqs.h"

static int
s_query (const char *body, qn_sqs_request_t *req, qn_sqs_error_t *err)
{
    size_t len = strlen (body);
    char *copy = qn_malloc (len ? len: 1);
    memcpy (copy, body, len);
    int rc = qn_sqs_decode_query (copy, len, req, err);
    //  Decoded strings live in the arena, not the input.
    memset (copy, 'X', len);
    free (copy);
    return rc;
}

static int
s_json (const char *target, const char *body, qn_sqs_request_t *req, qn_sqs_error_t *err)
{
    size_t len = strlen (body);
    char *copy = qn_malloc (len ? len: 1);
    memcpy (copy, body, len);
    int rc = qn_sqs_decode_json (target, strlen (target), copy, len, req, err);
    memset (copy, 'X', len);
    free (copy);
    return rc;
}

static void
s_eq (qn_sqs_str_t s, const char *expected)
{
    assert_non_null (s.ptr);
    assert_int_equal (s.len, strlen (expected));
    assert_memory_equal (s.ptr, expected, s.len);
}

static qn_sqs_attr_t
s_attr (const char *name, const char *type, const char *value, size_t len, bool binary)
{
    return (qn_sqs_attr_t) { { name, strlen (name) }, { type, strlen (type) },
                             { value, len }, binary, false };
}

// ------------------------------------------------------------------ checksums
static void
test_md5_body (void **state)
{
    (void) state;
    char hex [33];
    qn_sqs_md5_hex ("hello", 5, hex);
    assert_string_equal (hex, "5d41402abc4b2a76b9719d911017c592");
    const char *u = "h\xc3\xa9llo \xe2\x9c\x93";
    qn_sqs_md5_hex (u, strlen (u), hex);
    assert_string_equal (hex, "21b1ae5bc147bb564254200a4731e337");
}

static void
test_md5_attributes (void **state)
{
    (void) state;
    char hex [33];
    qn_sqs_attr_t a [3] = {
        s_attr ("binaryAttribute", "Binary", "Hello binary world!", 19, true),
        s_attr ("customNumberTypeAttrib", "Number.float", "4563442423554324324264524243.32543234", 37, false),
        s_attr ("attribName1", "String", "attribValue 1", 13, false),
    };
    qn_sqs_md5_attrs (&a [2], 1, hex);
    assert_string_equal (hex, "19e27d4e946b072f3f58da80d94fd778");
    qn_sqs_md5_attrs (&a [1], 1, hex);
    assert_string_equal (hex, "9fe1b90bbd9965bdf77bac517c7d2495");
    qn_sqs_md5_attrs (&a [0], 1, hex);
    assert_string_equal (hex, "31a92b15d92f8db860eda32aceb656c3");
    //  Unsorted input: the names are sorted inside.
    qn_sqs_md5_attrs (a, 3, hex);
    assert_string_equal (hex, "c932db14a896c663f83c260297d594ff");
}

// ------------------------------------------------------------------ query protocol
static void
test_query_receive_golden (void **state)
{
    (void) state;
    qn_sqs_request_t req;
    qn_sqs_error_t err;
    assert_int_equal (s_query ("Action=ReceiveMessage&Version=2012-11-05&QueueUrl=http%3A%2F%2F127.0.0.1%3A9324%2F000000000000%2Fq1"
                               "&AttributeName.1=All&MessageAttributeName.1=All&MaxNumberOfMessages=10&WaitTimeSeconds=1",
                               &req, &err), 0);
    assert_int_equal (req.op, QN_SQS_OP_RECEIVE_MESSAGE);
    assert_int_equal (req.proto, QN_SQS_QUERY);
    s_eq (req.queue_url, "http://127.0.0.1:9324/000000000000/q1");
    assert_int_equal (req.attribute_name_count, 1);
    s_eq (req.attribute_names [0], "All");
    assert_int_equal (req.message_attribute_name_count, 1);
    assert_int_equal (req.max_messages, 10);
    assert_int_equal (req.wait_time_seconds, 1);
    assert_int_equal (req.visibility_timeout, -1);
    assert_int_equal (qn_sqs_validate (&req, &err), 0);
    qn_sqs_str_t account;
    qn_sqs_str_t name = qn_sqs_queue_from_url (req.queue_url.ptr, req.queue_url.len, &account);
    s_eq (name, "q1");
    s_eq (account, "000000000000");
    qn_sqs_request_free (&req);
}

static void
test_query_send_attributes (void **state)
{
    (void) state;
    qn_sqs_request_t req;
    qn_sqs_error_t err;
    assert_int_equal (s_query ("Action=SendMessage&Version=2012-11-05&QueueUrl=http%3A%2F%2Fh%2F000000000000%2Fq1"
                               "&MessageBody=hello+w%C3%B6rld%21&DelaySeconds=5"
                               "&MessageAttribute.1.Name=a&MessageAttribute.1.Value.DataType=String"
                               "&MessageAttribute.1.Value.StringValue=x"
                               "&MessageAttribute.2.Name=n&MessageAttribute.2.Value.DataType=Number.int"
                               "&MessageAttribute.2.Value.StringValue=42"
                               "&MessageAttribute.3.Name=b&MessageAttribute.3.Value.DataType=Binary"
                               "&MessageAttribute.3.Value.BinaryValue=AAEC",
                               &req, &err), 0);
    assert_int_equal (req.op, QN_SQS_OP_SEND_MESSAGE);
    assert_int_equal (req.entry_count, 1);
    qn_sqs_entry_t *e = &req.entries [0];
    s_eq (e->body, "hello w\xc3\xb6rld!");
    assert_int_equal (e->delay_seconds, 5);
    assert_int_equal (e->attr_count, 3);
    s_eq (e->attrs [1].data_type, "Number.int");
    s_eq (e->attrs [1].value, "42");
    assert_true (e->attrs [2].binary);
    assert_int_equal (e->attrs [2].value.len, 3);
    assert_memory_equal (e->attrs [2].value.ptr, "\0\1\2", 3);
    assert_int_equal (qn_sqs_validate (&req, &err), 0);
    qn_sqs_request_free (&req);
}

static void
test_query_batch_and_gaps (void **state)
{
    (void) state;
    qn_sqs_request_t req;
    qn_sqs_error_t err;
    //  Entry 4 follows a gap: only the contiguous prefix counts.
    assert_int_equal (s_query ("Action=SendMessageBatch&QueueUrl=u%2Fq"
                               "&SendMessageBatchRequestEntry.2.Id=b&SendMessageBatchRequestEntry.2.MessageBody=y"
                               "&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=x"
                               "&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=k"
                               "&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType=Binary"
                               "&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.BinaryValue=AAEC"
                               "&SendMessageBatchRequestEntry.4.Id=d&SendMessageBatchRequestEntry.4.MessageBody=z",
                               &req, &err), 0);
    assert_true (req.batch);
    assert_int_equal (req.entry_count, 2);
    s_eq (req.entries [0].id, "a");
    s_eq (req.entries [1].body, "y");
    assert_int_equal (req.entries [0].attr_count, 1);
    assert_int_equal (qn_sqs_validate (&req, &err), 0);
    assert_int_equal (req.entries [0].error.code, QN_SQS_OK);
    qn_sqs_request_free (&req);

    assert_int_equal (s_query ("Action=SendMessageBatch&QueueUrl=q"
                               "&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=x"
                               "&SendMessageBatchRequestEntry.2.Id=a&SendMessageBatchRequestEntry.2.MessageBody=y",
                               &req, &err), 0);
    assert_int_equal (qn_sqs_validate (&req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_BATCH_IDS_NOT_DISTINCT);
    assert_string_equal (qn_sqs_code_query (err.code), "AWS.SimpleQueueService.BatchEntryIdsNotDistinct");
    qn_sqs_request_free (&req);

    assert_int_equal (s_query ("Action=DeleteMessageBatch&QueueUrl=q", &req, &err), 0);
    assert_int_equal (qn_sqs_validate (&req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_EMPTY_BATCH);
    qn_sqs_request_free (&req);

    assert_int_equal (s_query ("Action=DeleteMessageBatch&QueueUrl=q&DeleteMessageBatchRequestEntry.11.Id=k",
                               &req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_TOO_MANY_ENTRIES);
    qn_sqs_request_free (&req);

    assert_int_equal (s_query ("Action=ChangeMessageVisibilityBatch&QueueUrl=q"
                               "&ChangeMessageVisibilityBatchRequestEntry.1.Id=a%20b"
                               "&ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle=h",
                               &req, &err), 0);
    assert_int_equal (qn_sqs_validate (&req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_INVALID_BATCH_ENTRY_ID);
    qn_sqs_request_free (&req);

    //  Per-entry failures stay in the entry.
    assert_int_equal (s_query ("Action=ChangeMessageVisibilityBatch&QueueUrl=q"
                               "&ChangeMessageVisibilityBatchRequestEntry.1.Id=a"
                               "&ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle=h"
                               "&ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout=50000"
                               "&ChangeMessageVisibilityBatchRequestEntry.2.Id=b"
                               "&ChangeMessageVisibilityBatchRequestEntry.2.ReceiptHandle=h"
                               "&ChangeMessageVisibilityBatchRequestEntry.2.VisibilityTimeout=5",
                               &req, &err), 0);
    assert_int_equal (qn_sqs_validate (&req, &err), 0);
    assert_int_equal (req.entries [0].error.code, QN_SQS_E_INVALID_PARAMETER_VALUE);
    assert_int_equal (req.entries [1].error.code, QN_SQS_OK);
    assert_int_equal (req.entries [1].visibility_timeout, 5);
    qn_sqs_request_free (&req);
}

static void
test_query_create_and_lists (void **state)
{
    (void) state;
    qn_sqs_request_t req;
    qn_sqs_error_t err;
    assert_int_equal (s_query ("Action=CreateQueue&Version=2012-11-05&QueueName=q+f.fifo"
                               "&Attribute.1.Name=FifoQueue&Attribute.1.Value=true"
                               "&Attribute.2.Name=ContentBasedDeduplication&Attribute.2.Value=true"
                               "&Tag.1.Key=team&Tag.1.Value=a",
                               &req, &err), 0);
    s_eq (req.queue_name, "q f.fifo");
    assert_int_equal (req.attribute_count, 2);
    s_eq (req.attributes [1].key, "ContentBasedDeduplication");
    assert_int_equal (req.tag_count, 1);
    s_eq (req.tags [0].value, "a");
    //  A space is not a legal queue-name character.
    assert_int_equal (qn_sqs_validate (&req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_INVALID_PARAMETER_VALUE);
    qn_sqs_request_free (&req);

    assert_int_equal (s_query ("Action=ReceiveMessage&QueueUrl=q&AttributeName.1=SentTimestamp"
                               "&MessageSystemAttributeName.1=SenderId&MessageSystemAttributeName.2=All",
                               &req, &err), 0);
    assert_int_equal (req.attribute_name_count, 3);
    s_eq (req.attribute_names [0], "SentTimestamp");
    s_eq (req.attribute_names [2], "All");
    qn_sqs_request_free (&req);

    assert_int_equal (s_query ("Action=UntagQueue&QueueUrl=q&TagKey.1=a&TagKey.2=b", &req, &err), 0);
    assert_int_equal (req.tag_key_count, 2);
    qn_sqs_request_free (&req);

    bool fifo;
    assert_true (qn_sqs_queue_name_valid ("f1.fifo", 7, &fifo));
    assert_true (fifo);
    assert_true (qn_sqs_queue_name_valid ("a-b_C9", 6, &fifo));
    assert_false (fifo);
    assert_false (qn_sqs_queue_name_valid (".fifo", 5, &fifo));
    assert_false (qn_sqs_queue_name_valid ("", 0, &fifo));
    char long_name [82];
    memset (long_name, 'a', 81);
    assert_false (qn_sqs_queue_name_valid (long_name, 81, &fifo));
    assert_true (qn_sqs_queue_name_valid (long_name, 80, &fifo));
}

static void
test_query_errors (void **state)
{
    (void) state;
    qn_sqs_request_t req;
    qn_sqs_error_t err;
    assert_int_equal (s_query ("Version=2012-11-05", &req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_MISSING_ACTION);
    qn_sqs_request_free (&req);
    assert_int_equal (s_query ("Action=FlyToTheMoon", &req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_INVALID_ACTION);
    assert_int_equal (qn_sqs_code_status (err.code), 400);
    qn_sqs_request_free (&req);
    assert_int_equal (s_query ("Action=AddPermission", &req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_UNSUPPORTED_OPERATION);
    qn_sqs_request_free (&req);
    assert_int_equal (s_query ("Action=ReceiveMessage&QueueUrl=q&MaxNumberOfMessages=ten", &req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_INVALID_PARAMETER_VALUE);
    qn_sqs_request_free (&req);
    assert_int_equal (s_query ("Action=SendMessage&QueueUrl=q&MessageBody=%G1", &req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_MALFORMED);
    qn_sqs_request_free (&req);
    assert_int_equal (s_query ("Action=SendMessage&QueueUrl=q&MessageBody=%", &req, &err), -1);
    qn_sqs_request_free (&req);
    assert_int_equal (s_query ("Action=ReceiveMessage&QueueUrl=q&MaxNumberOfMessages=11", &req, &err), 0);
    assert_int_equal (qn_sqs_validate (&req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_INVALID_PARAMETER_VALUE);
    qn_sqs_request_free (&req);
    assert_int_equal (s_query ("Action=SendMessage&MessageBody=x", &req, &err), 0);
    assert_int_equal (qn_sqs_validate (&req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_MISSING_PARAMETER);
    assert_string_equal (err.message, "The request must contain the parameter QueueUrl.");
    qn_sqs_request_free (&req);
    assert_int_equal (s_query ("Action=SendMessage&QueueUrl=q", &req, &err), 0);
    assert_int_equal (qn_sqs_validate (&req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_MISSING_PARAMETER);
    qn_sqs_request_free (&req);
    //  A NUL byte (from %00) is not allowed in a body.
    assert_int_equal (s_query ("Action=SendMessage&QueueUrl=q&MessageBody=a%00b", &req, &err), 0);
    assert_int_equal (qn_sqs_validate (&req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_INVALID_MESSAGE_CONTENTS);
    qn_sqs_request_free (&req);
}

static void
test_message_validation (void **state)
{
    (void) state;
    qn_sqs_error_t err;
    qn_sqs_entry_t e;
    memset (&e, 0, sizeof e);
    e.delay_seconds = e.visibility_timeout = -1;
    e.body = (qn_sqs_str_t) { "x", 1 };
    e.attr_count = 1;
    struct { const char *name, *type, *value; bool ok; } cases [] = {
        { "good.name-1_", "String", "v", true },
        { ".lead", "String", "v", false },
        { "trail.", "String", "v", false },
        { "a..b", "String", "v", false },
        { "AWS.x", "String", "v", false },
        { "amazon.x", "String", "v", false },
        { "sp ace", "String", "v", false },
        { "n", "Number", "-12.5e3", true },
        { "n", "Number.float", "1.", true },
        { "n", "Number", "abc", false },
        { "n", "Number", "", false },
        { "t", "Strong", "v", false },
        { "t", "String.json", "{}", true },
        { "t", "", "v", false },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        e.attrs [0] = s_attr (cases [i].name, cases [i].type, cases [i].value,
                              strlen (cases [i].value), false);
        int rc = qn_sqs_validate_message (&e, 0, &err);
        if (rc != (cases [i].ok? 0: -1))
            fail_msg ("case %zu (%s %s %s): rc %d %s", i, cases [i].name, cases [i].type,
                      cases [i].value, rc, err.message);
        if (!cases [i].ok)
            assert_int_equal (err.code, QN_SQS_E_INVALID_PARAMETER_VALUE);
    }
    e.attr_count = 0;
    //  Size limit: body + attributes.
    char *big = qn_malloc (262145);
    memset (big, 'a', 262145);
    e.body = (qn_sqs_str_t) { big, 262145 };
    assert_int_equal (qn_sqs_validate_message (&e, 262144, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_INVALID_PARAMETER_VALUE);
    e.body.len = 262144;
    assert_int_equal (qn_sqs_validate_message (&e, 262144, &err), 0);
    free (big);
    //  Body characters (§6.2).
    assert_true (qn_sqs_body_valid ("a\tb\r\n\xef\xbf\xbd\xf0\x9f\x98\x80", 12));
    assert_false (qn_sqs_body_valid ("\x01", 1));
    assert_false (qn_sqs_body_valid ("\xef\xbf\xbe", 3));     //  U+FFFE
    assert_false (qn_sqs_body_valid ("\xed\xa0\x80", 3));     //  a surrogate
    assert_false (qn_sqs_body_valid ("\xc0\xaf", 2));         //  overlong
    assert_false (qn_sqs_body_valid ("\xe2\x9c", 2));         //  truncated
}

// ------------------------------------------------------------------ JSON 1.0
static void
test_json_send_and_batch (void **state)
{
    (void) state;
    qn_sqs_request_t req;
    qn_sqs_error_t err;
    assert_int_equal (s_json ("AmazonSQS.SendMessage",
                              "{\"QueueUrl\":\"http://127.0.0.1:9324/000000000000/js1\","
                              "\"MessageBody\":\"h\\u00e9llo \\u2713\",\"MessageAttributes\":{"
                              "\"a\":{\"DataType\":\"String\",\"StringValue\":\"x\"},"
                              "\"b\":{\"DataType\":\"Binary\",\"BinaryValue\":\"AAEC\"}}}", &req, &err), 0);
    assert_int_equal (req.op, QN_SQS_OP_SEND_MESSAGE);
    assert_int_equal (req.proto, QN_SQS_JSON);
    s_eq (req.entries [0].body, "h\xc3\xa9llo \xe2\x9c\x93");
    assert_int_equal (req.entries [0].attr_count, 2);
    assert_true (req.entries [0].attrs [1].binary);
    assert_int_equal (req.entries [0].attrs [1].value.len, 3);
    assert_int_equal (qn_sqs_validate (&req, &err), 0);
    qn_sqs_request_free (&req);

    assert_int_equal (s_json ("AmazonSQS.DeleteMessageBatch",
                              "{\"QueueUrl\":\"q\",\"Entries\":[{\"Id\":\"e0\",\"ReceiptHandle\":\"r0\"},"
                              "{\"Id\":\"e1\",\"ReceiptHandle\":\"r1\"}]}", &req, &err), 0);
    assert_int_equal (req.entry_count, 2);
    s_eq (req.entries [1].receipt_handle, "r1");
    assert_int_equal (qn_sqs_validate (&req, &err), 0);
    qn_sqs_request_free (&req);

    assert_int_equal (s_json ("AmazonSQS.ReceiveMessage",
                              "{\"QueueUrl\":\"q\",\"MaxNumberOfMessages\":10,\"WaitTimeSeconds\":2,"
                              "\"MessageAttributeNames\":[\"All\"],\"MessageSystemAttributeNames\":[\"All\"],"
                              "\"AttributeNames\":[\"SentTimestamp\"],\"VisibilityTimeout\":0}", &req, &err), 0);
    assert_int_equal (req.max_messages, 10);
    assert_int_equal (req.visibility_timeout, 0);
    assert_int_equal (req.attribute_name_count, 2);
    qn_sqs_request_free (&req);

    assert_int_equal (s_json ("AmazonSQS.CreateQueue",
                              "{\"QueueName\":\"js1\",\"Attributes\":{\"VisibilityTimeout\":\"20\"},\"tags\":{\"a\":\"b\"}}",
                              &req, &err), 0);
    assert_int_equal (req.attribute_count, 1);
    assert_int_equal (req.tag_count, 1);
    qn_sqs_request_free (&req);

    assert_int_equal (s_json ("AmazonSQS.ListQueues", "", &req, &err), 0);
    assert_int_equal (qn_sqs_validate (&req, &err), 0);
    qn_sqs_request_free (&req);
}

static void
test_json_errors (void **state)
{
    (void) state;
    qn_sqs_request_t req;
    qn_sqs_error_t err;
    assert_int_equal (s_json ("AmazonSQS.Nope", "{}", &req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_UNKNOWN_OPERATION);
    qn_sqs_request_free (&req);
    assert_int_equal (s_json ("AmazonSNS.Publish", "{}", &req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_UNKNOWN_OPERATION);
    qn_sqs_request_free (&req);
    assert_int_equal (s_json ("AmazonSQS.SendMessage", "{\"QueueUrl\":", &req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_MALFORMED);
    qn_sqs_request_free (&req);
    assert_int_equal (s_json ("AmazonSQS.SendMessage", "[1]", &req, &err), -1);
    qn_sqs_request_free (&req);
    assert_int_equal (s_json ("AmazonSQS.ReceiveMessage", "{\"QueueUrl\":\"q\",\"MaxNumberOfMessages\":\"10\"}",
                              &req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_INVALID_PARAMETER_VALUE);
    qn_sqs_request_free (&req);
    assert_int_equal (s_json ("AmazonSQS.ReceiveMessage", "{\"QueueUrl\":\"q\",\"MaxNumberOfMessages\":1.5}",
                              &req, &err), -1);
    qn_sqs_request_free (&req);
    assert_int_equal (s_json ("AmazonSQS.SendMessageBatch",
                              "{\"QueueUrl\":\"q\",\"Entries\":[{},{},{},{},{},{},{},{},{},{},{}]}", &req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_TOO_MANY_ENTRIES);
    qn_sqs_request_free (&req);
    assert_int_equal (s_json ("AmazonSQS.SendMessage",
                              "{\"QueueUrl\":\"q\",\"MessageBody\":\"x\",\"MessageAttributes\":{\"b\":"
                              "{\"DataType\":\"Binary\",\"BinaryValue\":\"!!!\"}}}", &req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_INVALID_PARAMETER_VALUE);
    qn_sqs_request_free (&req);
    assert_int_equal (s_json ("AmazonSQS.SendMessage",
                              "{\"QueueUrl\":\"q\",\"MessageBody\":\"x\",\"MessageAttributes\":{\"l\":"
                              "{\"DataType\":\"String\",\"StringListValues\":[\"a\"]}}}", &req, &err), 0);
    assert_int_equal (qn_sqs_validate (&req, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_INVALID_PARAMETER_VALUE);
    qn_sqs_request_free (&req);
}

// ------------------------------------------------------------------ writers
static void
test_xml_writer (void **state)
{
    (void) state;
    qn_buf_t out = QN_BUF_INIT;
    qn_sqs_xml_escape (&out, "<a&b>\"'\r\n", 9);
    assert_string_equal (out.data, "&lt;a&amp;b&gt;&quot;&apos;&#xD;\n");
    qn_buf_reset (&out);

    qn_sqs_w_t w;
    qn_sqs_w_begin (&w, QN_SQS_QUERY, &out, QN_SQS_OP_RECEIVE_MESSAGE);
    qn_sqs_w_list (&w, "Messages", "Message");
    qn_sqs_w_item_obj (&w);
    qn_sqs_w_cstr (&w, "MessageId", "m1");
    qn_sqs_w_cstr (&w, "Body", "a<b");
    qn_sqs_w_map (&w, "Attributes", "Attribute");
    qn_sqs_w_map_str (&w, "SenderId", 8, "000000000000", 12);
    qn_sqs_w_map_end (&w);
    qn_sqs_w_map (&w, "MessageAttributes", "MessageAttribute");
    qn_sqs_attr_t bin = s_attr ("b", "Binary", "\0\1\2", 3, true);
    qn_sqs_w_map_attr (&w, &bin);
    qn_sqs_w_map_end (&w);
    qn_sqs_w_item_obj_end (&w);
    qn_sqs_w_list_end (&w);
    qn_sqs_w_end (&w, "rid");
    assert_string_equal (out.data,
        "<?xml version=\"1.0\"?><ReceiveMessageResponse xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\">"
        "<ReceiveMessageResult><Message><MessageId>m1</MessageId><Body>a&lt;b</Body>"
        "<Attribute><Name>SenderId</Name><Value>000000000000</Value></Attribute>"
        "<MessageAttribute><Name>b</Name><Value><BinaryValue>AAEC</BinaryValue><DataType>Binary</DataType></Value></MessageAttribute>"
        "</Message></ReceiveMessageResult><ResponseMetadata><RequestId>rid</RequestId></ResponseMetadata>"
        "</ReceiveMessageResponse>");
    qn_buf_reset (&out);

    //  Operations without output have no Result element.
    qn_sqs_w_begin (&w, QN_SQS_QUERY, &out, QN_SQS_OP_DELETE_MESSAGE);
    qn_sqs_w_end (&w, "r");
    assert_string_equal (out.data,
        "<?xml version=\"1.0\"?><DeleteMessageResponse xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\">"
        "<ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></DeleteMessageResponse>");
    qn_buf_free (&out);
}

static void
test_json_writer (void **state)
{
    (void) state;
    qn_buf_t out = QN_BUF_INIT;
    qn_sqs_w_t w;
    qn_sqs_w_begin (&w, QN_SQS_JSON, &out, QN_SQS_OP_SEND_MESSAGE_BATCH);
    qn_sqs_w_list (&w, "Successful", "SendMessageBatchResultEntry");
    qn_sqs_w_item_obj (&w);
    qn_sqs_w_cstr (&w, "Id", "a");
    qn_sqs_w_cstr (&w, "MD5OfMessageBody", "x\"\n\x01");
    qn_sqs_w_item_obj_end (&w);
    qn_sqs_w_list_end (&w);
    qn_sqs_w_list (&w, "Failed", "BatchResultErrorEntry");
    qn_sqs_error_t e = { QN_SQS_E_INVALID_PARAMETER_VALUE, "bad" };
    qn_sqs_w_failed (&w, "b", 1, &e);
    qn_sqs_w_list_end (&w);
    qn_sqs_w_list (&w, "QueueUrls", "QueueUrl");
    qn_sqs_w_item_str (&w, "u1", 2);
    qn_sqs_w_item_str (&w, "u2", 2);
    qn_sqs_w_list_end (&w);
    qn_sqs_w_end (&w, "rid");
    assert_string_equal (out.data,
        "{\"Successful\":[{\"Id\":\"a\",\"MD5OfMessageBody\":\"x\\\"\\n\\u0001\"}],"
        "\"Failed\":[{\"Id\":\"b\",\"SenderFault\":true,\"Code\":\"InvalidParameterValue\",\"Message\":\"bad\"}],"
        "\"QueueUrls\":[\"u1\",\"u2\"]}");
    qn_buf_reset (&out);
    qn_sqs_w_begin (&w, QN_SQS_QUERY, &out, QN_SQS_OP_LIST_QUEUES);
    qn_sqs_w_list (&w, "QueueUrls", "QueueUrl");
    qn_sqs_w_item_str (&w, "u1", 2);
    qn_sqs_w_item_str (&w, "u2", 2);
    qn_sqs_w_list_end (&w);
    qn_sqs_w_end (&w, "r");
    assert_non_null (strstr (out.data, "<ListQueuesResult><QueueUrl>u1</QueueUrl><QueueUrl>u2</QueueUrl></ListQueuesResult>"));
    qn_buf_free (&out);
}

static void
test_error_shapes (void **state)
{
    (void) state;
    qn_buf_t out = QN_BUF_INIT;
    qn_sqs_error_t e = { QN_SQS_E_NON_EXISTENT_QUEUE, "The specified queue does not exist." };
    char hdr [128];
    assert_int_equal (qn_sqs_write_error (QN_SQS_JSON, &e, "rid", &out, hdr, sizeof hdr), 400);
    assert_string_equal (out.data,
        "{\"__type\":\"com.amazonaws.sqs#QueueDoesNotExist\",\"message\":\"The specified queue does not exist.\"}");
    assert_string_equal (hdr, "AWS.SimpleQueueService.NonExistentQueue;Sender");
    qn_buf_reset (&out);
    assert_int_equal (qn_sqs_write_error (QN_SQS_QUERY, &e, "rid", &out, NULL, 0), 400);
    assert_string_equal (out.data,
        "<?xml version=\"1.0\"?><ErrorResponse xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\"><Error>"
        "<Type>Sender</Type><Code>AWS.SimpleQueueService.NonExistentQueue</Code>"
        "<Message>The specified queue does not exist.</Message><Detail/></Error><RequestId>rid</RequestId></ErrorResponse>");
    qn_buf_reset (&out);
    e.code = QN_SQS_E_INTERNAL_FAILURE;
    assert_int_equal (qn_sqs_write_error (QN_SQS_JSON, &e, "rid", &out, hdr, sizeof hdr), 500);
    assert_string_equal (hdr, "InternalFailure;Receiver");
    assert_int_equal (qn_sqs_code_status (QN_SQS_E_RECEIPT_HANDLE_INVALID), 404);
    assert_int_equal (qn_sqs_code_status (QN_SQS_E_SIGNATURE_DOES_NOT_MATCH), 403);
    assert_string_equal (qn_sqs_code_shape (QN_SQS_E_QUEUE_ALREADY_EXISTS), "QueueNameExists");
    qn_buf_free (&out);
}

// ------------------------------------------------------------------ receipt handles
static void
test_receipt_handle (void **state)
{
    (void) state;
    uint8_t key [QN_SQS_HANDLE_KEY_LEN], other [QN_SQS_HANDLE_KEY_LEN];
    memset (key, 7, sizeof key);
    memset (other, 8, sizeof other);
    qn_sqs_handle_t h = { 42, 1234567890123LL, 9876543210LL, { 0 } }, back;
    for (int i = 0; i < 16; i++)
        h.lease_id [i] = (uint8_t) (i * 17);
    char text [QN_SQS_HANDLE_MAX];
    qn_sqs_handle_encode (&h, key, text);
    size_t len = strlen (text);
    assert_int_equal (len, 71);
    assert_null (strpbrk (text, "+/="));
    assert_int_equal (qn_sqs_handle_decode (text, len, key, &back), 0);
    assert_int_equal (back.queue_id, 42);
    assert_int_equal (back.partition_id, 1234567890123LL);
    assert_int_equal (back.seq, 9876543210LL);
    assert_memory_equal (back.lease_id, h.lease_id, 16);
    assert_int_equal (qn_sqs_handle_decode (text, len, other, &back), -1);
    for (size_t i = 0; i < len; i++) {
        char t = text [i];
        text [i] = t == 'A'? 'B': 'A';
        assert_int_equal (qn_sqs_handle_decode (text, len, key, &back), -1);
        text [i] = t;
    }
    assert_int_equal (qn_sqs_handle_decode (text, len - 1, key, &back), -1);
    assert_int_equal (qn_sqs_handle_decode ("garbage", 7, key, &back), -1);
    assert_int_equal (qn_sqs_handle_decode ("", 0, key, &back), -1);
}

static void
test_queue_from_url (void **state)
{
    (void) state;
    qn_sqs_str_t acct;
    s_eq (qn_sqs_queue_from_url ("http://localhost:9324/000000000000/q1", 37, &acct), "q1");
    s_eq (acct, "000000000000");
    s_eq (qn_sqs_queue_from_url ("/000000000000/f.fifo/", 21, &acct), "f.fifo");
    s_eq (qn_sqs_queue_from_url ("q2", 2, &acct), "q2");
    assert_int_equal (acct.len, 0);
    assert_int_equal (qn_sqs_queue_from_url ("http://h:1", 10, &acct).len, 0);
    assert_int_equal (qn_sqs_queue_from_url ("/", 1, &acct).len, 0);
}


// ------------------------------------------------------------------ stored metadata, filters, queue attributes
static void
test_attrs_json_round_trip (void **state)
{
    (void) state;
    qn_sqs_attr_t in [3] = {
        s_attr ("s", "String", "caf\xc3\xa9 \"q\"", 8, false),
        s_attr ("n", "Number.int", "42", 2, false),
        s_attr ("b", "Binary.raw", "\0\1\2\xff", 4, true),
    };
    qn_buf_t json = QN_BUF_INIT, store = QN_BUF_INIT;
    qn_sqs_attrs_to_json (in, 3, &json);
    qn_sqs_attr_t out [4];
    uint32_t n = 0;
    assert_int_equal (qn_sqs_attrs_from_json (json.data, json.len, out, 4, &n, &store), 0);
    assert_int_equal (n, 3);
    char a [33], b [33];
    qn_sqs_md5_attrs (in, 3, a);
    qn_sqs_md5_attrs (out, 3, b);
    assert_string_equal (a, b);
    assert_true (out [2].binary);
    assert_int_equal (out [2].value.len, 4);
    assert_memory_equal (out [2].value.ptr, "\0\1\2\xff", 4);
    assert_int_equal (qn_sqs_attrs_from_json ("{\"x\":1}", 7, out, 4, &n, &store), -1);
    assert_int_equal (qn_sqs_attrs_from_json ("[]", 2, out, 4, &n, &store), -1);
    qn_buf_free (&json);
    qn_buf_free (&store);
}

static void
test_name_filters (void **state)
{
    (void) state;
    qn_sqs_str_t all [1] = { { "All", 3 } }, dot [1] = { { ".*", 2 } };
    qn_sqs_str_t some [2] = { { "trace", 5 }, { "app.*", 5 } };
    assert_true (qn_sqs_name_wanted (all, 1, "x", 1));
    assert_true (qn_sqs_name_wanted (dot, 1, "x", 1));
    assert_true (qn_sqs_name_wanted (some, 2, "trace", 5));
    assert_false (qn_sqs_name_wanted (some, 2, "tracer", 6));
    assert_true (qn_sqs_name_wanted (some, 2, "app.id", 6));
    assert_false (qn_sqs_name_wanted (some, 2, "apple", 5));
    assert_false (qn_sqs_name_wanted (some, 0, "trace", 5));
}

static void
test_queue_attributes (void **state)
{
    (void) state;
    qn_sqs_error_t err;
    qn_sqs_kv_t kv [2];
    #define KV(i, k, v) kv [i] = (qn_sqs_kv_t) { { k, strlen (k) }, { v, strlen (v) } }
    KV (0, "VisibilityTimeout", "43200");
    KV (1, "DelaySeconds", "0");
    assert_int_equal (qn_sqs_queue_attrs_check (kv, 2, false, true, &err), 0);
    KV (0, "VisibilityTimeout", "43201");
    assert_int_equal (qn_sqs_queue_attrs_check (kv, 1, false, true, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_INVALID_ATTRIBUTE_VALUE);
    KV (0, "VisibilityTimeout", "-1");
    assert_int_equal (qn_sqs_queue_attrs_check (kv, 1, false, true, &err), -1);
    KV (0, "Nope", "1");
    assert_int_equal (qn_sqs_queue_attrs_check (kv, 1, false, true, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_INVALID_ATTRIBUTE_NAME);
    KV (0, "ContentBasedDeduplication", "true");
    assert_int_equal (qn_sqs_queue_attrs_check (kv, 1, false, true, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_INVALID_ATTRIBUTE_NAME);
    assert_int_equal (qn_sqs_queue_attrs_check (kv, 1, true, true, &err), 0);
    KV (0, "FifoQueue", "true");
    assert_int_equal (qn_sqs_queue_attrs_check (kv, 1, true, true, &err), 0);
    assert_int_equal (qn_sqs_queue_attrs_check (kv, 1, true, false, &err), -1);
    assert_int_equal (err.code, QN_SQS_E_INVALID_ATTRIBUTE_NAME);
    KV (0, "DeduplicationScope", "messageGroup");
    assert_int_equal (qn_sqs_queue_attrs_check (kv, 1, true, false, &err), 0);
    KV (0, "DeduplicationScope", "message");
    assert_int_equal (qn_sqs_queue_attrs_check (kv, 1, true, false, &err), -1);
    KV (0, "RedrivePolicy", "{\"deadLetterTargetArn\":\"arn:aws:sqs:r:a:d\",\"maxReceiveCount\":2}");
    assert_int_equal (qn_sqs_queue_attrs_check (kv, 1, false, false, &err), 0);
    KV (0, "RedrivePolicy", "");
    assert_int_equal (qn_sqs_queue_attrs_check (kv, 1, false, false, &err), 0);
    KV (0, "RedrivePolicy", "garbage");
    assert_int_equal (qn_sqs_queue_attrs_check (kv, 1, false, false, &err), -1);
    #undef KV
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test (test_md5_body),
        cmocka_unit_test (test_md5_attributes),
        cmocka_unit_test (test_query_receive_golden),
        cmocka_unit_test (test_query_send_attributes),
        cmocka_unit_test (test_query_batch_and_gaps),
        cmocka_unit_test (test_query_create_and_lists),
        cmocka_unit_test (test_query_errors),
        cmocka_unit_test (test_message_validation),
        cmocka_unit_test (test_json_send_and_batch),
        cmocka_unit_test (test_json_errors),
        cmocka_unit_test (test_xml_writer),
        cmocka_unit_test (test_json_writer),
        cmocka_unit_test (test_error_shapes),
        cmocka_unit_test (test_receipt_handle),
        cmocka_unit_test (test_queue_from_url),
        cmocka_unit_test (test_attrs_json_round_trip),
        cmocka_unit_test (test_name_filters),
        cmocka_unit_test (test_queue_attributes),
    };
    return cmocka_run_group_tests (tests, NULL, NULL);
}
