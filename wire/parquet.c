/*  wire/parquet.c - Apache Parquet file writer (see parquet.h)
    Layout written: "PAR1", then per row group and per column one column
    chunk = [dictionary page] data page..., then the FileMetaData (Thrift
    compact protocol), its 4-byte little-endian length and "PAR1".
    A column buffers its non-null values PLAIN-encoded (booleans one byte
    each) and one definition level byte per row; flush turns them into
    pages. Field numbers follow parquet.thrift (parquet-format 2.9).
    This file: the writer, its rows and the flush of a row group into
    column chunks and pages; parquet_enc.c the Thrift compact protocol and
    the RLE / bit-packing hybrid; parquet_footer.c the FileMetaData.
*/
#include "wire/parquet_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

//  ------------------------------------------------------------------------
//  Writer state

void
qn_pq_emit (qn_pq_writer_t *self, const void *data, size_t len)
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
    qn_pq_emit (self, "PAR1", 4);
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
    qn_pq_le32 (&col->vals, (uint32_t) value);
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
    qn_pq_le64 (&col->vals, (uint64_t) value);
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
    qn_pq_le64 (&col->vals, bits);
    s_mark (self, col, true);
    return 0;
}

int
qn_pq_set_bytes (qn_pq_writer_t *self, uint32_t index, const void *data, size_t len)
{
    col_t *col = s_col (self, index);
    if (!col || col->physical != PT_BYTE_ARRAY || len > INT32_MAX || (!data && len))
        return -1;
    qn_pq_le32 (&col->vals, (uint32_t) len);
    if (len)
        qn_buf_append (&col->vals, data, len);
    s_mark (self, col, true);
    return 0;
}

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
        qn_pq_flush_group (self);
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
    return col->fixed_width ? (size_t) col->fixed_width : 4 + (size_t) qn_pq_rd32 (p);
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
        *len = qn_pq_rd32 (p);
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
            int32_t x = (int32_t) qn_pq_rd32 (a), y = (int32_t) qn_pq_rd32 (b);
            return x < y ? -1 : x > y;
        }
        case PT_INT64: {
            int64_t x = (int64_t) qn_pq_rd64 (a), y = (int64_t) qn_pq_rd64 (b);
            return x < y ? -1 : x > y;
        }
        case PT_DOUBLE: {
            double x, y;
            uint64_t bx = qn_pq_rd64 (a), by = qn_pq_rd64 (b);
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
            uint64_t bits = qn_pq_rd64 (data);
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
        uint64_t bits = qn_pq_rd64 ((uint8_t *) st->min.data);
        memcpy (&d, &bits, 8);
        if (d == 0.0) {
            qn_buf_reset (&st->min);
            qn_pq_le64 (&st->min, 0x8000000000000000ull);
        }
        bits = qn_pq_rd64 ((uint8_t *) st->max.data);
        memcpy (&d, &bits, 8);
        if (d == 0.0) {
            qn_buf_reset (&st->max);
            qn_pq_le64 (&st->max, 0);
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
    qn_pq_tw_init (&tw, &self->hdr);
    qn_pq_tw_i32 (&tw, 1, page_type);
    qn_pq_tw_i32 (&tw, 2, (int32_t) self->raw.len);
    qn_pq_tw_i32 (&tw, 3, (int32_t) self->packed.len);
    if (page_type == PAGE_DATA) {
        qn_pq_tw_struct (&tw, 5);
        qn_pq_tw_i32 (&tw, 1, num_values);
        qn_pq_tw_i32 (&tw, 2, encoding);
        qn_pq_tw_i32 (&tw, 3, ENC_RLE);
        qn_pq_tw_i32 (&tw, 4, ENC_RLE);
        qn_pq_tw_end (&tw);
    }
    else {
        qn_pq_tw_struct (&tw, 7);
        qn_pq_tw_i32 (&tw, 1, num_values);
        qn_pq_tw_i32 (&tw, 2, ENC_PLAIN);
        qn_pq_tw_end (&tw);
    }
    qn_buf_putc (&self->hdr, 0);        //  End of PageHeader
    (void) optional;
    qn_pq_emit (self, self->hdr.data, self->hdr.len);
    qn_pq_emit (self, self->packed.data ? self->packed.data : "", self->packed.len);
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
            bw = qn_pq_bit_width (distinct - 1);
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
            qn_pq_hybrid (&lv, levels, r1 - r0, 1);
            qn_pq_le32 (&self->raw, (uint32_t) lv.len);
            qn_buf_append (&self->raw, lv.data ? lv.data : "", lv.len);
            qn_buf_free (&lv);
        }
        int encoding = ENC_PLAIN;
        if (idx) {
            encoding = ENC_RLE_DICTIONARY;
            qn_buf_putc (&self->raw, (char) bw);
            qn_pq_hybrid (&self->raw, idx + v0, v1 - v0, bw);
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

void
qn_pq_flush_group (qn_pq_writer_t *self)
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
