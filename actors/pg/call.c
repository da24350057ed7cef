/*  actors/pg/call.c - PG_EXEC requests and PG_RESULT replies for actors
    See pg_call.h.
*/
#include "actors/pg/call.h"
#include "wire/msg_pg.h"
#include "wire/msg_types.h"

#include <stdio.h>
#include <string.h>

int
qn_pg_call (qn_kernel_t *kernel, const char *to, msgpack_sbuffer *out, uint32_t stmt,
            const char *sql, const qn_pg_args_t *args, uint32_t timeout_ms,
            qn_reply_fn *cb, void *arg)
{
    msgpack_sbuffer_clear (out);
    qn_msg_pg_exec_encode (out, stmt, sql, args);
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
