/*  test/fuzz/fuzz_mesh.c - the mesh frame decoder (wire/mesh.c) over
    arbitrary bytes from the network: a frame that decodes re-encodes to
    the same bytes, and its hints coalesce and flush without fault.
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/mesh.h"
#include "wire/mesh_keys.h"
#include "wire/msg_ephemeral.h"

static qn_mesh_hint_t s_hints [QN_MESH_MAX_HINTS];
static qn_mesh_str_t s_parts [QN_MESH_MAX_HINTS * QN_MESH_MAX_PARTS];

static void
s_on_frame (void *arg, const qn_buf_t *frame)
{
    (void) arg;
    qn_mesh_frame_t f;
    if (qn_mesh_decode (frame->data, frame->len, &f, s_hints, QN_MESH_MAX_HINTS, s_parts,
                        QN_MESH_MAX_HINTS * QN_MESH_MAX_PARTS))
        abort ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    //  The LISTEN/NOTIFY text form (payloads come from the database).
    static qn_mesh_keys_t keys;
    if (!keys.notify_mac [0])
        qn_mesh_keys_derive ("fuzz-cell-secret-0123", 21, &keys);
    static char frame [8192];
    size_t frame_len;
    if (qn_mesh_notify_decode (&keys, (const char *) data, size, frame, sizeof frame, &frame_len) == 0
    &&  frame_len > sizeof frame)
        abort ();
    qn_mesh_frame_t f;
    if (qn_mesh_decode ((const char *) data, size, &f, s_hints, QN_MESH_MAX_HINTS, s_parts,
                        QN_MESH_MAX_HINTS * QN_MESH_MAX_PARTS))
        return 0;
    qn_buf_t b;
    qn_buf_init (&b);
    if (f.kind == QN_MESH_HELLO)
        qn_mesh_encode_hello (&b, f.sender.ptr, f.sender.len, f.epoch, f.seq);
    else
    if (f.kind == QN_MESH_EPH) {
        qn_mesh_encode_eph (&b, f.sender.ptr, f.sender.len, f.epoch, f.payload.ptr, f.payload.len);
        qn_msg_eph_peer_t op;
        qn_msg_eph_peer_decode (f.payload.ptr, f.payload.len, &op);
        //  As a stream of operations (the mesh hands peers' EPH payloads
        //  to the table back to back).
        size_t off = 0, last = 0;
        qn_eph_str_t raw;
        while (qn_msg_eph_peer_next (f.payload.ptr, f.payload.len, &off, &op, &raw) == 1) {
            if (off <= last || raw.ptr != f.payload.ptr + last || off > f.payload.len)
                abort ();
            last = off;
        }
    }
    else
        qn_mesh_encode_hints (&b, f.sender.ptr, f.sender.len, f.epoch, s_hints, f.hint_count, s_parts);
    if (b.len != size || memcmp (b.data, data, size))
        abort ();
    qn_buf_free (&b);
    if (f.kind == QN_MESH_HINTS) {
        //  Copy the hints first: the flush decodes into the same arrays.
        qn_mesh_coalesce_t *c = qn_mesh_coalesce_new ();
        for (uint32_t i = 0; i < f.hint_count; i++) {
            qn_mesh_hint_t h = s_hints [i];
            if (h.type == QN_MESH_H_COMMITTED && h.part_count)
                for (uint32_t k = 0; k < h.part_count; k++)
                    qn_mesh_coalesce_add (c, &h, s_parts [h.part_first + k].ptr,
                                          s_parts [h.part_first + k].len);
            else
                qn_mesh_coalesce_add (c, &h, NULL, 0);
        }
        qn_mesh_coalesce_flush (c, "x", 1, 0, s_on_frame, NULL);
        qn_mesh_coalesce_destroy (&c);
    }
    return 0;
}
