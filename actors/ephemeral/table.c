/*  actors/ephemeral/table.c - queues that live only in broker memory
    No PostgreSQL in the path, no replay, no retention (docs/ephemeral.md).
    Shapes: work hand-off (a message goes to exactly one waiting consumer,
    else waits in a bounded buffer), request/reply (a request carries
    replyTo = "<inbox>@<broker>" and a correlationId; the reply reaches the
    requester's broker through the mesh), presence topics (subscribers with
    a heartbeat expiry, a cell-wide list, every present subscriber gets
    every message; cache invalidation is a topic of keys).

    Across brokers, through the mesh (QN_MSG_MESH_EPH, wire/msg_ephemeral.h):
    WANT tells the peers how many consumers wait here for a queue (sent at
    the end of the loop pass in which that changed, and every second while
    any wait); a send with no local waiter goes to one peer that has some
    (OFFER); REPLY goes to the inbox's broker; PRESENCE and PUBLISH go to
    every peer.

    A library, not an actor (like the park table): it runs in the thread of
    its host, which hands it calls (qn_eph_call), peers' operations
    (qn_eph_peer) and its callers' departures (qn_eph_cancel), and gets the
    answers through def->answer. The broker's host is codec_http (the HTTP
    routes answer from the codec's own thread: no hop per call); the actor
    "ephemeral" (ephemeral.c) hosts one for QN_MSG_EPH_CALL callers.
    Sends     QN_MSG_MESH_EPH to the mesh; timers on the host's loop
    Owns      queues, buffered messages, waiting consumers and requesters,
              topics and subscribers' mailboxes; every byte is counted
              against EPHEMERAL_MAX_BYTES, every queue against its
              maxMessages
    Failure   over a queue's cap: 429 (overflow "reject") or the oldest is
              dropped ("drop-oldest"); over the broker's byte cap: 503; a
              message offered to a peer whose consumer left meanwhile waits
              in that peer's buffer (or is dropped there when it is full)
*/
#include "actors/ephemeral/table.h"
#include "base/hashmap.h"
#include "wire/json.h"
#include "wire/msg_ephemeral.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_NAME        255
#define S_MAX_TENANT      64
#define S_MAX_KEY         (S_MAX_NAME + S_MAX_TENANT + 2)   //  A name scoped by its tenant
#define S_SEP             '\x1f'        //  "\x1f<tenant>\x1f<name>": a named tenant's name
#define S_DEFAULT_MAX     1000          //  maxMessages of a queue created by use
#define S_MAILBOX_MAX     1000          //  Messages a subscriber's mailbox keeps (oldest dropped)
#define S_SUB_TTL_MS      30000         //  Presence without a ttl
#define S_REMOTE_TTL_MS   3000          //  A peer's WANT is believed this long
#define S_MAX_REMOTE      16
#define S_MAX_SUBS        4096          //  Subscribers of one topic
#define S_OVERHEAD        64            //  Bytes counted per message besides its payload
#define S_MAX_BATCH       1000          //  A receive's max

typedef struct s_msg {
    struct s_msg *next;
    char *payload;              //  Owned JSON text
    size_t len;
    char *reply_to, *corr;      //  Owned, or NULL
    uint64_t id;
} s_msg_t;

typedef enum { W_RECEIVE, W_REQUEST, W_POLL } s_wkind_t;

typedef struct s_waiter {
    struct s_waiter *next, *prev;
    struct qn_eph *eph;         //  Its table (timer callbacks run with the host's self)
    s_wkind_t kind;
    char reply_to [QN_ENV_MAX_NAME + 1];    //  Where the call's answer goes (the host's)
    uint64_t corr;              //  The host's id of the call
    uint64_t timer;
    void *owner;                //  s_queue_t (receive), s_sub_t (poll)
    uint64_t inbox;             //  Request: its inbox number
    char *corr_id;              //  Request: the correlationId (owned)
    char tenant [S_MAX_TENANT + 1]; //  Request: only its tenant's replies reach it
    uint32_t max;               //  Receive: messages one answer carries (0: one, unwrapped)
    s_msg_t *bhead, *btail;     //  Receive with max: taken, answered at the next flush
    uint32_t nbatch;
    bool linked;                //  Receive: in its queue's waiter list
    bool ready;                 //  Receive with max: in self->ready
    bool cancelled;             //  Its caller left while it was in self->ready
    struct s_waiter *ready_next;
} s_waiter_t;

typedef struct {
    char id [S_MAX_NAME + 1];
    int64_t count;
    int64_t at_ms;
} s_remote_t;

typedef struct s_queue {
    char *name;
    uint32_t max_messages;
    bool drop_oldest;
    s_msg_t *head, *tail;
    uint32_t count;
    s_waiter_t *whead, *wtail;  //  Waiting consumers, oldest first
    uint32_t nwaiters;
    s_remote_t remote [S_MAX_REMOTE];
    bool want_dirty;            //  A WANT is due at the next flush
    struct s_queue *want_next;
} s_queue_t;

typedef struct {
    char *name;
    char *broker;               //  Where it polls ("" = here)
    int64_t expires_ms;
    s_msg_t *head, *tail;       //  Local subscribers only
    uint32_t count;
    s_waiter_t *waiter;
} s_sub_t;

typedef struct {
    char *name;
    s_sub_t *subs;
    size_t nsubs, cap;
} s_topic_t;

typedef struct qn_eph {
    qn_kernel_t *kernel;
    const qn_config_t *config;
    qn_eph_def_t def;           //  The host: where answers go
    char id [S_MAX_NAME + 1];   //  This broker in the mesh (MESH_ADVERTISED_HOST:MESH_PORT)
    qn_hashmap_t *queues;       //  hash (name) -> s_queue_t
    qn_hashmap_t *topics;       //  hash (name) -> s_topic_t
    qn_hashmap_t *inboxes;      //  inbox -> s_waiter_t (requests)
    uint64_t next_inbox, next_id;
    int64_t bytes;              //  Payload bytes held (+ S_OVERHEAD per message)
    uint64_t dropped, rejected, delivered, forwarded;
    qn_buf_t out;               //  Reusable
    //  Coalescing: WANTs and batched receives are sent once per pass of
    //  the actor's loop (a 0 ms timer), not once per change.
    s_queue_t *want_list;
    s_waiter_t *ready;
    bool flush_armed;
    //  With def.coalesce: the peer operations of this pass, back to back
    //  (one QN_MSG_MESH_EPH at the flush).
    msgpack_sbuffer peer_out;
} self_t;

