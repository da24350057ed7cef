/*  actors/kafka/group.c - the Kafka consumer-group coordinator
    (see actors/kafka/group.h; spec kafka.md §7).
    Groups move Empty -> PreparingRebalance -> CompletingRebalance ->
    Stable. A JoinGroup is held until every member has one (or the
    rebalance deadline drops the others); a follower's SyncGroup is held
    until the leader's arrives (or the deadline answers 27). One sweep
    timer (QN_KG_TICK_MS) runs the deadlines, session expiry and the expiry of
    member ids handed out with 79. Answers are queued and sent after the
    state change that produced them (an answer starts the connection's
    next request, which may come back here). OffsetCommit, OffsetFetch
    and FindCoordinator are answered in group_offsets.c (group_impl.h).
*/
#include "actors/kafka/group_impl.h"
#include "actors/pg/call.h"
#include "actors/pg/statements.h"
#include "wire/kafka_group.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------------ strings

static qn_kg_str_t
s_dup (qn_kstr_t s)
{
    int32_t n = s.len > 0 ? s.len : 0;
    qn_kg_str_t out = { qn_malloc ((size_t) n + 1), n };
    if (n)
        memcpy (out.p, s.ptr, (size_t) n);
    out.p [n] = 0;
    return out;
}

static void
s_str_free (qn_kg_str_t *s)
{
    free (s->p);
    s->p = NULL;
    s->len = 0;
}

static bool
s_is (qn_kg_str_t a, qn_kstr_t b)
{
    return b.len >= 0 && a.len == b.len && (a.len == 0 || memcmp (a.p, b.ptr, (size_t) a.len) == 0);
}

static bool
s_same (qn_kg_str_t a, qn_kg_str_t b)
{
    return s_is (a, (qn_kstr_t) { b.p, b.len });
}

static qn_kstr_t
s_k (qn_kg_str_t s)
{
    return (qn_kstr_t) { s.p ? s.p : "", s.len };
}

// ------------------------------------------------------------------ answers

void
qn_kg_flush (qn_kgroup_t *self)
{
    if (self->flushing)
        return;
    self->flushing = true;
    for (uint32_t i = 0; i < self->out_len; i++) {
        qn_kg_out_t o = self->out [i]; //  The array may grow meanwhile
        self->answer (self->owner, o.req, o.close ? NULL : &o.payload);
        qn_buf_free (&o.payload);
    }
    self->out_len = 0;
    self->flushing = false;
}

//  Queues an answer; returns its payload, started with the correlation id.
qn_buf_t *
qn_kg_out (qn_kgroup_t *self, void *req, int32_t corr)
{
    if (self->out_len == self->out_cap) {
        self->out_cap = self->out_cap ? self->out_cap * 2 : 16;
        self->out = qn_realloc (self->out, self->out_cap * sizeof *self->out);
    }
    qn_kg_out_t *o = &self->out [self->out_len++];
    *o = (qn_kg_out_t) { req, QN_BUF_INIT, false };
    qn_kw_i32 (&o->payload, corr);
    return &o->payload;
}

static void
s_out_close (qn_kgroup_t *self, void *req)
{
    qn_kg_out (self, req, 0)->len = 0;
    self->out [self->out_len - 1].close = true;
}

static void
s_answer_join (qn_kgroup_t *self, qn_kg_held_t *held, int16_t err, const qn_kg_group_t *g,
               qn_kstr_t member_id, bool with_members)
{
    qn_kafka_join_group_resp_t out = {
        0, err, -1, QN_KSTR (""), QN_KSTR (""), member_id, 0, NULL
    };
    qn_kafka_join_member_t *ms = NULL;
    if (err == 0 && g) {
        out.generation_id = g->generation;
        out.protocol_name = s_k (g->protocol);
        out.leader = s_k (g->leader);
        if (with_members) {
            ms = qn_zalloc ((g->member_count ? g->member_count : 1) * sizeof *ms);
            for (uint32_t i = 0; i < g->member_count; i++) {
                const qn_kg_member_t *m = g->members [i];
                ms [i].member_id = s_k (m->id);
                ms [i].group_instance_id = QN_KSTR_NULL;
                ms [i].metadata = QN_KSTR ("");
                for (int32_t k = 0; k < m->protocol_count; k++)
                    if (s_same (m->names [k], g->protocol))
                        ms [i].metadata = s_k (m->meta [k]);
            }
            out.member_count = (int32_t) g->member_count;
            out.members = ms;
        }
    }
    qn_kafka_join_group_resp_encode (qn_kg_out (self, held->req, held->corr), held->version, &out);
    free (ms);
    held->req = NULL;
}

