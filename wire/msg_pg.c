/*  wire/msg_pg.c - PG_EXEC and PG_RESULT bodies (see msg_pg.h) */
#include "wire/msg_pg.h"
#include "wire/mpack_guard.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *
s_strndup (const char *s, size_t len)
{
    char *copy = malloc (len + 1);
    if (!copy)
        abort ();
    if (len)
        memcpy (copy, s, len);
    copy [len] = 0;
    return copy;
}

static void
s_pack_cstr (msgpack_packer *pk, const char *s)
{
    size_t len = s ? strlen (s) : 0;
    msgpack_pack_str (pk, len);
    msgpack_pack_str_body (pk, s ? s : "", len);
}

// ------------------------------------------------------------------ parameters
void
qn_pg_args_init (qn_pg_args_t *a)
{
    msgpack_sbuffer_init (&a->elems);
    msgpack_packer_init (&a->pk, &a->elems, msgpack_sbuffer_write);
    a->count = 0;
    a->open = 0;
}

void
qn_pg_args_free (qn_pg_args_t *a)
{
    msgpack_sbuffer_destroy (&a->elems);
    a->count = 0;
    a->open = 0;
}

void
qn_pg_args_clear (qn_pg_args_t *a)
{
    msgpack_sbuffer_clear (&a->elems);
    a->count = 0;
    a->open = 0;
}

//  One value was packed: an element of the open array, else a parameter.
static void
s_added (qn_pg_args_t *a)
{
    if (a->open)
        a->open--;
    else
        a->count++;
}

void
qn_pg_args_array (qn_pg_args_t *a, uint32_t n)
{
    assert (!a->open);
    msgpack_pack_array (&a->pk, n);
    a->count++;
    a->open = n;
}

void
qn_pg_args_null (qn_pg_args_t *a)
{
    msgpack_pack_nil (&a->pk);
    s_added (a);
}

void
qn_pg_args_str (qn_pg_args_t *a, const char *s, size_t len)
{
    if (!s) {
        qn_pg_args_null (a);
        return;
    }
    msgpack_pack_str (&a->pk, len);
    msgpack_pack_str_body (&a->pk, s, len);
    s_added (a);
}

void
qn_pg_args_cstr (qn_pg_args_t *a, const char *s)
{
    qn_pg_args_str (a, s, s ? strlen (s) : 0);
}

void
qn_pg_args_int (qn_pg_args_t *a, int64_t v)
{
    msgpack_pack_int64 (&a->pk, v);
    s_added (a);
}

void
qn_pg_args_bool (qn_pg_args_t *a, bool v)
{
    v ? msgpack_pack_true (&a->pk) : msgpack_pack_false (&a->pk);
    s_added (a);
}

void
qn_pg_args_double (qn_pg_args_t *a, double v)
{
    msgpack_pack_double (&a->pk, v);
    s_added (a);
}

void
qn_pg_args_bin (qn_pg_args_t *a, const void *p, size_t len)
{
    msgpack_pack_bin (&a->pk, len);
    msgpack_pack_bin_body (&a->pk, p, len);
    s_added (a);
}

void
qn_pg_args_obj (qn_pg_args_t *a, const msgpack_object *o)
{
    msgpack_pack_object (&a->pk, *o);
    s_added (a);
}

// ------------------------------------------------------------------ PG_EXEC
static void
s_exec_head (msgpack_packer *pk, uint32_t stmt_id, const char *sql)
{
    msgpack_pack_array (pk, 3);
    msgpack_pack_uint32 (pk, stmt_id);
    if (sql)
        s_pack_cstr (pk, sql);
    else
        msgpack_pack_nil (pk);
}

void
qn_msg_pg_exec_encode (msgpack_sbuffer *out, uint32_t stmt_id, const char *sql,
                       const qn_pg_args_t *args)
{
    assert (!args || !args->open);
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, msgpack_sbuffer_write);
    s_exec_head (&pk, stmt_id, sql);
    msgpack_pack_array (&pk, args ? args->count : 0);
    if (args && args->elems.size)
        msgpack_sbuffer_write (out, args->elems.data, args->elems.size);
}

