/*  actors/ephemeral/queues.c - the ephemeral table's queues
    (actors/ephemeral/table_int.h; the table: table.c). A queue's waiting
    consumers, the WANTs that tell the peers about them, the flush at the
    end of a pass of the host's loop (batched receives answered, WANTs and
    coalesced peer operations sent), the hand-off of a message (a local
    waiter, else a peer's, else the bounded buffer), and requests' inboxes
    (a request waits for its reply by inbox number, or times out).
    Failure   over a queue's cap: 429 ("reject") or the oldest is dropped
              ("drop-oldest"); over EPHEMERAL_MAX_BYTES: 503
*/
#include "actors/ephemeral/table_int.h"
#include "wire/json.h"

#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------------ queues
//  The queue named name (a key scoped by its tenant), made on first use
//  with create; NULL when absent, or when another name holds its hash.
qn_eph_queue_t *
qn_eph_queue_get (qn_eph_t *self, const char *name, size_t len, bool create)
{
    bool created = false;
    qn_eph_queue_t *q = qn_eph_named (self->queues, name, len, create ? sizeof *q : 0, &created);
    if (created)
        q->max_messages = QN_EPH_DEFAULT_MAX;
    return q;
}

//  Appends a waiting consumer to q's waiters (the counterpart of unlink).
void
qn_eph_waiter_link (qn_eph_queue_t *q, qn_eph_waiter_t *w)
{
    w->linked = true;
    w->owner = q;
    w->next = NULL;
    w->prev = q->wtail;
    if (q->wtail)
        q->wtail->next = w;
    else
        q->whead = w;
    q->wtail = w;
    q->nwaiters++;
}

void
qn_eph_waiter_unlink (qn_eph_queue_t *q, qn_eph_waiter_t *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        q->whead = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        q->wtail = w->prev;
    w->next = w->prev = NULL;
    w->linked = false;
    q->nwaiters--;
}

//  Messages the consumers waiting here can take now (what WANT says).
static int64_t
s_capacity (const qn_eph_queue_t *q)
{
    int64_t n = 0;
    for (const qn_eph_waiter_t *w = q->whead; w; w = w->next)
        n += w->max ? w->max - w->batch.count : 1;
    return n;
}

static void s_flush (void *host, void *arg);

void
qn_eph_arm_flush (qn_eph_t *self)
{
    if (!self->flush_armed) {
        self->flush_armed = true;
        qn_timer_add (self->kernel, 0, 0, s_flush, self);
    }
}

static void
s_want_mark (qn_eph_t *self, qn_eph_queue_t *q)
{
    if (!q->want_dirty) {
        q->want_dirty = true;
        q->want_next = self->want_list;
        self->want_list = q;
    }
}

void
qn_eph_want (qn_eph_t *self, qn_eph_queue_t *q)
{
    s_want_mark (self, q);
    qn_eph_arm_flush (self);
}

static void
s_want_send (qn_eph_t *self, qn_eph_queue_t *q)
{
    qn_msg_eph_peer_t op = {
        .kind = QN_EPH_WANT, .name = QN_EPH_STR (q->name), .b = QN_EPH_STR (self->id), .n = s_capacity (q)
    };
    qn_eph_peer_send (self, &op);
}

void
qn_eph_message_json (qn_buf_t *b, const qn_eph_msg_t *m)
{
    qn_jw_t w;
    qn_jw_init (&w, b);
    qn_jw_obj (&w);
    qn_jw_kuint (&w, "id", m->id);
    qn_jw_kraw (&w, "payload", m->payload, m->len);
    if (m->reply_to)
        qn_jw_kstr (&w, "replyTo", m->reply_to);
    if (m->corr)
        qn_jw_kstr (&w, "correlationId", m->corr);
    qn_jw_obj_end (&w);
}

void
qn_eph_batch_json (qn_eph_t *self, qn_buf_t *b, qn_eph_list_t *l)
{
    qn_buf_append (b, "{\"messages\":[", 13);
    bool first = true;
    for (qn_eph_msg_t *m; (m = qn_eph_list_pop (l)); first = false) {
        if (!first)
            qn_buf_append (b, ",", 1);
        qn_eph_message_json (b, m);
        qn_eph_msg_free (self, m);
    }
    qn_buf_append (b, "]}", 2);
}

