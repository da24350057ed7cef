/*  wire/msg_committed.h - the "committed" event
    QN_MSG_COMMITTED, published on topic "committed" by whoever commits
    new messages (pg_writer for pushes, spool replays and transactions,
    the timers actor for fired timers; the codec for acks that make messages
    visible again): parked pops of that queue wake up.
        [tenant, queue (, partition)]
    Pure.
*/
#ifndef QN_WIRE_MSG_COMMITTED_H
#define QN_WIRE_MSG_COMMITTED_H

#include <msgpack.h>
#include <stddef.h>

typedef struct {
    const char *tenant;
    size_t tenant_len;
    const char *queue;
    size_t queue_len;
    const char *partition;      //  NULL when the event names the queue only
    size_t partition_len;
} qn_msg_committed_t;

void qn_msg_committed_encode (msgpack_sbuffer *out, const qn_msg_committed_t *m);
//  Slices of out point into buf. 0, or -1 when malformed.
int qn_msg_committed_decode (const char *buf, size_t len, qn_msg_committed_t *out);

#endif
