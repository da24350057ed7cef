/*  wire/kafka_proto_impl.h - helpers shared by the files of the Kafka
    layouts (wire/kafka_proto.c, wire/kafka_proto_admin.c); not an API.
*/
#ifndef QN_WIRE_KAFKA_PROTO_IMPL_H
#define QN_WIRE_KAFKA_PROTO_IMPL_H

#include "wire/kafka_proto.h"

//  Allocates n zeroed elements in the arena (none for n <= 0).
#define S_ALLOC(arena, ptr, n) \
    ((ptr) = (n) > 0 ? qn_karena_alloc ((arena), (size_t) (n) * sizeof *(ptr)) : NULL)

//  A decode succeeds when nothing failed and every byte was used.
static inline int
s_done (const qn_kr_t *r)
{
    return r->err || r->at != r->len ? -1 : 0;
}

static inline int32_t *
s_read_i32_array (qn_kr_t *r, qn_karena_t *arena, int32_t *count)
{
    int32_t n = qn_kr_array (r, false, 4);
    int32_t *out;
    S_ALLOC (arena, out, n);
    for (int32_t i = 0; i < n; i++)
        out [i] = qn_kr_i32 (r);
    *count = n;
    return out;
}

static inline void
s_write_i32_array (qn_buf_t *b, const int32_t *v, int32_t n)
{
    qn_kw_i32 (b, n);
    for (int32_t i = 0; i < n; i++)
        qn_kw_i32 (b, v [i]);
}

#endif
