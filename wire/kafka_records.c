/*  wire/kafka_records.c - RecordBatch v2 (see kafka_records.h)
    Pure: no I/O, no logging. Compression through Debian's zlib, snappy,
    lz4 (frame format) and zstd.
*/
#include "wire/kafka_records.h"
#include "wire/spool_codec.h"       //  qn_crc32c

#include <lz4frame.h>
#include <snappy-c.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#define S_CORRUPT       2
#define S_TOO_LARGE     10
#define S_BAD_CODEC     76
#define S_INVALID       87

//  Smallest encoded record: length, attributes, timestamp delta, offset
//  delta, key length, value length, header count: one byte each.
#define S_MIN_RECORD    7

static const uint8_t s_xerial_magic [8] = { 0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0 };

// ---------------------------------------------------------------- decompression

//  Copies a finished buffer into the arena.
static void
s_to_arena (qn_buf_t *b, qn_karena_t *arena, const uint8_t **out, size_t *out_len)
{
    uint8_t *p = qn_karena_alloc (arena, b->len);
    if (b->len)
        memcpy (p, b->data, b->len);
    *out = p;
    *out_len = b->len;
}

static int
s_gunzip (const uint8_t *in, size_t len, size_t max_out, qn_buf_t *b)
{
    z_stream zs;
    memset (&zs, 0, sizeof zs);
    if (inflateInit2 (&zs, 31) != Z_OK)
        return S_CORRUPT;
    zs.next_in = (Bytef *) in;
    zs.avail_in = (uInt) len;
    int rc = S_CORRUPT;
    for (;;) {
        qn_buf_reserve (b, 16384);
        zs.next_out = (Bytef *) b->data + b->len;
        zs.avail_out = (uInt) (b->cap - b->len - 1);
        int zrc = inflate (&zs, Z_NO_FLUSH);
        b->len = (size_t) ((char *) zs.next_out - b->data);
        if (b->len > max_out) {
            rc = S_TOO_LARGE;
            break;
        }
        if (zrc == Z_STREAM_END) {
            rc = zs.avail_in == 0 ? 0 : S_CORRUPT;
            break;
        }
        if (zrc != Z_OK)
            break;              //  Z_BUF_ERROR here means truncated input
    }
    inflateEnd (&zs);
    return rc;
}

static int
s_unsnappy_raw (const uint8_t *in, size_t len, size_t max_out, qn_buf_t *b)
{
    size_t n;
    if (snappy_uncompressed_length ((const char *) in, len, &n) != SNAPPY_OK)
        return S_CORRUPT;
    if (n > max_out || b->len + n > max_out)
        return S_TOO_LARGE;
    qn_buf_reserve (b, n);
    if (snappy_uncompress ((const char *) in, len, b->data + b->len, &n) != SNAPPY_OK)
        return S_CORRUPT;
    b->len += n;
    return 0;
}

//  Xerial framing (Java, librdkafka): magic, INT32 version, INT32
//  compatible version, then INT32-length-prefixed raw snappy blocks.
static int
s_unsnappy (const uint8_t *in, size_t len, size_t max_out, qn_buf_t *b)
{
    if (len < 16 || memcmp (in, s_xerial_magic, 8) != 0)
        return s_unsnappy_raw (in, len, max_out, b);
    qn_kr_t r;
    qn_kr_init (&r, in + 16, len - 16);
    while (qn_kr_left (&r) > 0) {
        int32_t n = qn_kr_i32 (&r);
        if (n < 0)
            return S_CORRUPT;
        const uint8_t *blk = qn_kr_raw (&r, (size_t) n);
        if (!blk)
            return S_CORRUPT;
        int rc = s_unsnappy_raw (blk, (size_t) n, max_out, b);
        if (rc)
            return rc;
    }
    return 0;
}

static int
s_unlz4 (const uint8_t *in, size_t len, size_t max_out, qn_buf_t *b)
{
    LZ4F_dctx *ctx;
    if (LZ4F_isError (LZ4F_createDecompressionContext (&ctx, LZ4F_VERSION)))
        return S_CORRUPT;
    int rc = S_CORRUPT;
    size_t at = 0;
    for (;;) {
        qn_buf_reserve (b, 65536);
        size_t dst = b->cap - b->len - 1;
        size_t src = len - at;
        size_t hint = LZ4F_decompress (ctx, b->data + b->len, &dst, in + at, &src, NULL);
        if (LZ4F_isError (hint))
            break;
        at += src;
        b->len += dst;
        if (b->len > max_out) {
            rc = S_TOO_LARGE;
            break;
        }
        if (hint == 0) {        //  End of frame
            rc = at == len ? 0 : S_CORRUPT;
            break;
        }
        if (at == len && dst == 0)
            break;              //  Truncated frame
    }
    LZ4F_freeDecompressionContext (ctx);
    return rc;
}