static void
s_answer_sync (qn_kgroup_t *self, qn_kg_held_t *held, int16_t err, qn_kstr_t assignment)
{
    qn_kafka_sync_group_resp_t out = { 0, err, err ? QN_KSTR ("") : assignment };
    qn_kafka_sync_group_resp_encode (qn_kg_out (self, held->req, held->corr), held->version, &out);
    held->req = NULL;
}

static void
s_answer_error (qn_kgroup_t *self, void *req, const qn_kafka_req_header_t *h, int16_t err)
{
    qn_kafka_group_error_resp_t out = { 0, err };
    qn_kafka_group_error_resp_encode (qn_kg_out (self, req, h->correlation_id), h->api_version, &out);
}

// ------------------------------------------------------------------ groups

qn_kg_group_t *
qn_kg_group_find (qn_kgroup_t *self, qn_kstr_t id, uint32_t *index)
{
    for (uint32_t i = 0; i < self->group_count; i++)
        if (s_is (self->groups [i]->id, id)) {
            if (index)
                *index = i;
            return self->groups [i];
        }
    return NULL;
}

static qn_kg_group_t *
s_group_get (qn_kgroup_t *self, qn_kstr_t id)
{
    qn_kg_group_t *g = qn_kg_group_find (self, id, NULL);
    if (g)
        return g;
    g = qn_zalloc (sizeof *g);
    g->id = s_dup (id);
    g->state = QN_KG_EMPTY;
    if (self->group_count == self->group_cap) {
        self->group_cap = self->group_cap ? self->group_cap * 2 : 8;
        self->groups = qn_realloc (self->groups, self->group_cap * sizeof *self->groups);
    }
    self->groups [self->group_count++] = g;
    return g;
}

static void
s_member_free (qn_kg_member_t *m)
{
    s_str_free (&m->id);
    for (int32_t k = 0; k < m->protocol_count; k++) {
        s_str_free (&m->names [k]);
        s_str_free (&m->meta [k]);
    }
    free (m->names);
    free (m->meta);
    s_str_free (&m->assignment);
    free (m);
}

static void
s_group_free (qn_kg_group_t *g)
{
    for (uint32_t i = 0; i < g->member_count; i++)
        s_member_free (g->members [i]);
    free (g->members);
    for (uint32_t i = 0; i < g->pending_count; i++)
        s_str_free (&g->pending [i].id);
    free (g->pending);
    s_str_free (&g->id);
    s_str_free (&g->protocol_type);
    s_str_free (&g->protocol);
    s_str_free (&g->leader);
    free (g);
}

qn_kg_member_t *
qn_kg_member_find (const qn_kg_group_t *g, qn_kstr_t id, uint32_t *index)
{
    for (uint32_t i = 0; g && i < g->member_count; i++)
        if (s_is (g->members [i]->id, id)) {
            if (index)
                *index = i;
            return g->members [i];
        }
    return NULL;
}

//  Removes member i (answers nothing; its held requests must be answered).
static void
s_member_remove (qn_kg_group_t *g, uint32_t i)
{
    s_member_free (g->members [i]);
    memmove (&g->members [i], &g->members [i + 1], (g->member_count - i - 1) * sizeof *g->members);
    g->member_count--;
}

static int32_t
s_max_rebalance_ms (const qn_kg_group_t *g)
{
    int32_t ms = 0;
    for (uint32_t i = 0; i < g->member_count; i++)
        if (g->members [i]->rebalance_ms > ms)
            ms = g->members [i]->rebalance_ms;
    return ms;
}

//  Back to Empty: no member left.
static void
s_group_empty (qn_kg_group_t *g)
{
    g->state = QN_KG_EMPTY;
    g->generation++;
    s_str_free (&g->protocol);
    s_str_free (&g->leader);
    s_str_free (&g->protocol_type);
}

