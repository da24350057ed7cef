/*  actors/pg/call.h - PG_EXEC requests for background actors
    The background actors (retention, timers) call the database the same
    way: pack [stmt, sql|nil, [params...]] (wire/msg_pg.h) into a reusable
    buffer, send it as QN_MSG_PG_EXEC to pg_writer or pg_reader with a
    deadline, and read the reply with qn_pg_result_decode (wire/msg_pg.h),
    the one PG_RESULT decoder; codec_http uses qn_codec_exec_args.
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

//  An integer that fits int64 (o may be NULL).
bool qn_pg_call_int (const msgpack_object *o, int64_t *out);

#endif
