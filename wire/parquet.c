/*  wire/parquet.c - Apache Parquet file writer (see parquet.h)
    Layout written: "PAR1", then per row group and per column one column
    chunk = [dictionary page] data page..., then the FileMetaData (Thrift
    compact protocol), its 4-byte little-endian length and "PAR1".
    A column buffers its non-null values PLAIN-encoded (booleans one byte
    each) and one definition level byte per row; flush turns them into
    pages. Field numbers below follow parquet.thrift (parquet-format 2.9).
*/
#include "wire/parquet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

//  Physical types and enums from parquet.thrift
enum { PT_BOOLEAN = 0, PT_INT32 = 1, PT_INT64 = 2, PT_DOUBLE = 5, PT_BYTE_ARRAY = 6 };
enum { ENC_PLAIN = 0, ENC_RLE = 3, ENC_RLE_DICTIONARY = 8 };
enum { PAGE_DATA = 0, PAGE_DICTIONARY = 2 };
enum { CT_UTF8 = 0, CT_TIMESTAMP_MILLIS = 9, CT_TIMESTAMP_MICROS = 10, CT_INT_32 = 17, CT_INT_64 = 18, CT_JSON = 19 };

//  Thrift compact protocol type ids
enum { TC_TRUE = 1, TC_FALSE = 2, TC_I32 = 5, TC_I64 = 6, TC_BINARY = 8,
       TC_LIST = 9, TC_STRUCT = 12 };

//  ------------------------------------------------------------------------
//  Thrift compact protocol writer

#define TW_MAX_DEPTH 8

typedef struct {
    qn_buf_t *b;
    int depth;
    int16_t last [TW_MAX_DEPTH];
} tw_t;

static void
s_varint (qn_buf_t *b, uint64_t v)
{
    while (v >= 0x80) {
        qn_buf_putc (b, (char) (uint8_t) (v | 0x80));
        v >>= 7;
    }
    qn_buf_putc (b, (char) (uint8_t) v);
}

static uint64_t
s_zigzag (int64_t v)
{
    return ((uint64_t) v << 1) ^ (uint64_t) (v >> 63);
}

static void
s_tw_init (tw_t *tw, qn_buf_t *b)
{
    memset (tw, 0, sizeof *tw);
    tw->b = b;
}

static void
s_tw_field (tw_t *tw, int16_t id, int type)
{
    int delta = id - tw->last [tw->depth];
    if (delta > 0 && delta <= 15)
        qn_buf_putc (tw->b, (char) (uint8_t) ((delta << 4) | type));
    else {
        qn_buf_putc (tw->b, (char) type);
        s_varint (tw->b, s_zigzag (id));
    }
    tw->last [tw->depth] = id;
}

static void
s_tw_i32 (tw_t *tw, int16_t id, int32_t v)
{
    s_tw_field (tw, id, TC_I32);
    s_varint (tw->b, s_zigzag (v));
}

static void
s_tw_i64 (tw_t *tw, int16_t id, int64_t v)
{
    s_tw_field (tw, id, TC_I64);
    s_varint (tw->b, s_zigzag (v));
}

static void
s_tw_bool (tw_t *tw, int16_t id, bool v)
{
    s_tw_field (tw, id, v ? TC_TRUE : TC_FALSE);
}

static void
s_tw_binary (tw_t *tw, int16_t id, const void *data, size_t len)
{
    s_tw_field (tw, id, TC_BINARY);
    s_varint (tw->b, len);
    qn_buf_append (tw->b, data, len);
}

static void
s_tw_string (tw_t *tw, int16_t id, const char *s)
{
    s_tw_binary (tw, id, s, strlen (s));
}

//  Opens a struct: as field `id` of the current struct, or (id 0) as a
//  list element or the top-level struct.
static void
s_tw_struct (tw_t *tw, int16_t id)
{
    if (id)
        s_tw_field (tw, id, TC_STRUCT);
    tw->depth++;
    tw->last [tw->depth] = 0;
}

static void
s_tw_end (tw_t *tw)
{
    qn_buf_putc (tw->b, 0);
    tw->depth--;
}

static void
s_tw_list (tw_t *tw, int16_t id, int elem_type, size_t count)
{
    s_tw_field (tw, id, TC_LIST);
    if (count < 15)
        qn_buf_putc (tw->b, (char) (uint8_t) ((count << 4) | (size_t) elem_type));
    else {
        qn_buf_putc (tw->b, (char) (uint8_t) (0xF0 | elem_type));
        s_varint (tw->b, count);
    }
}

