/*  actors/pg/committed.c - the one publisher of "committed" events
    (see committed.h).
*/
#include "actors/pg/committed.h"
#include "wire/msg_committed.h"

void
qn_committed_publish (qn_kernel_t *kernel, const char *tenant, size_t tenant_len,
                      const char *queue, size_t queue_len)
{
    qn_msg_committed_t m = {
        .tenant = tenant, .tenant_len = tenant_len, .queue = queue, .queue_len = queue_len
    };
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_committed_encode (&b, &m);
    qn_publish (kernel, "committed", QN_MSG_COMMITTED, b.data, b.size);
    msgpack_sbuffer_destroy (&b);
}
