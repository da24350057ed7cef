/*  wire/msg_push.c - the push request and its per-item answer
    See wire/msg_push.h. Pure.
*/
#include "wire/msg_push.h"
#include "wire/mpack_guard.h"
#include "base/buf.h"

#include <stdio.h>

#include <string.h>

static bool
s_is (const msgpack_object *o, msgpack_object_type t)
{
    return o->type == t;
}

static bool
s_str_or_nil (const msgpack_object *o)
{
    return s_is (o, MSGPACK_OBJECT_STR) || s_is (o, MSGPACK_OBJECT_NIL);
}

static void
s_pack_strn (msgpack_packer *pk, const char *s, size_t len)
{
    msgpack_pack_str (pk, len);
    msgpack_pack_str_body (pk, s, len);
}

void
qn_msg_push_begin (msgpack_packer *pk, const char *tenant, size_t tenant_len, bool replay,
                   uint32_t count)
{
    msgpack_pack_array (pk, 3);
    s_pack_strn (pk, tenant, tenant_len);
    msgpack_pack_uint32 (pk, replay ? QN_MSG_PUSH_REPLAY : 0);
    msgpack_pack_array (pk, count);
}

static void
s_pack_opt_strn (msgpack_packer *pk, const char *s, size_t len)
{
    if (s)
        s_pack_strn (pk, s, len);
    else
        msgpack_pack_nil (pk);
}

void
qn_msg_push_item (msgpack_packer *pk, const qn_msg_push_item_t *it)
{
    msgpack_pack_array (pk, it->sqs ? 9 : it->has_not_before ? 8 : 7);
    s_pack_strn (pk, it->queue, it->queue_len);
    s_pack_opt_strn (pk, it->partition, it->partition_len);
    s_pack_opt_strn (pk, it->txn, it->txn_len);
    msgpack_pack_bin (pk, it->payload_len);
    msgpack_pack_bin_body (pk, it->payload, it->payload_len);
    s_pack_opt_strn (pk, it->trace, it->trace_len);
    s_pack_opt_strn (pk, it->producer, it->producer_len);
    it->encrypted ? msgpack_pack_true (pk) : msgpack_pack_false (pk);
    if (it->has_not_before)
        msgpack_pack_int64 (pk, it->not_before_us);
    else
    if (it->sqs)
        msgpack_pack_nil (pk);
    if (it->sqs)
        s_pack_strn (pk, it->sqs, it->sqs_len);
}

//  A str field into (ptr, len); nil gives NULL. False for another type.
static bool
s_opt_str (const msgpack_object *o, const char **ptr, size_t *len)
{
    *ptr = NULL;
    *len = 0;
    if (s_is (o, MSGPACK_OBJECT_NIL))
        return true;
    if (!s_is (o, MSGPACK_OBJECT_STR))
        return false;
    //  An empty str may have a NULL ptr: a present field is never NULL.
    *ptr = o->via.str.size ? o->via.str.ptr : "";
    *len = o->via.str.size;
    return true;
}

