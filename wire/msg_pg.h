/*  wire/msg_pg.h - asking PostgreSQL: QN_MSG_PG_EXEC and its QN_MSG_PG_RESULT
    QN_MSG_PG_EXEC    any actor -> pg_writer / pg_reader
        [stmt_id, sql|nil, [params...]]
        stmt_id from actors/pg/statements.h; 0 (QN_SQL_RAW) runs `sql` (a
        whitelisted call built by the broker, never client text) with
        text-format parameters. Params are msgpack values: nil (NULL),
        bool, integers, doubles, str, bin; build them with qn_pg_args_t.
    QN_MSG_PG_RESULT  reply to PG_EXEC (and to the spool's append)
        [ok, sqlstate, message, detail, [[col...]...]]
        timestamps as int64 us since the Unix epoch, uuid as canonical
        strings, bytea as bin.

    A PG_RESULT is decoded in one place, qn_pg_result_decode, into the
    qn_pg_result_t every reader uses.
    Pure: no sockets, threads or logging.
*/
#ifndef QN_WIRE_MSG_PG_H
#define QN_WIRE_MSG_PG_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// ------------------------------------------------------------------ PG_EXEC parameters
//  A typed builder for the parameter list: add values in $1, $2... order.
//  Strings and bytes are copied.
//  An array parameter (text[], int8[], bytea[]...): qn_pg_args_array (a, n)
//  opens it, and the next n values added (with the same functions) are
//  its elements; then the next value is the next parameter again. Arrays
//  do not nest.
typedef struct {
    msgpack_sbuffer elems;      //  Owned: the packed values
    msgpack_packer pk;
    uint32_t count;             //  Parameters
    uint32_t open;              //  Elements the open array still expects
} qn_pg_args_t;

void qn_pg_args_init (qn_pg_args_t *a);
void qn_pg_args_free (qn_pg_args_t *a);
//  Empties the list for reuse.
void qn_pg_args_clear (qn_pg_args_t *a);
void qn_pg_args_null (qn_pg_args_t *a);
//  s may be NULL: SQL NULL.
void qn_pg_args_str (qn_pg_args_t *a, const char *s, size_t len);
void qn_pg_args_cstr (qn_pg_args_t *a, const char *s);
void qn_pg_args_int (qn_pg_args_t *a, int64_t v);
void qn_pg_args_bool (qn_pg_args_t *a, bool v);
void qn_pg_args_double (qn_pg_args_t *a, double v);
void qn_pg_args_bin (qn_pg_args_t *a, const void *p, size_t len);
//  A value already in msgpack form (e.g. a column of an earlier result).
void qn_pg_args_obj (qn_pg_args_t *a, const msgpack_object *o);
//  Opens an array parameter of n elements (see above); n may be 0.
void qn_pg_args_array (qn_pg_args_t *a, uint32_t n);

// ------------------------------------------------------------------ PG_EXEC
typedef struct {
    uint32_t stmt_id;
    const char *sql;            //  NULL when nil; not NUL-terminated
    size_t sql_len;
    const msgpack_object *params;       //  param_count values
    uint32_t param_count;
} qn_msg_pg_exec_t;

//  Appends the body to out (sql NULL packs nil; args NULL: no
//  parameters). Every array of args must be complete.
void qn_msg_pg_exec_encode (msgpack_sbuffer *out, uint32_t stmt_id, const char *sql,
                            const qn_pg_args_t *args);
//  holder is initialised by the caller and destroyed after the last use
//  of out. 0, or -1 when malformed.
int qn_msg_pg_exec_decode (const char *buf, size_t len, msgpack_unpacked *holder,
                           qn_msg_pg_exec_t *out);

// ------------------------------------------------------------------ PG_RESULT
//  A decoded PG_RESULT. Strings are NUL-terminated copies; rows point into
//  the decoded buffer (valid while it is) or into `holder`.
typedef struct {
    bool ok;
    char sqlstate [6];
    char *message;              //  Owned, never NULL after decode
    char *detail;               //  Owned, never NULL after decode
    const msgpack_object *rows; //  Array of arrays, or NULL
    uint32_t row_count;
    bool timed_out;             //  No reply within the deadline
    msgpack_unpacked holder;
} qn_pg_result_t;

//  Decodes a reply body into res (which need not be initialised); buf NULL
//  means no reply came in time (timed_out, sqlstate 57014). A malformed
//  body gives ok false with sqlstate XX000 "malformed database reply".
//  Returns 0, or -1 for no reply or a malformed one. Free with
//  qn_pg_result_free in every case.
int qn_pg_result_decode (const char *buf, size_t len, qn_pg_result_t *res);
void qn_pg_result_free (qn_pg_result_t *res);
//  True when the result is a failure, with a short reason for logs in why
//  ("no answer in time", "sqlstate=... message=...").
bool qn_pg_result_failed (const qn_pg_result_t *res, char *why, size_t why_len);
//  Column c of row r when that row is an array with at least c + 1
//  columns, else NULL.
const msgpack_object *qn_pg_result_col (const qn_pg_result_t *res, uint32_t r, uint32_t c);

//  Packs the head of a reply; the caller then packs row_count rows
//  (sqlstate "" when ok; message and detail may be NULL: "").
void qn_msg_pg_result_begin (msgpack_packer *pk, bool ok, const char *sqlstate,
                             const char *message, const char *detail, uint32_t row_count);
//  Packs the head of one row; the caller then packs its ncols cells, each
//  a value of wire/pg_codec.h (qn_pg_decode_value) or one of these two.
void qn_msg_pg_result_row (msgpack_packer *pk, uint32_t ncols);
void qn_msg_pg_result_int (msgpack_packer *pk, int64_t v);
void qn_msg_pg_result_null (msgpack_packer *pk);

#endif
