/*  wire/pg_codec.h - PostgreSQL binary format <-> msgpack values
    Pure functions. Parameters arrive as msgpack objects and are encoded in
    PostgreSQL's binary send format for their declared type (typed arrays
    for batching); result columns in binary format are turned back into
    msgpack: integers, booleans, doubles, strings (text, json, uuid in
    canonical form), bin (bytea) and timestamps as int64 microseconds since
    the Unix epoch.
*/
#ifndef QN_WIRE_PG_CODEC_H
#define QN_WIRE_PG_CODEC_H

#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"

//  PostgreSQL type OIDs used on the wire (pg_type.h is server-only).
#define QN_OID_BOOL        16
#define QN_OID_BYTEA       17
#define QN_OID_NAME        19
#define QN_OID_INT8        20
#define QN_OID_INT2        21
#define QN_OID_INT4        23
#define QN_OID_TEXT        25
#define QN_OID_OID         26
#define QN_OID_JSON       114
#define QN_OID_FLOAT4     700
#define QN_OID_FLOAT8     701
#define QN_OID_BOOL_ARR  1000
#define QN_OID_BYTEA_ARR 1001
#define QN_OID_INT4_ARR  1007
#define QN_OID_TEXT_ARR  1009
#define QN_OID_INT8_ARR  1016
#define QN_OID_VARCHAR   1043
#define QN_OID_TIMESTAMPTZ 1184
#define QN_OID_UUID      2950
#define QN_OID_UUID_ARR  2951
#define QN_OID_JSONB     3802


//  Encodes `value` as the binary form of type `oid` into out (appended).
//  Returns 1 for SQL NULL (nothing appended), 0 for a value, -1 when the
//  value does not fit the type (err names why). Text-format types
//  (timestamptz, json, jsonb given as strings) are encoded as text: see
//  qn_pg_param_format.
int qn_pg_encode_param (uint32_t oid, const msgpack_object *value, qn_buf_t *out,
                        char *err, size_t err_len);
//  1 = binary, 0 = text: the format used for parameters of type oid.
int qn_pg_param_format (uint32_t oid);
//  Packs one binary-format result value of type oid. Unknown types are
//  packed as nil. Returns 0, or -1 for malformed input.
int qn_pg_decode_value (uint32_t oid, const char *data, int len, msgpack_packer *pk);
//  Typed-array builder for batches merged from many requests: begin,
//  add elements (NULL for SQL NULL), end patches the header.
typedef struct {
    qn_buf_t *out;              //  Not owned
    size_t at;                  //  Offset of the array header in out
    uint32_t n;
    bool has_null;
    uint32_t elem;
} qn_pg_array_t;
void qn_pg_array_begin (qn_pg_array_t *a, qn_buf_t *out, uint32_t elem_oid);
//  Adds a msgpack value (nil = NULL). 0, or -1 when it does not fit.
int qn_pg_array_add (qn_pg_array_t *a, const msgpack_object *v, char *err, size_t err_len);
void qn_pg_array_end (qn_pg_array_t *a);

//  Microseconds between 1970-01-01 and PostgreSQL's 2000-01-01 epoch.
#define QN_PG_EPOCH_US 946684800000000LL
//  Parses a canonical or uppercase UUID string into 16 bytes. 0 or -1.
int qn_uuid_parse (const char *s, size_t len, uint8_t out [16]);
//  Formats 16 bytes as a lowercase canonical UUID (37 bytes with NUL).
void qn_uuid_format (const uint8_t in [16], char out [37]);

#endif
