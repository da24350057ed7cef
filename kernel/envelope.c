/*  kernel/envelope.c - header frame encode/decode
    Pure: msgpack in, slices out. Every read is bounds-checked by the
    msgpack unpacker; anything unexpected is QN_EPROTO.
*/
#include "kernel/envelope.h"
#include "kernel/errors.h"
#include "wire/mpack_guard.h"

#include <msgpack.h>
#include <string.h>

static int
s_write (void *data, const char *buf, size_t len)
{
    qn_buf_append ((qn_buf_t *) data, buf, len);
    return 0;
}

int
qn_env_encode_header (const qn_env_t *env, qn_buf_t *out)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, s_write);
    msgpack_pack_array (&pk, 7);
    msgpack_pack_uint8 (&pk, env->version ? env->version : QN_ENV_VERSION);
    msgpack_pack_uint16 (&pk, env->type);
    msgpack_pack_uint64 (&pk, env->corr);
    msgpack_pack_str (&pk, env->from.len);
    msgpack_pack_str_body (&pk, env->from.ptr, env->from.len);
    msgpack_pack_str (&pk, env->reply_to.len);
    msgpack_pack_str_body (&pk, env->reply_to.ptr, env->reply_to.len);
    msgpack_pack_uint32 (&pk, env->ttl_ms);
    msgpack_pack_uint32 (&pk, env->flags);
    return 0;
}

static bool
s_uint (const msgpack_object *o, uint64_t max, uint64_t *out)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > max)
        return false;
    *out = o->via.u64;
    return true;
}

static bool
s_name (const msgpack_object *o, qn_slice_t *out)
{
    if (o->type != MSGPACK_OBJECT_STR || o->via.str.size > QN_ENV_MAX_NAME)
        return false;
    out->ptr = o->via.str.ptr;
    out->len = o->via.str.size;
    return true;
}

int
qn_env_decode_header (const char *buf, size_t len, qn_env_t *env)
{
    //  A header is small: one small zone holds the array of fields.
    msgpack_zone zone;
    if (!msgpack_zone_init (&zone, 512))
        return QN_EPROTO;
    msgpack_object root;
    size_t off = 0;
    int rc = QN_EPROTO;
    memset (env, 0, sizeof *env);
    if (qn_msgpack_check (buf, len) != (int64_t) len
    ||  msgpack_unpack (buf, len, &off, &zone, &root) != MSGPACK_UNPACK_SUCCESS)
        goto malformed;
    if (off != len || root.type != MSGPACK_OBJECT_ARRAY || root.via.array.size < 3)
        goto malformed;
    const msgpack_object *f = root.via.array.ptr;
    uint32_t n = root.via.array.size;
    uint64_t v;
    if (!s_uint (&f [0], 255, &v) || v == 0)
        goto malformed;
    env->version = (uint8_t) v;
    if (!s_uint (&f [1], UINT16_MAX, &v))
        goto malformed;
    env->type = (uint16_t) v;
    if (!s_uint (&f [2], UINT64_MAX, &v))
        goto malformed;
    env->corr = v;
    if (n > 3 && !s_name (&f [3], &env->from))
        goto malformed;
    if (n > 4 && !s_name (&f [4], &env->reply_to))
        goto malformed;
    if (n > 5) {
        if (!s_uint (&f [5], UINT32_MAX, &v))
            goto malformed;
        env->ttl_ms = (uint32_t) v;
    }
    if (n > 6) {
        if (!s_uint (&f [6], UINT32_MAX, &v))
            goto malformed;
        env->flags = (uint32_t) v;
    }
    //  msgpack_unpack references str bodies inside `buf` (it never copies
    //  them for the zone API), so the slices stay valid as long as buf.
    if (env->from.len && (env->from.ptr < buf || env->from.ptr + env->from.len > buf + len))
        goto malformed;
    if (env->reply_to.len
    && (env->reply_to.ptr < buf || env->reply_to.ptr + env->reply_to.len > buf + len))
        goto malformed;
    rc = 0;
malformed:
    msgpack_zone_destroy (&zone);
    return rc;
}
