/*  test/fuzz/fuzz_kafka_records.c - the RecordBatch v2 decoder
    (wire/kafka_records.c) over arbitrary RECORDS bytes, with and without
    the Produce checks, and the decompressors on their own, and stored record headers. Decoded
    records re-encode and decode again to the same records.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "wire/kafka_records.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    qn_karena_t a;
    qn_karena_init (&a);
    qn_kafka_batches_t bs;
    (void) qn_kafka_batches_decode (data, size, 1 << 16, true, &a, &bs);
    if (qn_kafka_batches_decode (data, size, 1 << 16, false, &a, &bs) == 0) {
        for (int i = 0; i < bs.count; i++) {
            const qn_kafka_batch_t *b = &bs.batches [i];
            qn_kafka_batch_spec_t spec = { b->base_offset, b->first_timestamp,
                                           0, b->producer_id, b->producer_epoch, b->base_sequence };
            qn_buf_t out = QN_BUF_INIT;
            if (qn_kafka_batch_encode (&out, &spec, b->records, b->records_count))
                abort ();
            qn_kafka_batches_t again;
            if (qn_kafka_batches_decode (out.data, out.len, (size_t) 1 << 30, false, &a, &again)
             || again.count != 1 || again.batches [0].records_count != b->records_count)
                abort ();
            for (int32_t k = 0; k < b->records_count; k++)
                if (!qn_kstr_eq (again.batches [0].records [k].value, b->records [k].value)
                 || !qn_kstr_eq (again.batches [0].records [k].key, b->records [k].key))
                    abort ();
            qn_buf_free (&out);
        }
    }
    qn_kafka_header_kv_t *hs;
    int32_t hn;
    if (qn_kafka_headers_decode (data, size, &a, &hs, &hn) == 0) {
        //  Varints may be non-canonical on input: the re-encoding must
        //  decode to the same headers.
        qn_buf_t again = QN_BUF_INIT;
        qn_kafka_headers_encode (&again, hs, hn);
        qn_kafka_header_kv_t *h2;
        int32_t n2;
        if (again.len > size || qn_kafka_headers_decode (again.data, again.len, &a, &h2, &n2) || n2 != hn)
            abort ();
        for (int32_t i = 0; i < hn; i++)
            if (!qn_kstr_eq (h2 [i].key, hs [i].key) || !qn_kstr_eq (h2 [i].value, hs [i].value))
                abort ();
        qn_buf_free (&again);
    }
    if (size > 0) {
        const uint8_t *out;
        size_t out_len;
        (void) qn_kafka_decompress (1 + data [0] % 4, data + 1, size - 1, 1 << 16, &a, &out, &out_len);
    }
    qn_karena_free (&a);
    return 0;
}
