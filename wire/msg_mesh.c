/*  wire/msg_mesh.c - bodies of the mesh's messages (see msg_mesh.h). Pure. */
#include "wire/msg_mesh.h"
#include "wire/mp.h"

#include <string.h>

static void
s_pack_strn (msgpack_packer *pk, const char *s, size_t len)
{
    msgpack_pack_str (pk, len);
    msgpack_pack_str_body (pk, s ? s : "", len);
}

void
qn_msg_mesh_qconf_encode (msgpack_sbuffer *out, const qn_msg_mesh_qconf_t *m)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 2);
    s_pack_strn (&pk, m->tenant, m->tenant_len);
    s_pack_strn (&pk, m->queue, m->queue_len);
}

int
qn_msg_mesh_qconf_decode (const char *buf, size_t len, qn_msg_mesh_qconf_t *out)
{
    memset (out, 0, sizeof *out);
    return qn_mp_scan (buf, len, "ss", &out->tenant, &out->tenant_len,
                       &out->queue, &out->queue_len) ? -1 : 0;
}

void
qn_msg_mesh_group_encode (msgpack_sbuffer *out, const qn_msg_mesh_group_t *m)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 4);
    s_pack_strn (&pk, m->tenant, m->tenant_len);
    s_pack_strn (&pk, m->queue, m->queue_len);
    s_pack_strn (&pk, m->group, m->group_len);
    msgpack_pack_int64 (&pk, m->what);
}

int
qn_msg_mesh_group_decode (const char *buf, size_t len, qn_msg_mesh_group_t *out)
{
    memset (out, 0, sizeof *out);
    return qn_mp_scan (buf, len, "sssi", &out->tenant, &out->tenant_len, &out->queue,
                       &out->queue_len, &out->group, &out->group_len, &out->what) ? -1 : 0;
}

void
qn_msg_mesh_status_encode (msgpack_sbuffer *out, const char *json, size_t len)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 1);
    s_pack_strn (&pk, json, len);
}

int
qn_msg_mesh_status_decode (const char *buf, size_t len, const char **json, size_t *json_len)
{
    return qn_mp_scan (buf, len, "s", json, json_len) ? -1 : 0;
}

void
qn_msg_mesh_empty_encode (msgpack_sbuffer *out)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 0);
}
