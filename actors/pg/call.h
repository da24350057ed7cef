/*  actors/pg/call.h - PG_EXEC requests for background actors
    The background actors (retention, timers) call the database the same
    way: build the parameters with qn_pg_args_t, encode [stmt, sql|nil,
    [params...]] (wire/msg_pg.h) into a reusable buffer, send it as QN_MSG_PG_EXEC to pg_writer or pg_reader with a
    deadline, and read the reply with qn_pg_result_decode (wire/msg_pg.h),
    the one PG_RESULT decoder; codec_http uses qn_codec_exec_args.
*/
#ifndef QN_ACTORS_PG_CALL_H
#define QN_ACTORS_PG_CALL_H

#include "kernel/kernel.h"
#include "wire/msg_pg.h"

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  Encodes QN_MSG_PG_EXEC of stmt (sql NULL: nil) with the parameters
//  built in args (NULL: none; wire/msg_pg.h) into out, cleared first and
//  reusable, and sends it to `to`; cb gets the PG_RESULT reply, or NULL
//  after timeout_ms. 0, or an error after which cb is not called.
int qn_pg_call (qn_kernel_t *kernel, const char *to, msgpack_sbuffer *out, uint32_t stmt,
                const char *sql, const qn_pg_args_t *args, uint32_t timeout_ms,
                qn_reply_fn *cb, void *arg);

//  An integer that fits int64 (o may be NULL).
bool qn_pg_call_int (const msgpack_object *o, int64_t *out);

#endif