int
qn_msg_push_item_decode (const msgpack_object *item, qn_msg_push_item_t *out)
{
    memset (out, 0, sizeof *out);
    uint32_t n = s_is (item, MSGPACK_OBJECT_ARRAY) ? item->via.array.size : 0;
    if (n < 7 || n > 9)
        return -1;
    const msgpack_object *f = item->via.array.ptr;
    if (!s_is (&f [0], MSGPACK_OBJECT_STR)
    ||  !s_opt_str (&f [1], &out->partition, &out->partition_len)
    ||  !s_opt_str (&f [2], &out->txn, &out->txn_len)
    ||  !s_opt_str (&f [4], &out->trace, &out->trace_len)
    ||  !s_opt_str (&f [5], &out->producer, &out->producer_len))
        return -1;
    out->queue = f [0].via.str.size ? f [0].via.str.ptr : "";
    out->queue_len = f [0].via.str.size;
    if (s_is (&f [3], MSGPACK_OBJECT_BIN)) {
        out->payload = f [3].via.bin.size ? f [3].via.bin.ptr : "";
        out->payload_len = f [3].via.bin.size;
    }
    else
    if (s_is (&f [3], MSGPACK_OBJECT_STR)) {
        out->payload = f [3].via.str.size ? f [3].via.str.ptr : "";
        out->payload_len = f [3].via.str.size;
    }
    else
        return -1;
    if (s_is (&f [6], MSGPACK_OBJECT_BOOLEAN))
        out->encrypted = f [6].via.boolean;
    else
    if (!s_is (&f [6], MSGPACK_OBJECT_NIL))
        return -1;
    //  Field 7, when present: the not-before instant (us since the epoch).
    if (n > 7 && !s_is (&f [7], MSGPACK_OBJECT_NIL)) {
        if (s_is (&f [7], MSGPACK_OBJECT_NEGATIVE_INTEGER))
            out->not_before_us = f [7].via.i64;
        else
        if (s_is (&f [7], MSGPACK_OBJECT_POSITIVE_INTEGER) && f [7].via.u64 <= INT64_MAX)
            out->not_before_us = (int64_t) f [7].via.u64;
        else
            return -1;
        out->has_not_before = true;
    }
    //  Field 8, when present: the SQS metadata.
    if (n > 8 && !s_opt_str (&f [8], &out->sqs, &out->sqs_len))
        return -1;
    return 0;
}

int
qn_msg_push_item_copy (msgpack_packer *pk, const msgpack_object *item, const char *txn)
{
    qn_msg_push_item_t it;
    if (qn_msg_push_item_decode (item, &it))
        return -1;
    if (txn) {
        it.txn = txn;
        it.txn_len = strlen (txn);
    }
    qn_msg_push_item (pk, &it);
    return 0;
}

