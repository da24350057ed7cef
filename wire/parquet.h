/*  wire/parquet.h - Apache Parquet file writer (pure)
    Writes a flat Parquet file (format version 1: data page v1, Thrift
    compact protocol footer) into a qn_buf_t. Columns are BOOLEAN, INT32,
    INT64, DOUBLE, STRING (UTF8 byte array), JSON (byte array with the JSON
    logical type) TIMESTAMP_MS or TIMESTAMP_US (INT64, timestamp(millis or micros, UTC)); each is
    REQUIRED or OPTIONAL (nulls through definition levels). Values are
    PLAIN or dictionary encoded (RLE_DICTIONARY, a PLAIN dictionary page),
    decided per column chunk from the data; pages are compressed
    uncompressed, snappy, gzip or zstd; every column chunk carries
    statistics (null count, min and max in the type's order; byte arrays
    longer than QN_PQ_STAT_MAX_LEN get no min/max).
    Deterministic: the same rows with the same options give the same bytes
    (no clock, no host name in the file). Rows are buffered per row group
    and a row group is appended to `out` when it is full or at finish, so
    the caller may drain `out` between rows (multipart uploads): the
    writer tracks file offsets itself.
    Owns its row-group buffers; `out` is the caller's.
    Fails: a value of the wrong type, a missing value or a null in a
    REQUIRED column returns -1 and leaves the row unfinished; out-of-memory
    aborts (qn_malloc policy).
*/
#ifndef QN_WIRE_PARQUET_H
#define QN_WIRE_PARQUET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

typedef enum {
    QN_PQ_BOOLEAN = 1,
    QN_PQ_INT32,
    QN_PQ_INT64,
    QN_PQ_DOUBLE,
    QN_PQ_STRING,
    QN_PQ_JSON,
    QN_PQ_TIMESTAMP_MS,
    QN_PQ_TIMESTAMP_US
} qn_pq_type_t;

typedef enum {
    QN_PQ_UNCOMPRESSED = 0,
    QN_PQ_SNAPPY = 1,
    QN_PQ_GZIP = 2,
    QN_PQ_ZSTD = 6
} qn_pq_codec_t;

//  Byte-array statistics longer than this are left out of the footer.
#define QN_PQ_STAT_MAX_LEN  64

typedef struct {
    const char *name;           //  Column name (copied)
    qn_pq_type_t type;
    bool optional;              //  Nullable
    bool no_dictionary;         //  Never dictionary-encode this column
} qn_pq_column_t;

typedef struct {
    const qn_pq_column_t *columns;
    uint32_t column_count;      //  1..QN_PQ_MAX_COLUMNS
    qn_pq_codec_t codec;
    int level;                  //  gzip/zstd level; 0 = library default
    uint32_t row_group_rows;    //  Rows per row group; 0 = 100000
    size_t page_bytes;          //  Data page target (raw bytes); 0 = 1 MiB
} qn_pq_options_t;

#define QN_PQ_MAX_COLUMNS   256

typedef struct qn_pq_writer qn_pq_writer_t;

//  NULL if the options are invalid (no columns, too many, unknown type or
//  codec, empty or duplicate name). Writes the leading magic to `out`.
qn_pq_writer_t *
    qn_pq_writer_new (const qn_pq_options_t *options, qn_buf_t *out);
void
    qn_pq_writer_destroy (qn_pq_writer_t **self_p);

//  Values of the current row, one per column in any order, then end_row.
//  Each returns 0, or -1 if the column index or type is wrong or the
//  column already has a value in this row.
int qn_pq_set_null   (qn_pq_writer_t *self, uint32_t col);
int qn_pq_set_bool   (qn_pq_writer_t *self, uint32_t col, bool value);
int qn_pq_set_int32  (qn_pq_writer_t *self, uint32_t col, int32_t value);
//  INT64 and TIMESTAMP_MS / _US columns.
int qn_pq_set_int64  (qn_pq_writer_t *self, uint32_t col, int64_t value);
int qn_pq_set_double (qn_pq_writer_t *self, uint32_t col, double value);
//  STRING and JSON columns (bytes are copied; not checked for UTF-8).
int qn_pq_set_bytes  (qn_pq_writer_t *self, uint32_t col, const void *data, size_t len);
//  0, or -1 if a column has no value (the row stays open).
int qn_pq_end_row    (qn_pq_writer_t *self);

//  Rows written so far, and the file size so far (bytes appended to out).
uint64_t qn_pq_rows (const qn_pq_writer_t *self);
uint64_t qn_pq_file_bytes (const qn_pq_writer_t *self);
//  Raw bytes buffered in the open row group (for size-bounded parts).
size_t qn_pq_pending_bytes (const qn_pq_writer_t *self);

//  Flushes the last row group and appends the footer. 0, or -1 if a row
//  is open. The writer accepts nothing afterwards.
int qn_pq_finish (qn_pq_writer_t *self);

#endif