//  ------------------------------------------------------------------------
//  Little-endian helpers and the RLE / bit-packing hybrid

static void
s_le32 (qn_buf_t *b, uint32_t v)
{
    uint8_t x [4] = { (uint8_t) v, (uint8_t) (v >> 8), (uint8_t) (v >> 16), (uint8_t) (v >> 24) };
    qn_buf_append (b, x, 4);
}

static void
s_le64 (qn_buf_t *b, uint64_t v)
{
    uint8_t x [8];
    for (int i = 0; i < 8; i++)
        x [i] = (uint8_t) (v >> (8 * i));
    qn_buf_append (b, x, 8);
}

static uint32_t
s_rd32 (const uint8_t *p)
{
    return (uint32_t) p [0] | (uint32_t) p [1] << 8 | (uint32_t) p [2] << 16 | (uint32_t) p [3] << 24;
}

static uint64_t
s_rd64 (const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p [i];
    return v;
}

static void
s_bitpack (qn_buf_t *b, const uint32_t *vals, size_t count, int bw)
{
    //  Groups of 8 values, `bw` bits each, LSB first; the last group is
    //  padded with zeros (readers stop at the page's value count).
    size_t groups = (count + 7) / 8;
    s_varint (b, (groups << 1) | 1);
    uint64_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < groups * 8; i++) {
        uint64_t v = i < count ? vals [i] : 0;
        acc |= v << bits;
        bits += bw;
        while (bits >= 8) {
            qn_buf_putc (b, (char) (uint8_t) acc);
            acc >>= 8;
            bits -= 8;
        }
    }
    if (bits > 0)
        qn_buf_putc (b, (char) (uint8_t) acc);
}

static void
s_rle_run (qn_buf_t *b, uint32_t value, size_t count, int bw)
{
    s_varint (b, (uint64_t) count << 1);
    for (int i = 0; i < (bw + 7) / 8; i++)
        qn_buf_putc (b, (char) (uint8_t) (value >> (8 * i)));
}

//  RLE runs for repeats of 8 or more, bit-packed groups for the rest.
static void
s_hybrid (qn_buf_t *b, const uint32_t *vals, size_t n, int bw)
{
    size_t lit = 0, i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && vals [j] == vals [i])
            j++;
        size_t run = j - i, pending = i - lit;
        if (run >= 8 && pending % 8 == 0) {
            if (pending)
                s_bitpack (b, vals + lit, pending, bw);
            s_rle_run (b, vals [i], run, bw);
            i = lit = j;
        }
        else
        if (run >= 8 && run - (8 - pending % 8) >= 8)
            i += 8 - pending % 8;       //  Pad the literals to a group
        else
            i = j;
    }
    if (n > lit)
        s_bitpack (b, vals + lit, n - lit, bw);
}

static int
s_bit_width (uint32_t max_value)
{
    int bw = 0;
    while (bw < 32 && (max_value >> bw))
        bw++;
    return bw ? bw : 1;
}

//  ------------------------------------------------------------------------
//  Writer state

typedef struct {
    bool present;               //  Min/max known (not for long byte arrays)
    qn_buf_t min, max;          //  PLAIN bytes without a length prefix
    int64_t null_count;
} stats_t;

typedef struct {
    int64_t file_offset;
    int64_t data_page_offset;
    int64_t dict_page_offset;   //  -1 if none
    int64_t num_values;
    int64_t uncompressed, compressed;
    bool dictionary;
    stats_t stats;
} chunk_meta_t;

typedef struct {
    int64_t num_rows;
    int64_t file_offset;
    int64_t total_byte_size;
    int64_t total_compressed;
    chunk_meta_t *chunks;       //  One per column
} rg_meta_t;

typedef struct {
    char *name;
    qn_pq_type_t type;
    bool optional, no_dictionary;
    int physical;
    int fixed_width;            //  0 for byte arrays
    qn_buf_t vals;              //  Non-null values, PLAIN (booleans: 1 byte each)
    qn_buf_t defs;              //  One byte per row: 1 value, 0 null
    uint32_t nvals;
    bool set;                   //  Has a value in the open row
} col_t;

struct qn_pq_writer {
    qn_buf_t *out;              //  Not owned
    uint64_t file_bytes;        //  Bytes appended to out since new
    qn_pq_codec_t codec;
    int level;
    uint32_t row_group_rows;
    size_t page_bytes;
    uint32_t ncols;
    col_t *cols;
    uint32_t set_count;         //  Columns set in the open row
    uint32_t group_rows;
    uint64_t rows;
    rg_meta_t *groups;
    size_t group_count, group_cap;
    bool finished;
    qn_buf_t raw, packed, hdr;  //  Scratch
};