//  The chosen protocol: the first of the leader's that every member offers.
static bool
s_choose_protocol (qn_kg_group_t *g, const qn_kg_member_t *leader)
{
    for (int32_t k = 0; k < leader->protocol_count; k++) {
        bool all = true;
        for (uint32_t i = 0; i < g->member_count && all; i++) {
            const qn_kg_member_t *m = g->members [i];
            bool has = false;
            for (int32_t j = 0; j < m->protocol_count && !has; j++)
                has = s_same (m->names [j], leader->names [k]);
            all = has;
        }
        if (all) {
            s_str_free (&g->protocol);
            g->protocol = s_dup (s_k (leader->names [k]));
            return true;
        }
    }
    return false;
}

//  The join phase ends: members without a held JoinGroup leave, the
//  generation moves on, every held join is answered (§7 step 5).
static void
s_complete_join (qn_kgroup_t *self, qn_kg_group_t *g)
{
    for (uint32_t i = g->member_count; i-- > 0;)
        if (!g->members [i]->join.req) {
            if (g->members [i]->sync.req)
                s_answer_sync (self, &g->members [i]->sync, QN_KAFKA_REBALANCE_IN_PROGRESS, QN_KSTR (""));
            s_member_remove (g, i);
        }
    if (g->member_count == 0) {
        s_group_empty (g);
        return;
    }
    const qn_kg_member_t *leader = qn_kg_member_find (g, s_k (g->leader), NULL);
    if (!leader || !g->leader.p) {
        leader = g->members [0];
        for (uint32_t i = 1; i < g->member_count; i++)
            if (g->members [i]->order < leader->order)
                leader = g->members [i];
        s_str_free (&g->leader);
        g->leader = s_dup (s_k (leader->id));
    }
    if (!s_choose_protocol (g, leader)) {
        //  Cannot happen after the join checks; refuse everyone rather than guess.
        while (g->member_count) {
            qn_kg_member_t *m = g->members [g->member_count - 1];
            s_answer_join (self, &m->join, QN_KAFKA_INCONSISTENT_GROUP_PROTOCOL, g, s_k (m->id), false);
            s_member_remove (g, g->member_count - 1);
        }
        s_group_empty (g);
        return;
    }
    g->generation++;
    g->state = QN_KG_COMPLETING;
    int64_t now = qn_now_ms ();
    g->sync_deadline = now + s_max_rebalance_ms (g);
    for (uint32_t i = 0; i < g->member_count; i++) {
        qn_kg_member_t *m = g->members [i];
        s_str_free (&m->assignment);
        m->last_seen = now;
        s_answer_join (self, &m->join, 0, g, s_k (m->id), s_same (m->id, g->leader));
    }
    qn_count (self->kernel, "kafka_group_rebalances", 1);
}

//  Completes the join phase once every member has a held JoinGroup.
static void
s_check_join (qn_kgroup_t *self, qn_kg_group_t *g)
{
    if (g->state != QN_KG_PREPARING)
        return;
    for (uint32_t i = 0; i < g->member_count; i++)
        if (!g->members [i]->join.req)
            return;
    s_complete_join (self, g);
}

//  Starts a rebalance (or goes Empty when no member is left).
static void
s_prepare (qn_kgroup_t *self, qn_kg_group_t *g)
{
    if (g->member_count == 0) {
        if (g->state != QN_KG_EMPTY)
            s_group_empty (g);
        return;
    }
    if (g->state != QN_KG_PREPARING) {
        for (uint32_t i = 0; i < g->member_count; i++)
            if (g->members [i]->sync.req)
                s_answer_sync (self, &g->members [i]->sync, QN_KAFKA_REBALANCE_IN_PROGRESS, QN_KSTR (""));
        g->state = QN_KG_PREPARING;
        g->join_deadline = qn_now_ms () + s_max_rebalance_ms (g);
    }
    s_check_join (self, g);
}

//  Member i leaves (LeaveGroup, session expiry): its held requests get
//  25, the others rebalance.
static void
s_member_leaves (qn_kgroup_t *self, qn_kg_group_t *g, uint32_t i)
{
    qn_kg_member_t *m = g->members [i];
    if (m->join.req)
        s_answer_join (self, &m->join, QN_KAFKA_UNKNOWN_MEMBER_ID, g, s_k (m->id), false);
    if (m->sync.req)
        s_answer_sync (self, &m->sync, QN_KAFKA_UNKNOWN_MEMBER_ID, QN_KSTR (""));
    s_member_remove (g, i);
    s_prepare (self, g);
}

static void s_tick (void *self_, void *arg);

static void
s_timer_start (qn_kgroup_t *self)
{
    if (!self->timer)
        self->timer = qn_timer_add (self->kernel, QN_KG_TICK_MS, QN_KG_TICK_MS, s_tick, self);
}