//  Hands m to the oldest local waiter of q (takes m); false when none
//  waits. A waiter with max collects messages until it is full or the
//  next flush, so a burst goes out as one answer. `offered`: m came in a
//  peer's OFFER, and that peer counted it against our last WANT already,
//  so the hand alone sends no new WANT (other peers learn at the next
//  one: a change they cannot count, or the repeat within a second).
bool
qn_eph_hand_local (qn_eph_t *self, qn_eph_queue_t *q, qn_eph_msg_t *m, bool offered)
{
    qn_eph_waiter_t *w = q->whead;
    if (!w)
        return false;
    self->delivered++;
    if (w->max) {
        qn_eph_list_push (&w->batch, m);
        if (w->batch.count >= w->max)
            qn_eph_waiter_unlink (q, w);
        if (!w->ready) {
            w->ready = true;
            w->ready_next = self->ready;
            self->ready = w;
        }
        if (offered)
            qn_eph_arm_flush (self);     //  Its answer; the flush tells the peers when it is gone
        else
            qn_eph_want (self, q);
        return true;
    }
    qn_eph_waiter_unlink (q, w);
    qn_timer_cancel (self->kernel, w->timer);
    qn_buf_t b = QN_BUF_INIT;
    qn_eph_message_json (&b, m);
    qn_eph_answer_to (self, w->reply_to, w->corr, 200, b.data, b.len);
    qn_buf_free (&b);
    free (w);
    qn_eph_msg_free (self, m);
    if (!offered)
        qn_eph_want (self, q);
    return true;
}

//  The flush, at the end of a pass of the host's loop: batched receives
//  are answered, then WANTs go out (with def.coalesce, with every other
//  peer operation of the pass, as one message).
static void
s_flush (void *host, void *arg)
{
    (void) host;
    qn_eph_t *self = arg;
    while (self->ready) {
        qn_eph_waiter_t *w = self->ready;
        self->ready = w->ready_next;
        if (w->cancelled) {
            free (w);
            continue;
        }
        qn_eph_queue_t *q = w->owner;
        if (w->linked)
            qn_eph_waiter_unlink (q, w);
        qn_timer_cancel (self->kernel, w->timer);
        qn_buf_reset (&self->out);
        qn_eph_batch_json (self, &self->out, &w->batch);
        qn_eph_answer_to (self, w->reply_to, w->corr, 200, self->out.data, self->out.len);
        free (w);
        s_want_mark (self, q);
    }
    while (self->want_list) {
        qn_eph_queue_t *q = self->want_list;
        self->want_list = q->want_next;
        q->want_dirty = false;
        s_want_send (self, q);
    }
    if (self->peer_out.size) {
        qn_send_body (self->kernel, "mesh", QN_MSG_MESH_EPH, 0, self->peer_out.data, self->peer_out.size);
        if (self->peer_out.alloc > 65536) {
            msgpack_sbuffer_destroy (&self->peer_out);
            msgpack_sbuffer_init (&self->peer_out);
        }
        else
            msgpack_sbuffer_clear (&self->peer_out);
    }
    self->flush_armed = false;  //  Last: what the flush itself sent is in this message
}

//  A peer that has a waiting consumer, believed recently; NULL if none.
static qn_eph_remote_t *
s_remote_pick (qn_eph_queue_t *q)
{
    int64_t now = qn_now_ms ();
    for (int i = 0; i < QN_EPH_MAX_REMOTE; i++)
        if (q->remote [i].id [0] && q->remote [i].count > 0 && now - q->remote [i].at_ms < QN_EPH_REMOTE_TTL_MS)
            return &q->remote [i];
    return NULL;
}

//  Buffers m in q under the caps. 0, or the HTTP status of a refusal.
int
qn_eph_buffer (qn_eph_t *self, qn_eph_queue_t *q, qn_eph_msg_t *m)
{
    //  m is counted in self->bytes already.
    while ((q->msgs.count >= q->max_messages || self->bytes > self->config->ephemeral_max_bytes)
        && q->drop_oldest && q->msgs.head) {
        qn_eph_msg_free (self, qn_eph_list_pop (&q->msgs));
        self->dropped++;
        qn_count (self->kernel, "ephemeral_dropped", 1);
    }
    if (q->msgs.count >= q->max_messages) {
        self->rejected++;
        return 429;
    }
    if (self->bytes > self->config->ephemeral_max_bytes) {
        self->rejected++;
        return 503;
    }
    qn_eph_list_push (&q->msgs, m);
    return 0;
}

