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
    routes answer from the codec's own thread: no hop per call); the unit
    tests host it inline (test/unit/test_eph_table.c).
    Sends     QN_MSG_MESH_EPH to the mesh; timers on the host's loop
    Owns      queues, buffered messages, waiting consumers and requesters,
              topics and subscribers' mailboxes; every byte is counted
              against EPHEMERAL_MAX_BYTES, every queue against its
              maxMessages
    Failure   over a queue's cap: 429 (overflow "reject") or the oldest is
              dropped ("drop-oldest"); over the broker's byte cap: 503; a
              message offered to a peer whose consumer left meanwhile waits
              in that peer's buffer (or is dropped there when it is full)
    Size      split at its seams (table_int.h lists the files): this one
              holds the table's life and the helpers the others share.
*/
#include "actors/ephemeral/table_int.h"
#include "wire/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------------ helpers
static uint64_t
s_hash (const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t) s [i]) * 1099511628211ULL;
    return h ? h : 1;
}

bool
qn_eph_is (const char *a, const char *b, size_t blen)
{
    return strlen (a) == blen && !memcmp (a, b, blen);
}

const char *
qn_eph_shown (const char *key)
{
    if (key [0] != QN_EPH_SEP)
        return key;
    const char *p = strchr (key + 1, QN_EPH_SEP);
    return p ? p + 1 : key;
}

void *
qn_eph_named (qn_hashmap_t *map, const char *name, size_t len, size_t create_size, bool *created)
{
    uint64_t h = s_hash (name, len);
    char **entry = qn_hashmap_get (map, h);
    if (entry)
        return qn_eph_is (*entry, name, len) ? entry : NULL;
    if (!create_size)
        return NULL;
    entry = qn_zalloc (create_size);
    *entry = qn_strndup (name, len);
    qn_hashmap_put (map, h, entry);
    *created = true;
    return entry;
}

void
qn_eph_msg_free (qn_eph_t *self, qn_eph_msg_t *m)
{
    self->bytes -= (int64_t) (m->len + QN_EPH_OVERHEAD);
    free (m->payload);
    free (m->reply_to);
    free (m->corr);
    free (m);
}

qn_eph_msg_t *
qn_eph_msg_new (qn_eph_t *self, qn_eph_str_t payload, qn_eph_str_t reply_to, qn_eph_str_t corr)
{
    qn_eph_msg_t *m = qn_zalloc (sizeof *m);
    m->payload = qn_strndup (payload.ptr, payload.len);
    m->len = payload.len;
    m->reply_to = reply_to.len ? qn_strndup (reply_to.ptr, reply_to.len) : NULL;
    m->corr = corr.len ? qn_strndup (corr.ptr, corr.len) : NULL;
    m->id = ++self->next_id;
    self->bytes += (int64_t) (m->len + QN_EPH_OVERHEAD);
    return m;
}

void
qn_eph_list_free (qn_eph_t *self, qn_eph_list_t *l)
{
    qn_eph_msg_t *m;
    while ((m = qn_eph_list_pop (l)))
        qn_eph_msg_free (self, m);
}

bool
qn_eph_fits (qn_eph_t *self, size_t len)
{
    return self->bytes + (int64_t) (len + QN_EPH_OVERHEAD) <= self->config->ephemeral_max_bytes;
}

void
qn_eph_answer_to (qn_eph_t *self, const char *reply_to, uint64_t corr, int status,
                  const char *json, size_t len)
{
    self->def.answer (self->def.arg, reply_to, corr, status, json, len);
}

void
qn_eph_answer (qn_eph_t *self, const qn_eph_caller_t *env, int status, const char *json)
{
    qn_eph_answer_to (self, env->reply_to, env->corr, status, json, strlen (json));
}

void
qn_eph_answer_error (qn_eph_t *self, const qn_eph_caller_t *env, int status, const char *msg)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_json_error_body (&b, msg);
    qn_eph_answer (self, env, status, b.data);
    qn_buf_free (&b);
}

void
qn_eph_peer_send (qn_eph_t *self, const qn_msg_eph_peer_t *op)
{
    if (self->def.coalesce) {
        qn_msg_eph_peer_encode (&self->peer_out, op);
        qn_eph_arm_flush (self);
        return;
    }
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_eph_peer_encode (&b, op);
    qn_send_body (self->kernel, "mesh", QN_MSG_MESH_EPH, 0, b.data, b.size);
    msgpack_sbuffer_destroy (&b);
}

// ------------------------------------------------------------------ life
static void
s_want_each (void *arg, uint64_t key, void *value)
{
    (void) key;
    qn_eph_queue_t *q = value;
    if (q->nwaiters)
        qn_eph_want (arg, q);
}

//  Every second: repeat WANT for queues with waiting consumers (peers
//  believe one for QN_EPH_REMOTE_TTL_MS; a lost one costs latency only).
static void
s_tick (void *host, void *arg)
{
    (void) host;
    qn_eph_t *self = arg;
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
    qn_eph_t *self = arg;
    qn_eph_queue_t *q = value;
    qn_eph_list_free (self, &q->msgs);
    while (q->whead) {
        qn_eph_waiter_t *w = q->whead;
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
    qn_eph_t *self = arg;
    qn_eph_topic_t *t = value;
    for (size_t i = 0; i < t->nsubs; i++) {
        qn_eph_sub_t *s = &t->subs [i];
        qn_eph_list_free (self, &s->mailbox);
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
    qn_eph_waiter_t *w = value;
    free (w->corr_id);
    free (w);
}

void
qn_eph_destroy (qn_eph_t **self_p)
{
    qn_eph_t *self = *self_p;
    if (!self)
        return;
    while (self->ready) {
        qn_eph_waiter_t *w = self->ready;
        self->ready = w->ready_next;
        if (w->linked)
            qn_eph_waiter_unlink (w->owner, w);
        qn_eph_list_free (self, &w->batch);
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
    qn_eph_t *self = qn_zalloc (sizeof *self);
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
