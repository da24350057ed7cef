/*  actors/pg/call.h - PG_EXEC requests and PG_RESULT replies for actors
    The background actors (retention, timers, spool) call the
    database the same way: pack [stmt, sql|nil, [params...]], send it as
    QN_MSG_PG_EXEC to pg_writer or pg_reader with a deadline, then decode
    the reply [ok, sqlstate, message, detail, rows] (see actors.h). These
    helpers do both halves; codec_http has its own (qn_codec_exec).
*/
#ifndef QN_ACTORS_PG_CALL_H
#define QN_ACTORS_PG_CALL_H

#include "kernel/kernel.h"

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Clears out and starts a PG_EXEC body [stmt, sql|nil, [params...]] in it
//  (sql NULL packs nil); the caller then packs the nparams parameters
//  with pk.
void qn_pg_call_begin (msgpack_sbuffer *out, msgpack_packer *pk, uint32_t stmt,
                       const char *sql, uint32_t nparams);

//  Sends the body in out to `to` as QN_MSG_PG_EXEC; cb gets the PG_RESULT
//  reply, or NULL after timeout_ms. 0, or an error after which cb is not
//  called.
int qn_pg_call_send (qn_kernel_t *kernel, const char *to, const msgpack_sbuffer *out,
                     uint32_t timeout_ms, qn_reply_fn *cb, void *arg);

//  Decodes a PG_RESULT reply (env NULL: no answer in time) into res, which
//  the caller initialised and destroys; rows is set on success (NULL when
//  the reply has no row array). False on any failure, with why filled in.
bool qn_pg_call_result (const qn_env_t *env, msgpack_unpacked *res, const msgpack_object **rows,
                        char *why, size_t why_len);

//  Column c of row r when that row is an array with at least c + 1 columns.
const msgpack_object *qn_pg_call_col (const msgpack_object *rows, uint32_t r, uint32_t c);

//  An integer that fits int64 (o may be NULL).
bool qn_pg_call_int (const msgpack_object *o, int64_t *out);

#endif
