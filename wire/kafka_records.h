/*  wire/kafka_records.h - RecordBatch v2 ("magic 2", spec kafka.md §5)
    Decodes the RECORDS field of a Produce request (one or more batches:
    header checks, CRC-32C, decompression of gzip / snappy / lz4 / zstd,
    record parsing) and encodes the uncompressed batches a Fetch answers
    with. Pure: no I/O, no logging. Decoded records are slices into the
    input or into decompressed blocks held by the caller's arena.

    Decoding answers a Kafka error code, never crashes on any input:
        0   the batches are good
        2   CORRUPT_MESSAGE: magic != 2, bad CRC, truncated, record count
            or offset delta mismatch, bad compressed data
        10  MESSAGE_TOO_LARGE: a batch over max_batch_bytes, or records
            that decompress to more than max_batch_bytes * QN_KAFKA_INFLATE_FACTOR
        76  UNSUPPORTED_COMPRESSION_TYPE: codec bits 5..7
        87  INVALID_RECORD: a control batch (attribute bit 5)
    Transactional batches (bit 4) decode; the Produce handler refuses them.
*/
#ifndef QN_WIRE_KAFKA_RECORDS_H
#define QN_WIRE_KAFKA_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "wire/kafka_prim.h"

#define QN_KAFKA_BATCH_HEADER_LEN   61
#define QN_KAFKA_INFLATE_FACTOR     4

#define QN_KAFKA_CODEC_NONE     0
#define QN_KAFKA_CODEC_GZIP     1
#define QN_KAFKA_CODEC_SNAPPY   2
#define QN_KAFKA_CODEC_LZ4      3
#define QN_KAFKA_CODEC_ZSTD     4

#define QN_KAFKA_ATTR_CODEC_MASK     0x07
#define QN_KAFKA_ATTR_LOG_APPEND     0x08
#define QN_KAFKA_ATTR_TRANSACTIONAL  0x10
#define QN_KAFKA_ATTR_CONTROL        0x20

typedef struct {
    qn_kstr_t key;              //  Never null
    qn_kstr_t value;            //  len -1 = null
} qn_kafka_header_kv_t;

typedef struct {
    int8_t attributes;
    int64_t timestamp_delta;
    int32_t offset_delta;
    qn_kstr_t key;              //  len -1 = null key
    qn_kstr_t value;            //  len -1 = null value (tombstone)
    int32_t header_count;
    qn_kafka_header_kv_t *headers;  //  In the arena
} qn_kafka_record_t;

typedef struct {
    int64_t base_offset;
    int32_t batch_length;
    int32_t partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t first_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t records_count;
    qn_kafka_record_t *records;  //  In the arena, records_count of them
} qn_kafka_batch_t;

typedef struct {
    int count;
    qn_kafka_batch_t *batches;  //  In the arena
} qn_kafka_batches_t;

//  Decodes every batch of a RECORDS field (len bytes at buf; an empty
//  field holds no batch, which is CORRUPT for a Produce: the caller
//  decides). max_batch_bytes bounds each batch and its decompressed
//  records. `producer` adds the Produce checks: record i has offset
//  delta i and last_offset_delta is count - 1 (a Fetch batch may have
//  gaps). Returns a Kafka error code (see above).
int
    qn_kafka_batches_decode (const void *buf, size_t len, size_t max_batch_bytes,
                             bool producer, qn_karena_t *arena, qn_kafka_batches_t *out);

//  Decompresses (codec 1..4) into the arena. 0 with *out / *out_len, or
//  2 (corrupt), 10 (over max_out bytes) or 76 (unknown codec).
int
    qn_kafka_decompress (int codec, const void *in, size_t in_len, size_t max_out,
                         qn_karena_t *arena, const uint8_t **out, size_t *out_len);
//  Compresses (codec 0..4) appending to out. 0, or -1 for an unknown
//  codec or a library failure.
int
    qn_kafka_compress (int codec, const void *in, size_t in_len, qn_buf_t *out);

//  What qn_kafka_batch_encode writes: the batch header fields that are not
//  derived (last_offset_delta, max_timestamp, counts, CRC and lengths are).
typedef struct {
    int64_t base_offset;
    int64_t first_timestamp;
    int16_t attributes;         //  Codec bits say how to compress
    int64_t producer_id;        //  -1 unless idempotent
    int16_t producer_epoch;     //  -1 unless idempotent
    int32_t base_sequence;      //  -1 unless idempotent
} qn_kafka_batch_spec_t;

//  Appends one RecordBatch v2 holding the n records (each with its own
//  offset_delta and timestamp_delta, ascending offsets) to out.
//  0, or -1 if compression fails (nothing is appended then).
int
    qn_kafka_batch_encode (qn_buf_t *out, const qn_kafka_batch_spec_t *spec,
                           const qn_kafka_record_t *recs, int n);

//  A record's headers as stored beside a message (queen.message_meta):
//  the record's own header section, VARINT count then per header VARINT
//  key length, key, VARINT value length (-1 = null), value.
void
    qn_kafka_headers_encode (qn_buf_t *out, const qn_kafka_header_kv_t *h, int32_t n);
//  0 with *out (in the arena) and *n, or -1 for bytes of another shape.
int
    qn_kafka_headers_decode (const void *buf, size_t len, qn_karena_t *arena,
                             qn_kafka_header_kv_t **out, int32_t *n);

//  Bytes the uncompressed encoding of `rec` takes inside a batch
//  (length prefix included): lets a Fetch stay under its byte limits.
size_t
    qn_kafka_record_size (const qn_kafka_record_t *rec);

#endif
