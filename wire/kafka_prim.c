/*  wire/kafka_prim.c - Kafka wire primitives (see kafka_prim.h)
    Pure: no I/O, no logging.
*/
#include "wire/kafka_prim.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

qn_kstr_t
qn_kstr (const char *s)
{
    if (!s)
        return QN_KSTR_NULL;
    return (qn_kstr_t) { s, (int32_t) strlen (s) };
}

bool
qn_kstr_eq (qn_kstr_t a, qn_kstr_t b)
{
    if (a.len != b.len)
        return false;
    return a.len <= 0 || memcmp (a.ptr, b.ptr, (size_t) a.len) == 0;
}

// ---------------------------------------------------------------- reader

void
qn_kr_init (qn_kr_t *r, const void *p, size_t len)
{
    r->p = p;
    r->len = len;
    r->at = 0;
    r->err = false;
}

size_t
qn_kr_left (const qn_kr_t *r)
{
    return r->err ? 0 : r->len - r->at;
}

const uint8_t *
qn_kr_raw (qn_kr_t *r, size_t n)
{
    if (r->err || r->len - r->at < n) {
        r->err = true;
        return NULL;
    }
    const uint8_t *p = r->p + r->at;
    r->at += n;
    return p;
}

static uint64_t
s_be (qn_kr_t *r, size_t n)
{
    const uint8_t *p = qn_kr_raw (r, n);
    uint64_t v = 0;
    if (p)
        for (size_t i = 0; i < n; i++)
            v = (v << 8) | p [i];
    return v;
}

int8_t  qn_kr_i8  (qn_kr_t *r) { return (int8_t) s_be (r, 1); }
int16_t qn_kr_i16 (qn_kr_t *r) { return (int16_t) (uint16_t) s_be (r, 2); }
int32_t qn_kr_i32 (qn_kr_t *r) { return (int32_t) (uint32_t) s_be (r, 4); }
int64_t qn_kr_i64 (qn_kr_t *r) { return (int64_t) s_be (r, 8); }

uint64_t
qn_kr_uvarint (qn_kr_t *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        const uint8_t *p = qn_kr_raw (r, 1);
        if (!p)
            return 0;
        if (shift == 63 && (*p & 0x7e)) {
            r->err = true;      //  More than 64 bits
            return 0;
        }
        v |= (uint64_t) (*p & 0x7f) << shift;
        if (!(*p & 0x80))
            return v;
    }
    r->err = true;
    return 0;
}

int64_t
qn_kr_varlong (qn_kr_t *r)
{
    uint64_t u = qn_kr_uvarint (r);
    return (int64_t) (u >> 1) ^ -(int64_t) (u & 1);
}

int32_t
qn_kr_varint (qn_kr_t *r)
{
    uint64_t u = qn_kr_uvarint (r);
    if (u > UINT32_MAX) {
        r->err = true;
        return 0;
    }
    uint32_t v = (uint32_t) u;
    return (int32_t) ((v >> 1) ^ (~(v & 1) + 1));
}

static qn_kstr_t
s_slice (qn_kr_t *r, int64_t len, bool nullable)
{
    if (len == -1 && nullable)
        return QN_KSTR_NULL;
    if (len < 0) {
        r->err = true;
        return QN_KSTR_NULL;
    }
    const uint8_t *p = qn_kr_raw (r, (size_t) len);
    if (!p)
        return QN_KSTR_NULL;
    return (qn_kstr_t) { (const char *) p, (int32_t) len };
}

qn_kstr_t
qn_kr_string (qn_kr_t *r, bool nullable)
{
    int16_t len = qn_kr_i16 (r);
    if (r->err)
        return QN_KSTR_NULL;
    return s_slice (r, len, nullable);
}

qn_kstr_t
qn_kr_bytes (qn_kr_t *r, bool nullable)
{
    int32_t len = qn_kr_i32 (r);
    if (r->err)
        return QN_KSTR_NULL;
    return s_slice (r, len, nullable);
}

qn_kstr_t
qn_kr_compact_string (qn_kr_t *r, bool nullable)
{
    uint64_t n = qn_kr_uvarint (r);
    if (r->err || n > INT32_MAX)
        return r->err = true, QN_KSTR_NULL;
    return s_slice (r, (int64_t) n - 1, nullable);
}

void
qn_kr_tags (qn_kr_t *r)
{
    uint64_t n = qn_kr_uvarint (r);
    for (uint64_t i = 0; i < n && !r->err; i++) {
        (void) qn_kr_uvarint (r);
        uint64_t size = qn_kr_uvarint (r);
        if (size > qn_kr_left (r))
            r->err = true;
        else
            (void) qn_kr_raw (r, (size_t) size);
    }
}

int32_t
qn_kr_array (qn_kr_t *r, bool nullable, size_t min_elem)
{
    int32_t n = qn_kr_i32 (r);
    if (r->err)
        return 0;
    if (n == -1 && nullable)
        return -1;
    if (n < 0 || (min_elem && (size_t) n > qn_kr_left (r) / min_elem)) {
        r->err = true;
        return 0;
    }
    return n;
}

// ---------------------------------------------------------------- writer

static void
s_put_be (qn_buf_t *b, uint64_t v, size_t n)
{
    char tmp [8];
    for (size_t i = 0; i < n; i++)
        tmp [i] = (char) (v >> (8 * (n - 1 - i)));
    qn_buf_append (b, tmp, n);
}