//  Delivers a new message: a local waiter, else a peer's waiter, else the
//  buffer. Takes m. Returns "delivered", "forwarded", "queued", or NULL
//  with *status set (m freed).
const char *
qn_eph_deliver (qn_eph_t *self, qn_eph_queue_t *q, qn_eph_msg_t *m, int *status)
{
    if (qn_eph_hand_local (self, q, m, false))
        return "delivered";
    qn_eph_remote_t *r = s_remote_pick (q);
    if (r) {
        qn_msg_eph_peer_t op = {
            .kind = QN_EPH_OFFER, .to = QN_EPH_STR (r->id), .name = QN_EPH_STR (q->name),
            .a = QN_EPH_STR (m->reply_to), .b = QN_EPH_STR (m->corr),
            .payload = { m->payload, m->len }
        };
        qn_eph_peer_send (self, &op);
        r->count--;             //  Until its next WANT says otherwise
        self->forwarded++;
        qn_eph_msg_free (self, m);
        return "forwarded";
    }
    *status = qn_eph_buffer (self, q, m);
    if (*status) {
        qn_eph_msg_free (self, m);
        return NULL;
    }
    return "queued";
}

//  A waiting receive's timeout (a timer of the host's loop): 204, unless
//  it holds messages already (the flush answers it).
void
qn_eph_on_receive_expired (void *host, void *arg)
{
    (void) host;
    qn_eph_waiter_t *w = arg;
    qn_eph_t *self = w->eph;
    qn_eph_queue_t *q = w->owner;
    if (w->ready) {             //  It holds messages: the flush answers it
        if (w->linked)
            qn_eph_waiter_unlink (q, w);
        return;
    }
    qn_eph_waiter_unlink (q, w);
    qn_eph_answer_to (self, w->reply_to, w->corr, 204, "", 0);
    free (w);
    qn_eph_want (self, q);
}

// ------------------------------------------------------------------ requests
//  A request's timeout: 504, its inbox closed (a late reply gets 404).
void
qn_eph_on_request_expired (void *host, void *arg)
{
    (void) host;
    qn_eph_waiter_t *w = arg;
    qn_eph_t *self = w->eph;
    qn_hashmap_remove (self->inboxes, w->inbox);
    const char *body = "{\"error\":\"no reply within the timeout\"}";
    qn_eph_answer_to (self, w->reply_to, w->corr, 504, body, strlen (body));
    free (w->corr_id);
    free (w);
}

//  A reply for inbox n (this broker's): answers the requester. false when
//  no requester waits there (timed out, or never existed).
bool
qn_eph_reply_local (qn_eph_t *self, uint64_t inbox, qn_eph_str_t corr, qn_eph_str_t payload,
                    qn_eph_str_t tenant)
{
    qn_eph_waiter_t *w = qn_hashmap_get (self->inboxes, inbox);
    if (!w || !qn_eph_is (w->corr_id, corr.ptr, corr.len) || !qn_eph_is (w->tenant, tenant.ptr, tenant.len))
        return false;
    qn_hashmap_remove (self->inboxes, inbox);
    qn_timer_cancel (self->kernel, w->timer);
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t jw;
    qn_jw_init (&jw, &b);
    qn_jw_obj (&jw);
    qn_jw_kstr (&jw, "correlationId", w->corr_id);
    qn_jw_kraw (&jw, "payload", payload.ptr, payload.len);
    qn_jw_obj_end (&jw);
    qn_eph_answer_to (self, w->reply_to, w->corr, 200, b.data, b.len);
    qn_buf_free (&b);
    free (w->corr_id);
    free (w);
    return true;
}

//  "<n>@<broker>" into n and the broker; false when malformed.
bool
qn_eph_inbox_parse (qn_eph_str_t s, uint64_t *n, qn_eph_str_t *broker)
{
    const char *at = memchr (s.ptr, '@', s.len);
    if (!at || at == s.ptr || at - s.ptr > 19)
        return false;
    uint64_t v = 0;
    for (const char *p = s.ptr; p < at; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (uint64_t) (*p - '0');
    }
    *n = v;
    broker->ptr = at + 1;
    broker->len = s.len - (size_t) (at + 1 - s.ptr);
    return broker->len > 0;
}

