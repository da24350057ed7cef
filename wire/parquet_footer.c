/*  wire/parquet_footer.c - the end of a Parquet file (see parquet.h):
    qn_pq_finish flushes the open row group, then writes the FileMetaData
    (schema elements, row groups and their column chunks with statistics,
    Thrift compact protocol), its 4-byte little-endian length and "PAR1".
*/
#include "wire/parquet_impl.h"

#include <string.h>

//  ------------------------------------------------------------------------
//  Footer

static void
s_write_schema_element (tw_t *tw, const col_t *col)
{
    qn_pq_tw_struct (tw, 0);
    qn_pq_tw_i32 (tw, 1, col->physical);
    qn_pq_tw_i32 (tw, 3, col->optional ? 1 : 0);
    qn_pq_tw_string (tw, 4, col->name);
    switch (col->type) {
        case QN_PQ_STRING:
            qn_pq_tw_i32 (tw, 6, CT_UTF8);
            qn_pq_tw_struct (tw, 10);
            qn_pq_tw_struct (tw, 1);        //  LogicalType.STRING
            qn_pq_tw_end (tw);
            qn_pq_tw_end (tw);
            break;
        case QN_PQ_JSON:
            qn_pq_tw_i32 (tw, 6, CT_JSON);
            qn_pq_tw_struct (tw, 10);
            qn_pq_tw_struct (tw, 12);       //  LogicalType.JSON
            qn_pq_tw_end (tw);
            qn_pq_tw_end (tw);
            break;
        case QN_PQ_TIMESTAMP_MS:
        case QN_PQ_TIMESTAMP_US:
            qn_pq_tw_i32 (tw, 6, col->type == QN_PQ_TIMESTAMP_MS ? CT_TIMESTAMP_MILLIS : CT_TIMESTAMP_MICROS);
            qn_pq_tw_struct (tw, 10);
            qn_pq_tw_struct (tw, 8);        //  LogicalType.TIMESTAMP
            qn_pq_tw_bool (tw, 1, true);    //  isAdjustedToUTC
            qn_pq_tw_struct (tw, 2);        //  unit
            qn_pq_tw_struct (tw, col->type == QN_PQ_TIMESTAMP_MS ? 1 : 2);   //  MILLIS / MICROS
            qn_pq_tw_end (tw);
            qn_pq_tw_end (tw);
            qn_pq_tw_end (tw);
            qn_pq_tw_end (tw);
            break;
        default:
            break;
    }
    qn_pq_tw_end (tw);
}

static void
s_write_chunk (tw_t *tw, const col_t *col, const chunk_meta_t *cm, int codec)
{
    qn_pq_tw_struct (tw, 0);                //  ColumnChunk
    qn_pq_tw_i64 (tw, 2, cm->file_offset);
    qn_pq_tw_struct (tw, 3);                //  ColumnMetaData
    qn_pq_tw_i32 (tw, 1, col->physical);
    int encs [3], n = 0;
    encs [n++] = ENC_PLAIN;
    if (col->optional)
        encs [n++] = ENC_RLE;
    if (cm->dictionary)
        encs [n++] = ENC_RLE_DICTIONARY;
    qn_pq_tw_list (tw, 2, TC_I32, (size_t) n);
    for (int i = 0; i < n; i++)
        qn_pq_varint (tw->b, qn_pq_zigzag (encs [i]));
    qn_pq_tw_list (tw, 3, TC_BINARY, 1);
    qn_pq_varint (tw->b, strlen (col->name));
    qn_buf_puts (tw->b, col->name);
    qn_pq_tw_i32 (tw, 4, codec);
    qn_pq_tw_i64 (tw, 5, cm->num_values);
    qn_pq_tw_i64 (tw, 6, cm->uncompressed);
    qn_pq_tw_i64 (tw, 7, cm->compressed);
    qn_pq_tw_i64 (tw, 9, cm->data_page_offset);
    if (cm->dict_page_offset >= 0)
        qn_pq_tw_i64 (tw, 11, cm->dict_page_offset);
    qn_pq_tw_struct (tw, 12);               //  Statistics
    qn_pq_tw_i64 (tw, 3, cm->stats.null_count);
    if (cm->stats.present) {
        qn_pq_tw_binary (tw, 5, cm->stats.max.data, cm->stats.max.len);
        qn_pq_tw_binary (tw, 6, cm->stats.min.data, cm->stats.min.len);
    }
    qn_pq_tw_end (tw);
    qn_pq_tw_end (tw);                      //  ColumnMetaData
    qn_pq_tw_end (tw);                      //  ColumnChunk
}

int
qn_pq_finish (qn_pq_writer_t *self)
{
    if (self->finished || self->set_count != 0)
        return -1;
    qn_pq_flush_group (self);
    self->finished = true;

    qn_buf_t meta = QN_BUF_INIT;
    tw_t tw;
    qn_pq_tw_init (&tw, &meta);
    qn_pq_tw_i32 (&tw, 1, 1);               //  version
    qn_pq_tw_list (&tw, 2, TC_STRUCT, (size_t) self->ncols + 1);
    qn_pq_tw_struct (&tw, 0);               //  Root
    qn_pq_tw_string (&tw, 4, "schema");
    qn_pq_tw_i32 (&tw, 5, (int32_t) self->ncols);
    qn_pq_tw_end (&tw);
    for (uint32_t i = 0; i < self->ncols; i++)
        s_write_schema_element (&tw, &self->cols [i]);
    qn_pq_tw_i64 (&tw, 3, (int64_t) self->rows);
    qn_pq_tw_list (&tw, 4, TC_STRUCT, self->group_count);
    for (size_t g = 0; g < self->group_count; g++) {
        const rg_meta_t *rg = &self->groups [g];
        qn_pq_tw_struct (&tw, 0);
        qn_pq_tw_list (&tw, 1, TC_STRUCT, self->ncols);
        for (uint32_t i = 0; i < self->ncols; i++)
            s_write_chunk (&tw, &self->cols [i], &rg->chunks [i], self->codec);
        qn_pq_tw_i64 (&tw, 2, rg->total_byte_size);
        qn_pq_tw_i64 (&tw, 3, rg->num_rows);
        qn_pq_tw_i64 (&tw, 5, rg->file_offset);
        qn_pq_tw_i64 (&tw, 6, rg->total_compressed);
        qn_pq_tw_field (&tw, 7, 4);         //  ordinal (i16)
        qn_pq_varint (tw.b, qn_pq_zigzag ((int64_t) g));
        qn_pq_tw_end (&tw);
    }
    qn_pq_tw_string (&tw, 6, "queen-sink version 1.0.0");
    qn_pq_tw_list (&tw, 7, TC_STRUCT, self->ncols);
    for (uint32_t i = 0; i < self->ncols; i++) {
        qn_pq_tw_struct (&tw, 0);           //  ColumnOrder
        qn_pq_tw_struct (&tw, 1);           //  TYPE_ORDER
        qn_pq_tw_end (&tw);
        qn_pq_tw_end (&tw);
    }
    qn_buf_putc (&meta, 0);             //  End of FileMetaData
    qn_pq_emit (self, meta.data, meta.len);
    qn_buf_t tail = QN_BUF_INIT;
    qn_pq_le32 (&tail, (uint32_t) meta.len);
    qn_buf_append (&tail, "PAR1", 4);
    qn_pq_emit (self, tail.data, tail.len);
    qn_buf_free (&tail);
    qn_buf_free (&meta);
    return 0;
}
