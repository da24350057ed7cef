/*  actors/pg/committed.h - publishing the "committed" event
    The one function every committer calls (pg_writer, the timers actor, the
    codec's acks): encodes through wire/msg_committed.h and publishes on
    topic "committed", which wakes parked pops of the queue.
*/
#ifndef QN_ACTORS_PG_COMMITTED_H
#define QN_ACTORS_PG_COMMITTED_H

#include "kernel/kernel.h"

#include <stddef.h>

//  Publishes [tenant, queue]. Never blocks; a bus event is a hint.
void qn_committed_publish (qn_kernel_t *kernel, const char *tenant, size_t tenant_len,
                           const char *queue, size_t queue_len);

#endif