// ------------------------------------------------------------------ helpers
static uint64_t
s_hash (const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t) s [i]) * 1099511628211ULL;
    return h ? h : 1;
}

static bool
s_is (const char *a, const char *b, size_t blen)
{
    return strlen (a) == blen && !memcmp (a, b, blen);
}

//  The name a client sees: a named tenant's key without its tenant.
static const char *
s_shown (const char *key)
{
    if (key [0] != S_SEP)
        return key;
    const char *p = strchr (key + 1, S_SEP);
    return p ? p + 1 : key;
}

static void
s_msg_free (self_t *self, s_msg_t *m)
{
    self->bytes -= (int64_t) (m->len + S_OVERHEAD);
    free (m->payload);
    free (m->reply_to);
    free (m->corr);
    free (m);
}

static s_msg_t *
s_msg_new (self_t *self, qn_eph_str_t payload, qn_eph_str_t reply_to, qn_eph_str_t corr)
{
    s_msg_t *m = qn_zalloc (sizeof *m);
    m->payload = qn_strndup (payload.ptr, payload.len);
    m->len = payload.len;
    m->reply_to = reply_to.len ? qn_strndup (reply_to.ptr, reply_to.len) : NULL;
    m->corr = corr.len ? qn_strndup (corr.ptr, corr.len) : NULL;
    m->id = ++self->next_id;
    self->bytes += (int64_t) (m->len + S_OVERHEAD);
    return m;
}

static bool
s_fits (self_t *self, size_t len)
{
    return self->bytes + (int64_t) (len + S_OVERHEAD) <= self->config->ephemeral_max_bytes;
}

//  Answers a call (status + JSON body) through the host.
static void
s_answer_to (self_t *self, const char *reply_to, uint64_t corr, int status, const char *json,
             size_t len)
{
    self->def.answer (self->def.arg, reply_to, corr, status, json, len);
}

//  Who made the call being handled.
typedef struct {
    const char *reply_to;
    uint64_t corr;
} s_caller_t;

static void
s_answer (self_t *self, const s_caller_t *env, int status, const char *json)
{
    s_answer_to (self, env->reply_to, env->corr, status, json, strlen (json));
}

static void
s_answer_error (self_t *self, const s_caller_t *env, int status, const char *msg)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_json_error_body (&b, msg);
    s_answer (self, env, status, b.data);
    qn_buf_free (&b);
}

static void s_arm_flush (self_t *self);

static void
s_peer_send (self_t *self, const qn_msg_eph_peer_t *op)
{
    if (self->def.coalesce) {
        qn_msg_eph_peer_encode (&self->peer_out, op);
        s_arm_flush (self);
        return;
    }
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_eph_peer_encode (&b, op);
    qn_send_body (self->kernel, "mesh", QN_MSG_MESH_EPH, 0, b.data, b.size);
    msgpack_sbuffer_destroy (&b);
}

static qn_eph_str_t
s_str_of (const char *s)
{
    return (qn_eph_str_t) { s, s ? strlen (s) : 0 };
}
#define S_STR(s) s_str_of (s)

// ------------------------------------------------------------------ queues
static s_queue_t *
s_queue (self_t *self, const char *name, size_t len, bool create)
{
    uint64_t h = s_hash (name, len);
    s_queue_t *q = qn_hashmap_get (self->queues, h);
    if (q)
        return s_is (q->name, name, len) ? q : NULL;
    if (!create)
        return NULL;
    q = qn_zalloc (sizeof *q);
    q->name = qn_strndup (name, len);
    q->max_messages = S_DEFAULT_MAX;
    qn_hashmap_put (self->queues, h, q);
    return q;
}

static void
s_waiter_unlink_queue (s_queue_t *q, s_waiter_t *w)
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
s_capacity (const s_queue_t *q)
{
    int64_t n = 0;
    for (const s_waiter_t *w = q->whead; w; w = w->next)
        n += w->max ? w->max - w->nbatch : 1;
    return n;
}

static void s_flush (void *host, void *arg);

static void
s_arm_flush (self_t *self)
{
    if (!self->flush_armed) {
        self->flush_armed = true;
        qn_timer_add (self->kernel, 0, 0, s_flush, self);
    }
}

static void
s_want_mark (self_t *self, s_queue_t *q)
{
    if (!q->want_dirty) {
        q->want_dirty = true;
        q->want_next = self->want_list;
        self->want_list = q;
    }
}

//  Tells the peers, at the next flush, what q's consumers here can take.
static void
s_want (self_t *self, s_queue_t *q)
{
    s_want_mark (self, q);
    s_arm_flush (self);
}

static void
s_want_send (self_t *self, s_queue_t *q)
{
    qn_msg_eph_peer_t op = {
        .kind = QN_EPH_WANT, .name = S_STR (q->name), .b = S_STR (self->id), .n = s_capacity (q)
    };
    s_peer_send (self, &op);
}

static void
s_message_json (qn_buf_t *b, const s_msg_t *m)
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

//  {"messages":[...]}: the answer of a receive with max; frees them.
static void
s_batch_json (self_t *self, qn_buf_t *b, s_msg_t *head)
{
    qn_buf_append (b, "{\"messages\":[", 13);
    for (s_msg_t *m = head, *next; m; m = next) {
        next = m->next;
        if (m != head)
            qn_buf_append (b, ",", 1);
        s_message_json (b, m);
        s_msg_free (self, m);
    }
    qn_buf_append (b, "]}", 2);
}

//  Hands m to the oldest local waiter of q (takes m); false when none
//  waits. A waiter with max collects messages until it is full or the
//  next flush, so a burst goes out as one answer. `offered`: m came in a
//  peer's OFFER, and that peer counted it against our last WANT already,
//  so the hand alone sends no new WANT (other peers learn at the next
//  one: a change they cannot count, or the repeat within a second).
static bool
s_hand_local (self_t *self, s_queue_t *q, s_msg_t *m, bool offered)
{
    s_waiter_t *w = q->whead;
    if (!w)
        return false;
    self->delivered++;
    if (w->max) {
        m->next = NULL;
        if (w->btail)
            w->btail->next = m;
        else
            w->bhead = m;
        w->btail = m;
        w->nbatch++;
        if (w->nbatch >= w->max)
            s_waiter_unlink_queue (q, w);
        if (!w->ready) {
            w->ready = true;
            w->ready_next = self->ready;
            self->ready = w;
        }
        if (offered)
            s_arm_flush (self);     //  Its answer; the flush tells the peers when it is gone
        else
            s_want (self, q);
        return true;
    }
    s_waiter_unlink_queue (q, w);
    qn_timer_cancel (self->kernel, w->timer);
    qn_buf_t b = QN_BUF_INIT;
    s_message_json (&b, m);
    s_answer_to (self, w->reply_to, w->corr, 200, b.data, b.len);
    qn_buf_free (&b);
    free (w);
    s_msg_free (self, m);
    if (!offered)
        s_want (self, q);
    return true;
}

