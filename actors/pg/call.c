/*  actors/pg/call.c - PG_EXEC requests and PG_RESULT replies for actors
    See pg_call.h.
*/
#include "actors/pg/call.h"
#include "wire/msg_pg.h"
#include "wire/msg_types.h"

#include <stdio.h>
#include <string.h>

void
qn_pg_call_begin (msgpack_sbuffer *out, msgpack_packer *pk, uint32_t stmt,
                  const char *sql, uint32_t nparams)
{
    msgpack_sbuffer_clear (out);
    msgpack_packer_init (pk, out, msgpack_sbuffer_write);
    qn_msg_pg_exec_begin (pk, stmt, sql, nparams);
}

int
qn_pg_call_send (qn_kernel_t *kernel, const char *to, const msgpack_sbuffer *out,
                 uint32_t timeout_ms, qn_reply_fn *cb, void *arg)
{
    qn_msg_t msg = {
        .to = to, .type = QN_MSG_PG_EXEC, .body = out->data, .body_len = out->size
    };
    return qn_request (kernel, &msg, timeout_ms, cb, arg);
}

bool
qn_pg_call_int (const msgpack_object *o, int64_t *out)
{
    if (o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX) {
        *out = (int64_t) o->via.u64;
        return true;
    }
    if (o && o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *out = o->via.i64;
        return true;
    }
    return false;
}
