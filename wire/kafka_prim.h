/*  wire/kafka_prim.h - Kafka wire primitives (spec kafka.md §2.3)
    A bounds-checked reader over a byte range, a writer appending to a
    qn_buf_t, a bump arena for decoded arrays, zig-zag varints and Kafka's
    murmur2 partitioner (§6.2). Pure: no I/O, no logging, no globals.

    Reader: every read checks the remaining length; the first failure sets
    `err` and every later read returns zero / empty, so a decoder reads a
    whole structure and checks `err` once at the end. Slices point into the
    reader's buffer.
*/
#ifndef QN_WIRE_KAFKA_PRIM_H
#define QN_WIRE_KAFKA_PRIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

//  A STRING / BYTES slice; len -1 means null.
typedef struct {
    const char *ptr;            //  Not owned
    int32_t len;
} qn_kstr_t;

#define QN_KSTR_NULL ((qn_kstr_t) { NULL, -1 })
#define QN_KSTR(s)   ((qn_kstr_t) { (s), (int32_t) sizeof (s) - 1 })
qn_kstr_t qn_kstr (const char *s);          //  NULL gives the null string
bool qn_kstr_eq (qn_kstr_t a, qn_kstr_t b);   //  Null equals null only

typedef struct {
    const uint8_t *p;           //  Not owned
    size_t len;
    size_t at;
    bool err;
} qn_kr_t;

void qn_kr_init (qn_kr_t *r, const void *p, size_t len);
size_t qn_kr_left (const qn_kr_t *r);
int8_t qn_kr_i8 (qn_kr_t *r);
int16_t qn_kr_i16 (qn_kr_t *r);
int32_t qn_kr_i32 (qn_kr_t *r);
int64_t qn_kr_i64 (qn_kr_t *r);
uint64_t qn_kr_uvarint (qn_kr_t *r);        //  At most 10 bytes
int32_t qn_kr_varint (qn_kr_t *r);          //  Zig-zag, must fit 32 bits
int64_t qn_kr_varlong (qn_kr_t *r);         //  Zig-zag
//  STRING (nullable: a null is an error unless `nullable`).
qn_kstr_t qn_kr_string (qn_kr_t *r, bool nullable);
//  BYTES (INT32 length); null allowed when `nullable`.
qn_kstr_t qn_kr_bytes (qn_kr_t *r, bool nullable);
//  COMPACT_STRING (length + 1 as UNSIGNED_VARINT; 0 = null).
qn_kstr_t qn_kr_compact_string (qn_kr_t *r, bool nullable);
//  Skips a tagged-field section.
void qn_kr_tags (qn_kr_t *r);
//  ARRAY count: -1 (null) allowed when `nullable`; a count larger than
//  the bytes left divided by `min_elem` bytes is an error (bounds the
//  allocation a hostile count can cause).
int32_t qn_kr_array (qn_kr_t *r, bool nullable, size_t min_elem);
//  Takes n raw bytes; NULL (and err) if fewer are left.
const uint8_t *qn_kr_raw (qn_kr_t *r, size_t n);

void qn_kw_i8 (qn_buf_t *b, int8_t v);
void qn_kw_i16 (qn_buf_t *b, int16_t v);
void qn_kw_i32 (qn_buf_t *b, int32_t v);
void qn_kw_i64 (qn_buf_t *b, int64_t v);
void qn_kw_uvarint (qn_buf_t *b, uint64_t v);
void qn_kw_varint (qn_buf_t *b, int32_t v);
void qn_kw_varlong (qn_buf_t *b, int64_t v);
void qn_kw_string (qn_buf_t *b, qn_kstr_t s);           //  INT16 length
void qn_kw_bytes (qn_buf_t *b, qn_kstr_t s);            //  INT32 length
void qn_kw_compact_string (qn_buf_t *b, qn_kstr_t s);
//  Overwrites 4 bytes at `at` (a length or CRC written after the fact).
void qn_kw_put32_at (qn_buf_t *b, size_t at, uint32_t v);

//  Bytes `v` takes as a zig-zag VARINT / VARLONG.
size_t qn_kafka_varint_size (int32_t v);
size_t qn_kafka_varlong_size (int64_t v);

//  Bump allocator: decoded arrays and decompressed blocks live here until
//  qn_karena_free. Allocations are zeroed; never fails (aborts on OOM).
typedef struct qn_karena_block_s qn_karena_block_t;
typedef struct {
    qn_karena_block_t *head;    //  Owned
} qn_karena_t;

void qn_karena_init (qn_karena_t *a);
void *qn_karena_alloc (qn_karena_t *a, size_t size);
void qn_karena_free (qn_karena_t *a);

//  Kafka's murmur2 (seed 0x9747b28c) and the Java/kafkajs partition:
//  (h & 0x7fffffff) % n. n must be >= 1.
uint32_t qn_kafka_murmur2 (const void *data, size_t len);
int32_t qn_kafka_partition_for (const void *key, size_t len, int32_t n);

#endif
