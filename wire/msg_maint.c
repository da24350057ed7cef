/*  wire/msg_maint.c - maintenance flag messages. Pure. */
#include "wire/msg_maint.h"
#include "wire/mp.h"

#include <string.h>

void
qn_msg_maint_set_encode (msgpack_sbuffer *out, const qn_msg_maint_set_t *m)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 2);
    m->pop ? msgpack_pack_true (&pk) : msgpack_pack_false (&pk);
    m->enabled ? msgpack_pack_true (&pk) : msgpack_pack_false (&pk);
}

int
qn_msg_maint_set_decode (const char *buf, size_t len, qn_msg_maint_set_t *out)
{
    return qn_mp_scan (buf, len, "bb", &out->pop, &out->enabled);
}

void
qn_msg_maint_state_encode (msgpack_sbuffer *out, const qn_msg_maint_state_t *m)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 5);
    m->push ? msgpack_pack_true (&pk) : msgpack_pack_false (&pk);
    m->pop ? msgpack_pack_true (&pk) : msgpack_pack_false (&pk);
    msgpack_pack_uint64 (&pk, m->gen);
    if (m->sqlstate [0]) {
        size_t n = strnlen (m->sqlstate, 5);
        msgpack_pack_str (&pk, n);
        msgpack_pack_str_body (&pk, m->sqlstate, n);
        size_t ml = m->message ? m->message_len : 0;
        msgpack_pack_str (&pk, ml);
        msgpack_pack_str_body (&pk, m->message ? m->message : "", ml);
    }
    else {
        msgpack_pack_nil (&pk);
        msgpack_pack_nil (&pk);
    }
}

int
qn_msg_maint_state_decode (const char *buf, size_t len, qn_msg_maint_state_t *out)
{
    memset (out, 0, sizeof *out);
    const char *state;
    size_t state_len;
    if (qn_mp_scan (buf, len, "bbuSS", &out->push, &out->pop, &out->gen, &state, &state_len,
                    &out->message, &out->message_len)
    ||  state_len > 5)
        return -1;
    if (state)
        memcpy (out->sqlstate, state, state_len);
    out->sqlstate [state_len] = 0;
    if (out->sqlstate [0] && !out->message)
        out->message = "", out->message_len = 0;
    return 0;
}
