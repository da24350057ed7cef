/*  wire/sink_format.h - what queen-sink writes: windows, object keys, files
    Pure functions shared by the sink actor, its tests and the benchmark.

    Windows. A window is [start, start + width) in UTC, start = floor(created
    / width) * width, by the message's creation time (createdAt, set by the
    broker). Widths: "<n>s", "<n>m", "<n>h", "1d" (n >= 1) that divide a
    day evenly, so windows never straddle midnight.

    Object keys (Hive layout; DuckDB/Spark/Trino read queue, dt and hour as
    columns):
        [<prefix>/]queue=<queue>/dt=<yyyy-mm-dd>/hour=<hh>/part-<yyyymmddThhmmssZ>-<nnnnn>.<ext>
    dt and hour are the window start's date and hour; the timestamp in the
    file name is the window start; nnnnn is the part number from 00000;
    ext is "parquet", "jsonl" or "jsonl.gz". The queue name is kept as is
    except bytes outside [A-Za-z0-9._-], written %XX (uppercase hex, Hive's
    escaping). The prefix loses leading and trailing '/'.

    Parts. The records of one window are sorted by (created, message id) and
    cut into parts of at most max_rows records and (from the second record
    of a part on) at most max_bytes of raw record bytes (the sum of the
    lengths of id, transaction id, partition, trace id and payload, plus 32
    per record). The same records always give the same parts and, with the
    same format, the same bytes.

    Columns (Parquet) / members (JSONL), in this order:
        message_id      STRING      the broker's message id
        transaction_id  STRING
        partition       STRING      partition name
        created_at      TIMESTAMP   microseconds, UTC (JSONL: ISO 8601 "...Z")
        trace_id        STRING      null when the message has none
        payload         JSON        the payload as JSON text (JSONL: inline)
        <field columns> typed values extracted from the payload (below),
                        Parquet only (JSONL carries the whole payload)

    Field columns: SINK_FIELDS = "path:type[,path:type...]"; path is a
    member name or a dotted path into nested objects ("user.id"), the
    column name is the path with '.' replaced by '_'; type is string,
    int64, double, bool, json (the raw JSON of the value) or timestamp
    (integer milliseconds since the epoch). A missing member or a value of
    another JSON type is null (a double column takes integers too).
*/
#ifndef QN_WIRE_SINK_FORMAT_H
#define QN_WIRE_SINK_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "wire/parquet.h"

typedef struct {
    const char *id;             //  Not owned; none NUL-terminated necessarily
    size_t id_len;
    const char *txn;
    size_t txn_len;
    const char *partition;
    size_t partition_len;
    int64_t created_us;         //  Microseconds since the epoch
    const char *trace;          //  NULL: no trace id
    size_t trace_len;
    const char *payload;        //  Valid JSON text
    size_t payload_len;
} qn_sink_record_t;

typedef enum {
    QN_SINK_PARQUET = 1,
    QN_SINK_JSONL
} qn_sink_format_kind_t;

typedef struct {
    char name [128];            //  Column name
    char path [128];            //  Dotted path
    qn_pq_type_t type;          //  STRING, INT64, DOUBLE, BOOLEAN, JSON, TIMESTAMP_MS
} qn_sink_field_t;

#define QN_SINK_MAX_FIELDS  32

typedef struct {
    qn_sink_format_kind_t kind;
    qn_pq_codec_t codec;        //  Parquet pages
    bool gzip;                  //  JSONL: gzip the file
    uint32_t row_group_rows;    //  Parquet; 0 = the writer's default
    const qn_sink_field_t *fields;
    uint32_t field_count;
} qn_sink_format_t;

//  Window width from "30s", "1m", "5m", "1h", "1d". 0, or -1 (with a
//  message in err) when malformed or not dividing a day.
int qn_sink_window_parse (const char *text, int64_t *width_ms, char *err, size_t err_cap);

//  Start (ms since the epoch) of the window holding `created_us`.
int64_t qn_sink_window_start (int64_t created_us, int64_t width_ms);

//  "20261201T180000Z" of a window start (17 bytes with the NUL).
void qn_sink_window_label (int64_t start_ms, char out [17]);

//  Parses SINK_FIELDS. Returns the number of fields (0 for an empty or
//  NULL text), or -1 with a message in err.
int qn_sink_fields_parse (const char *text, qn_sink_field_t *fields, uint32_t cap,
                          char *err, size_t err_cap);

//  "parquet", "jsonl" or "jsonl.gz".
const char *qn_sink_extension (const qn_sink_format_t *format);

//  Appends the object key (see above) to out.
void qn_sink_object_key (qn_buf_t *out, const char *prefix, const char *queue,
                         int64_t window_start_ms, uint32_t part, const char *extension);

//  Sorts records by (created_us, id bytes).
void qn_sink_sort (qn_sink_record_t *records, size_t count);
//  The order of qn_sink_sort: <0, 0, >0.
int qn_sink_record_cmp (const qn_sink_record_t *a, const qn_sink_record_t *b);

//  Number of records in the part starting at records[0] (>= 1 if count >= 1).
size_t qn_sink_part_length (const qn_sink_record_t *records, size_t count,
                            size_t max_rows, size_t max_bytes);

//  Writes one file holding `records` in the given order. 0, or -1 if the
//  format is invalid.
int qn_sink_file_write (const qn_sink_format_t *format, const qn_sink_record_t *records,
                        size_t count, qn_buf_t *out);

//  Gzip of data (deterministic: no name, mtime 0), appended to out.
void qn_sink_gzip (const void *data, size_t len, qn_buf_t *out);

//  ISO 8601 "2026-12-01T18:00:00.123456Z" of microseconds since the epoch.
void qn_sink_iso_us (int64_t us, char out [32]);

//  Microseconds since the epoch from the broker's "2026-11-30T11:37:13.618085Z"
//  (fraction of 0 to 9 digits, 'Z' or "+00:00"). 0, or -1 when malformed.
int qn_sink_parse_iso_us (const char *text, size_t len, int64_t *out);

#endif
