/*  actors/ephemeral/peers.c - the ephemeral table's operations from peers
    (actors/ephemeral/table_int.h; the table: table.c). qn_eph_peer reads
    a QN_MSG_MESH_EPH body (a stream of peer operations, wire/msg_ephemeral.h)
    and applies each: WANT (a peer's waiting consumers: our buffered
    messages go to them), OFFER (a message for a consumer waiting here),
    REPLY (for a requester's inbox here), PRESENCE and PUBLISH (topics).
    Failure   a malformed stream is QN_EPROTO (the operations before the
              bad one are applied); an operation with oversized names, or
              for another broker, is ignored; an offered message that
              finds no room here is dropped (counted)
*/
#include "actors/ephemeral/table_int.h"

#include <stdio.h>
#include <string.h>

// ------------------------------------------------------------------ from peers
static void s_peer_op (qn_eph_t *self, const qn_msg_eph_peer_t *op);

int
qn_eph_peer (qn_eph_t *self, const char *body, size_t len)
{
    qn_msg_eph_peer_t op;
    size_t off = 0;
    int got;
    while ((got = qn_msg_eph_peer_next (body, len, &off, &op, NULL)) == 1)
        s_peer_op (self, &op);
    qn_gauge_set (self->kernel, "ephemeral_bytes", self->bytes);
    return got < 0 || off == 0 ? QN_EPROTO : 0;
}

//  A peer's WANT: how many consumers wait there for a queue. Believed
//  QN_EPH_REMOTE_TTL_MS (a slot per peer, QN_EPH_MAX_REMOTE of them).
static void
s_on_want (qn_eph_t *self, const qn_msg_eph_peer_t *op)
{
    qn_eph_queue_t *q = qn_eph_queue_get (self, op->name.ptr, op->name.len, true);
    if (!q || !op->b.len)
        return;
    qn_eph_remote_t *free_slot = NULL, *r = NULL;
    for (int i = 0; i < QN_EPH_MAX_REMOTE && !r; i++) {
        if (qn_eph_is (q->remote [i].id, op->b.ptr, op->b.len))
            r = &q->remote [i];
        else
        if (!free_slot && (!q->remote [i].id [0] || qn_now_ms () - q->remote [i].at_ms > QN_EPH_REMOTE_TTL_MS))
            free_slot = &q->remote [i];
    }
    if (!r && (r = free_slot))
        snprintf (r->id, sizeof r->id, "%.*s", (int) op->b.len, op->b.ptr);
    if (r) {
        r->count = op->n;
        r->at_ms = qn_now_ms ();
    }
    //  Buffered messages here go to the consumers waiting there.
    while (r && r->count > 0 && q->msgs.head && !q->whead) {
        qn_eph_msg_t *m = qn_eph_list_pop (&q->msgs);
        qn_eph_deliver (self, q, m, &(int) { 0 });
    }
}

//  One operation of a peer.
static void
s_peer_op (qn_eph_t *self, const qn_msg_eph_peer_t *op_)
{
    qn_msg_eph_peer_t op = *op_;
    if (op.name.len > QN_EPH_MAX_KEY || op.a.len > QN_EPH_MAX_NAME + 32 || op.b.len > QN_EPH_MAX_NAME)
        return;
    bool for_me = !op.to.len || qn_eph_is (self->id, op.to.ptr, op.to.len);
    if (!for_me)
        return;
    switch (op.kind) {
        case QN_EPH_WANT:
            s_on_want (self, &op);
            break;
        case QN_EPH_OFFER: {
            qn_eph_queue_t *q = qn_eph_queue_get (self, op.name.ptr, op.name.len, true);
            if (!q)
                break;
            qn_eph_msg_t *m = qn_eph_msg_new (self, op.payload, op.a, op.b);
            if (qn_eph_hand_local (self, q, m, true) || qn_eph_buffer (self, q, m) == 0)
                break;
            self->dropped++;
            qn_eph_msg_free (self, m);
            break;
        }
        case QN_EPH_REPLY: {
            uint64_t inbox;
            qn_eph_str_t broker;
            if (qn_eph_inbox_parse (op.a, &inbox, &broker) && qn_eph_is (self->id, broker.ptr, broker.len))
                qn_eph_reply_local (self, inbox, op.b, op.payload, op.name);     //  name: the replier's tenant
            break;
        }
        case QN_EPH_PRESENCE: {
            qn_eph_topic_t *t = qn_eph_topic_get (self, op.name.ptr, op.name.len, true);
            if (!t || !op.a.len)
                break;
            if (op.n <= 0) {
                qn_eph_sub_t *s = qn_eph_sub_find (t, op.a.ptr, op.a.len);
                if (s && qn_eph_is (s->broker, op.b.ptr, op.b.len))
                    qn_eph_sub_remove (self, t, s);
            }
            else
                qn_eph_sub_put (self, t, op.a, op.b, op.n);
            break;
        }
        case QN_EPH_PUBLISH: {
            qn_eph_topic_t *t = qn_eph_topic_get (self, op.name.ptr, op.name.len, false);
            if (t)
                qn_eph_publish_local (self, t, op.payload);
            break;
        }
        default:
            break;
    }
}

