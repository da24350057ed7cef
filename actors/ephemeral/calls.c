/*  actors/ephemeral/calls.c - the ephemeral table's calls
    (actors/ephemeral/table_int.h; the table: table.c). qn_eph_call runs
    one operation of docs/ephemeral.md (configure, send, request, receive,
    reply, subscribe, subscribers, publish, poll, stats) on the table and
    answers it through the host, at once or when what it waits for comes;
    qn_eph_cancel forgets a waiting call whose caller left. The operations
    are a table (s_ops: name, handler, whether a body is required); each
    handler answers, or returns the handle of its wait.
    Failure   a bad call gets its HTTP status and {"error": ...}: 400
              (a bad body, name or tenant), 404 (no such operation, no
              requester, a subscriber not present here), 409 (a name whose
              hash another holds), 429 and 503 (queues.c's caps)
*/
#include "actors/ephemeral/table_int.h"
#include "wire/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------------ calls
static qn_eph_waiter_t *
s_waiter_new (qn_eph_t *self, const qn_eph_caller_t *env, qn_eph_wkind_t kind)
{
    qn_eph_waiter_t *w = qn_zalloc (sizeof *w);
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
s_reply_one (qn_eph_t *self, s_body_t *b, int obj, qn_eph_str_t tenant)
{
    char reply_to [QN_EPH_MAX_NAME + 32], corr [QN_EPH_MAX_NAME + 1];
    uint64_t inbox;
    qn_eph_str_t broker;
    size_t plen = 0;
    const char *payload = s_raw_in (b, obj, "payload", &plen);
    if (s_text_in (b, obj, "replyTo", reply_to, sizeof reply_to) != 1
    ||  s_text_in (b, obj, "correlationId", corr, sizeof corr) != 1 || !payload
    ||  !qn_eph_inbox_parse (QN_EPH_STR (reply_to), &inbox, &broker))
        return 400;
    if (qn_eph_is (self->id, broker.ptr, broker.len))
        return qn_eph_reply_local (self, inbox, QN_EPH_STR (corr), (qn_eph_str_t) { payload, plen }, tenant) ? 0 : 404;
    qn_msg_eph_peer_t op = {
        .kind = QN_EPH_REPLY, .to = broker, .name = tenant, .a = QN_EPH_STR (reply_to), .b = QN_EPH_STR (corr),
        .payload = { payload, plen }
    };
    qn_eph_peer_send (self, &op);
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
s_queue_json (qn_buf_t *out, const qn_eph_queue_t *q)
{
    qn_jw_t w;
    qn_jw_init (&w, out);
    qn_jw_obj (&w);
    qn_jw_kstr (&w, "queue", qn_eph_shown (q->name));
    qn_jw_kint (&w, "maxMessages", q->max_messages);
    qn_jw_kstr (&w, "overflow", q->drop_oldest ? "drop-oldest" : "reject");
    qn_jw_kint (&w, "buffered", q->msgs.count);
    qn_jw_kint (&w, "waiting", q->nwaiters);
    qn_jw_key (&w, "waitingElsewhere");
    qn_jw_obj (&w);
    int64_t now = qn_now_ms ();
    for (int i = 0; i < QN_EPH_MAX_REMOTE; i++)
        if (q->remote [i].id [0] && now - q->remote [i].at_ms < QN_EPH_REMOTE_TTL_MS)
            qn_jw_kint (&w, q->remote [i].id, q->remote [i].count);
    qn_jw_obj_end (&w);
    qn_jw_obj_end (&w);
}

static void
s_stats_json (qn_eph_t *self, qn_buf_t *out)
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

//  Answers {"status": what} (what a send or a reply did).
static void
s_answer_status (qn_eph_t *self, const qn_eph_caller_t *env, int status, const char *what)
{
    qn_jw_t jw;
    qn_jw_init (&jw, &self->out);
    qn_jw_obj (&jw);
    qn_jw_kstr (&jw, "status", what);
    qn_jw_obj_end (&jw);
    qn_eph_answer (self, env, status, self->out.data);
}

//  One call being run: its caller, the call (its name scoped by its
//  tenant), the name as the client spelled it, its parsed body.
typedef struct {
    qn_eph_caller_t caller;
    qn_msg_eph_call_t c;
    qn_eph_str_t shown;
    s_body_t b;
    const char *payload;        //  The body's "payload" (raw JSON), or NULL
    size_t plen;
} s_call_t;

//  An operation: answers the call and returns NULL, or returns the handle
//  of its wait (answered later).
typedef void *(s_op_fn) (qn_eph_t *self, s_call_t *k);

static void *
s_empty (qn_eph_t *self, const qn_eph_caller_t *env)
{
    qn_eph_answer (self, env, 204, "");
    return NULL;
}

//  configure: a queue's maxMessages and overflow policy (made if new).
static void *
s_op_configure (qn_eph_t *self, s_call_t *k)
{
    const qn_eph_caller_t *env = &k->caller;
    const qn_msg_eph_call_t c = k->c;
    s_body_t *b = &k->b;
    int64_t max = QN_EPH_DEFAULT_MAX;
    char overflow [32] = "reject";
    if (!s_int (b, "maxMessages", 1, 10000000, &max)
    ||  s_text (b, "overflow", overflow, sizeof overflow) < 0
    ||  (strcmp (overflow, "reject") && strcmp (overflow, "drop-oldest"))) {
        qn_eph_answer_error (self, env, 400, "maxMessages must be 1..10000000 and overflow \"reject\" or \"drop-oldest\"");
        return NULL;
    }
    qn_eph_queue_t *q = qn_eph_queue_get (self, c.name.ptr, c.name.len, true);
    if (!q) {
        qn_eph_answer_error (self, env, 409, "queue name collides with another; choose another name");
        return NULL;
    }
    q->max_messages = (uint32_t) max;
    q->drop_oldest = !strcmp (overflow, "drop-oldest");
    s_queue_json (&self->out, q);
    qn_eph_answer (self, env, 200, self->out.data);
    return NULL;
}

//  send, request: a message into a queue (a local consumer, a peer's, the
//  buffer); a request waits for its reply in an inbox of its own.
static void *
s_op_send (qn_eph_t *self, s_call_t *k)
{
    const qn_eph_caller_t *env = &k->caller;
    const qn_msg_eph_call_t c = k->c;
    s_body_t *b = &k->b;
    const char *payload = k->payload;
    size_t plen = k->plen;
    bool request = qn_eph_is ("request", c.op.ptr, c.op.len);
    if (!payload) {
        qn_eph_answer_error (self, env, 400, "payload is required");
        return NULL;
    }
    qn_eph_queue_t *q = qn_eph_queue_get (self, c.name.ptr, c.name.len, true);
    if (!q) {
        qn_eph_answer_error (self, env, 409, "queue name collides with another; choose another name");
        return NULL;
    }
    if (!qn_eph_fits (self, plen) && !q->drop_oldest) {
        self->rejected++;
        qn_eph_answer_error (self, env, 503, "ephemeral memory is full (EPHEMERAL_MAX_BYTES)");
        return NULL;
    }
    char reply_to [QN_EPH_MAX_NAME + 32] = "", corr [QN_EPH_MAX_NAME + 1] = "";
    int64_t timeout = c.timeout_ms;
    if (s_text (b, "replyTo", reply_to, sizeof reply_to) < 0
    ||  s_text (b, "correlationId", corr, sizeof corr) < 0
    ||  !s_int (b, "timeout", 0, self->config->max_wait_ms, &timeout)) {
        qn_eph_answer_error (self, env, 400, "replyTo and correlationId must be non-empty strings; timeout 0..MAX_WAIT_MS");
        return NULL;
    }
    qn_eph_waiter_t *w = NULL;
    if (request) {
        w = s_waiter_new (self, env, QN_EPH_W_REQUEST);
        snprintf (w->tenant, sizeof w->tenant, "%.*s", (int) c.tenant.len, c.tenant.ptr);
        w->inbox = ++self->next_inbox;
        snprintf (reply_to, sizeof reply_to, "%llu@%s", (unsigned long long) w->inbox, self->id);
        if (!corr [0])
            snprintf (corr, sizeof corr, "c-%llu", (unsigned long long) w->inbox);
        w->corr_id = qn_strdup (corr);
    }
    int status = 0;
    qn_eph_msg_t *m = qn_eph_msg_new (self, (qn_eph_str_t) { payload, plen },
                                      QN_EPH_STR (reply_to [0] ? reply_to : NULL),
                                      QN_EPH_STR (corr [0] ? corr : NULL));
    const char *how = qn_eph_deliver (self, q, m, &status);
    if (!how) {
        if (w) {
            free (w->corr_id);
            free (w);
        }
        qn_eph_answer_error (self, env, status, status == 429 ? "ephemeral queue is full (maxMessages)"
                                                              : "ephemeral memory is full (EPHEMERAL_MAX_BYTES)");
        return NULL;
    }
    if (w) {
        qn_hashmap_put (self->inboxes, w->inbox, w);
        w->timer = qn_timer_add (self->kernel, (uint32_t) (timeout ? timeout : 1), 0,
                                 qn_eph_on_request_expired, w);
        return w;           //  Answered by the reply or the timeout
    }
    s_answer_status (self, env, 201, how);
    return NULL;
}

//  receive: a buffered message (up to max of them), else a wait for one
//  (up to max, answered at the flush).
static void *
s_op_receive (qn_eph_t *self, s_call_t *k)
{
    const qn_eph_caller_t *env = &k->caller;
    const qn_msg_eph_call_t c = k->c;
    qn_eph_queue_t *q = qn_eph_queue_get (self, c.name.ptr, c.name.len, true);
    if (!q) {
        qn_eph_answer_error (self, env, 409, "queue name collides with another; choose another name");
        return NULL;
    }
    if (c.max < 0 || c.max > QN_EPH_MAX_BATCH) {
        qn_eph_answer_error (self, env, 400, "max must be 1..1000");
        return NULL;
    }
    if (q->msgs.head && c.max) {
        qn_eph_list_t taken = { 0 };
        while ((int64_t) taken.count < c.max && q->msgs.head)
            qn_eph_list_push (&taken, qn_eph_list_pop (&q->msgs));
        self->delivered += taken.count;
        qn_eph_batch_json (self, &self->out, &taken);
        qn_eph_answer (self, env, 200, self->out.data);
        return NULL;
    }
    if (q->msgs.head) {
        qn_eph_msg_t *m = qn_eph_list_pop (&q->msgs);
        qn_eph_message_json (&self->out, m);
        qn_eph_msg_free (self, m);
        self->delivered++;
        qn_eph_answer (self, env, 200, self->out.data);
        return NULL;
    }
    if (!c.timeout_ms)
        return s_empty (self, env);
    qn_eph_waiter_t *w = s_waiter_new (self, env, QN_EPH_W_RECEIVE);
    w->max = (uint32_t) c.max;
    qn_eph_waiter_link (q, w);
    w->timer = qn_timer_add (self->kernel, (uint32_t) c.timeout_ms, 0, qn_eph_on_receive_expired, w);
    qn_eph_want (self, q);
    return w;
}

//  reply: one reply, or a batch {"replies": [...]}, to requesters' inboxes
//  here or on their brokers.
static void *
s_op_reply (qn_eph_t *self, s_call_t *k)
{
    const qn_eph_caller_t *env = &k->caller;
    const qn_msg_eph_call_t c = k->c;
    s_body_t *b = &k->b;
    int list = qn_json_get (&b->doc, 0, "replies");
    if (list >= 0) {
        //  A batch: {"replies": [{replyTo, correlationId, payload}, ...]}
        if (qn_json_type (&b->doc, list) != QN_JSON_ARRAY || qn_json_size (&b->doc, list) > QN_EPH_MAX_BATCH) {
            qn_eph_answer_error (self, env, 400, "replies must be an array of at most 1000 replies");
            return NULL;
        }
        for (int t = qn_json_first (&b->doc, list); t >= 0; t = qn_json_next_sibling (&b->doc, list, t))
            if (qn_json_type (&b->doc, t) != QN_JSON_OBJECT) {
                qn_eph_answer_error (self, env, 400, "each reply is an object {replyTo, correlationId, payload}");
                return NULL;
            }
        int64_t delivered = 0, forwarded = 0, missing = 0, invalid = 0;
        for (int t = qn_json_first (&b->doc, list); t >= 0; t = qn_json_next_sibling (&b->doc, list, t)) {
            int r = s_reply_one (self, b, t, c.tenant);
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
        qn_eph_answer (self, env, 202, self->out.data);
        return NULL;
    }
    int r = s_reply_one (self, b, 0, c.tenant);
    if (r == 400) {
        qn_eph_answer_error (self, env, 400, "replyTo (\"<inbox>@<broker>\"), correlationId and payload are required");
        return NULL;
    }
    if (r == 404) {
        qn_eph_answer_error (self, env, 404, "no requester waits on this replyTo and correlationId (timed out?)");
        return NULL;
    }
    s_answer_status (self, env, 202, r ? "forwarded" : "delivered");
    return NULL;
}

//  subscribe: presence on a topic for ttl ms (0: leave), told to the peers.
static void *
s_op_subscribe (qn_eph_t *self, s_call_t *k)
{
    const qn_eph_caller_t *env = &k->caller;
    const qn_msg_eph_call_t c = k->c;
    s_body_t *b = &k->b;
    char sub [QN_EPH_MAX_NAME + 1];
    int64_t ttl = QN_EPH_SUB_TTL_MS;
    if (s_text (b, "subscriber", sub, sizeof sub) != 1 || !s_int (b, "ttl", 0, 86400000, &ttl)) {
        qn_eph_answer_error (self, env, 400, "subscriber (a non-empty string) is required; ttl is 0..86400000 ms");
        return NULL;
    }
    qn_eph_topic_t *t = qn_eph_topic_get (self, c.name.ptr, c.name.len, true);
    if (!t) {
        qn_eph_answer_error (self, env, 409, "topic name collides with another; choose another name");
        return NULL;
    }
    if (ttl == 0) {
        qn_eph_sub_t *s = qn_eph_sub_find (t, sub, strlen (sub));
        if (s)
            qn_eph_sub_remove (self, t, s);
    }
    else
    if (!qn_eph_sub_put (self, t, QN_EPH_STR (sub), QN_EPH_STR (self->id), ttl)) {
        qn_eph_answer_error (self, env, 429, "too many subscribers on this topic");
        return NULL;
    }
    qn_msg_eph_peer_t op = {
        .kind = QN_EPH_PRESENCE, .name = QN_EPH_STR (t->name), .a = QN_EPH_STR (sub),
        .b = QN_EPH_STR (self->id), .n = ttl
    };
    qn_eph_peer_send (self, &op);
    qn_jw_t jw;
    qn_jw_init (&jw, &self->out);
    qn_jw_obj (&jw);
    qn_jw_kstr (&jw, "topic", qn_eph_shown (t->name));
    qn_jw_kstr (&jw, "subscriber", sub);
    qn_jw_kint (&jw, "expiresInMs", ttl);
    qn_jw_obj_end (&jw);
    qn_eph_answer (self, env, 200, self->out.data);
    return NULL;
}

//  subscribers: a topic's present subscribers, cell-wide.
static void *
s_op_subscribers (qn_eph_t *self, s_call_t *k)
{
    const qn_eph_caller_t *env = &k->caller;
    const qn_msg_eph_call_t c = k->c;
    qn_eph_str_t shown = k->shown;
    qn_eph_topic_t *t = qn_eph_topic_get (self, c.name.ptr, c.name.len, false);
    if (t)
        qn_eph_topic_expire (self, t);
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
    qn_eph_answer (self, env, 200, self->out.data);
    return NULL;
}

//  publish: into every present local mailbox, and to the peers.
static void *
s_op_publish (qn_eph_t *self, s_call_t *k)
{
    const qn_eph_caller_t *env = &k->caller;
    const qn_msg_eph_call_t c = k->c;
    const char *payload = k->payload;
    size_t plen = k->plen;
    if (!payload) {
        qn_eph_answer_error (self, env, 400, "payload is required");
        return NULL;
    }
    qn_eph_topic_t *t = qn_eph_topic_get (self, c.name.ptr, c.name.len, true);
    if (!t) {
        qn_eph_answer_error (self, env, 409, "topic name collides with another; choose another name");
        return NULL;
    }
    int local = qn_eph_publish_local (self, t, (qn_eph_str_t) { payload, plen });
    qn_msg_eph_peer_t op = {
        .kind = QN_EPH_PUBLISH, .name = QN_EPH_STR (t->name), .payload = { payload, plen }
    };
    qn_eph_peer_send (self, &op);
    qn_jw_t jw;
    qn_jw_init (&jw, &self->out);
    qn_jw_obj (&jw);
    qn_jw_kint (&jw, "deliveredHere", local);
    qn_jw_kint (&jw, "subscribers", (int64_t) t->nsubs);
    qn_jw_obj_end (&jw);
    qn_eph_answer (self, env, 201, self->out.data);
    return NULL;
}

//  poll: a subscriber's mailbox here, or a wait on it (a newer poll
//  replaces an older one, answered 204).
static void *
s_op_poll (qn_eph_t *self, s_call_t *k)
{
    const qn_eph_caller_t *env = &k->caller;
    const qn_msg_eph_call_t c = k->c;
    qn_eph_topic_t *t = qn_eph_topic_get (self, c.name.ptr, c.name.len, false);
    if (t)
        qn_eph_topic_expire (self, t);
    qn_eph_sub_t *s = t && c.query.len ? qn_eph_sub_find (t, c.query.ptr, c.query.len) : NULL;
    if (!s || strcmp (s->broker, self->id)) {
        qn_eph_answer_error (self, env, 404, "subscriber not present on this broker: subscribe first (and renew before its ttl)");
        return NULL;
    }
    if (s->waiter) {           //  A newer poll replaces an older one
        qn_timer_cancel (self->kernel, s->waiter->timer);
        qn_eph_on_poll_expired (self, s->waiter);
    }
    s->waiter = s_waiter_new (self, env, QN_EPH_W_POLL);
    s->waiter->owner = s;
    if (s->mailbox.head) {
        qn_eph_poll_answer (self, s);
        return NULL;
    }
    if (!c.timeout_ms) {
        free (s->waiter);
        s->waiter = NULL;
        return s_empty (self, env);
    }
    s->waiter->timer = qn_timer_add (self->kernel, (uint32_t) c.timeout_ms, 0, qn_eph_on_poll_expired,
                                     s->waiter);
    return s->waiter;
}

//  stats: the table's counters.
static void *
s_op_stats (qn_eph_t *self, s_call_t *k)
{
    const qn_eph_caller_t *env = &k->caller;
    s_stats_json (self, &self->out);
    qn_eph_answer (self, env, 200, self->out.data);
    return NULL;
}

static const struct {
    const char *name;
    s_op_fn *fn;
    bool needs_body;            //  An empty body is a 400
} s_ops [] = {
    { "configure", s_op_configure, false },
    { "send", s_op_send, true },
    { "request", s_op_send, true },
    { "receive", s_op_receive, false },
    { "reply", s_op_reply, true },
    { "subscribe", s_op_subscribe, true },
    { "subscribers", s_op_subscribers, false },
    { "publish", s_op_publish, true },
    { "poll", s_op_poll, false },
    { "stats", s_op_stats, false },
};
#define S_OPS (sizeof s_ops / sizeof s_ops [0])

//  Parses the call's body and runs its operation (404 when unknown).
static void *
s_run (qn_eph_t *self, s_call_t *k)
{
    const qn_eph_caller_t *env = &k->caller;
    size_t i = 0;
    while (i < S_OPS && !qn_eph_is (s_ops [i].name, k->c.op.ptr, k->c.op.len))
        i++;
    if (k->c.body.len) {
        if (qn_json_parse (&k->b.doc, k->c.body.ptr, k->c.body.len, 64)
        ||  qn_json_type (&k->b.doc, 0) != QN_JSON_OBJECT) {
            qn_eph_answer_error (self, env, 400, "Invalid JSON: expected an object");
            return NULL;
        }
        k->b.parsed = true;
    }
    else
    if (i < S_OPS && s_ops [i].needs_body) {
        qn_eph_answer_error (self, env, 400, "Empty request body");
        return NULL;
    }
    k->payload = s_raw (&k->b, "payload", &k->plen);
    qn_buf_reset (&self->out);
    if (i == S_OPS) {
        qn_eph_answer_error (self, env, 404, "unknown ephemeral operation");
        return NULL;
    }
    return s_ops [i].fn (self, k);
}

void *
qn_eph_call (qn_eph_t *self, const qn_msg_eph_call_t *call, const char *reply_to, uint64_t corr)
{
    s_call_t k = { .caller = { reply_to, corr }, .c = *call, .shown = call->name };
    if (k.c.tenant.len > QN_EPH_MAX_TENANT || memchr (k.c.tenant.ptr, QN_EPH_SEP, k.c.tenant.len)) {
        qn_eph_answer_error (self, &k.caller, 400, "tenant name is too long");
        return NULL;
    }
    qn_json_doc_init (&k.b.doc);
    qn_buf_init (&k.b.scratch);
    void *waits = NULL;
    //  Names are per tenant: a named tenant's are kept (and travel to the
    //  peers) as "\x1f<tenant>\x1f<name>", which no client name can spell.
    char key [QN_EPH_MAX_KEY + 1];
    if (k.c.name.len > QN_EPH_MAX_NAME || memchr (k.c.name.ptr, QN_EPH_SEP, k.c.name.len))
        qn_eph_answer_error (self, &k.caller, 400, "name must be 1-255 bytes without the character U+001F");
    else {
        if (k.c.name.len && k.c.tenant.len) {
            int n = snprintf (key, sizeof key, "%c%.*s%c%.*s", QN_EPH_SEP, (int) k.c.tenant.len,
                              k.c.tenant.ptr, QN_EPH_SEP, (int) k.c.name.len, k.c.name.ptr);
            k.c.name = (qn_eph_str_t) { key, (size_t) n };
        }
        waits = s_run (self, &k);
    }
    qn_json_doc_free (&k.b.doc);
    qn_buf_free (&k.b.scratch);
    qn_gauge_set (self->kernel, "ephemeral_bytes", self->bytes);
    return waits;
}

void
qn_eph_cancel (qn_eph_t *self, void *handle)
{
    qn_eph_waiter_t *w = handle;
    if (!w)
        return;
    qn_timer_cancel (self->kernel, w->timer);
    if (w->kind == QN_EPH_W_REQUEST) {
        qn_hashmap_remove (self->inboxes, w->inbox);
        free (w->corr_id);
        free (w);
        return;
    }
    if (w->kind == QN_EPH_W_POLL) {
        qn_eph_sub_t *s = w->owner;
        s->waiter = NULL;
        free (w);
        return;
    }
    qn_eph_queue_t *q = w->owner;
    if (w->linked)
        qn_eph_waiter_unlink (q, w);
    if (w->ready) {
        //  Messages it took go back to the queue (another consumer, a
        //  peer's, or the tail of the buffer); the flush frees it.
        qn_eph_list_t taken = w->batch;
        w->batch = (qn_eph_list_t) { 0 };
        w->cancelled = true;
        for (qn_eph_msg_t *m; (m = qn_eph_list_pop (&taken));) {
            self->delivered--;
            qn_eph_deliver (self, q, m, &(int) { 0 });
        }
    }
    else
        free (w);
    qn_eph_want (self, q);
    qn_gauge_set (self->kernel, "ephemeral_bytes", self->bytes);
}