static void
s_emit (qn_pq_writer_t *self, const void *data, size_t len)
{
    qn_buf_append (self->out, data, len);
    self->file_bytes += len;
}

qn_pq_writer_t *
qn_pq_writer_new (const qn_pq_options_t *options, qn_buf_t *out)
{
    if (!options || !out || options->column_count == 0
    ||  options->column_count > QN_PQ_MAX_COLUMNS)
        return NULL;
    if (options->codec != QN_PQ_UNCOMPRESSED && options->codec != QN_PQ_SNAPPY
    &&  options->codec != QN_PQ_GZIP && options->codec != QN_PQ_ZSTD)
        return NULL;
    for (uint32_t i = 0; i < options->column_count; i++) {
        const qn_pq_column_t *c = &options->columns [i];
        if (!c->name || !*c->name || c->type < QN_PQ_BOOLEAN || c->type > QN_PQ_TIMESTAMP_US)
            return NULL;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp (options->columns [j].name, c->name) == 0)
                return NULL;
    }
    qn_pq_writer_t *self = qn_zalloc (sizeof *self);
    self->out = out;
    self->codec = options->codec;
    self->level = options->level;
    self->row_group_rows = options->row_group_rows ? options->row_group_rows : 100000;
    self->page_bytes = options->page_bytes ? options->page_bytes : 1024 * 1024;
    self->ncols = options->column_count;
    self->cols = qn_zalloc (self->ncols * sizeof (col_t));
    for (uint32_t i = 0; i < self->ncols; i++) {
        const qn_pq_column_t *c = &options->columns [i];
        col_t *col = &self->cols [i];
        col->name = qn_strdup (c->name);
        col->type = c->type;
        col->optional = c->optional;
        col->no_dictionary = c->no_dictionary || c->type == QN_PQ_BOOLEAN;
        switch (c->type) {
            case QN_PQ_BOOLEAN:      col->physical = PT_BOOLEAN; col->fixed_width = 1; break;
            case QN_PQ_INT32:        col->physical = PT_INT32; col->fixed_width = 4; break;
            case QN_PQ_INT64:
            case QN_PQ_TIMESTAMP_US:
            case QN_PQ_TIMESTAMP_MS: col->physical = PT_INT64; col->fixed_width = 8; break;
            case QN_PQ_DOUBLE:       col->physical = PT_DOUBLE; col->fixed_width = 8; break;
            default:                 col->physical = PT_BYTE_ARRAY; col->fixed_width = 0; break;
        }
    }
    s_emit (self, "PAR1", 4);
    return self;
}

static void
s_stats_free (stats_t *s)
{
    qn_buf_free (&s->min);
    qn_buf_free (&s->max);
}

void
qn_pq_writer_destroy (qn_pq_writer_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    qn_pq_writer_t *self = *self_p;
    for (uint32_t i = 0; i < self->ncols; i++) {
        free (self->cols [i].name);
        qn_buf_free (&self->cols [i].vals);
        qn_buf_free (&self->cols [i].defs);
    }
    free (self->cols);
    for (size_t g = 0; g < self->group_count; g++) {
        for (uint32_t i = 0; i < self->ncols; i++)
            s_stats_free (&self->groups [g].chunks [i].stats);
        free (self->groups [g].chunks);
    }
    free (self->groups);
    qn_buf_free (&self->raw);
    qn_buf_free (&self->packed);
    qn_buf_free (&self->hdr);
    free (self);
    *self_p = NULL;
}

//  ------------------------------------------------------------------------
//  Row input

static col_t *
s_col (qn_pq_writer_t *self, uint32_t index)
{
    if (self->finished || index >= self->ncols || self->cols [index].set)
        return NULL;
    return &self->cols [index];
}

static void
s_mark (qn_pq_writer_t *self, col_t *col, bool present)
{
    col->set = true;
    self->set_count++;
    qn_buf_putc (&col->defs, present ? 1 : 0);
    if (present)
        col->nvals++;
}

int
qn_pq_set_null (qn_pq_writer_t *self, uint32_t index)
{
    col_t *col = s_col (self, index);
    if (!col || !col->optional)
        return -1;
    s_mark (self, col, false);
    return 0;
}

int
qn_pq_set_bool (qn_pq_writer_t *self, uint32_t index, bool value)
{
    col_t *col = s_col (self, index);
    if (!col || col->type != QN_PQ_BOOLEAN)
        return -1;
    qn_buf_putc (&col->vals, value ? 1 : 0);
    s_mark (self, col, true);
    return 0;
}