// ------------------------------------------------------------------ sweep

static void
s_tick (void *self_, void *arg)
{
    (void) self_;
    qn_kgroup_t *self = arg;
    int64_t now = qn_now_ms ();
    for (uint32_t gi = 0; gi < self->group_count;) {
        qn_kg_group_t *g = self->groups [gi];
        for (uint32_t i = 0; i < g->pending_count;)
            if (g->pending [i].expires <= now) {
                s_str_free (&g->pending [i].id);
                g->pending [i] = g->pending [--g->pending_count];
            }
            else
                i++;
        if (g->state == QN_KG_PREPARING && now >= g->join_deadline)
            s_complete_join (self, g);
        else
        if (g->state == QN_KG_COMPLETING && now >= g->sync_deadline) {
            //  The leader never sent its assignment: everyone rejoins.
            g->state = QN_KG_STABLE;
            s_prepare (self, g);
        }
        //  Session expiry; time inside a held request does not count.
        for (uint32_t i = 0; i < g->member_count;) {
            qn_kg_member_t *m = g->members [i];
            if (!m->join.req && !m->sync.req && now - m->last_seen > m->session_ms) {
                qn_info ("kafka group %s: member %s expired", g->id.p, m->id.p);
                s_member_leaves (self, g, i);
                i = 0;
            }
            else
                i++;
        }
        if (g->state == QN_KG_EMPTY && g->member_count == 0 && g->pending_count == 0) {
            s_group_free (g);
            self->groups [gi] = self->groups [--self->group_count];
        }
        else
            gi++;
    }
    qn_kg_flush (self);
}

// ------------------------------------------------------------------ JoinGroup

bool
qn_kg_bad_group_id (qn_kstr_t id)
{
    return id.len <= 0 || qn_kstr_eq (id, QN_KSTR (QN_KG_RESERVED_GROUP));
}

//  A fresh member id: client_id "-" uuid4.
static qn_kg_str_t
s_new_member_id (qn_kstr_t client_id)
{
    uint8_t u [16];
    randombytes_buf (u, sizeof u);
    u [6] = (uint8_t) ((u [6] & 0x0f) | 0x40);
    u [8] = (uint8_t) ((u [8] & 0x3f) | 0x80);
    int32_t cl = client_id.len > 0 ? (client_id.len > 200 ? 200 : client_id.len) : 0;
    char tmp [256 + 40];
    memcpy (tmp, client_id.ptr ? client_id.ptr : "", (size_t) cl);
    int n = cl;
    n += snprintf (tmp + n, sizeof tmp - (size_t) n, "-");
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            tmp [n++] = '-';
        n += snprintf (tmp + n, sizeof tmp - (size_t) n, "%02x", u [i]);
    }
    return s_dup ((qn_kstr_t) { tmp, n });
}

//  True if some protocol of the request is offered by every member but
//  `except` (the requester itself).
static bool
s_protocols_fit (const qn_kg_group_t *g, const qn_kafka_join_group_req_t *jr, const qn_kg_member_t *except)
{
    for (int32_t k = 0; k < jr->protocol_count; k++) {
        bool all = true;
        for (uint32_t i = 0; i < g->member_count && all; i++) {
            const qn_kg_member_t *m = g->members [i];
            if (m == except)
                continue;
            bool has = false;
            for (int32_t j = 0; j < m->protocol_count && !has; j++)
                has = s_is (m->names [j], jr->protocols [k].name);
            all = has;
        }
        if (all)
            return true;
    }
    return false;
}

