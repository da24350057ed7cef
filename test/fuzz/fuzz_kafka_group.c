/*  test/fuzz/fuzz_kafka_group.c - the Kafka consumer-group decoders
    (wire/kafka_group.c). The first byte picks the layout and the version
    (JoinGroup v2-5, SyncGroup v0-3, Heartbeat v0-3, LeaveGroup v0-1,
    OffsetCommit v2-5, OffsetFetch v1-4, requests and responses), the rest
    is the body. A body that decodes re-encodes to its length and then
    round-trips exactly.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/kafka_group.h"

typedef void (*enc_fn) (qn_buf_t *, int16_t, const void *);
typedef int (*dec_fn) (int16_t, const void *, size_t, qn_karena_t *, void *);

static void
s_check (int16_t v, const uint8_t *body, size_t len, enc_fn enc, dec_fn dec)
{
    union {
        qn_kafka_join_group_req_t jr; qn_kafka_join_group_resp_t js;
        qn_kafka_sync_group_req_t sr; qn_kafka_sync_group_resp_t ss;
        qn_kafka_heartbeat_req_t hr; qn_kafka_group_error_resp_t es;
        qn_kafka_offset_commit_req_t oc; qn_kafka_offset_commit_resp_t ocs;
        qn_kafka_offset_fetch_req_t of; qn_kafka_offset_fetch_resp_t ofs;
    } out;
    qn_karena_t a;
    qn_karena_init (&a);
    if (dec (v, body, len, &a, &out) == 0) {
        qn_buf_t b = QN_BUF_INIT, again = QN_BUF_INIT;
        enc (&b, v, &out);
        if (b.len != len || dec (v, b.data, b.len, &a, &out) != 0)
            abort ();
        enc (&again, v, &out);
        if (again.len != b.len || memcmp (again.data, b.data, b.len) != 0)
            abort ();
        qn_buf_free (&b);
        qn_buf_free (&again);
    }
    qn_karena_free (&a);
}

#define S_CHECK(v, name) \
    s_check ((v), body, len, (enc_fn) qn_kafka_##name##_encode, (dec_fn) qn_kafka_##name##_decode)

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *body = data + 1;
    size_t len = size - 1;
    int16_t sel = data [0] & 0x0f, v = data [0] >> 4;
    switch (sel) {
        case 0: S_CHECK (2 + (v & 3), join_group_req); break;
        case 1: S_CHECK (2 + (v & 3), join_group_resp); break;
        case 2: S_CHECK (v & 3, sync_group_req); break;
        case 3: S_CHECK (v & 3, sync_group_resp); break;
        case 4: S_CHECK (v & 3, heartbeat_req); break;
        case 5: S_CHECK (v & 1, leave_group_req); break;
        case 6: S_CHECK (v & 3, group_error_resp); break;
        case 7: S_CHECK (2 + (v & 3), offset_commit_req); break;
        case 8: S_CHECK (2 + (v & 3), offset_commit_resp); break;
        case 9: S_CHECK (1 + (v & 3), offset_fetch_req); break;
        case 10: S_CHECK (1 + (v & 3), offset_fetch_resp); break;
        default: break;
    }
    return 0;
}