int
qn_pq_set_int32 (qn_pq_writer_t *self, uint32_t index, int32_t value)
{
    col_t *col = s_col (self, index);
    if (!col || col->type != QN_PQ_INT32)
        return -1;
    s_le32 (&col->vals, (uint32_t) value);
    s_mark (self, col, true);
    return 0;
}

int
qn_pq_set_int64 (qn_pq_writer_t *self, uint32_t index, int64_t value)
{
    col_t *col = s_col (self, index);
    if (!col || (col->type != QN_PQ_INT64 && col->type != QN_PQ_TIMESTAMP_MS
             && col->type != QN_PQ_TIMESTAMP_US))
        return -1;
    s_le64 (&col->vals, (uint64_t) value);
    s_mark (self, col, true);
    return 0;
}

int
qn_pq_set_double (qn_pq_writer_t *self, uint32_t index, double value)
{
    col_t *col = s_col (self, index);
    if (!col || col->type != QN_PQ_DOUBLE)
        return -1;
    uint64_t bits;
    memcpy (&bits, &value, 8);
    s_le64 (&col->vals, bits);
    s_mark (self, col, true);
    return 0;
}

int
qn_pq_set_bytes (qn_pq_writer_t *self, uint32_t index, const void *data, size_t len)
{
    col_t *col = s_col (self, index);
    if (!col || col->physical != PT_BYTE_ARRAY || len > INT32_MAX || (!data && len))
        return -1;
    s_le32 (&col->vals, (uint32_t) len);
    if (len)
        qn_buf_append (&col->vals, data, len);
    s_mark (self, col, true);
    return 0;
}

static void s_flush_group (qn_pq_writer_t *self);

int
qn_pq_end_row (qn_pq_writer_t *self)
{
    if (self->finished || self->set_count != self->ncols)
        return -1;
    for (uint32_t i = 0; i < self->ncols; i++)
        self->cols [i].set = false;
    self->set_count = 0;
    self->group_rows++;
    self->rows++;
    if (self->group_rows >= self->row_group_rows)
        s_flush_group (self);
    return 0;
}

uint64_t
qn_pq_rows (const qn_pq_writer_t *self)
{
    return self->rows;
}

uint64_t
qn_pq_file_bytes (const qn_pq_writer_t *self)
{
    return self->file_bytes;
}

size_t
qn_pq_pending_bytes (const qn_pq_writer_t *self)
{
    size_t n = 0;
    for (uint32_t i = 0; i < self->ncols; i++)
        n += self->cols [i].vals.len + self->cols [i].defs.len;
    return n;
}

//  ------------------------------------------------------------------------
//  Flushing a row group

//  Length of the PLAIN value at `p` (fixed width or 4-byte prefix + bytes).
static size_t
s_value_len (const col_t *col, const uint8_t *p)
{
    return col->fixed_width ? (size_t) col->fixed_width : 4 + (size_t) s_rd32 (p);
}

//  Bytes compared for statistics (byte arrays: without the prefix).
static void
s_stat_bytes (const col_t *col, const uint8_t *p, const uint8_t **data, size_t *len)
{
    if (col->fixed_width) {
        *data = p;
        *len = (size_t) col->fixed_width;
    }
    else {
        *data = p + 4;
        *len = s_rd32 (p);
    }
}

//  <0, 0, >0 in the column type's sort order.
static int
s_compare (const col_t *col, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    switch (col->physical) {
        case PT_BOOLEAN:
            return (int) a [0] - (int) b [0];
        case PT_INT32: {
            int32_t x = (int32_t) s_rd32 (a), y = (int32_t) s_rd32 (b);
            return x < y ? -1 : x > y;
        }
        case PT_INT64: {
            int64_t x = (int64_t) s_rd64 (a), y = (int64_t) s_rd64 (b);
            return x < y ? -1 : x > y;
        }
        case PT_DOUBLE: {
            double x, y;
            uint64_t bx = s_rd64 (a), by = s_rd64 (b);
            memcpy (&x, &bx, 8);
            memcpy (&y, &by, 8);
            return x < y ? -1 : x > y;
        }
        default: {
            size_t n = alen < blen ? alen : blen;
            int c = n ? memcmp (a, b, n) : 0;
            if (c)
                return c;
            return alen < blen ? -1 : alen > blen;
        }
    }
}