//  The flush, at the end of a pass of the host's loop: batched receives
//  are answered, then WANTs go out (with def.coalesce, with every other
//  peer operation of the pass, as one message).
static void
s_flush (void *host, void *arg)
{
    (void) host;
    self_t *self = arg;
    while (self->ready) {
        s_waiter_t *w = self->ready;
        self->ready = w->ready_next;
        if (w->cancelled) {
            free (w);
            continue;
        }
        s_queue_t *q = w->owner;
        if (w->linked)
            s_waiter_unlink_queue (q, w);
        qn_timer_cancel (self->kernel, w->timer);
        qn_buf_reset (&self->out);
        s_batch_json (self, &self->out, w->bhead);
        s_answer_to (self, w->reply_to, w->corr, 200, self->out.data, self->out.len);
        free (w);
        s_want_mark (self, q);
    }
    while (self->want_list) {
        s_queue_t *q = self->want_list;
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
static s_remote_t *
s_remote_pick (s_queue_t *q)
{
    int64_t now = qn_now_ms ();
    for (int i = 0; i < S_MAX_REMOTE; i++)
        if (q->remote [i].id [0] && q->remote [i].count > 0 && now - q->remote [i].at_ms < S_REMOTE_TTL_MS)
            return &q->remote [i];
    return NULL;
}

//  Buffers m in q under the caps. 0, or the HTTP status of a refusal.
static int
s_buffer (self_t *self, s_queue_t *q, s_msg_t *m)
{
    //  m is counted in self->bytes already.
    while ((q->count >= q->max_messages || self->bytes > self->config->ephemeral_max_bytes)
        && q->drop_oldest && q->head) {
        s_msg_t *old = q->head;
        q->head = old->next;
        if (!q->head)
            q->tail = NULL;
        q->count--;
        s_msg_free (self, old);
        self->dropped++;
        qn_count (self->kernel, "ephemeral_dropped", 1);
    }
    if (q->count >= q->max_messages) {
        self->rejected++;
        return 429;
    }
    if (self->bytes > self->config->ephemeral_max_bytes) {
        self->rejected++;
        return 503;
    }
    if (q->tail)
        q->tail->next = m;
    else
        q->head = m;
    q->tail = m;
    q->count++;
    return 0;
}

//  Delivers a new message: a local waiter, else a peer's waiter, else the
//  buffer. Takes m. Returns "delivered", "forwarded", "queued", or NULL
//  with *status set (m freed).
static const char *
s_deliver (self_t *self, s_queue_t *q, s_msg_t *m, int *status)
{
    if (s_hand_local (self, q, m, false))
        return "delivered";
    s_remote_t *r = s_remote_pick (q);
    if (r) {
        qn_msg_eph_peer_t op = {
            .kind = QN_EPH_OFFER, .to = S_STR (r->id), .name = S_STR (q->name),
            .a = S_STR (m->reply_to), .b = S_STR (m->corr),
            .payload = { m->payload, m->len }
        };
        s_peer_send (self, &op);
        r->count--;             //  Until its next WANT says otherwise
        self->forwarded++;
        s_msg_free (self, m);
        return "forwarded";
    }
    *status = s_buffer (self, q, m);
    if (*status) {
        s_msg_free (self, m);
        return NULL;
    }
    return "queued";
}

static void
s_on_receive_expired (void *host, void *arg)
{
    (void) host;
    s_waiter_t *w = arg;
    self_t *self = w->eph;
    s_queue_t *q = w->owner;
    if (w->ready) {             //  It holds messages: the flush answers it
        if (w->linked)
            s_waiter_unlink_queue (q, w);
        return;
    }
    s_waiter_unlink_queue (q, w);
    s_answer_to (self, w->reply_to, w->corr, 204, "", 0);
    free (w);
    s_want (self, q);
}

// ------------------------------------------------------------------ requests
static void
s_on_request_expired (void *host, void *arg)
{
    (void) host;
    s_waiter_t *w = arg;
    self_t *self = w->eph;
    qn_hashmap_remove (self->inboxes, w->inbox);
    const char *body = "{\"error\":\"no reply within the timeout\"}";
    s_answer_to (self, w->reply_to, w->corr, 504, body, strlen (body));
    free (w->corr_id);
    free (w);
}

//  A reply for inbox n (this broker's): answers the requester. false when
//  no requester waits there (timed out, or never existed).
static bool
s_reply_local (self_t *self, uint64_t inbox, qn_eph_str_t corr, qn_eph_str_t payload,
               qn_eph_str_t tenant)
{
    s_waiter_t *w = qn_hashmap_get (self->inboxes, inbox);
    if (!w || !s_is (w->corr_id, corr.ptr, corr.len) || !s_is (w->tenant, tenant.ptr, tenant.len))
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
    s_answer_to (self, w->reply_to, w->corr, 200, b.data, b.len);
    qn_buf_free (&b);
    free (w->corr_id);
    free (w);
    return true;
}

//  "<n>@<broker>" into n and the broker; false when malformed.
static bool
s_inbox_parse (qn_eph_str_t s, uint64_t *n, qn_eph_str_t *broker)
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

// ------------------------------------------------------------------ topics
static s_topic_t *
s_topic (self_t *self, const char *name, size_t len, bool create)
{
    uint64_t h = s_hash (name, len);
    s_topic_t *t = qn_hashmap_get (self->topics, h);
    if (t)
        return s_is (t->name, name, len) ? t : NULL;
    if (!create)
        return NULL;
    t = qn_zalloc (sizeof *t);
    t->name = qn_strndup (name, len);
    qn_hashmap_put (self->topics, h, t);
    return t;
}

static s_sub_t *
s_sub_find (s_topic_t *t, const char *name, size_t len)
{
    for (size_t i = 0; i < t->nsubs; i++)
        if (s_is (t->subs [i].name, name, len))
            return &t->subs [i];
    return NULL;
}

static void
s_sub_clear (self_t *self, s_sub_t *s)
{
    while (s->head) {
        s_msg_t *m = s->head;
        s->head = m->next;
        s_msg_free (self, m);
    }
    s->tail = NULL;
    s->count = 0;
    if (s->waiter) {
        qn_timer_cancel (self->kernel, s->waiter->timer);
        s_answer_to (self, s->waiter->reply_to, s->waiter->corr, 204, "", 0);
        free (s->waiter);
        s->waiter = NULL;
    }
}

static void
s_sub_remove (self_t *self, s_topic_t *t, s_sub_t *s)
{
    s_sub_clear (self, s);
    free (s->name);
    free (s->broker);
    *s = t->subs [--t->nsubs];
    //  A moved subscriber's waiter points at its old slot.
    if (s != &t->subs [t->nsubs] && s->waiter)
        s->waiter->owner = s;
}

static s_sub_t *
s_sub_put (self_t *self, s_topic_t *t, qn_eph_str_t name, qn_eph_str_t broker, int64_t ttl_ms)
{
    (void) self;
    s_sub_t *s = s_sub_find (t, name.ptr, name.len);
    if (!s) {
        if (t->nsubs == S_MAX_SUBS)
            return NULL;
        if (t->nsubs == t->cap) {
            t->cap = t->cap ? t->cap * 2 : 8;
            t->subs = qn_realloc (t->subs, t->cap * sizeof *t->subs);
            for (size_t i = 0; i < t->nsubs; i++)
                if (t->subs [i].waiter)
                    t->subs [i].waiter->owner = &t->subs [i];
        }
        s = &t->subs [t->nsubs++];
        memset (s, 0, sizeof *s);
        s->name = qn_strndup (name.ptr, name.len);
        s->broker = qn_strndup (broker.ptr, broker.len);
    }
    else
    if (!s_is (s->broker, broker.ptr, broker.len)) {
        //  It moved to another broker: its mailbox here is gone.
        s_sub_clear (self, s);
        free (s->broker);
        s->broker = qn_strndup (broker.ptr, broker.len);
    }
    s->expires_ms = qn_now_ms () + ttl_ms;
    return s;
}

static void
s_topic_expire (self_t *self, s_topic_t *t)
{
    int64_t now = qn_now_ms ();
    for (size_t i = t->nsubs; i-- > 0;)
        if (t->subs [i].expires_ms <= now)
            s_sub_remove (self, t, &t->subs [i]);
}

static void
s_poll_answer (self_t *self, s_sub_t *s)
{
    s_waiter_t *w = s->waiter;
    s->waiter = NULL;
    qn_timer_cancel (self->kernel, w->timer);
    qn_buf_t b = QN_BUF_INIT;
    qn_buf_puts (&b, "{\"messages\":[");
    bool first = true;
    while (s->head) {
        s_msg_t *m = s->head;
        s->head = m->next;
        if (!first)
            qn_buf_putc (&b, ',');
        first = false;
        s_message_json (&b, m);
        s_msg_free (self, m);
    }
    s->tail = NULL;
    s->count = 0;
    qn_buf_puts (&b, "]}");
    s_answer_to (self, w->reply_to, w->corr, 200, b.data, b.len);
    qn_buf_free (&b);
    free (w);
}

//  Puts a published message in every present local subscriber's mailbox.
static int
s_publish_local (self_t *self, s_topic_t *t, qn_eph_str_t payload)
{
    s_topic_expire (self, t);
    int n = 0;
    for (size_t i = 0; i < t->nsubs; i++) {
        s_sub_t *s = &t->subs [i];
        if (s->broker [0] && strcmp (s->broker, self->id))
            continue;
        while ((s->count >= S_MAILBOX_MAX || !s_fits (self, payload.len)) && s->head) {
            s_msg_t *old = s->head;
            s->head = old->next;
            if (!s->head)
                s->tail = NULL;
            s->count--;
            s_msg_free (self, old);
            self->dropped++;
        }
        if (!s_fits (self, payload.len)) {
            self->rejected++;
            continue;
        }
        s_msg_t *m = s_msg_new (self, payload, (qn_eph_str_t) { 0 }, (qn_eph_str_t) { 0 });
        if (s->tail)
            s->tail->next = m;
        else
            s->head = m;
        s->tail = m;
        s->count++;
        n++;
        if (s->waiter)
            s_poll_answer (self, s);
    }
    return n;
}

static void
s_on_poll_expired (void *host, void *arg)
{
    (void) host;
    s_waiter_t *w = arg;
    self_t *self = w->eph;
    s_sub_t *s = w->owner;
    s->waiter = NULL;
    s_answer_to (self, w->reply_to, w->corr, 204, "", 0);
    free (w);
}

// ------------------------------------------------------------------ calls
static s_waiter_t *
s_waiter_new (self_t *self, const s_caller_t *env, s_wkind_t kind)
{
    s_waiter_t *w = qn_zalloc (sizeof *w);
    w->eph = self;
    w->kind = kind;
    snprintf (w->reply_to, sizeof w->reply_to, "%s", env->reply_to ? env->reply_to : "");
    w->corr = env->corr;
    return w;
}

typedef struct {
    qn_json_doc_t doc;
    qn_buf_t scratch;
    bool parsed;
} s_body_t;

//  The raw JSON of member key of object obj (NULL when absent).
static const char *
s_raw_in (s_body_t *b, int obj, const char *key, size_t *len)
{
    if (!b->parsed)
        return NULL;
    int tok = qn_json_get (&b->doc, obj, key);
    return tok < 0 ? NULL : qn_json_raw (&b->doc, tok, len);
}
#define s_raw(b, key, len) s_raw_in (b, 0, key, len)

//  A string member of object obj copied into out (NUL-terminated): 1, 0
//  when absent, -1 when not a short string without NUL.
static int
s_text_in (s_body_t *b, int obj, const char *key, char *out, size_t cap)
{
    if (!b->parsed)
        return 0;
    int tok = qn_json_get (&b->doc, obj, key);
    if (tok < 0 || qn_json_is_null (&b->doc, tok))
        return 0;
    qn_buf_reset (&b->scratch);
    if (qn_json_str (&b->doc, tok, &b->scratch) || b->scratch.len == 0 || b->scratch.len >= cap)
        return -1;
    memcpy (out, b->scratch.data, b->scratch.len + 1);
    return 1;
}
#define s_text(b, key, out, cap) s_text_in (b, 0, key, out, cap)

//  One reply of object obj: 0 delivered here, 1 forwarded to the inbox's
//  broker, 404 nobody waits on it here, 400 malformed.
static int
s_reply_one (self_t *self, s_body_t *b, int obj, qn_eph_str_t tenant)
{
    char reply_to [S_MAX_NAME + 32], corr [S_MAX_NAME + 1];
    uint64_t inbox;
    qn_eph_str_t broker;
    size_t plen = 0;
    const char *payload = s_raw_in (b, obj, "payload", &plen);
    if (s_text_in (b, obj, "replyTo", reply_to, sizeof reply_to) != 1
    ||  s_text_in (b, obj, "correlationId", corr, sizeof corr) != 1 || !payload
    ||  !s_inbox_parse (S_STR (reply_to), &inbox, &broker))
        return 400;
    if (s_is (self->id, broker.ptr, broker.len))
        return s_reply_local (self, inbox, S_STR (corr), (qn_eph_str_t) { payload, plen }, tenant) ? 0 : 404;
    qn_msg_eph_peer_t op = {
        .kind = QN_EPH_REPLY, .to = broker, .name = tenant, .a = S_STR (reply_to), .b = S_STR (corr),
        .payload = { payload, plen }
    };
    s_peer_send (self, &op);
    self->forwarded++;
    return 1;
}

static bool
s_int (s_body_t *b, const char *key, int64_t min, int64_t max, int64_t *out)
{
    if (!b->parsed)
        return true;
    int tok = qn_json_get (&b->doc, 0, key);
    if (tok < 0 || qn_json_is_null (&b->doc, tok))
        return true;
    return !qn_json_int (&b->doc, tok, out) && *out >= min && *out <= max;
}

static void
s_queue_json (qn_buf_t *out, const s_queue_t *q)
{
    qn_jw_t w;
    qn_jw_init (&w, out);
    qn_jw_obj (&w);
    qn_jw_kstr (&w, "queue", s_shown (q->name));
    qn_jw_kint (&w, "maxMessages", q->max_messages);
    qn_jw_kstr (&w, "overflow", q->drop_oldest ? "drop-oldest" : "reject");
    qn_jw_kint (&w, "buffered", q->count);
    qn_jw_kint (&w, "waiting", q->nwaiters);
    qn_jw_key (&w, "waitingElsewhere");
    qn_jw_obj (&w);
    int64_t now = qn_now_ms ();
    for (int i = 0; i < S_MAX_REMOTE; i++)
        if (q->remote [i].id [0] && now - q->remote [i].at_ms < S_REMOTE_TTL_MS)
            qn_jw_kint (&w, q->remote [i].id, q->remote [i].count);
    qn_jw_obj_end (&w);
    qn_jw_obj_end (&w);
}

static void
s_stats_json (self_t *self, qn_buf_t *out)
{
    qn_jw_t w;
    qn_jw_init (&w, out);
    qn_jw_obj (&w);
    qn_jw_kint (&w, "queues", (int64_t) qn_hashmap_size (self->queues));
    qn_jw_kint (&w, "topics", (int64_t) qn_hashmap_size (self->topics));
    qn_jw_kint (&w, "bytes", self->bytes);
    qn_jw_kint (&w, "maxBytes", self->config->ephemeral_max_bytes);
    qn_jw_kuint (&w, "delivered", self->delivered);
    qn_jw_kuint (&w, "forwarded", self->forwarded);
    qn_jw_kuint (&w, "dropped", self->dropped);
    qn_jw_kuint (&w, "rejected", self->rejected);
    qn_jw_obj_end (&w);
}

void *
qn_eph_call (qn_eph_t *self, const qn_msg_eph_call_t *call, const char *reply_to, uint64_t corr)
{
    qn_msg_eph_call_t c = *call;
    s_caller_t caller = { reply_to, corr }, *env = &caller;
    void *waits = NULL;
    if (c.tenant.len > S_MAX_TENANT || memchr (c.tenant.ptr, S_SEP, c.tenant.len)) {
        s_answer_error (self, env, 400, "tenant name is too long");
        return NULL;
    }
    s_body_t b = { .parsed = false };
    qn_json_doc_init (&b.doc);
    qn_buf_init (&b.scratch);
    //  Names are per tenant: a named tenant's are kept (and travel to the
    //  peers) as "\x1f<tenant>\x1f<name>", which no client name can spell.
    qn_eph_str_t shown = c.name;
    char key [S_MAX_KEY + 1];
    if (c.name.len > S_MAX_NAME || memchr (c.name.ptr, S_SEP, c.name.len)) {
        s_answer_error (self, env, 400, "name must be 1-255 bytes without the character U+001F");
        goto done;
    }
    if (c.name.len && c.tenant.len) {
        int n = snprintf (key, sizeof key, "%c%.*s%c%.*s", S_SEP, (int) c.tenant.len, c.tenant.ptr, S_SEP,
                          (int) c.name.len, c.name.ptr);
        c.name = (qn_eph_str_t) { key, (size_t) n };
    }
#define OP(s) s_is (s, c.op.ptr, c.op.len)
    bool needs_body = OP ("send") || OP ("request") || OP ("reply") || OP ("subscribe") || OP ("publish");
    if (c.body.len) {
        if (qn_json_parse (&b.doc, c.body.ptr, c.body.len, 64) || qn_json_type (&b.doc, 0) != QN_JSON_OBJECT) {
            s_answer_error (self, env, 400, "Invalid JSON: expected an object");
            goto done;
        }
        b.parsed = true;
    }
    else
    if (needs_body) {
        s_answer_error (self, env, 400, "Empty request body");
        goto done;
    }
    size_t plen = 0;
    const char *payload = s_raw (&b, "payload", &plen);
    qn_buf_reset (&self->out);
    if (OP ("configure")) {
        int64_t max = S_DEFAULT_MAX;
        char overflow [32] = "reject";
        if (!s_int (&b, "maxMessages", 1, 10000000, &max)
        ||  s_text (&b, "overflow", overflow, sizeof overflow) < 0
        ||  (strcmp (overflow, "reject") && strcmp (overflow, "drop-oldest"))) {
            s_answer_error (self, env, 400, "maxMessages must be 1..10000000 and overflow \"reject\" or \"drop-oldest\"");
            goto done;
        }
        s_queue_t *q = s_queue (self, c.name.ptr, c.name.len, true);
        if (!q) {
            s_answer_error (self, env, 409, "queue name collides with another; choose another name");
            goto done;
        }
        q->max_messages = (uint32_t) max;
        q->drop_oldest = !strcmp (overflow, "drop-oldest");
        s_queue_json (&self->out, q);
        s_answer (self, env, 200, self->out.data);
    }
    else
    if (OP ("send") || OP ("request")) {
        if (!payload) {
            s_answer_error (self, env, 400, "payload is required");
            goto done;
        }
        s_queue_t *q = s_queue (self, c.name.ptr, c.name.len, true);
        if (!q) {
            s_answer_error (self, env, 409, "queue name collides with another; choose another name");
            goto done;
        }
        if (!s_fits (self, plen) && !q->drop_oldest) {
            self->rejected++;
            s_answer_error (self, env, 503, "ephemeral memory is full (EPHEMERAL_MAX_BYTES)");
            goto done;
        }
        char reply_to [S_MAX_NAME + 32] = "", corr [S_MAX_NAME + 1] = "";
        int64_t timeout = c.timeout_ms;
        if (s_text (&b, "replyTo", reply_to, sizeof reply_to) < 0
        ||  s_text (&b, "correlationId", corr, sizeof corr) < 0
        ||  !s_int (&b, "timeout", 0, self->config->max_wait_ms, &timeout)) {
            s_answer_error (self, env, 400, "replyTo and correlationId must be non-empty strings; timeout 0..MAX_WAIT_MS");
            goto done;
        }
        s_waiter_t *w = NULL;
        if (OP ("request")) {
            w = s_waiter_new (self, env, W_REQUEST);
            snprintf (w->tenant, sizeof w->tenant, "%.*s", (int) c.tenant.len, c.tenant.ptr);
            w->inbox = ++self->next_inbox;
            snprintf (reply_to, sizeof reply_to, "%llu@%s", (unsigned long long) w->inbox, self->id);
            if (!corr [0])
                snprintf (corr, sizeof corr, "c-%llu", (unsigned long long) w->inbox);
            w->corr_id = qn_strdup (corr);
        }
        int status = 0;
        s_msg_t *m = s_msg_new (self, (qn_eph_str_t) { payload, plen }, S_STR (reply_to[0] ? reply_to : NULL),
                                S_STR (corr[0] ? corr : NULL));
        const char *how = s_deliver (self, q, m, &status);
        if (!how) {
            if (w) {
                free (w->corr_id);
                free (w);
            }
            s_answer_error (self, env, status, status == 429 ? "ephemeral queue is full (maxMessages)"
                                                             : "ephemeral memory is full (EPHEMERAL_MAX_BYTES)");
            goto done;
        }
        if (w) {
            qn_hashmap_put (self->inboxes, w->inbox, w);
            w->timer = qn_timer_add (self->kernel, (uint32_t) (timeout ? timeout : 1), 0,
                                     s_on_request_expired, w);
            waits = w;
            goto done;          //  Answered by the reply or the timeout
        }
        qn_jw_t jw;
        qn_jw_init (&jw, &self->out);
        qn_jw_obj (&jw);
        qn_jw_kstr (&jw, "status", how);
        qn_jw_obj_end (&jw);
        s_answer (self, env, 201, self->out.data);
    }
    else
    if (OP ("receive")) {
        s_queue_t *q = s_queue (self, c.name.ptr, c.name.len, true);
        if (!q) {
            s_answer_error (self, env, 409, "queue name collides with another; choose another name");
            goto done;
        }
        if (c.max < 0 || c.max > S_MAX_BATCH) {
            s_answer_error (self, env, 400, "max must be 1..1000");
            goto done;
        }
        if (q->head && c.max) {
            s_msg_t *head = q->head, *last = head;
            uint32_t n = 1;
            while ((int64_t) n < c.max && last->next) {
                last = last->next;
                n++;
            }
            q->head = last->next;
            if (!q->head)
                q->tail = NULL;
            last->next = NULL;
            q->count -= n;
            self->delivered += n;
            s_batch_json (self, &self->out, head);
            s_answer (self, env, 200, self->out.data);
            goto done;
        }
        if (q->head) {
            s_msg_t *m = q->head;
            q->head = m->next;
            if (!q->head)
                q->tail = NULL;
            q->count--;
            s_message_json (&self->out, m);
            s_msg_free (self, m);
            self->delivered++;
            s_answer (self, env, 200, self->out.data);
            goto done;
        }
        if (!c.timeout_ms)
            goto empty;
        s_waiter_t *w = s_waiter_new (self, env, W_RECEIVE);
        w->max = (uint32_t) c.max;
        w->linked = true;
        w->owner = q;
        w->prev = q->wtail;
        if (q->wtail)
            q->wtail->next = w;
        else
            q->whead = w;
        q->wtail = w;
        q->nwaiters++;
        w->timer = qn_timer_add (self->kernel, (uint32_t) c.timeout_ms, 0, s_on_receive_expired, w);
        waits = w;
        s_want (self, q);
    }
    else
    if (OP ("reply")) {
        int list = qn_json_get (&b.doc, 0, "replies");
        if (list >= 0) {
            //  A batch: {"replies": [{replyTo, correlationId, payload}, ...]}
            if (qn_json_type (&b.doc, list) != QN_JSON_ARRAY || qn_json_size (&b.doc, list) > S_MAX_BATCH) {
                s_answer_error (self, env, 400, "replies must be an array of at most 1000 replies");
                goto done;
            }
            for (int t = qn_json_first (&b.doc, list); t >= 0; t = qn_json_next_sibling (&b.doc, list, t))
                if (qn_json_type (&b.doc, t) != QN_JSON_OBJECT) {
                    s_answer_error (self, env, 400, "each reply is an object {replyTo, correlationId, payload}");
                    goto done;
                }
            int64_t delivered = 0, forwarded = 0, missing = 0, invalid = 0;
            for (int t = qn_json_first (&b.doc, list); t >= 0; t = qn_json_next_sibling (&b.doc, list, t)) {
                int r = s_reply_one (self, &b, t, c.tenant);
                delivered += r == 0;
                forwarded += r == 1;
                missing += r == 404;
                invalid += r == 400;
            }
            qn_jw_t jw;
            qn_jw_init (&jw, &self->out);
            qn_jw_obj (&jw);
            qn_jw_kint (&jw, "delivered", delivered);
            qn_jw_kint (&jw, "forwarded", forwarded);
            qn_jw_kint (&jw, "missing", missing);
            qn_jw_kint (&jw, "invalid", invalid);
            qn_jw_obj_end (&jw);
            s_answer (self, env, 202, self->out.data);
            goto done;
        }
        int r = s_reply_one (self, &b, 0, c.tenant);
        if (r == 400) {
            s_answer_error (self, env, 400, "replyTo (\"<inbox>@<broker>\"), correlationId and payload are required");
            goto done;
        }
        if (r == 404) {
            s_answer_error (self, env, 404, "no requester waits on this replyTo and correlationId (timed out?)");
            goto done;
        }
        qn_jw_t jw;
        qn_jw_init (&jw, &self->out);
        qn_jw_obj (&jw);
        qn_jw_kstr (&jw, "status", r ? "forwarded" : "delivered");
        qn_jw_obj_end (&jw);
        s_answer (self, env, 202, self->out.data);
    }
    else
    if (OP ("subscribe")) {
        char sub [S_MAX_NAME + 1];
        int64_t ttl = S_SUB_TTL_MS;
        if (s_text (&b, "subscriber", sub, sizeof sub) != 1 || !s_int (&b, "ttl", 0, 86400000, &ttl)) {
            s_answer_error (self, env, 400, "subscriber (a non-empty string) is required; ttl is 0..86400000 ms");
            goto done;
        }
        s_topic_t *t = s_topic (self, c.name.ptr, c.name.len, true);
        if (!t) {
            s_answer_error (self, env, 409, "topic name collides with another; choose another name");
            goto done;
        }
        if (ttl == 0) {
            s_sub_t *s = s_sub_find (t, sub, strlen (sub));
            if (s)
                s_sub_remove (self, t, s);
        }
        else
        if (!s_sub_put (self, t, S_STR (sub), S_STR (self->id), ttl)) {
            s_answer_error (self, env, 429, "too many subscribers on this topic");
            goto done;
        }
        qn_msg_eph_peer_t op = {
            .kind = QN_EPH_PRESENCE, .name = S_STR (t->name), .a = S_STR (sub), .b = S_STR (self->id),
            .n = ttl
        };
        s_peer_send (self, &op);
        qn_jw_t jw;
        qn_jw_init (&jw, &self->out);
        qn_jw_obj (&jw);
        qn_jw_kstr (&jw, "topic", s_shown (t->name));
        qn_jw_kstr (&jw, "subscriber", sub);
        qn_jw_kint (&jw, "expiresInMs", ttl);
        qn_jw_obj_end (&jw);
        s_answer (self, env, 200, self->out.data);
    }
    else
    if (OP ("subscribers")) {
        s_topic_t *t = s_topic (self, c.name.ptr, c.name.len, false);
        if (t)
            s_topic_expire (self, t);
        int64_t now = qn_now_ms ();
        qn_jw_t jw;
        qn_jw_init (&jw, &self->out);
        qn_jw_obj (&jw);
        qn_jw_key (&jw, "topic");
        qn_jw_strn (&jw, shown.ptr, shown.len);
        qn_jw_key (&jw, "subscribers");
        qn_jw_arr (&jw);
        for (size_t i = 0; t && i < t->nsubs; i++) {
            qn_jw_obj (&jw);
            qn_jw_kstr (&jw, "subscriber", t->subs [i].name);
            qn_jw_kstr (&jw, "broker", t->subs [i].broker);
            qn_jw_kint (&jw, "expiresInMs", t->subs [i].expires_ms - now);
            qn_jw_obj_end (&jw);
        }
        qn_jw_arr_end (&jw);
        qn_jw_obj_end (&jw);
        s_answer (self, env, 200, self->out.data);
    }
    else
    if (OP ("publish")) {
        if (!payload) {
            s_answer_error (self, env, 400, "payload is required");
            goto done;
        }
        s_topic_t *t = s_topic (self, c.name.ptr, c.name.len, true);
        if (!t) {
            s_answer_error (self, env, 409, "topic name collides with another; choose another name");
            goto done;
        }
        int local = s_publish_local (self, t, (qn_eph_str_t) { payload, plen });
        qn_msg_eph_peer_t op = {
            .kind = QN_EPH_PUBLISH, .name = S_STR (t->name), .payload = { payload, plen }
        };
        s_peer_send (self, &op);
        qn_jw_t jw;
        qn_jw_init (&jw, &self->out);
        qn_jw_obj (&jw);
        qn_jw_kint (&jw, "deliveredHere", local);
        qn_jw_kint (&jw, "subscribers", (int64_t) t->nsubs);
        qn_jw_obj_end (&jw);
        s_answer (self, env, 201, self->out.data);
    }
    else
    if (OP ("poll")) {
        s_topic_t *t = s_topic (self, c.name.ptr, c.name.len, false);
        if (t)
            s_topic_expire (self, t);
        s_sub_t *s = t && c.query.len ? s_sub_find (t, c.query.ptr, c.query.len) : NULL;
        if (!s || strcmp (s->broker, self->id)) {
            s_answer_error (self, env, 404, "subscriber not present on this broker: subscribe first (and renew before its ttl)");
            goto done;
        }
        if (s->waiter) {           //  A newer poll replaces an older one
            qn_timer_cancel (self->kernel, s->waiter->timer);
            s_on_poll_expired (self, s->waiter);
        }
        s->waiter = s_waiter_new (self, env, W_POLL);
        s->waiter->owner = s;
        if (s->head || !c.timeout_ms) {
            if (s->head)
                s_poll_answer (self, s);
            else {
                free (s->waiter);
                s->waiter = NULL;
                goto empty;
            }
            goto done;
        }
        s->waiter->timer = qn_timer_add (self->kernel, (uint32_t) c.timeout_ms, 0, s_on_poll_expired,
                                         s->waiter);
        waits = s->waiter;
    }
    else
    if (OP ("stats")) {
        s_stats_json (self, &self->out);
        s_answer (self, env, 200, self->out.data);
    }
    else
        s_answer_error (self, env, 404, "unknown ephemeral operation");
    goto done;
empty:
    s_answer (self, env, 204, "");
done:
#undef OP
    qn_json_doc_free (&b.doc);
    qn_buf_free (&b.scratch);
    qn_gauge_set (self->kernel, "ephemeral_bytes", self->bytes);
    return waits;
}

void
qn_eph_cancel (qn_eph_t *self, void *handle)
{
    s_waiter_t *w = handle;
    if (!w)
        return;
    qn_timer_cancel (self->kernel, w->timer);
    if (w->kind == W_REQUEST) {
        qn_hashmap_remove (self->inboxes, w->inbox);
        free (w->corr_id);
        free (w);
        return;
    }
    if (w->kind == W_POLL) {
        s_sub_t *s = w->owner;
        s->waiter = NULL;
        free (w);
        return;
    }
    s_queue_t *q = w->owner;
    if (w->linked)
        s_waiter_unlink_queue (q, w);
    if (w->ready) {
        //  Messages it took go back to the queue (another consumer, a
        //  peer's, or the tail of the buffer); the flush frees it.
        s_msg_t *m = w->bhead;
        w->bhead = w->btail = NULL;
        w->nbatch = 0;
        w->cancelled = true;
        while (m) {
            s_msg_t *next = m->next;
            m->next = NULL;
            self->delivered--;
            s_deliver (self, q, m, &(int) { 0 });
            m = next;
        }
    }
    else
        free (w);
    s_want (self, q);
    qn_gauge_set (self->kernel, "ephemeral_bytes", self->bytes);
}

// ------------------------------------------------------------------ from peers
static void s_peer_op (self_t *self, const qn_msg_eph_peer_t *op);

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

//  One operation of a peer.
static void
s_peer_op (self_t *self, const qn_msg_eph_peer_t *op_)
{
    qn_msg_eph_peer_t op = *op_;
    if (op.name.len > S_MAX_KEY || op.a.len > S_MAX_NAME + 32 || op.b.len > S_MAX_NAME)
        return;
    bool for_me = !op.to.len || s_is (self->id, op.to.ptr, op.to.len);
    if (!for_me)
        return;
    switch (op.kind) {
        case QN_EPH_WANT: {
            s_queue_t *q = s_queue (self, op.name.ptr, op.name.len, true);
            if (!q || !op.b.len)
                break;
            s_remote_t *free_slot = NULL, *r = NULL;
            for (int i = 0; i < S_MAX_REMOTE && !r; i++) {
                if (s_is (q->remote [i].id, op.b.ptr, op.b.len))
                    r = &q->remote [i];
                else
                if (!free_slot && (!q->remote [i].id [0] || qn_now_ms () - q->remote [i].at_ms > S_REMOTE_TTL_MS))
                    free_slot = &q->remote [i];
            }
            if (!r && (r = free_slot))
                snprintf (r->id, sizeof r->id, "%.*s", (int) op.b.len, op.b.ptr);
            if (r) {
                r->count = op.n;
                r->at_ms = qn_now_ms ();
            }
            //  Buffered messages here go to the consumers waiting there.
            while (r && r->count > 0 && q->head && !q->whead) {
                s_msg_t *m = q->head;
                q->head = m->next;
                if (!q->head)
                    q->tail = NULL;
                q->count--;
                s_deliver (self, q, m, &(int) { 0 });
            }
            break;
        }
        case QN_EPH_OFFER: {
            s_queue_t *q = s_queue (self, op.name.ptr, op.name.len, true);
            if (!q)
                break;
            s_msg_t *m = s_msg_new (self, op.payload, op.a, op.b);
            if (s_hand_local (self, q, m, true) || s_buffer (self, q, m) == 0)
                break;
            self->dropped++;
            s_msg_free (self, m);
            break;
        }
        case QN_EPH_REPLY: {
            uint64_t inbox;
            qn_eph_str_t broker;
            if (s_inbox_parse (op.a, &inbox, &broker) && s_is (self->id, broker.ptr, broker.len))
                s_reply_local (self, inbox, op.b, op.payload, op.name);     //  name: the replier's tenant
            break;
        }
        case QN_EPH_PRESENCE: {
            s_topic_t *t = s_topic (self, op.name.ptr, op.name.len, true);
            if (!t || !op.a.len)
                break;
            if (op.n <= 0) {
                s_sub_t *s = s_sub_find (t, op.a.ptr, op.a.len);
                if (s && s_is (s->broker, op.b.ptr, op.b.len))
                    s_sub_remove (self, t, s);
            }
            else
                s_sub_put (self, t, op.a, op.b, op.n);
            break;
        }
        case QN_EPH_PUBLISH: {
            s_topic_t *t = s_topic (self, op.name.ptr, op.name.len, false);
            if (t)
                s_publish_local (self, t, op.payload);
            break;
        }
        default:
            break;
    }
}

// ------------------------------------------------------------------ life
static void
s_want_each (void *arg, uint64_t key, void *value)
{
    (void) key;
    s_queue_t *q = value;
    if (q->nwaiters)
        s_want (arg, q);
}

//  Every second: repeat WANT for queues with waiting consumers (peers
//  believe one for S_REMOTE_TTL_MS; a lost one costs latency only).
static void
s_tick (void *host, void *arg)
{
    (void) host;
    self_t *self = arg;
    qn_hashmap_each (self->queues, s_want_each, self);
}

void
qn_eph_start (qn_eph_t *self)
{
    qn_timer_add (self->kernel, 1000, 1000, s_tick, self);
}

static void
s_free_queue (void *arg, uint64_t key, void *value)
{
    (void) key;
    self_t *self = arg;
    s_queue_t *q = value;
    while (q->head) {
        s_msg_t *m = q->head;
        q->head = m->next;
        s_msg_free (self, m);
    }
    while (q->whead) {
        s_waiter_t *w = q->whead;
        q->whead = w->next;
        free (w);
    }
    free (q->name);
    free (q);
}

static void
s_free_topic (void *arg, uint64_t key, void *value)
{
    (void) key;
    self_t *self = arg;
    s_topic_t *t = value;
    for (size_t i = 0; i < t->nsubs; i++) {
        s_sub_t *s = &t->subs [i];
        while (s->head) {
            s_msg_t *m = s->head;
            s->head = m->next;
            s_msg_free (self, m);
        }
        free (s->waiter);
        free (s->name);
        free (s->broker);
    }
    free (t->subs);
    free (t->name);
    free (t);
}

static void
s_free_inbox (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    s_waiter_t *w = value;
    free (w->corr_id);
    free (w);
}

void
qn_eph_destroy (qn_eph_t **self_p)
{
    self_t *self = *self_p;
    if (!self)
        return;
    while (self->ready) {
        s_waiter_t *w = self->ready;
        self->ready = w->ready_next;
        if (w->linked)
            s_waiter_unlink_queue (w->owner, w);
        for (s_msg_t *m = w->bhead, *next; m; m = next) {
            next = m->next;
            s_msg_free (self, m);
        }
        free (w);
    }
    qn_hashmap_each (self->queues, s_free_queue, self);
    qn_hashmap_each (self->topics, s_free_topic, self);
    qn_hashmap_each (self->inboxes, s_free_inbox, self);
    qn_hashmap_destroy (&self->queues);
    qn_hashmap_destroy (&self->topics);
    qn_hashmap_destroy (&self->inboxes);
    qn_buf_free (&self->out);
    msgpack_sbuffer_destroy (&self->peer_out);
    free (self);
    *self_p = NULL;
}

qn_eph_t *
qn_eph_new (qn_kernel_t *kernel, const qn_config_t *config, const qn_eph_def_t *def)
{
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    self->def = *def;
    snprintf (self->id, sizeof self->id, "%s:%lld", config->mesh_advertised_host,
              (long long) config->mesh_port);
    self->queues = qn_hashmap_new ();
    self->topics = qn_hashmap_new ();
    self->inboxes = qn_hashmap_new ();
    msgpack_sbuffer_init (&self->peer_out);
    return self;
}