static void
s_join (qn_kgroup_t *self, void *req, const qn_kafka_req_header_t *h, const qn_kafka_join_group_req_t *jr)
{
    qn_kg_held_t now_held = { req, h->api_version, h->correlation_id };
    int16_t err = 0;
    int32_t session = jr->session_timeout_ms;
    if (qn_kg_bad_group_id (jr->group_id))
        err = QN_KAFKA_INVALID_GROUP_ID;
    else
    if (jr->group_instance_id.len >= 0)
        err = QN_KAFKA_INVALID_REQUEST;     //  Static membership (D-K3)
    else
    if (session < self->config->kafka_group_min_session_ms || session > self->config->kafka_group_max_session_ms)
        err = QN_KAFKA_INVALID_SESSION_TIMEOUT;
    else
    if (jr->protocol_count == 0)
        err = QN_KAFKA_INCONSISTENT_GROUP_PROTOCOL;
    else
    if (self->stopping)
        err = QN_KAFKA_COORDINATOR_NOT_AVAILABLE;
    qn_kg_group_t *g = err ? NULL : qn_kg_group_find (self, jr->group_id, NULL);
    qn_kg_member_t *m = g && jr->member_id.len > 0 ? qn_kg_member_find (g, jr->member_id, NULL) : NULL;
    if (!err && g && g->member_count > 0
     && (!s_is (g->protocol_type, jr->protocol_type) || !s_protocols_fit (g, jr, m)))
        err = QN_KAFKA_INCONSISTENT_GROUP_PROTOCOL;
    if (err) {
        s_answer_join (self, &now_held, err, NULL, jr->member_id, false);
        return;
    }
    g = s_group_get (self, jr->group_id);
    qn_kg_str_t new_id = { NULL, 0 };
    if (jr->member_id.len == 0) {
        new_id = s_new_member_id (h->client_id);
        if (h->api_version >= 4) {
            //  KIP-394: hand out the id, the client rejoins with it.
            if (g->pending_count == g->pending_cap) {
                g->pending_cap = g->pending_cap ? g->pending_cap * 2 : 4;
                g->pending = qn_realloc (g->pending, g->pending_cap * sizeof *g->pending);
            }
            g->pending [g->pending_count++] = (qn_kg_pending_t) { new_id, qn_now_ms () + session };
            s_answer_join (self, &now_held, QN_KAFKA_MEMBER_ID_REQUIRED, NULL, s_k (new_id), false);
            return;
        }
    }
    else
    if (!m) {
        uint32_t i;
        for (i = 0; i < g->pending_count; i++)
            if (s_is (g->pending [i].id, jr->member_id))
                break;
        if (i == g->pending_count) {
            s_answer_join (self, &now_held, QN_KAFKA_UNKNOWN_MEMBER_ID, NULL, jr->member_id, false);
            return;
        }
        new_id = g->pending [i].id;
        g->pending [i] = g->pending [--g->pending_count];
    }
    if (!m) {
        m = qn_zalloc (sizeof *m);
        m->id = new_id;
        m->order = ++self->next_order;
        if (g->member_count == g->member_cap) {
            g->member_cap = g->member_cap ? g->member_cap * 2 : 4;
            g->members = qn_realloc (g->members, g->member_cap * sizeof *g->members);
        }
        g->members [g->member_count++] = m;
        if (g->member_count == 1) {
            s_str_free (&g->protocol_type);
            g->protocol_type = s_dup (jr->protocol_type);
        }
    }
    //  Record (or refresh) the member and its protocols.
    for (int32_t k = 0; k < m->protocol_count; k++) {
        s_str_free (&m->names [k]);
        s_str_free (&m->meta [k]);
    }
    free (m->names);
    free (m->meta);
    m->protocol_count = jr->protocol_count;
    m->names = qn_zalloc ((size_t) jr->protocol_count * sizeof *m->names);
    m->meta = qn_zalloc ((size_t) jr->protocol_count * sizeof *m->meta);
    for (int32_t k = 0; k < jr->protocol_count; k++) {
        m->names [k] = s_dup (jr->protocols [k].name);
        m->meta [k] = s_dup (jr->protocols [k].metadata);
    }
    m->session_ms = session;
    m->rebalance_ms = jr->rebalance_timeout_ms > 0 ? jr->rebalance_timeout_ms : session;
    m->last_seen = qn_now_ms ();
    if (m->join.req)            //  A join replaced by a newer one
        s_answer_join (self, &m->join, QN_KAFKA_REBALANCE_IN_PROGRESS, NULL, s_k (m->id), false);
    m->join = now_held;
    s_prepare (self, g);
}

// ------------------------------------------------------------------ SyncGroup / Heartbeat / LeaveGroup