static void
s_stats_collect (const col_t *col, stats_t *st)
{
    st->null_count = (int64_t) (col->defs.len - col->nvals);
    const uint8_t *base = (const uint8_t *) col->vals.data;
    const uint8_t *min = NULL, *max = NULL;
    size_t min_len = 0, max_len = 0;
    size_t off = 0;
    for (uint32_t v = 0; v < col->nvals; v++) {
        const uint8_t *data;
        size_t len;
        s_stat_bytes (col, base + off, &data, &len);
        off += s_value_len (col, base + off);
        if (col->physical == PT_DOUBLE) {
            double d;
            uint64_t bits = s_rd64 (data);
            memcpy (&d, &bits, 8);
            if (isnan (d))
                continue;       //  NaN is left out of min/max
        }
        if (!min || s_compare (col, data, len, min, min_len) < 0) {
            min = data;
            min_len = len;
        }
        if (!max || s_compare (col, data, len, max, max_len) > 0) {
            max = data;
            max_len = len;
        }
    }
    if (!min || min_len > QN_PQ_STAT_MAX_LEN || max_len > QN_PQ_STAT_MAX_LEN)
        return;
    st->present = true;
    qn_buf_append (&st->min, min, min_len);
    qn_buf_append (&st->max, max, max_len);
    if (col->physical == PT_DOUBLE) {
        //  Zero bounds are written as -0.0 (min) and +0.0 (max).
        double d;
        uint64_t bits = s_rd64 ((uint8_t *) st->min.data);
        memcpy (&d, &bits, 8);
        if (d == 0.0) {
            qn_buf_reset (&st->min);
            s_le64 (&st->min, 0x8000000000000000ull);
        }
        bits = s_rd64 ((uint8_t *) st->max.data);
        memcpy (&d, &bits, 8);
        if (d == 0.0) {
            qn_buf_reset (&st->max);
            s_le64 (&st->max, 0);
        }
    }
}

