/*  test/fuzz/fuzz_spool.c - spool segment recovery (wire/spool_codec.c):
    scanning, resync and checkpoints over arbitrary bytes on disk, and the
    decoders that read record bodies (wire/msg_spool.c: the SPOOL_APPEND
    body is the record body) and the replay request built from them
    (wire/msg_push.c): every item a decoder accepts goes through the one
    item decoder (qn_msg_push_item_t) and packs back to the same item.
*/
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/msg_push.h"
#include "wire/msg_spool.h"
#include "wire/spool_codec.h"

static bool
s_same_span (const void *a, size_t an, const void *b, size_t bn)
{
    return (a == NULL) == (b == NULL) && an == bn && (!an || memcmp (a, b, an) == 0);
}

//  Two decoded items with the same fields.
static bool
s_same_item (const qn_msg_push_item_t *a, const qn_msg_push_item_t *b)
{
    return s_same_span (a->queue, a->queue_len, b->queue, b->queue_len)
        && s_same_span (a->partition, a->partition_len, b->partition, b->partition_len)
        && s_same_span (a->txn, a->txn_len, b->txn, b->txn_len)
        && s_same_span (a->payload, a->payload_len, b->payload, b->payload_len)
        && s_same_span (a->trace, a->trace_len, b->trace, b->trace_len)
        && s_same_span (a->producer, a->producer_len, b->producer, b->producer_len)
        && s_same_span (a->sqs, a->sqs_len, b->sqs, b->sqs_len)
        && a->encrypted == b->encrypted && a->has_not_before == b->has_not_before
        && (!a->has_not_before || a->not_before_us == b->not_before_us);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    const char *buf = (const char *) data;
    qn_spool_scan_t scan;
    qn_spool_scan (buf, size, &scan);
    if (scan.valid_len > size)
        abort ();
    //  Every record of the valid prefix decodes, and its body is checked.
    size_t at = 0;
    while (at < scan.valid_len) {
        const char *body;
        size_t body_len;
        int64_t n = qn_spool_record_decode (buf + at, scan.valid_len - at, &body, &body_len);
        if (n <= 0)
            abort ();
        (void) qn_spool_body_check (body, body_len);
        at += (size_t) n;
    }
    if (scan.stop != QN_SPOOL_SCAN_END)
        (void) qn_spool_resync (buf, size, scan.valid_len);
    uint64_t seg, off;
    (void) qn_spool_checkpoint_decode (buf, size, &seg, &off);
    (void) qn_spool_body_check (buf, size);
    //  The typed decoders: a body that decodes re-encodes and decodes again.
    msgpack_unpacked h;
    msgpack_unpacked_init (&h);
    qn_msg_spool_append_t m;
    if (qn_msg_spool_append_decode (buf, size, &h, &m) == 0) {
        qn_msg_push_item_t *its = malloc (m.count * sizeof *its);
        for (uint32_t i = 0; i < m.count; i++)
            if (!its || qn_msg_push_item_decode (&m.items [i], &its [i]))
                abort ();
        msgpack_sbuffer sb;
        msgpack_sbuffer_init (&sb);
        qn_msg_spool_append_encode (&sb, m.tenant, m.tenant_len, its, m.count, NULL);
        msgpack_unpacked again;
        msgpack_unpacked_init (&again);
        qn_msg_spool_append_t m2;
        if (qn_msg_spool_append_decode (sb.data, sb.size, &again, &m2) || m2.count != m.count)
            abort ();
        for (uint32_t i = 0; i < m.count; i++) {
            qn_msg_push_item_t it;
            if (qn_msg_push_item_decode (&m2.items [i], &it) || !s_same_item (&its [i], &it))
                abort ();
        }
        msgpack_unpacked_destroy (&again);
        msgpack_sbuffer_destroy (&sb);
        free (its);
    }
    msgpack_unpacked_destroy (&h);
    //  A push request: every item decodes, and packs to the same item.
    msgpack_unpacked_init (&h);
    qn_msg_push_t p;
    if (qn_msg_push_decode (buf, size, &h, &p) == 0)
        for (uint32_t i = 0; i < p.count; i++) {
            qn_msg_push_item_t it, again;
            if (qn_msg_push_item_decode (&p.items [i], &it))
                abort ();
            msgpack_sbuffer sb;
            msgpack_sbuffer_init (&sb);
            msgpack_packer pk;
            msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
            qn_msg_push_item (&pk, &it);
            msgpack_unpacked one;
            msgpack_unpacked_init (&one);
            if (msgpack_unpack_next (&one, sb.data, sb.size, NULL) != MSGPACK_UNPACK_SUCCESS
            ||  qn_msg_push_item_decode (&one.data, &again) || !s_same_item (&it, &again))
                abort ();
            msgpack_unpacked_destroy (&one);
            msgpack_sbuffer_destroy (&sb);
        }
    msgpack_unpacked_destroy (&h);
    msgpack_unpacked_init (&h);
    qn_msg_push_answer_t a;
    if (qn_msg_push_answer_decode (buf, size, &h, &a) == 0)
        for (uint32_t i = 0; i < a.count; i++) {
            qn_msg_push_result_t r;
            if (qn_msg_push_answer_at (&a, i, &r))
                abort ();
        }
    msgpack_unpacked_destroy (&h);
    return 0;
}