static void
s_sync (qn_kgroup_t *self, void *req, const qn_kafka_req_header_t *h, const qn_kafka_sync_group_req_t *sr)
{
    qn_kg_held_t held = { req, h->api_version, h->correlation_id };
    qn_kg_group_t *g = qn_kg_group_find (self, sr->group_id, NULL);
    qn_kg_member_t *m = qn_kg_member_find (g, sr->member_id, NULL);
    int16_t err = 0;
    if (sr->group_instance_id.len >= 0)
        err = QN_KAFKA_INVALID_REQUEST;
    else
    if (!m)
        err = QN_KAFKA_UNKNOWN_MEMBER_ID;
    else
    if (sr->generation_id != g->generation)
        err = QN_KAFKA_ILLEGAL_GENERATION;
    else
    if (g->state == QN_KG_PREPARING)
        err = QN_KAFKA_REBALANCE_IN_PROGRESS;
    else
    if (g->state == QN_KG_COMPLETING && self->stopping)
        err = QN_KAFKA_COORDINATOR_NOT_AVAILABLE;
    if (err) {
        s_answer_sync (self, &held, err, QN_KSTR (""));
        return;
    }
    m->last_seen = qn_now_ms ();
    if (g->state == QN_KG_STABLE) {
        s_answer_sync (self, &held, 0, s_k (m->assignment));
        return;
    }
    if (m->sync.req)
        s_answer_sync (self, &m->sync, QN_KAFKA_REBALANCE_IN_PROGRESS, QN_KSTR (""));
    m->sync = held;
    if (!s_same (m->id, g->leader))
        return;                 //  A follower waits for the leader
    for (uint32_t i = 0; i < g->member_count; i++)
        s_str_free (&g->members [i]->assignment);
    for (int32_t a = 0; a < sr->assignment_count; a++) {
        qn_kg_member_t *to = qn_kg_member_find (g, sr->assignments [a].member_id, NULL);
        if (to) {
            s_str_free (&to->assignment);
            to->assignment = s_dup (sr->assignments [a].assignment);
        }
    }
    g->state = QN_KG_STABLE;
    int64_t now = qn_now_ms ();
    for (uint32_t i = 0; i < g->member_count; i++) {
        qn_kg_member_t *x = g->members [i];
        if (x->sync.req) {
            x->last_seen = now;
            s_answer_sync (self, &x->sync, 0, s_k (x->assignment));
        }
    }
}

static void
s_heartbeat (qn_kgroup_t *self, void *req, const qn_kafka_req_header_t *h, const qn_kafka_heartbeat_req_t *hr)
{
    qn_kg_group_t *g = qn_kg_group_find (self, hr->group_id, NULL);
    qn_kg_member_t *m = qn_kg_member_find (g, hr->member_id, NULL);
    int16_t err = 0;
    if (hr->group_instance_id.len >= 0)
        err = QN_KAFKA_INVALID_REQUEST;
    else
    if (!m)
        err = QN_KAFKA_UNKNOWN_MEMBER_ID;
    else
    if (hr->generation_id != g->generation)
        err = QN_KAFKA_ILLEGAL_GENERATION;
    else
    if (g->state == QN_KG_PREPARING)
        err = QN_KAFKA_REBALANCE_IN_PROGRESS;
    if (m)
        m->last_seen = qn_now_ms ();
    s_answer_error (self, req, h, err);
}

static void
s_leave (qn_kgroup_t *self, void *req, const qn_kafka_req_header_t *h, const qn_kafka_heartbeat_req_t *lr)
{
    qn_kg_group_t *g = qn_kg_group_find (self, lr->group_id, NULL);
    uint32_t i;
    if (!qn_kg_member_find (g, lr->member_id, &i)) {
        s_answer_error (self, req, h, QN_KAFKA_UNKNOWN_MEMBER_ID);
        return;
    }
    s_answer_error (self, req, h, 0);
    s_member_leaves (self, g, i);
}

// ------------------------------------------------------------------ entry points

bool
qn_kgroup_owns (int16_t api_key, int16_t api_version, const void *body, size_t len)
{
    if (!qn_kafka_version_ok (api_key, api_version))
        return false;
    switch (api_key) {
        case QN_KAFKA_JOIN_GROUP:
        case QN_KAFKA_SYNC_GROUP:
        case QN_KAFKA_HEARTBEAT:
        case QN_KAFKA_LEAVE_GROUP:
        case QN_KAFKA_OFFSET_COMMIT:
        case QN_KAFKA_OFFSET_FETCH:
            return true;
        case QN_KAFKA_FIND_COORDINATOR: {
            qn_kafka_find_coordinator_req_t fc;
            return qn_kafka_find_coordinator_req_decode (api_version, body, len, NULL, &fc) == 0
                && fc.key_type == 0;
        }
        default:
            return false;
    }
}

