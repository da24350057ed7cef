/*  wire/msg_db.c - the "db" event body (see msg_db.h). Pure. */
#include "wire/msg_db.h"
#include "wire/mp.h"

void
qn_msg_db_health_encode (msgpack_sbuffer *out, bool up)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 1);
    up ? msgpack_pack_true (&pk) : msgpack_pack_false (&pk);
}

int
qn_msg_db_health_decode (const char *buf, size_t len, bool *up)
{
    return qn_mp_scan (buf, len, "b", up) ? -1 : 0;
}