static int
s_unzstd (const uint8_t *in, size_t len, size_t max_out, qn_buf_t *b)
{
    ZSTD_DCtx *ctx = ZSTD_createDCtx ();
    if (!ctx)
        return S_CORRUPT;
    ZSTD_inBuffer zin = { in, len, 0 };
    int rc = S_CORRUPT;
    for (;;) {
        qn_buf_reserve (b, 65536);
        ZSTD_outBuffer zout = { b->data + b->len, b->cap - b->len - 1, 0 };
        size_t hint = ZSTD_decompressStream (ctx, &zout, &zin);
        if (ZSTD_isError (hint))
            break;
        b->len += zout.pos;
        if (b->len > max_out) {
            rc = S_TOO_LARGE;
            break;
        }
        if (hint == 0) {        //  A frame is complete
            if (zin.pos == zin.size) {
                rc = 0;
                break;
            }
            continue;           //  Another frame follows
        }
        if (zin.pos == zin.size && zout.pos < zout.size)
            break;              //  Truncated
    }
    ZSTD_freeDCtx (ctx);
    return rc;
}

int
qn_kafka_decompress (int codec, const void *in, size_t in_len, size_t max_out,
                     qn_karena_t *arena, const uint8_t **out, size_t *out_len)
{
    qn_buf_t b = QN_BUF_INIT;
    int rc;
    switch (codec) {
        case QN_KAFKA_CODEC_GZIP:   rc = s_gunzip (in, in_len, max_out, &b); break;
        case QN_KAFKA_CODEC_SNAPPY: rc = s_unsnappy (in, in_len, max_out, &b); break;
        case QN_KAFKA_CODEC_LZ4:    rc = s_unlz4 (in, in_len, max_out, &b); break;
        case QN_KAFKA_CODEC_ZSTD:   rc = s_unzstd (in, in_len, max_out, &b); break;
        default:                    rc = S_BAD_CODEC;
    }
    if (rc == 0)
        s_to_arena (&b, arena, out, out_len);
    qn_buf_free (&b);
    return rc;
}

// ---------------------------------------------------------------- compression

