/*  wire/parquet_impl.h - what the files of the Parquet writer share
    (wire/parquet.c: the writer and its pages, parquet_enc.c: Thrift compact
    protocol and the RLE / bit-packing hybrid, parquet_footer.c: the
    FileMetaData); not an API. See parquet.h.
*/
#ifndef QN_WIRE_PARQUET_IMPL_H
#define QN_WIRE_PARQUET_IMPL_H

#include "wire/parquet.h"

//  Physical types and enums from parquet.thrift
enum { PT_BOOLEAN = 0, PT_INT32 = 1, PT_INT64 = 2, PT_DOUBLE = 5, PT_BYTE_ARRAY = 6 };
enum { ENC_PLAIN = 0, ENC_RLE = 3, ENC_RLE_DICTIONARY = 8 };
enum { PAGE_DATA = 0, PAGE_DICTIONARY = 2 };
enum { CT_UTF8 = 0, CT_TIMESTAMP_MILLIS = 9, CT_TIMESTAMP_MICROS = 10, CT_INT_32 = 17, CT_INT_64 = 18, CT_JSON = 19 };

//  Thrift compact protocol type ids
enum { TC_TRUE = 1, TC_FALSE = 2, TC_I32 = 5, TC_I64 = 6, TC_BINARY = 8,
       TC_LIST = 9, TC_STRUCT = 12 };

//  Thrift compact protocol writer (parquet_enc.c)
#define TW_MAX_DEPTH 8

typedef struct {
    qn_buf_t *b;
    int depth;
    int16_t last [TW_MAX_DEPTH];
} tw_t;

void qn_pq_varint (qn_buf_t *b, uint64_t v);
uint64_t qn_pq_zigzag (int64_t v);
void qn_pq_tw_init (tw_t *tw, qn_buf_t *b);
void qn_pq_tw_field (tw_t *tw, int16_t id, int type);
void qn_pq_tw_i32 (tw_t *tw, int16_t id, int32_t v);
void qn_pq_tw_i64 (tw_t *tw, int16_t id, int64_t v);
void qn_pq_tw_bool (tw_t *tw, int16_t id, bool v);
void qn_pq_tw_binary (tw_t *tw, int16_t id, const void *data, size_t len);
void qn_pq_tw_string (tw_t *tw, int16_t id, const char *s);
void qn_pq_tw_struct (tw_t *tw, int16_t id);
void qn_pq_tw_end (tw_t *tw);
void qn_pq_tw_list (tw_t *tw, int16_t id, int elem_type, size_t count);

//  Little-endian helpers and the RLE / bit-packing hybrid (parquet_enc.c)
void qn_pq_le32 (qn_buf_t *b, uint32_t v);
void qn_pq_le64 (qn_buf_t *b, uint64_t v);
uint32_t qn_pq_rd32 (const uint8_t *p);
uint64_t qn_pq_rd64 (const uint8_t *p);
void qn_pq_hybrid (qn_buf_t *b, const uint32_t *vals, size_t n, int bw);
int qn_pq_bit_width (uint32_t max_value);

//  Writer state (parquet.c)
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

void qn_pq_emit (qn_pq_writer_t *self, const void *data, size_t len);
void qn_pq_flush_group (qn_pq_writer_t *self);

#endif
