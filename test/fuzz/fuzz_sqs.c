/*  test/fuzz/fuzz_sqs.c - the SQS request decoders (wire/sqs_decode.c)
    First byte: 'Q' query protocol (the rest is the form body), 'J' JSON 1.0
    (the rest is "<X-Amz-Target>\n<body>"), anything else a receipt handle.
    Every decoded request is validated, checksummed and echoed through both
    writers, so the arena's strings are all read.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/sqs.h"

static void
s_use (qn_sqs_request_t *req)
{
    qn_sqs_error_t err;
    (void) qn_sqs_validate (req, &err);
    (void) qn_sqs_queue_attrs_check (req->attributes, req->attribute_count, true, true, &err);
    (void) qn_sqs_queue_attrs_check (req->attributes, req->attribute_count, false, false, &err);
    qn_buf_t out = QN_BUF_INIT;
    for (int proto = 0; proto < 2; proto++) {
        qn_sqs_w_t w;
        qn_sqs_w_begin (&w, (qn_sqs_proto_t) proto, &out, req->op);
        if (req->queue_url.ptr)
            qn_sqs_w_str (&w, "QueueUrl", req->queue_url.ptr, req->queue_url.len);
        qn_sqs_w_list (&w, "Messages", "Message");
        for (uint32_t i = 0; i < req->entry_count; i++) {
            qn_sqs_entry_t *e = &req->entries [i];
            char md5 [33];
            qn_sqs_w_item_obj (&w);
            if (e->body.ptr)
                qn_sqs_w_str (&w, "Body", e->body.ptr, e->body.len);
            qn_sqs_md5_attrs (e->attrs, e->attr_count, md5);
            qn_sqs_w_cstr (&w, "MD5OfMessageAttributes", md5);
            qn_sqs_w_map (&w, "MessageAttributes", "MessageAttribute");
            for (uint32_t a = 0; a < e->attr_count; a++)
                if (e->attrs [a].name.ptr && e->attrs [a].data_type.ptr && e->attrs [a].value.ptr)
                    qn_sqs_w_map_attr (&w, &e->attrs [a]);
            qn_sqs_w_map_end (&w);
            qn_sqs_w_item_obj_end (&w);
        }
        qn_sqs_w_list_end (&w);
        qn_sqs_w_map (&w, "Attributes", "Attribute");
        for (uint32_t i = 0; i < req->attribute_count; i++)
            if (req->attributes [i].key.ptr && req->attributes [i].value.ptr)
                qn_sqs_w_map_str (&w, req->attributes [i].key.ptr, req->attributes [i].key.len,
                                  req->attributes [i].value.ptr, req->attributes [i].value.len);
        qn_sqs_w_map_end (&w);
        qn_sqs_w_end (&w, "r");
        qn_buf_reset (&out);
    }
    qn_buf_free (&out);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *p = (const char *) data + 1;
    size_t n = size - 1;
    qn_sqs_request_t req;
    qn_sqs_error_t err;
    if (data [0] == 'Q') {
        if (qn_sqs_decode_query (p, n, &req, &err) == 0)
            s_use (&req);
        qn_sqs_request_free (&req);
    }
    else
    if (data [0] == 'J') {
        const char *nl = memchr (p, '\n', n);
        size_t tl = nl? (size_t) (nl - p): n;
        if (qn_sqs_decode_json (p, tl, nl? nl + 1: p + n, nl? n - tl - 1: 0, &req, &err) == 0)
            s_use (&req);
        qn_sqs_request_free (&req);
        //  Stored attributes read back (wire/sqs_meta.c) from the same bytes.
        qn_sqs_attr_t attrs [QN_SQS_MAX_MSG_ATTRS];
        uint32_t count;
        qn_buf_t store = QN_BUF_INIT;
        (void) qn_sqs_attrs_from_json (nl? nl + 1: p + n, nl? n - tl - 1: 0, attrs, QN_SQS_MAX_MSG_ATTRS,
                                       &count, &store);
        qn_buf_free (&store);
        qn_buf_t out = QN_BUF_INIT;
        char hdr [128];
        if (err.code)
            (void) qn_sqs_write_error (QN_SQS_JSON, &err, "r", &out, hdr, sizeof hdr);
        qn_buf_free (&out);
    }
    else {
        uint8_t key [QN_SQS_HANDLE_KEY_LEN] = { 0 };
        qn_sqs_handle_t h;
        (void) qn_sqs_handle_decode (p, n, key, &h);
        qn_sqs_str_t acct;
        (void) qn_sqs_queue_from_url (p, n, &acct);
    }
    return 0;
}
