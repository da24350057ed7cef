/*  test/fuzz/fuzz_kafka_request.c - the Kafka request decoder
    (wire/kafka_proto.c): a frame as a client sends it (size prefix,
    header v1/v2, body) through every request decoder of the advertised
    versions the header names, and the response decoders over the same
    bytes. A body that decodes re-encodes to its length and then
    round-trips exactly.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/kafka_proto.h"

typedef void (*enc_fn) (qn_buf_t *, int16_t, const void *);
typedef int (*dec_fn) (int16_t, const void *, size_t, qn_karena_t *, void *);

static void
s_check (int16_t v, const uint8_t *body, size_t len, enc_fn enc, dec_fn dec)
{
    union {
        qn_kafka_metadata_req_t md; qn_kafka_produce_req_t pr; qn_kafka_fetch_req_t fr;
        qn_kafka_list_offsets_req_t lo; qn_kafka_metadata_resp_t mds;
        qn_kafka_create_topics_req_t ct; qn_kafka_delete_topics_req_t dt; qn_kafka_topics_resp_t ts;
        qn_kafka_find_coordinator_req_t fc; qn_kafka_find_coordinator_resp_t fcs;
        qn_kafka_init_producer_id_req_t ip; qn_kafka_init_producer_id_resp_t ips;
        qn_kafka_produce_resp_t prs; qn_kafka_fetch_resp_t frs; qn_kafka_list_offsets_resp_t los;
    } out;
    qn_karena_t a;
    qn_karena_init (&a);
    if (dec (v, body, len, &a, &out) == 0) {
        //  Re-encoding gives the input's length (only a BOOL other than
        //  0/1 is normalised), and a second round is exact.
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

#define S_CHECK(v, body, len, name) \
    s_check ((v), (body), (len), (enc_fn) qn_kafka_##name##_encode, (dec_fn) qn_kafka_##name##_decode)

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    size_t payload;
    int64_t n = qn_kafka_frame (data, size, 1 << 20, &payload);
    if (n > 0 && (n != (int64_t) payload + 4 || (size_t) n > size))
        abort ();
    const uint8_t *p = n > 0 ? data + 4 : data;
    size_t plen = n > 0 ? payload : size;
    qn_kafka_req_header_t h;
    int hl = qn_kafka_req_header_decode (p, plen, &h);
    if (hl < 0)
        return 0;
    if ((size_t) hl > plen)
        abort ();
    const uint8_t *body = p + hl;
    size_t len = plen - (size_t) hl;
    int16_t v = h.api_version;
    switch (h.api_key) {
        case QN_KAFKA_API_VERSIONS: {
            qn_kafka_apiversions_req_t av;
            if (qn_kafka_apiversions_req_decode (v, body, len, &av) == 0) {
                qn_buf_t b = QN_BUF_INIT;
                qn_kafka_apiversions_req_encode (&b, v, &av);
                //  Tag sections are skipped, not kept: only check the length bound.
                if (b.len > len)
                    abort ();
                qn_buf_free (&b);
            }
            qn_karena_t a;
            qn_karena_init (&a);
            qn_kafka_apiversions_resp_t rs;
            (void) qn_kafka_apiversions_resp_decode (v & 3, body, len, &a, &rs);
            qn_karena_free (&a);
            break;
        }
        case QN_KAFKA_METADATA:
            S_CHECK (4 + (v & 1) + (v & 2 ? 1 : 0), body, len, metadata_req);
            S_CHECK (4 + (v & 1) + (v & 2 ? 1 : 0), body, len, metadata_resp);
            break;
        case QN_KAFKA_PRODUCE:
            S_CHECK (3 + (v & 3) + (v & 4 ? 1 : 0), body, len, produce_req);
            S_CHECK (3 + (v & 3) + (v & 4 ? 1 : 0), body, len, produce_resp);
            break;
        case QN_KAFKA_FETCH: {
            int16_t fv = (int16_t) (4 + ((uint16_t) v % 8));
            S_CHECK (fv, body, len, fetch_req);
            S_CHECK (fv, body, len, fetch_resp);
            break;
        }
        case QN_KAFKA_LIST_OFFSETS:
            S_CHECK (1 + ((uint16_t) v % 3), body, len, list_offsets_req);
            S_CHECK (1 + ((uint16_t) v % 3), body, len, list_offsets_resp);
            break;
        case QN_KAFKA_CREATE_TOPICS:
            S_CHECK (v, body, len, create_topics_req);
            S_CHECK (v, body, len, create_topics_resp);
            break;
        case QN_KAFKA_DELETE_TOPICS:
            S_CHECK (v & 1, body, len, delete_topics_req);
            S_CHECK (v & 1, body, len, delete_topics_resp);
            break;
        case QN_KAFKA_FIND_COORDINATOR:
            S_CHECK ((int16_t) ((uint16_t) v % 3), body, len, find_coordinator_req);
            S_CHECK ((int16_t) ((uint16_t) v % 3), body, len, find_coordinator_resp);
            break;
        case QN_KAFKA_INIT_PRODUCER_ID:
            S_CHECK (v & 1, body, len, init_producer_id_req);
            S_CHECK (v & 1, body, len, init_producer_id_resp);
            break;
        default:
            break;
    }
    return 0;
}