int
qn_msg_push_decode (const char *buf, size_t len, msgpack_unpacked *holder, qn_msg_push_t *out)
{
    size_t off = 0;
    const msgpack_object *o = &holder->data;
    memset (out, 0, sizeof *out);
    if (qn_msgpack_check (buf, len) != (int64_t) len
    ||  msgpack_unpack_next (holder, buf, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len
    ||  !s_is (o, MSGPACK_OBJECT_ARRAY) || o->via.array.size != 3)
        return -1;
    const msgpack_object *f = o->via.array.ptr;
    if (!s_is (&f [0], MSGPACK_OBJECT_STR) || !s_is (&f [1], MSGPACK_OBJECT_POSITIVE_INTEGER)
    ||  !s_is (&f [2], MSGPACK_OBJECT_ARRAY))
        return -1;
    qn_msg_push_item_t it;
    for (uint32_t i = 0; i < f [2].via.array.size; i++)
        if (qn_msg_push_item_decode (&f [2].via.array.ptr [i], &it))
            return -1;
    out->tenant = f [0].via.str.ptr;
    out->tenant_len = f [0].via.str.size;
    out->replay = (f [1].via.u64 & QN_MSG_PUSH_REPLAY) != 0;
    out->items = f [2].via.array.ptr;
    out->count = f [2].via.array.size;
    return 0;
}

void
qn_msg_push_refuse (msgpack_packer *pk, const char *sqlstate, const char *message)
{
    msgpack_pack_array (pk, 4);
    msgpack_pack_false (pk);
    s_pack_strn (pk, sqlstate, strnlen (sqlstate, 5));
    s_pack_strn (pk, message, strlen (message));
    msgpack_pack_array (pk, 0);
}

void
qn_msg_push_answer_begin (msgpack_packer *pk, uint32_t count)
{
    msgpack_pack_array (pk, 4);
    msgpack_pack_true (pk);
    s_pack_strn (pk, "00000", 5);
    s_pack_strn (pk, "", 0);
    msgpack_pack_array (pk, count);
}

void
qn_msg_push_result (msgpack_packer *pk, const qn_msg_push_result_t *r)
{
    msgpack_pack_array (pk, 4);
    msgpack_pack_uint8 (pk, r->status);
    msgpack_pack_int64 (pk, r->seq);
    msgpack_pack_int64 (pk, r->partition_id);
    if (r->txn)
        s_pack_strn (pk, r->txn, r->txn_len);
    else
        msgpack_pack_nil (pk);
}

int
qn_msg_push_answer_decode (const char *buf, size_t len, msgpack_unpacked *holder,
                           qn_msg_push_answer_t *out)
{
    size_t off = 0;
    const msgpack_object *o = &holder->data;
    memset (out, 0, sizeof *out);
    if (qn_msgpack_check (buf, len) != (int64_t) len
    ||  msgpack_unpack_next (holder, buf, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len
    ||  !s_is (o, MSGPACK_OBJECT_ARRAY) || o->via.array.size != 4)
        return -1;
    const msgpack_object *f = o->via.array.ptr;
    if (!s_is (&f [0], MSGPACK_OBJECT_BOOLEAN) || !s_is (&f [1], MSGPACK_OBJECT_STR)
    ||  f [1].via.str.size > 5 || !s_is (&f [2], MSGPACK_OBJECT_STR)
    ||  !s_is (&f [3], MSGPACK_OBJECT_ARRAY))
        return -1;
    out->ok = f [0].via.boolean;
    if (f [1].via.str.size)     //  An empty str may have a NULL ptr
        memcpy (out->sqlstate, f [1].via.str.ptr, f [1].via.str.size);
    out->sqlstate [f [1].via.str.size] = 0;
    out->message = f [2].via.str.ptr;
    out->message_len = f [2].via.str.size;
    out->results = f [3].via.array.ptr;
    out->count = f [3].via.array.size;
    for (uint32_t i = 0; i < out->count; i++) {
        qn_msg_push_result_t r;
        if (qn_msg_push_answer_at (out, i, &r))
            return -1;
    }
    return 0;
}

static bool
s_int (const msgpack_object *o, int64_t *v)
{
    if (s_is (o, MSGPACK_OBJECT_POSITIVE_INTEGER) && o->via.u64 <= INT64_MAX)
        *v = (int64_t) o->via.u64;
    else
    if (s_is (o, MSGPACK_OBJECT_NEGATIVE_INTEGER))
        *v = o->via.i64;
    else
        return false;
    return true;
}

int
qn_msg_push_answer_at (const qn_msg_push_answer_t *a, uint32_t i, qn_msg_push_result_t *out)
{
    memset (out, 0, sizeof *out);
    if (i >= a->count)
        return -1;
    const msgpack_object *r = &a->results [i];
    if (!s_is (r, MSGPACK_OBJECT_ARRAY) || r->via.array.size != 4)
        return -1;
    const msgpack_object *f = r->via.array.ptr;
    if (!s_is (&f [0], MSGPACK_OBJECT_POSITIVE_INTEGER) || f [0].via.u64 > QN_PUSH_BUFFERED
    ||  !s_int (&f [1], &out->seq) || !s_int (&f [2], &out->partition_id)
    ||  !s_str_or_nil (&f [3]))
        return -1;
    out->status = (uint8_t) f [0].via.u64;
    if (s_is (&f [3], MSGPACK_OBJECT_STR)) {
        out->txn = f [3].via.str.ptr;
        out->txn_len = f [3].via.str.size;
    }
    return 0;
}

void
qn_msg_push_refusal_result (const qn_msg_push_answer_t *a, qn_pg_result_t *res)
{
    memset (res, 0, sizeof *res);
    msgpack_unpacked_init (&res->holder);
    snprintf (res->sqlstate, sizeof res->sqlstate, "%s", a->sqlstate);
    res->message = qn_strndup (a->message, a->message_len);
    res->detail = qn_strdup ("");
}