void qn_kw_i8  (qn_buf_t *b, int8_t v)  { s_put_be (b, (uint8_t) v, 1); }
void qn_kw_i16 (qn_buf_t *b, int16_t v) { s_put_be (b, (uint16_t) v, 2); }
void qn_kw_i32 (qn_buf_t *b, int32_t v) { s_put_be (b, (uint32_t) v, 4); }
void qn_kw_i64 (qn_buf_t *b, int64_t v) { s_put_be (b, (uint64_t) v, 8); }

void
qn_kw_uvarint (qn_buf_t *b, uint64_t v)
{
    char tmp [10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp [n++] = (char) ((v & 0x7f) | 0x80);
        v >>= 7;
    }
    tmp [n++] = (char) v;
    qn_buf_append (b, tmp, n);
}

static uint64_t
s_zz64 (int64_t v)
{
    return ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
}

static uint32_t
s_zz32 (int32_t v)
{
    return ((uint32_t) v << 1) ^ (uint32_t) (v >> 31);
}

void qn_kw_varint (qn_buf_t *b, int32_t v)  { qn_kw_uvarint (b, s_zz32 (v)); }
void qn_kw_varlong (qn_buf_t *b, int64_t v) { qn_kw_uvarint (b, s_zz64 (v)); }

static size_t
s_uvarint_size (uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

size_t qn_kafka_varint_size (int32_t v)  { return s_uvarint_size (s_zz32 (v)); }
size_t qn_kafka_varlong_size (int64_t v) { return s_uvarint_size (s_zz64 (v)); }

void
qn_kw_string (qn_buf_t *b, qn_kstr_t s)
{
    assert (s.len <= INT16_MAX);
    qn_kw_i16 (b, (int16_t) (s.len < 0 ? -1 : s.len));
    if (s.len > 0)
        qn_buf_append (b, s.ptr, (size_t) s.len);
}

void
qn_kw_bytes (qn_buf_t *b, qn_kstr_t s)
{
    qn_kw_i32 (b, s.len < 0 ? -1 : s.len);
    if (s.len > 0)
        qn_buf_append (b, s.ptr, (size_t) s.len);
}

void
qn_kw_compact_string (qn_buf_t *b, qn_kstr_t s)
{
    qn_kw_uvarint (b, s.len < 0 ? 0 : (uint64_t) s.len + 1);
    if (s.len > 0)
        qn_buf_append (b, s.ptr, (size_t) s.len);
}

void
qn_kw_put32_at (qn_buf_t *b, size_t at, uint32_t v)
{
    assert (at + 4 <= b->len);
    for (int i = 0; i < 4; i++)
        b->data [at + (size_t) i] = (char) (v >> (24 - 8 * i));
}

// ---------------------------------------------------------------- arena

struct qn_karena_block_s {
    qn_karena_block_t *next;
    size_t used, cap;
    max_align_t data [];
};

#define S_ARENA_BLOCK 8192

void
qn_karena_init (qn_karena_t *a)
{
    a->head = NULL;
}

void *
qn_karena_alloc (qn_karena_t *a, size_t size)
{
    size = (size + sizeof (max_align_t) - 1) & ~(sizeof (max_align_t) - 1);
    if (size == 0)
        size = sizeof (max_align_t);
    qn_karena_block_t *blk = a->head;
    if (!blk || blk->cap - blk->used < size) {
        size_t cap = size > S_ARENA_BLOCK ? size : S_ARENA_BLOCK;
        blk = qn_malloc (sizeof *blk + cap);
        blk->used = 0;
        blk->cap = cap;
        //  A big one-off block goes behind the head so the head keeps
        //  serving small allocations.
        if (a->head && size > S_ARENA_BLOCK) {
            blk->next = a->head->next;
            a->head->next = blk;
        }
        else {
            blk->next = a->head;
            a->head = blk;
        }
    }
    void *p = (char *) blk->data + blk->used;
    blk->used += size;
    memset (p, 0, size);
    return p;
}

void
qn_karena_free (qn_karena_t *a)
{
    while (a->head) {
        qn_karena_block_t *next = a->head->next;
        free (a->head);
        a->head = next;
    }
}

// ---------------------------------------------------------------- murmur2

uint32_t
qn_kafka_murmur2 (const void *data, size_t len)
{
    const uint8_t *b = data;
    const uint32_t m = 0x5bd1e995;
    const int r = 24;
    uint32_t h = 0x9747b28cu ^ (uint32_t) len;
    size_t words = len / 4;
    for (size_t i = 0; i < words; i++) {
        const uint8_t *p = b + 4 * i;
        uint32_t k = (uint32_t) p [0] | (uint32_t) p [1] << 8
                   | (uint32_t) p [2] << 16 | (uint32_t) p [3] << 24;
        k *= m;
        k ^= k >> r;
        k *= m;
        h *= m;
        h ^= k;
    }
    const uint8_t *tail = b + (len & ~(size_t) 3);
    switch (len % 4) {
        case 3: h ^= (uint32_t) tail [2] << 16;     //  Fall through
        /* FALLTHRU */
        case 2: h ^= (uint32_t) tail [1] << 8;      //  Fall through
        /* FALLTHRU */
        case 1: h ^= tail [0];
                h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

int32_t
qn_kafka_partition_for (const void *key, size_t len, int32_t n)
{
    assert (n >= 1);
    return (int32_t) ((qn_kafka_murmur2 (key, len) & 0x7fffffffu) % (uint32_t) n);
}
