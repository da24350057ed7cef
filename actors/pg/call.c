/*  actors/pg/call.c - PG_EXEC requests and PG_RESULT replies for actors
    See pg_call.h.
*/
#include "actors/pg/call.h"
#include "wire/msg_types.h"

#include <stdio.h>
#include <string.h>

void
qn_pg_call_begin (msgpack_sbuffer *out, msgpack_packer *pk, uint32_t stmt,
                  const char *sql, uint32_t nparams)
{
    msgpack_sbuffer_clear (out);
    msgpack_packer_init (pk, out, msgpack_sbuffer_write);
    msgpack_pack_array (pk, 3);
    msgpack_pack_uint32 (pk, stmt);
    if (sql) {
        size_t len = strlen (sql);
        msgpack_pack_str (pk, len);
        msgpack_pack_str_body (pk, sql, len);
    }
    else
        msgpack_pack_nil (pk);
    msgpack_pack_array (pk, nparams);
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
qn_pg_call_result (const qn_env_t *env, msgpack_unpacked *res, const msgpack_object **rows,
                   char *why, size_t why_len)
{
    if (!env) {
        snprintf (why, why_len, "no answer in time");
        return false;
    }
    const msgpack_object *o = &res->data;
    if (msgpack_unpack_next (res, env->body.ptr, env->body.len, NULL) != MSGPACK_UNPACK_SUCCESS
    ||  o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 5
    ||  o->via.array.ptr [0].type != MSGPACK_OBJECT_BOOLEAN) {
        snprintf (why, why_len, "malformed reply");
        return false;
    }
    const msgpack_object *f = o->via.array.ptr;
    if (!f [0].via.boolean) {
        snprintf (why, why_len, "sqlstate=%.*s message=%.*s",
                  f [1].type == MSGPACK_OBJECT_STR ? (int) f [1].via.str.size : 0,
                  f [1].type == MSGPACK_OBJECT_STR ? f [1].via.str.ptr : "",
                  f [2].type == MSGPACK_OBJECT_STR ? (int) f [2].via.str.size : 0,
                  f [2].type == MSGPACK_OBJECT_STR ? f [2].via.str.ptr : "");
        return false;
    }
    *rows = f [4].type == MSGPACK_OBJECT_ARRAY ? &f [4] : NULL;
    return true;
}

const msgpack_object *
qn_pg_call_col (const msgpack_object *rows, uint32_t r, uint32_t c)
{
    const msgpack_object *row = &rows->via.array.ptr [r];
    if (row->type != MSGPACK_OBJECT_ARRAY || row->via.array.size <= c)
        return NULL;
    return &row->via.array.ptr [c];
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
