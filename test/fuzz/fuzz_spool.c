/*  test/fuzz/fuzz_spool.c - spool segment recovery (wire/spool_codec.c):
    scanning, resync and checkpoints over arbitrary bytes on disk, and the
    decoders that read record bodies (wire/msg_spool.c: the SPOOL_APPEND
    body is the record body) and the replay request built from them
    (wire/msg_push.c).
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "wire/msg_push.h"
#include "wire/msg_spool.h"
#include "wire/spool_codec.h"

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
        msgpack_sbuffer sb;
        msgpack_sbuffer_init (&sb);
        qn_msg_spool_append_encode (&sb, m.tenant, m.tenant_len, m.items, m.count, NULL);
        msgpack_unpacked again;
        msgpack_unpacked_init (&again);
        qn_msg_spool_append_t m2;
        if (qn_msg_spool_append_decode (sb.data, sb.size, &again, &m2) || m2.count != m.count)
            abort ();
        msgpack_unpacked_destroy (&again);
        msgpack_sbuffer_destroy (&sb);
    }
    msgpack_unpacked_destroy (&h);
    msgpack_unpacked_init (&h);
    qn_msg_push_t p;
    (void) qn_msg_push_decode (buf, size, &h, &p);
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