int
qn_msg_pg_exec_decode (const char *buf, size_t len, msgpack_unpacked *holder,
                       qn_msg_pg_exec_t *out)
{
    memset (out, 0, sizeof *out);
    if (qn_msgpack_check (buf, len) < 0
    ||  msgpack_unpack_next (holder, buf, len, NULL) != MSGPACK_UNPACK_SUCCESS)
        return -1;
    const msgpack_object *o = &holder->data;
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 3)
        return -1;
    const msgpack_object *f = o->via.array.ptr;
    if (f [0].type != MSGPACK_OBJECT_POSITIVE_INTEGER || f [0].via.u64 > UINT32_MAX
    ||  (f [1].type != MSGPACK_OBJECT_STR && f [1].type != MSGPACK_OBJECT_NIL)
    ||  f [2].type != MSGPACK_OBJECT_ARRAY)
        return -1;
    out->stmt_id = (uint32_t) f [0].via.u64;
    if (f [1].type == MSGPACK_OBJECT_STR) {
        out->sql = f [1].via.str.ptr;
        out->sql_len = f [1].via.str.size;
    }
    out->params = f [2].via.array.ptr;
    out->param_count = f [2].via.array.size;
    return 0;
}

// ------------------------------------------------------------------ PG_RESULT
static char *
s_dup_str (const msgpack_object *o)
{
    if (o->type == MSGPACK_OBJECT_STR)
        return s_strndup (o->via.str.ptr, o->via.str.size);
    return s_strndup ("", 0);
}

static void
s_fail (qn_pg_result_t *res, const char *sqlstate, const char *message)
{
    res->ok = false;
    snprintf (res->sqlstate, sizeof res->sqlstate, "%s", sqlstate);
    res->message = s_strndup (message, strlen (message));
    res->detail = s_strndup ("", 0);
    res->rows = NULL;
    res->row_count = 0;
}

int
qn_pg_result_decode (const char *buf, size_t len, qn_pg_result_t *res)
{
    memset (res, 0, sizeof *res);
    msgpack_unpacked_init (&res->holder);
    if (!buf) {
        res->timed_out = true;
        s_fail (res, "57014", "database did not answer in time");
        return -1;
    }
    const msgpack_object *o = &res->holder.data;
    if (qn_msgpack_check (buf, len) < 0
    ||  msgpack_unpack_next (&res->holder, buf, len, NULL) != MSGPACK_UNPACK_SUCCESS
    ||  o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 5
    ||  o->via.array.ptr [0].type != MSGPACK_OBJECT_BOOLEAN
    ||  (o->via.array.ptr [4].type != MSGPACK_OBJECT_ARRAY
      && o->via.array.ptr [4].type != MSGPACK_OBJECT_NIL)) {
        s_fail (res, "XX000", "malformed database reply");
        return -1;
    }
    const msgpack_object *f = o->via.array.ptr;
    res->ok = f [0].via.boolean;
    if (f [1].type == MSGPACK_OBJECT_STR && f [1].via.str.size == 5)
        memcpy (res->sqlstate, f [1].via.str.ptr, 5);
    res->message = s_dup_str (&f [2]);
    res->detail = s_dup_str (&f [3]);
    if (f [4].type == MSGPACK_OBJECT_ARRAY) {
        res->rows = f [4].via.array.ptr;
        res->row_count = f [4].via.array.size;
    }
    return 0;
}

void
qn_pg_result_free (qn_pg_result_t *res)
{
    free (res->message);
    free (res->detail);
    res->message = res->detail = NULL;
    res->rows = NULL;
    res->row_count = 0;
    msgpack_unpacked_destroy (&res->holder);
    msgpack_unpacked_init (&res->holder);
}

bool
qn_pg_result_failed (const qn_pg_result_t *res, char *why, size_t why_len)
{
    if (res->ok)
        return false;
    if (res->timed_out)
        snprintf (why, why_len, "no answer in time");
    else
        snprintf (why, why_len, "sqlstate=%s message=%s", res->sqlstate,
                  res->message ? res->message : "");
    return true;
}

const msgpack_object *
qn_pg_result_col (const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    if (!res->rows || r >= res->row_count)
        return NULL;
    const msgpack_object *row = &res->rows [r];
    if (row->type != MSGPACK_OBJECT_ARRAY || row->via.array.size <= c)
        return NULL;
    return &row->via.array.ptr [c];
}

void
qn_msg_pg_result_begin (msgpack_packer *pk, bool ok, const char *sqlstate,
                        const char *message, const char *detail, uint32_t row_count)
{
    msgpack_pack_array (pk, 5);
    ok ? msgpack_pack_true (pk) : msgpack_pack_false (pk);
    s_pack_cstr (pk, sqlstate);
    s_pack_cstr (pk, message);
    s_pack_cstr (pk, detail);
    msgpack_pack_array (pk, row_count);
}

void
qn_msg_pg_result_row (msgpack_packer *pk, uint32_t ncols)
{
    msgpack_pack_array (pk, ncols);
}

void
qn_msg_pg_result_int (msgpack_packer *pk, int64_t v)
{
    msgpack_pack_int64 (pk, v);
}

void
qn_msg_pg_result_null (msgpack_packer *pk)
{
    msgpack_pack_nil (pk);
}
