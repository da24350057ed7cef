/*  actors/ephemeral/topics.c - the ephemeral table's presence topics
    (actors/ephemeral/table_int.h; the table: table.c). A topic's
    subscribers (local or on a peer, each with an expiry renewed by a new
    subscribe), the mailboxes of the local ones, publish (into every
    present local mailbox) and poll (a subscriber's wait on its mailbox).
    Failure   a full mailbox drops its oldest (QN_EPH_MAILBOX_MAX, or
              EPHEMERAL_MAX_BYTES); a message that still does not fit is
              not delivered to that subscriber (counted as rejected)
*/
#include "actors/ephemeral/table_int.h"

#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------------ topics
//  The topic named name (a key scoped by its tenant), made on first use
//  with create; NULL when absent, or when another name holds its hash.
qn_eph_topic_t *
qn_eph_topic_get (qn_eph_t *self, const char *name, size_t len, bool create)
{
    bool created = false;
    return qn_eph_named (self->topics, name, len, create ? sizeof (qn_eph_topic_t) : 0, &created);
}

qn_eph_sub_t *
qn_eph_sub_find (qn_eph_topic_t *t, const char *name, size_t len)
{
    for (size_t i = 0; i < t->nsubs; i++)
        if (qn_eph_is (t->subs [i].name, name, len))
            return &t->subs [i];
    return NULL;
}

static void
s_sub_clear (qn_eph_t *self, qn_eph_sub_t *s)
{
    qn_eph_list_free (self, &s->mailbox);
    if (s->waiter) {
        qn_timer_cancel (self->kernel, s->waiter->timer);
        qn_eph_answer_to (self, s->waiter->reply_to, s->waiter->corr, 204, "", 0);
        free (s->waiter);
        s->waiter = NULL;
    }
}

void
qn_eph_sub_remove (qn_eph_t *self, qn_eph_topic_t *t, qn_eph_sub_t *s)
{
    s_sub_clear (self, s);
    free (s->name);
    free (s->broker);
    *s = t->subs [--t->nsubs];
    //  A moved subscriber's waiter points at its old slot.
    if (s != &t->subs [t->nsubs] && s->waiter)
        s->waiter->owner = s;
}

qn_eph_sub_t *
qn_eph_sub_put (qn_eph_t *self, qn_eph_topic_t *t, qn_eph_str_t name, qn_eph_str_t broker,
                int64_t ttl_ms)
{
    (void) self;
    qn_eph_sub_t *s = qn_eph_sub_find (t, name.ptr, name.len);
    if (!s) {
        if (t->nsubs == QN_EPH_MAX_SUBS)
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
    if (!qn_eph_is (s->broker, broker.ptr, broker.len)) {
        //  It moved to another broker: its mailbox here is gone.
        s_sub_clear (self, s);
        free (s->broker);
        s->broker = qn_strndup (broker.ptr, broker.len);
    }
    s->expires_ms = qn_now_ms () + ttl_ms;
    return s;
}

void
qn_eph_topic_expire (qn_eph_t *self, qn_eph_topic_t *t)
{
    int64_t now = qn_now_ms ();
    for (size_t i = t->nsubs; i-- > 0;)
        if (t->subs [i].expires_ms <= now)
            qn_eph_sub_remove (self, t, &t->subs [i]);
}

//  Answers s's waiting poll with its whole mailbox (left empty).
void
qn_eph_poll_answer (qn_eph_t *self, qn_eph_sub_t *s)
{
    qn_eph_waiter_t *w = s->waiter;
    s->waiter = NULL;
    qn_timer_cancel (self->kernel, w->timer);
    qn_buf_t b = QN_BUF_INIT;
    qn_eph_batch_json (self, &b, &s->mailbox);
    qn_eph_answer_to (self, w->reply_to, w->corr, 200, b.data, b.len);
    qn_buf_free (&b);
    free (w);
}

//  Puts a published message in every present local subscriber's mailbox
//  (and answers its waiting poll). How many got it.
int
qn_eph_publish_local (qn_eph_t *self, qn_eph_topic_t *t, qn_eph_str_t payload)
{
    qn_eph_topic_expire (self, t);
    int n = 0;
    for (size_t i = 0; i < t->nsubs; i++) {
        qn_eph_sub_t *s = &t->subs [i];
        if (s->broker [0] && strcmp (s->broker, self->id))
            continue;
        while ((s->mailbox.count >= QN_EPH_MAILBOX_MAX || !qn_eph_fits (self, payload.len))
            && s->mailbox.head) {
            qn_eph_msg_free (self, qn_eph_list_pop (&s->mailbox));
            self->dropped++;
        }
        if (!qn_eph_fits (self, payload.len)) {
            self->rejected++;
            continue;
        }
        qn_eph_msg_t *m = qn_eph_msg_new (self, payload, (qn_eph_str_t) { 0 }, (qn_eph_str_t) { 0 });
        qn_eph_list_push (&s->mailbox, m);
        n++;
        if (s->waiter)
            qn_eph_poll_answer (self, s);
    }
    return n;
}

//  A waiting poll's timeout: 204.
void
qn_eph_on_poll_expired (void *host, void *arg)
{
    (void) host;
    qn_eph_waiter_t *w = arg;
    qn_eph_t *self = w->eph;
    qn_eph_sub_t *s = w->owner;
    s->waiter = NULL;
    qn_eph_answer_to (self, w->reply_to, w->corr, 204, "", 0);
    free (w);
}