//  Compresses `in` into `out` with the writer's codec.
static void
s_compress (qn_pq_writer_t *self, const qn_buf_t *in, qn_buf_t *out)
{
    qn_buf_reset (out);
    const char *src = in->data ? in->data : "";
    switch (self->codec) {
        case QN_PQ_SNAPPY: {
            size_t cap = snappy_max_compressed_length (in->len);
            qn_buf_reserve (out, cap);
            size_t n = cap;
            if (snappy_compress (src, in->len, out->data, &n) != SNAPPY_OK)
                abort ();
            out->len = n;
            break;
        }
        case QN_PQ_ZSTD: {
            size_t cap = ZSTD_compressBound (in->len);
            qn_buf_reserve (out, cap);
            size_t n = ZSTD_compress (out->data, cap, src, in->len,
                                      self->level ? self->level : ZSTD_CLEVEL_DEFAULT);
            if (ZSTD_isError (n))
                abort ();
            out->len = n;
            break;
        }
        case QN_PQ_GZIP: {
            z_stream zs;
            memset (&zs, 0, sizeof zs);
            if (deflateInit2 (&zs, self->level ? self->level : Z_DEFAULT_COMPRESSION,
                              Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
                abort ();
            size_t cap = deflateBound (&zs, (uLong) in->len) + 32;
            qn_buf_reserve (out, cap);
            zs.next_in = (Bytef *) src;
            zs.avail_in = (uInt) in->len;
            zs.next_out = (Bytef *) out->data;
            zs.avail_out = (uInt) cap;
            if (deflate (&zs, Z_FINISH) != Z_STREAM_END)
                abort ();
            out->len = zs.total_out;
            deflateEnd (&zs);
            break;
        }
        default:
            qn_buf_append (out, src, in->len);
            break;
    }
    if (out->data)
        out->data [out->len] = 0;
}

//  Writes one page: header + compressed self->raw. Adds to the chunk sizes.
static void
s_write_page (qn_pq_writer_t *self, chunk_meta_t *cm, int page_type,
              int32_t num_values, int encoding, bool optional)
{
    s_compress (self, &self->raw, &self->packed);
    qn_buf_reset (&self->hdr);
    tw_t tw;
    s_tw_init (&tw, &self->hdr);
    s_tw_i32 (&tw, 1, page_type);
    s_tw_i32 (&tw, 2, (int32_t) self->raw.len);
    s_tw_i32 (&tw, 3, (int32_t) self->packed.len);
    if (page_type == PAGE_DATA) {
        s_tw_struct (&tw, 5);
        s_tw_i32 (&tw, 1, num_values);
        s_tw_i32 (&tw, 2, encoding);
        s_tw_i32 (&tw, 3, ENC_RLE);
        s_tw_i32 (&tw, 4, ENC_RLE);
        s_tw_end (&tw);
    }
    else {
        s_tw_struct (&tw, 7);
        s_tw_i32 (&tw, 1, num_values);
        s_tw_i32 (&tw, 2, ENC_PLAIN);
        s_tw_end (&tw);
    }
    qn_buf_putc (&self->hdr, 0);        //  End of PageHeader
    (void) optional;
    s_emit (self, self->hdr.data, self->hdr.len);
    s_emit (self, self->packed.data ? self->packed.data : "", self->packed.len);
    cm->uncompressed += (int64_t) (self->hdr.len + self->raw.len);
    cm->compressed += (int64_t) (self->hdr.len + self->packed.len);
}

//  Dictionary: open addressing over value offsets; returns the number of
//  distinct values, fills idx[v] for each value, appends the dictionary
//  page body (PLAIN) to dict. Gives up (returns 0) past `max_bytes`.
static uint32_t
s_dictionary (const col_t *col, uint32_t *idx, qn_buf_t *dict, size_t max_bytes)
{
    const uint8_t *base = (const uint8_t *) col->vals.data;
    size_t cap = 16;
    while (cap < (size_t) col->nvals * 2)
        cap <<= 1;
    //  slot -> (offset into vals + 1), 0 empty; and entry number
    size_t *slot_off = qn_zalloc (cap * sizeof (size_t));
    uint32_t *slot_id = qn_zalloc (cap * sizeof (uint32_t));
    uint32_t distinct = 0;
    size_t off = 0;
    for (uint32_t v = 0; v < col->nvals; v++) {
        size_t len = s_value_len (col, base + off);
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < len; i++)
            h = (h ^ base [off + i]) * 1099511628211ull;
        size_t s = (size_t) h & (cap - 1);
        for (;;) {
            if (slot_off [s] == 0) {
                slot_off [s] = off + 1;
                slot_id [s] = distinct;
                idx [v] = distinct++;
                qn_buf_append (dict, base + off, len);
                break;
            }
            const uint8_t *other = base + slot_off [s] - 1;
            if (s_value_len (col, other) == len && memcmp (other, base + off, len) == 0) {
                idx [v] = slot_id [s];
                break;
            }
            s = (s + 1) & (cap - 1);
        }
        if (dict->len > max_bytes) {
            distinct = 0;
            break;
        }
        off += len;
    }
    free (slot_off);
    free (slot_id);
    return distinct;
}

static void
s_flush_column (qn_pq_writer_t *self, col_t *col, chunk_meta_t *cm)
{
    const uint8_t *base = (const uint8_t *) col->vals.data;
    const uint8_t *defs = (const uint8_t *) col->defs.data;
    size_t nrows = col->defs.len;
    cm->num_values = (int64_t) nrows;
    cm->file_offset = (int64_t) self->file_bytes;
    cm->dict_page_offset = -1;
    s_stats_collect (col, &cm->stats);

    //  Dictionary when it makes the chunk smaller (decided from the data,
    //  so the same rows always get the same encoding).
    uint32_t *idx = NULL;
    int bw = 0;
    if (!col->no_dictionary && col->nvals > 0) {
        idx = qn_malloc ((size_t) col->nvals * sizeof (uint32_t));
        qn_buf_t dict = QN_BUF_INIT;
        uint32_t distinct = s_dictionary (col, idx, &dict, self->page_bytes);
        if (distinct > 0) {
            bw = s_bit_width (distinct - 1);
            size_t est = dict.len + ((size_t) col->nvals * (size_t) bw + 7) / 8;
            if (est < col->vals.len) {
                cm->dictionary = true;
                cm->dict_page_offset = (int64_t) self->file_bytes;
                qn_buf_reset (&self->raw);
                qn_buf_append (&self->raw, dict.data, dict.len);
                s_write_page (self, cm, PAGE_DICTIONARY, (int32_t) distinct, ENC_PLAIN, false);
            }
        }
        qn_buf_free (&dict);
        if (!cm->dictionary) {
            free (idx);
            idx = NULL;
        }
    }
    cm->data_page_offset = (int64_t) self->file_bytes;

    //  Data pages: rows [r0, r1) holding values [v0, v1) at bytes [o0, o1).
    uint32_t *levels = col->optional ? qn_malloc (nrows * sizeof (uint32_t)) : NULL;
    size_t r0 = 0, v0 = 0, o0 = 0;
    while (r0 < nrows) {
        size_t r1 = r0, v1 = v0, o1 = o0;
        while (r1 < nrows && (o1 - o0) + (r1 - r0) < self->page_bytes) {
            if (defs [r1]) {
                o1 += s_value_len (col, base + o1);
                v1++;
            }
            r1++;
        }
        qn_buf_reset (&self->raw);
        if (col->optional) {
            for (size_t r = r0; r < r1; r++)
                levels [r - r0] = defs [r];
            qn_buf_t lv = QN_BUF_INIT;
            s_hybrid (&lv, levels, r1 - r0, 1);
            s_le32 (&self->raw, (uint32_t) lv.len);
            qn_buf_append (&self->raw, lv.data ? lv.data : "", lv.len);
            qn_buf_free (&lv);
        }
        int encoding = ENC_PLAIN;
        if (idx) {
            encoding = ENC_RLE_DICTIONARY;
            qn_buf_putc (&self->raw, (char) bw);
            s_hybrid (&self->raw, idx + v0, v1 - v0, bw);
        }
        else
        if (col->physical == PT_BOOLEAN) {
            uint8_t acc = 0;
            for (size_t v = v0; v < v1; v++) {
                if (base [v])
                    acc |= (uint8_t) (1u << ((v - v0) % 8));
                if ((v - v0) % 8 == 7) {
                    qn_buf_putc (&self->raw, (char) acc);
                    acc = 0;
                }
            }
            if ((v1 - v0) % 8)
                qn_buf_putc (&self->raw, (char) acc);
        }
        else
        if (o1 > o0)
            qn_buf_append (&self->raw, base + o0, o1 - o0);
        s_write_page (self, cm, PAGE_DATA, (int32_t) (r1 - r0), encoding, col->optional);
        r0 = r1;
        v0 = v1;
        o0 = o1;
    }
    free (levels);
    free (idx);
    qn_buf_reset (&col->vals);
    qn_buf_reset (&col->defs);
    col->nvals = 0;
}

static void
s_flush_group (qn_pq_writer_t *self)
{
    if (self->group_rows == 0)
        return;
    if (self->group_count == self->group_cap) {
        self->group_cap = self->group_cap ? self->group_cap * 2 : 8;
        self->groups = qn_realloc (self->groups, self->group_cap * sizeof (rg_meta_t));
    }
    rg_meta_t *rg = &self->groups [self->group_count++];
    memset (rg, 0, sizeof *rg);
    rg->num_rows = self->group_rows;
    rg->file_offset = (int64_t) self->file_bytes;
    rg->chunks = qn_zalloc (self->ncols * sizeof (chunk_meta_t));
    for (uint32_t i = 0; i < self->ncols; i++) {
        s_flush_column (self, &self->cols [i], &rg->chunks [i]);
        rg->total_byte_size += rg->chunks [i].uncompressed;
        rg->total_compressed += rg->chunks [i].compressed;
    }
    self->group_rows = 0;
}

//  ------------------------------------------------------------------------
//  Footer

static void
s_write_schema_element (tw_t *tw, const col_t *col)
{
    s_tw_struct (tw, 0);
    s_tw_i32 (tw, 1, col->physical);
    s_tw_i32 (tw, 3, col->optional ? 1 : 0);
    s_tw_string (tw, 4, col->name);
    switch (col->type) {
        case QN_PQ_STRING:
            s_tw_i32 (tw, 6, CT_UTF8);
            s_tw_struct (tw, 10);
            s_tw_struct (tw, 1);        //  LogicalType.STRING
            s_tw_end (tw);
            s_tw_end (tw);
            break;
        case QN_PQ_JSON:
            s_tw_i32 (tw, 6, CT_JSON);
            s_tw_struct (tw, 10);
            s_tw_struct (tw, 12);       //  LogicalType.JSON
            s_tw_end (tw);
            s_tw_end (tw);
            break;
        case QN_PQ_TIMESTAMP_MS:
        case QN_PQ_TIMESTAMP_US:
            s_tw_i32 (tw, 6, col->type == QN_PQ_TIMESTAMP_MS ? CT_TIMESTAMP_MILLIS : CT_TIMESTAMP_MICROS);
            s_tw_struct (tw, 10);
            s_tw_struct (tw, 8);        //  LogicalType.TIMESTAMP
            s_tw_bool (tw, 1, true);    //  isAdjustedToUTC
            s_tw_struct (tw, 2);        //  unit
            s_tw_struct (tw, col->type == QN_PQ_TIMESTAMP_MS ? 1 : 2);   //  MILLIS / MICROS
            s_tw_end (tw);
            s_tw_end (tw);
            s_tw_end (tw);
            s_tw_end (tw);
            break;
        default:
            break;
    }
    s_tw_end (tw);
}

static void
s_write_chunk (tw_t *tw, const col_t *col, const chunk_meta_t *cm, int codec)
{
    s_tw_struct (tw, 0);                //  ColumnChunk
    s_tw_i64 (tw, 2, cm->file_offset);
    s_tw_struct (tw, 3);                //  ColumnMetaData
    s_tw_i32 (tw, 1, col->physical);
    int encs [3], n = 0;
    encs [n++] = ENC_PLAIN;
    if (col->optional)
        encs [n++] = ENC_RLE;
    if (cm->dictionary)
        encs [n++] = ENC_RLE_DICTIONARY;
    s_tw_list (tw, 2, TC_I32, (size_t) n);
    for (int i = 0; i < n; i++)
        s_varint (tw->b, s_zigzag (encs [i]));
    s_tw_list (tw, 3, TC_BINARY, 1);
    s_varint (tw->b, strlen (col->name));
    qn_buf_puts (tw->b, col->name);
    s_tw_i32 (tw, 4, codec);
    s_tw_i64 (tw, 5, cm->num_values);
    s_tw_i64 (tw, 6, cm->uncompressed);
    s_tw_i64 (tw, 7, cm->compressed);
    s_tw_i64 (tw, 9, cm->data_page_offset);
    if (cm->dict_page_offset >= 0)
        s_tw_i64 (tw, 11, cm->dict_page_offset);
    s_tw_struct (tw, 12);               //  Statistics
    s_tw_i64 (tw, 3, cm->stats.null_count);
    if (cm->stats.present) {
        s_tw_binary (tw, 5, cm->stats.max.data, cm->stats.max.len);
        s_tw_binary (tw, 6, cm->stats.min.data, cm->stats.min.len);
    }
    s_tw_end (tw);
    s_tw_end (tw);                      //  ColumnMetaData
    s_tw_end (tw);                      //  ColumnChunk
}

int
qn_pq_finish (qn_pq_writer_t *self)
{
    if (self->finished || self->set_count != 0)
        return -1;
    s_flush_group (self);
    self->finished = true;

    qn_buf_t meta = QN_BUF_INIT;
    tw_t tw;
    s_tw_init (&tw, &meta);
    s_tw_i32 (&tw, 1, 1);               //  version
    s_tw_list (&tw, 2, TC_STRUCT, (size_t) self->ncols + 1);
    s_tw_struct (&tw, 0);               //  Root
    s_tw_string (&tw, 4, "schema");
    s_tw_i32 (&tw, 5, (int32_t) self->ncols);
    s_tw_end (&tw);
    for (uint32_t i = 0; i < self->ncols; i++)
        s_write_schema_element (&tw, &self->cols [i]);
    s_tw_i64 (&tw, 3, (int64_t) self->rows);
    s_tw_list (&tw, 4, TC_STRUCT, self->group_count);
    for (size_t g = 0; g < self->group_count; g++) {
        const rg_meta_t *rg = &self->groups [g];
        s_tw_struct (&tw, 0);
        s_tw_list (&tw, 1, TC_STRUCT, self->ncols);
        for (uint32_t i = 0; i < self->ncols; i++)
            s_write_chunk (&tw, &self->cols [i], &rg->chunks [i], self->codec);
        s_tw_i64 (&tw, 2, rg->total_byte_size);
        s_tw_i64 (&tw, 3, rg->num_rows);
        s_tw_i64 (&tw, 5, rg->file_offset);
        s_tw_i64 (&tw, 6, rg->total_compressed);
        s_tw_field (&tw, 7, 4);         //  ordinal (i16)
        s_varint (tw.b, s_zigzag ((int64_t) g));
        s_tw_end (&tw);
    }
    s_tw_string (&tw, 6, "queen-sink version 1.0.0");
    s_tw_list (&tw, 7, TC_STRUCT, self->ncols);
    for (uint32_t i = 0; i < self->ncols; i++) {
        s_tw_struct (&tw, 0);           //  ColumnOrder
        s_tw_struct (&tw, 1);           //  TYPE_ORDER
        s_tw_end (&tw);
        s_tw_end (&tw);
    }
    qn_buf_putc (&meta, 0);             //  End of FileMetaData
    s_emit (self, meta.data, meta.len);
    qn_buf_t tail = QN_BUF_INIT;
    s_le32 (&tail, (uint32_t) meta.len);
    qn_buf_append (&tail, "PAR1", 4);
    s_emit (self, tail.data, tail.len);
    qn_buf_free (&tail);
    qn_buf_free (&meta);
    return 0;
}