static int
s_gzip (const void *in, size_t len, qn_buf_t *out)
{
    z_stream zs;
    memset (&zs, 0, sizeof zs);
    if (deflateInit2 (&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    size_t bound = deflateBound (&zs, (uLong) len) + 32;
    qn_buf_reserve (out, bound);
    zs.next_in = (Bytef *) in;
    zs.avail_in = (uInt) len;
    zs.next_out = (Bytef *) out->data + out->len;
    zs.avail_out = (uInt) bound;
    int zrc = deflate (&zs, Z_FINISH);
    if (zrc == Z_STREAM_END)
        out->len += bound - zs.avail_out;
    deflateEnd (&zs);
    return zrc == Z_STREAM_END ? 0 : -1;
}

//  Xerial framing with one block: what Java and librdkafka write.
static int
s_snappy (const void *in, size_t len, qn_buf_t *out)
{
    size_t n = snappy_max_compressed_length (len);
    size_t start = out->len;
    qn_buf_append (out, s_xerial_magic, 8);
    qn_kw_i32 (out, 1);
    qn_kw_i32 (out, 1);
    qn_kw_i32 (out, 0);         //  Block length, set below
    qn_buf_reserve (out, n);
    if (snappy_compress (in, len, out->data + out->len, &n) != SNAPPY_OK) {
        out->len = start;
        return -1;
    }
    qn_kw_put32_at (out, out->len - 4, (uint32_t) n);
    out->len += n;
    return 0;
}

static int
s_lz4 (const void *in, size_t len, qn_buf_t *out)
{
    size_t bound = LZ4F_compressFrameBound (len, NULL);
    qn_buf_reserve (out, bound);
    size_t n = LZ4F_compressFrame (out->data + out->len, bound, in, len, NULL);
    if (LZ4F_isError (n))
        return -1;
    out->len += n;
    return 0;
}

static int
s_zstd (const void *in, size_t len, qn_buf_t *out)
{
    size_t bound = ZSTD_compressBound (len);
    qn_buf_reserve (out, bound);
    size_t n = ZSTD_compress (out->data + out->len, bound, in, len, 1);
    if (ZSTD_isError (n))
        return -1;
    out->len += n;
    return 0;
}

int
qn_kafka_compress (int codec, const void *in, size_t in_len, qn_buf_t *out)
{
    switch (codec) {
        case QN_KAFKA_CODEC_NONE:   qn_buf_append (out, in, in_len); return 0;
        case QN_KAFKA_CODEC_GZIP:   return s_gzip (in, in_len, out);
        case QN_KAFKA_CODEC_SNAPPY: return s_snappy (in, in_len, out);
        case QN_KAFKA_CODEC_LZ4:    return s_lz4 (in, in_len, out);
        case QN_KAFKA_CODEC_ZSTD:   return s_zstd (in, in_len, out);
        default:                    return -1;
    }
}

// ---------------------------------------------------------------- decoding

//  VARINT length then bytes; -1 = null when nullable.
static qn_kstr_t
s_var_slice (qn_kr_t *r, bool nullable)
{
    int32_t len = qn_kr_varint (r);
    if (r->err)
        return QN_KSTR_NULL;
    if (len == -1 && nullable)
        return QN_KSTR_NULL;
    if (len < 0) {
        r->err = true;
        return QN_KSTR_NULL;
    }
    const uint8_t *p = qn_kr_raw (r, (size_t) len);
    return p ? (qn_kstr_t) { (const char *) p, len } : QN_KSTR_NULL;
}

//  Reads one record (length-prefixed) from r into rec.
static int
s_record_decode (qn_kr_t *r, qn_karena_t *arena, qn_kafka_record_t *rec)
{
    int32_t len = qn_kr_varint (r);
    if (r->err || len < S_MIN_RECORD - 1 || (size_t) len > qn_kr_left (r))
        return S_CORRUPT;
    qn_kr_t sub;
    qn_kr_init (&sub, qn_kr_raw (r, (size_t) len), (size_t) len);
    rec->attributes = qn_kr_i8 (&sub);
    rec->timestamp_delta = qn_kr_varlong (&sub);
    rec->offset_delta = qn_kr_varint (&sub);
    rec->key = s_var_slice (&sub, true);
    rec->value = s_var_slice (&sub, true);
    int32_t hc = qn_kr_varint (&sub);
    if (sub.err || hc < 0 || (size_t) hc > qn_kr_left (&sub) / 2)
        return S_CORRUPT;
    rec->header_count = hc;
    rec->headers = hc ? qn_karena_alloc (arena, (size_t) hc * sizeof *rec->headers) : NULL;
    for (int32_t i = 0; i < hc && !sub.err; i++) {
        rec->headers [i].key = s_var_slice (&sub, false);
        rec->headers [i].value = s_var_slice (&sub, true);
    }
    //  The length prefix must cover the record exactly.
    if (sub.err || qn_kr_left (&sub) != 0)
        return S_CORRUPT;
    return 0;
}

//  Decodes the batch at the reader's position (header + records).
static int
s_batch_decode (qn_kr_t *r, size_t max_batch_bytes, bool producer,
                qn_karena_t *arena, qn_kafka_batch_t *b)
{
    if (qn_kr_left (r) < 17)
        return S_CORRUPT;
    const uint8_t *start = r->p + r->at;
    b->base_offset = qn_kr_i64 (r);
    b->batch_length = qn_kr_i32 (r);
    b->partition_leader_epoch = qn_kr_i32 (r);
    b->magic = qn_kr_i8 (r);
    if (b->magic != 2)
        return S_CORRUPT;
    if (b->batch_length < QN_KAFKA_BATCH_HEADER_LEN - 12)
        return S_CORRUPT;
    if ((size_t) b->batch_length + 12 > max_batch_bytes)
        return S_TOO_LARGE;
    //  batch_length counts from partition_leader_epoch (offset 12).
    if ((size_t) b->batch_length - 5 > qn_kr_left (r))
        return S_CORRUPT;
    size_t end = (size_t) (start - r->p) + 12 + (size_t) b->batch_length;
    b->crc = (uint32_t) qn_kr_i32 (r);
    if (qn_crc32c (0, start + 21, end - (size_t) (start - r->p) - 21) != b->crc)
        return S_CORRUPT;
    b->attributes = qn_kr_i16 (r);
    b->last_offset_delta = qn_kr_i32 (r);
    b->first_timestamp = qn_kr_i64 (r);
    b->max_timestamp = qn_kr_i64 (r);
    b->producer_id = qn_kr_i64 (r);
    b->producer_epoch = qn_kr_i16 (r);
    b->base_sequence = qn_kr_i32 (r);
    b->records_count = qn_kr_i32 (r);
    if (r->err)
        return S_CORRUPT;
    if (b->attributes & QN_KAFKA_ATTR_CONTROL)
        return S_INVALID;
    int codec = b->attributes & QN_KAFKA_ATTR_CODEC_MASK;
    if (codec > QN_KAFKA_CODEC_ZSTD)
        return S_BAD_CODEC;
    const uint8_t *body = qn_kr_raw (r, end - r->at);
    size_t body_len = (size_t) (r->p + end - body);
    if (codec != QN_KAFKA_CODEC_NONE) {
        int rc = qn_kafka_decompress (codec, body, body_len,
                                      max_batch_bytes * QN_KAFKA_INFLATE_FACTOR,
                                      arena, &body, &body_len);
        if (rc)
            return rc;
    }
    if (b->records_count < 0 || (size_t) b->records_count > body_len / S_MIN_RECORD)
        return S_CORRUPT;
    if (producer && b->records_count > 0 && b->last_offset_delta != b->records_count - 1)
        return S_CORRUPT;
    qn_kr_t rr;
    qn_kr_init (&rr, body, body_len);
    b->records = b->records_count
               ? qn_karena_alloc (arena, (size_t) b->records_count * sizeof *b->records) : NULL;
    for (int32_t i = 0; i < b->records_count; i++) {
        int rc = s_record_decode (&rr, arena, &b->records [i]);
        if (rc)
            return rc;
        if (producer && b->records [i].offset_delta != i)
            return S_CORRUPT;
    }
    return qn_kr_left (&rr) == 0 ? 0 : S_CORRUPT;
}

int
qn_kafka_batches_decode (const void *buf, size_t len, size_t max_batch_bytes,
                         bool producer, qn_karena_t *arena, qn_kafka_batches_t *out)
{
    //  Count the batches first so the array is allocated once.
    qn_kr_t r;
    qn_kr_init (&r, buf, len);
    int count = 0;
    while (qn_kr_left (&r) > 0) {
        (void) qn_kr_i64 (&r);
        int32_t blen = qn_kr_i32 (&r);
        if (r.err || blen < 0 || (size_t) blen > qn_kr_left (&r))
            return S_CORRUPT;
        (void) qn_kr_raw (&r, (size_t) blen);
        count++;
    }
    out->count = count;
    out->batches = count ? qn_karena_alloc (arena, (size_t) count * sizeof *out->batches) : NULL;
    qn_kr_init (&r, buf, len);
    for (int i = 0; i < count; i++) {
        int rc = s_batch_decode (&r, max_batch_bytes, producer, arena, &out->batches [i]);
        if (rc)
            return rc;
    }
    return 0;
}

// ---------------------------------------------------------------- stored headers

void
qn_kafka_headers_encode (qn_buf_t *out, const qn_kafka_header_kv_t *h, int32_t n)
{
    qn_kw_varint (out, n);
    for (int32_t i = 0; i < n; i++) {
        qn_kw_varint (out, h [i].key.len < 0 ? 0 : h [i].key.len);
        if (h [i].key.len > 0)
            qn_buf_append (out, h [i].key.ptr, (size_t) h [i].key.len);
        qn_kw_varint (out, h [i].value.len < 0 ? -1 : h [i].value.len);
        if (h [i].value.len > 0)
            qn_buf_append (out, h [i].value.ptr, (size_t) h [i].value.len);
    }
}

int
qn_kafka_headers_decode (const void *buf, size_t len, qn_karena_t *arena,
                         qn_kafka_header_kv_t **out, int32_t *n)
{
    qn_kr_t r;
    qn_kr_init (&r, buf, len);
    int32_t count = qn_kr_varint (&r);
    if (r.err || count < 0 || (size_t) count > qn_kr_left (&r) / 2)
        return -1;
    qn_kafka_header_kv_t *h = count ? qn_karena_alloc (arena, (size_t) count * sizeof *h) : NULL;
    for (int32_t i = 0; i < count && !r.err; i++) {
        h [i].key = s_var_slice (&r, false);
        h [i].value = s_var_slice (&r, true);
    }
    if (r.err || qn_kr_left (&r) != 0)
        return -1;
    *out = h;
    *n = count;
    return 0;
}

// ---------------------------------------------------------------- encoding

size_t
qn_kafka_record_size (const qn_kafka_record_t *rec)
{
    size_t n = 1 + qn_kafka_varlong_size (rec->timestamp_delta)
             + qn_kafka_varint_size (rec->offset_delta)
             + qn_kafka_varint_size (rec->key.len) + (rec->key.len > 0 ? (size_t) rec->key.len : 0)
             + qn_kafka_varint_size (rec->value.len) + (rec->value.len > 0 ? (size_t) rec->value.len : 0)
             + qn_kafka_varint_size (rec->header_count);
    for (int32_t i = 0; i < rec->header_count; i++) {
        const qn_kafka_header_kv_t *h = &rec->headers [i];
        n += qn_kafka_varint_size (h->key.len) + (h->key.len > 0 ? (size_t) h->key.len : 0)
           + qn_kafka_varint_size (h->value.len) + (h->value.len > 0 ? (size_t) h->value.len : 0);
    }
    return qn_kafka_varint_size ((int32_t) n) + n;
}

static void
s_put_slice (qn_buf_t *b, qn_kstr_t s)
{
    qn_kw_varint (b, s.len < 0 ? -1 : s.len);
    if (s.len > 0)
        qn_buf_append (b, s.ptr, (size_t) s.len);
}

static void
s_record_encode (qn_buf_t *b, const qn_kafka_record_t *rec)
{
    size_t total = qn_kafka_record_size (rec);
    size_t body = total - 1;
    while (qn_kafka_varint_size ((int32_t) body) + body != total)
        body--;
    qn_kw_varint (b, (int32_t) body);
    qn_kw_i8 (b, rec->attributes);
    qn_kw_varlong (b, rec->timestamp_delta);
    qn_kw_varint (b, rec->offset_delta);
    s_put_slice (b, rec->key);
    s_put_slice (b, rec->value);
    qn_kw_varint (b, rec->header_count);
    for (int32_t i = 0; i < rec->header_count; i++) {
        s_put_slice (b, rec->headers [i].key);
        s_put_slice (b, rec->headers [i].value);
    }
}

int
qn_kafka_batch_encode (qn_buf_t *out, const qn_kafka_batch_spec_t *spec,
                       const qn_kafka_record_t *recs, int n)
{
    qn_buf_t body = QN_BUF_INIT;
    int64_t max_delta = 0;
    for (int i = 0; i < n; i++) {
        s_record_encode (&body, &recs [i]);
        if (recs [i].timestamp_delta > max_delta)
            max_delta = recs [i].timestamp_delta;
    }
    size_t start = out->len;
    qn_kw_i64 (out, spec->base_offset);
    qn_kw_i32 (out, 0);                         //  batch_length, set below
    qn_kw_i32 (out, 0);                         //  partition_leader_epoch
    qn_kw_i8 (out, 2);
    qn_kw_i32 (out, 0);                         //  crc, set below
    qn_kw_i16 (out, spec->attributes);
    qn_kw_i32 (out, n ? recs [n - 1].offset_delta : 0);
    qn_kw_i64 (out, spec->first_timestamp);
    qn_kw_i64 (out, (int64_t) ((uint64_t) spec->first_timestamp + (uint64_t) max_delta));
    qn_kw_i64 (out, spec->producer_id);
    qn_kw_i16 (out, spec->producer_epoch);
    qn_kw_i32 (out, spec->base_sequence);
    qn_kw_i32 (out, n);
    int rc = qn_kafka_compress (spec->attributes & QN_KAFKA_ATTR_CODEC_MASK,
                                body.data, body.len, out);
    qn_buf_free (&body);
    if (rc) {
        out->len = start;
        return -1;
    }
    qn_kw_put32_at (out, start + 8, (uint32_t) (out->len - start - 12));
    qn_kw_put32_at (out, start + 17, qn_crc32c (0, out->data + start + 21, out->len - start - 21));
    return 0;
}