void
qn_kgroup_request (qn_kgroup_t *self, void *req, const qn_kafka_req_header_t *h,
                   const void *body, size_t len)
{
    s_timer_start (self);
    int16_t v = h->api_version;
    qn_karena_t arena;
    qn_karena_init (&arena);
    int rc = -1;
    switch (h->api_key) {
        case QN_KAFKA_FIND_COORDINATOR: {
            qn_kafka_find_coordinator_req_t fc;
            if ((rc = qn_kafka_find_coordinator_req_decode (v, body, len, &arena, &fc)) == 0)
                qn_kg_find_coordinator (self, req, h, &fc);
            break;
        }
        case QN_KAFKA_JOIN_GROUP: {
            qn_kafka_join_group_req_t jr;
            if ((rc = qn_kafka_join_group_req_decode (v, body, len, &arena, &jr)) == 0)
                s_join (self, req, h, &jr);
            break;
        }
        case QN_KAFKA_SYNC_GROUP: {
            qn_kafka_sync_group_req_t sr;
            if ((rc = qn_kafka_sync_group_req_decode (v, body, len, &arena, &sr)) == 0)
                s_sync (self, req, h, &sr);
            break;
        }
        case QN_KAFKA_HEARTBEAT: {
            qn_kafka_heartbeat_req_t hr;
            if ((rc = qn_kafka_heartbeat_req_decode (v, body, len, &arena, &hr)) == 0)
                s_heartbeat (self, req, h, &hr);
            break;
        }
        case QN_KAFKA_LEAVE_GROUP: {
            qn_kafka_heartbeat_req_t lr;
            if ((rc = qn_kafka_leave_group_req_decode (v, body, len, &arena, &lr)) == 0)
                s_leave (self, req, h, &lr);
            break;
        }
        case QN_KAFKA_OFFSET_COMMIT: {
            qn_kg_op_t *op = qn_kg_op_new (self, req, h);
            if ((rc = qn_kafka_offset_commit_req_decode (v, body, len, &op->arena, &op->oc)) == 0)
                qn_kg_offset_commit (self, op);
            else
                qn_kg_op_free (self, op, false);
            break;
        }
        case QN_KAFKA_OFFSET_FETCH: {
            qn_kg_op_t *op = qn_kg_op_new (self, req, h);
            if ((rc = qn_kafka_offset_fetch_req_decode (v, body, len, &op->arena, &op->of)) == 0)
                qn_kg_offset_fetch (self, op);
            else
                qn_kg_op_free (self, op, false);
            break;
        }
        default:
            break;
    }
    qn_karena_free (&arena);
    if (rc) {
        qn_info ("kafka group request malformed: api=%d version=%d (connection closed)", h->api_key, v);
        s_out_close (self, req);
    }
    qn_kg_flush (self);
}

void
qn_kgroup_stop (qn_kgroup_t *self)
{
    self->stopping = true;
    for (uint32_t gi = 0; gi < self->group_count; gi++) {
        qn_kg_group_t *g = self->groups [gi];
        for (uint32_t i = 0; i < g->member_count; i++) {
            qn_kg_member_t *m = g->members [i];
            if (m->join.req)
                s_answer_join (self, &m->join, QN_KAFKA_COORDINATOR_NOT_AVAILABLE, NULL, s_k (m->id), false);
            if (m->sync.req)
                s_answer_sync (self, &m->sync, QN_KAFKA_COORDINATOR_NOT_AVAILABLE, QN_KSTR (""));
        }
    }
    qn_kg_flush (self);
}

qn_kgroup_t *
qn_kgroup_new (qn_kernel_t *kernel, const qn_config_t *config, qn_kgroup_answer_fn *answer, void *owner)
{
    qn_kgroup_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    self->answer = answer;
    self->owner = owner;
    msgpack_sbuffer_init (&self->exec);
    return self;
}

void
qn_kgroup_destroy (qn_kgroup_t **self_p)
{
    qn_kgroup_t *self = *self_p;
    if (!self)
        return;
    for (uint32_t i = 0; i < self->group_count; i++)
        s_group_free (self->groups [i]);
    free (self->groups);
    for (uint32_t i = 0; i < self->out_len; i++)
        qn_buf_free (&self->out [i].payload);
    free (self->out);
    while (self->ops)
        qn_kg_op_free (self, self->ops, true);
    msgpack_sbuffer_destroy (&self->exec);
    free (self);
    *self_p = NULL;
}
