/*  wire/msg_ephemeral.h - the ephemeral queues' messages
    qn_msg_eph_call_t: one call of the ephemeral table (qn_eph_call,
        actors/ephemeral/table.h), a plain struct that never travels
        between actors: op, name, body, timeout_ms, query (a poll's
        subscriber), max (a receive's batch size, 0 = one message,
        answered unwrapped), tenant (the caller's, "" = none: names are
        per tenant). Message number 264 (EPH_CALL, its former encoding for
        a standalone actor) stays reserved.
    QN_MSG_MESH_EPH (265)   ephemeral table <-> mesh: one or more peer
        operations (below) back to back (a msgpack stream: the operations
        of one loop pass travel as one message), table -> mesh to send them
        to every peer, mesh -> table when peers sent some (the mesh frame
        kind EPH carries the bytes of one operation).
    Peer operation: [kind, to, name, a, b, payload, n]
        WANT     name = queue, n = consumers waiting here now
        OFFER    to = the broker that has a waiting consumer, name = queue,
                 a = replyTo, b = correlationId, payload
        REPLY    to = the broker of the inbox, a = the inbox (replyTo),
                 b = correlationId, payload
        PRESENCE name = topic, a = subscriber, n = ttl ms (0: left)
        PUBLISH  name = topic, payload
    Strings point into the buffer. Pure; the peer operation's decoder is
    fuzzed (its bytes come from the network).
*/
#ifndef QN_WIRE_MSG_EPHEMERAL_H
#define QN_WIRE_MSG_EPHEMERAL_H

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *ptr;
    size_t len;
} qn_eph_str_t;

typedef struct {
    qn_eph_str_t op, name, body, query, tenant;
    int64_t timeout_ms, max;
} qn_msg_eph_call_t;

#define QN_EPH_WANT     1
#define QN_EPH_OFFER    2
#define QN_EPH_REPLY    3
#define QN_EPH_PRESENCE 4
#define QN_EPH_PUBLISH  5

typedef struct {
    uint64_t kind;
    qn_eph_str_t to, name, a, b, payload;
    int64_t n;
} qn_msg_eph_peer_t;

void qn_msg_eph_peer_encode (msgpack_sbuffer *out, const qn_msg_eph_peer_t *m);
//  0, or -1 when malformed (not the array, an unknown kind).
int qn_msg_eph_peer_decode (const char *buf, size_t len, qn_msg_eph_peer_t *out);
//  The operation at *off of a stream of them (QN_MSG_MESH_EPH's body; its
//  encoding is qn_msg_eph_peer_encode appended to one buffer): decodes it
//  into out, its own bytes into raw (may be NULL), and moves *off past
//  it. 1, 0 at the end of buf, -1 when malformed (the rest is unusable).
int qn_msg_eph_peer_next (const char *buf, size_t len, size_t *off, qn_msg_eph_peer_t *out,
                          qn_eph_str_t *raw);

#endif
