/*  wire/spool_codec.h - record framing of the disk spool
    The spool (actors/spool/spool.c) appends one record per accepted push to
    segment files; this file is the pure part: CRC32C, the record frame,
    scanning a segment image for its valid prefix, segment file names and
    the checkpoint line. No I/O, no globals.

    Record (all integers little-endian):
        offset 0   magic   4 bytes "QSR1"
        offset 4   length  uint32, bytes of body (<= QN_SPOOL_MAX_BODY)
        offset 8   crc     uint32, CRC32C of the 4 length bytes then the body
        offset 12  body    msgpack [tenant, [[queue, partition, txn, payload,
                           trace|nil, producer|nil, encrypted], ...]]
                           (the QN_MSG_SPOOL_APPEND body, wire/msg_spool.h)
    The CRC covers the length too, so a flipped length bit reads as a bad
    record, never as a different one.

    Checkpoint file: one line "qspool-checkpoint segment=N offset=M crc=H"
    where H is the CRC32C (8 hex digits) of the text before " crc=".
*/
#ifndef QN_WIRE_SPOOL_CODEC_H
#define QN_WIRE_SPOOL_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define QN_SPOOL_MAGIC          "QSR1"
#define QN_SPOOL_HEADER_LEN     12
#define QN_SPOOL_MAX_BODY       (1u << 30)      //  A larger length is corruption
#define QN_SPOOL_CORRUPT        -1              //  Bad magic, length or CRC
#define QN_SPOOL_INCOMPLETE     -2              //  A prefix of a record only
#define QN_SPOOL_NAME_MAX       48              //  Room for a segment file name

//  CRC32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven.
//  Start with crc = 0; chaining works: crc (a||b) = qn_crc32c (crc (a), b).
uint32_t
    qn_crc32c (uint32_t crc, const void *data, size_t len);

//  Appends the framed record holding `body` to out. len must not exceed
//  QN_SPOOL_MAX_BODY (asserted).
void
    qn_spool_record_encode (qn_buf_t *out, const void *body, size_t len);

//  Decodes the record at the start of buf. Returns its total size (header
//  plus body, > 0) with *body / *body_len pointing into buf, or
//  QN_SPOOL_INCOMPLETE when buf holds only a strict prefix of a plausible
//  record, or QN_SPOOL_CORRUPT.
int64_t
    qn_spool_record_decode (const char *buf, size_t len, const char **body, size_t *body_len);

typedef enum {
    QN_SPOOL_SCAN_END = 0,      //  Every byte belongs to a whole record
    QN_SPOOL_SCAN_TORN,         //  Stopped at a record cut short by the end
    QN_SPOOL_SCAN_BAD           //  Stopped at a record that fails its checks
} qn_spool_scan_stop_t;

typedef struct {
    size_t valid_len;           //  Length of the prefix made of whole records
    uint64_t records;           //  How many
    qn_spool_scan_stop_t stop;
} qn_spool_scan_t;

//  Walks the records of a segment image from its start. Never fails.
void
    qn_spool_scan (const char *buf, size_t len, qn_spool_scan_t *out);
//  Offset of the first whole valid record starting after `from`, or -1.
//  Tells a torn tail (nothing valid after it) from damage in the middle.
int64_t
    qn_spool_resync (const char *buf, size_t len, size_t from);

//  Checks an append body ([tenant, [item...]], items as in actors.h:
//  queue string, partition string|nil, txn string|nil, payload bin|string,
//  trace string|nil, producer string|nil, encrypted bool|nil[, not-before
//  us int|nil]). Returns the
//  item count (>= 1), or -1.
int64_t
    qn_spool_body_check (const char *buf, size_t len);

//  "segment-<16 digits>.qspool".
void
    qn_spool_segment_name (uint64_t seq, char out [QN_SPOOL_NAME_MAX]);
//  0 and *seq set if `name` is a segment file name, else -1.
int
    qn_spool_segment_parse (const char *name, uint64_t *seq);

//  Appends the checkpoint line (with its trailing newline) to out.
void
    qn_spool_checkpoint_encode (qn_buf_t *out, uint64_t segment, uint64_t offset);
//  0 with the position, or -1 for anything but an intact checkpoint line.
int
    qn_spool_checkpoint_decode (const char *buf, size_t len, uint64_t *segment,
                                uint64_t *offset);

#endif
