/*  actors/mesh/mesh.c - the mesh between the replicas of a cell
    Carries latency hints between brokers that share one PostgreSQL, so a
    long-poll parked on broker C wakes when broker A commits, and a queue
    setting changed on B is not served stale from A's cache. Nothing it
    carries is authoritative: a lost hint costs latency (every parked pop
    keeps its safety-net timer), never correctness. See docs/mesh.md.

    Transport: its own ZeroMQ context (TCP, CURVE). A SUB socket bound on
    HOST:MESH_PORT is the CURVE server; a PUB socket connected to every
    live peer's port is the CURVE client, so one send reaches every peer
    and a slow peer drops hints at the high-water mark instead of blocking.
    Both key pairs derive from MESH_SECRET (wire/mesh_keys.h); a ZAP
    handler on inproc://zeromq.zap.01 admits only the cell's client key,
    and a socket monitor counts refused handshakes. No secret: mesh off.

    A PUB connection that completes its CURVE handshake (a peer
    restarted, thawed, or was dialled again) missed what was sent before:
    the hints frames of the last 3 s go out again (a socket monitor on the
    PUB socket), so a pop parked on that peer meanwhile does not wait for
    its safety net.

    Fallback: with MESH_SECRET set, a dedicated libpq connection LISTENs on
    channel queen_mesh. When the mesh cannot carry a hint to every live
    member (MESH_PORT 0 here, a member without a mesh port, a listed peer
    not up), each flushed frame is also sent as NOTIFY (queen.mesh_notify
    through pg_writer), authenticated with a MAC derived from the secret
    (wire/mesh_keys.h). Costs a database round trip per flush; the mesh
    costs none.

    Membership: every heartbeat it calls queen.mesh_beat (pg_reader) with
    its address (MESH_ADVERTISED_HOST:MESH_PORT, also its id in frames) and
    connects to the other members beaten within 5 heartbeats, dropping the
    rest; QUEEN_PEERS are always connected. With the database down it
    keeps its peers. It also sends HELLO to every peer each heartbeat.

    Receives  QN_MSG_MESH_EPH from codec_http's ephemeral table (sent to
              every peer as an EPH frame; EPH frames from peers go back to it),
              bus events "committed" (QN_MSG_COMMITTED), "qconf"
              (QN_MSG_MESH_QCONF from codec_http's configure), "group"
              (QN_MSG_MESH_GROUP from codec_http's group routes),
              "maintenance" (QN_MSG_MAINT_STATE); its own republished
              events (from "mesh") are ignored, so nothing echoes
    Sends     coalesced HINTS frames to peers (flushed at the end of the
              loop pass that gathered them: a 0 ms timer); from peers'
              frames: "committed", "qconf" and "group" events
              (QN_MSG_COMMITTED, QN_MSG_MESH_QCONF, QN_MSG_MESH_GROUP), QN_MSG_MESH_STALE
              when a peer (re)appears or this broker was frozen,
              QN_MSG_MESH_MAINT_POLL to pg_writer; "mesh" QN_MSG_MESH_STATUS
              every heartbeat; QN_MSG_PG_EXEC mesh_beat to pg_reader
    Owns      the mesh sockets, the peer table, the coalescer
    Failure   a port that cannot be bound logs and leaves the mesh off
              (the broker serves, hints wait for the safety net); a
              malformed frame is counted and dropped
*/
#include "actors/actors.h"
#include "actors/mesh/mesh.h"
#include "actors/pg/call.h"
#include "actors/pg/statements.h"
#include "wire/json.h"
#include "wire/mesh.h"
#include "wire/mesh_keys.h"
#include "wire/msg_committed.h"
#include "wire/msg_ephemeral.h"
#include "wire/msg_maint.h"
#include "wire/msg_mesh.h"
#include "wire/mpack_guard.h"

#include <errno.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#define S_EXPIRY_BEATS  5       //  A peer silent this many heartbeats is down
#define S_FLUSH_MS      0       //  Hints gathered in one pass of the loop go as one frame
#define S_HWM           10000   //  Frames queued per peer before hints drop
#define S_MAX_PEERS     64
#define S_ZAP_ENDPOINT  "inproc://zeromq.zap.01"
#define S_MON_ENDPOINT  "inproc://queen.mesh.monitor"
#define S_PMON_ENDPOINT "inproc://queen.mesh.pubmonitor"
#define S_REPLAY_FRAMES 64      //  Recent hints frames kept for a peer that (re)connects
#define S_REPLAY_MS     3000    //  ... if younger than this (the park table's safety net)
#define S_EPH_IN_MAX    (256 * 1024)    //  Peers' EPH bytes gathered before they go to the table

typedef struct {
    char *address;              //  Owned: host:port as dialled (and the peer's id)
    char *endpoint;             //  Owned: tcp://host:port
    bool is_static;             //  From QUEEN_PEERS: never dropped
    bool listed;                //  In the last membership answer
    int64_t heard_ms;           //  Monotonic: last frame from it (0: never)
    uint64_t epoch;             //  Its boot instant as last heard
    uint64_t hints_in;
    uint64_t hints_reported;    //  Of hints_in, added to its Prometheus series
    uint64_t reconnects;
} s_peer_t;

typedef enum { L_OFF, L_CONNECTING, L_LISTENING } s_lstate_t;

typedef struct {
    qn_kernel_t *kernel;        //  Not owned
    const qn_config_t *config;  //  Not owned
    bool cell;                  //  MESH_SECRET set: membership and the fallback run
    bool on;                    //  The mesh sockets are open
    char off_reason [128];
    char id [300];              //  MESH_ADVERTISED_HOST:MESH_PORT
    uint64_t epoch;
    qn_mesh_keys_t keys;
    void *zctx, *sub, *pub, *zap, *mon, *pmon;  //  Owned
    int sub_fd, zap_fd, mon_fd, pmon_fd;
    //  Hints frames sent lately: a PUB connection that completes its
    //  handshake (a peer restarted, thawed, or was re-added) missed the
    //  frames sent while it was not connected; they are sent again.
    struct { int64_t at_ms; qn_buf_t frame; } replay [S_REPLAY_FRAMES];
    size_t replay_next;
    uint64_t replayed;
    s_peer_t peers [S_MAX_PEERS];
    size_t peer_count;
    qn_mesh_coalesce_t *out;    //  Owned: hints to send
    bool flush_armed;
    int64_t tick_ms;            //  Monotonic: the last heartbeat tick
    uint64_t hello_seq;
    bool beat_in_flight;
    bool db_listed;             //  Membership was read at least once
    msgpack_sbuffer call;       //  Reusable PG_EXEC buffer
    qn_pg_args_t args;
    bool maint_known, maint_push, maint_pop;
    //  Hint counts (also counters mesh_*)
    uint64_t hints_sent, hints_received, frames_sent, frames_received, frames_bad;
    uint64_t hints_dropped, refused, stale_marks;
    uint64_t received_by_type [QN_MESH_H_STALE + 1];    //  Hints received, by QN_MESH_H_*
    qn_metric_t *m_by_type [QN_MESH_H_STALE + 1];
    //  LISTEN/NOTIFY fallback
    PGconn *lconn;              //  Owned: the dedicated LISTEN connection
    int lfd;
    s_lstate_t lstate;
    bool fallback;              //  Some live member is not reachable over the mesh
    msgpack_sbuffer ncall;      //  Reusable PG_EXEC buffer of notifies
    qn_pg_args_t nargs;
    uint32_t notify_in_flight;
    uint64_t notify_sent, notify_received, notify_refused;
    //  Peers' ephemeral operations read in one drain of the SUB socket,
    //  back to back: one QN_MSG_MESH_EPH to the table's host at its end.
    qn_buf_t eph_in;
    qn_buf_t eph_frame;         //  Reusable: an EPH frame being sent
} self_t;

static void s_drain_all (self_t *self);
static void s_listen_start (self_t *self);

static qn_mesh_hint_t s_hints [QN_MESH_MAX_HINTS];
static qn_mesh_str_t s_parts [QN_MESH_MAX_HINTS * QN_MESH_MAX_PARTS];

// ------------------------------------------------------------------ local publishing
void
qn_mesh_qconf_publish (qn_kernel_t *kernel, const char *tenant, const char *queue, size_t queue_len)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_mesh_qconf_t m = { tenant, strlen (tenant), queue, queue_len };
    qn_msg_mesh_qconf_encode (&b, &m);
    qn_publish (kernel, "qconf", QN_MSG_MESH_QCONF, b.data, b.size);
    msgpack_sbuffer_destroy (&b);
}

void
qn_mesh_group_publish (qn_kernel_t *kernel, const char *tenant, const char *queue,
                       const char *group, int what)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_mesh_group_t m = {
        tenant, strlen (tenant), queue, queue ? strlen (queue) : 0, group, strlen (group), what
    };
    qn_msg_mesh_group_encode (&b, &m);
    qn_publish (kernel, "group", QN_MSG_MESH_GROUP, b.data, b.size);
    msgpack_sbuffer_destroy (&b);
}

static void
s_publish_stale (self_t *self, const char *why)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_mesh_empty_encode (&b);
    qn_publish (self->kernel, "qconf", QN_MSG_MESH_STALE, b.data, b.size);
    msgpack_sbuffer_destroy (&b);
    self->stale_marks++;
    qn_count (self->kernel, "mesh_stale_marks", 1);
    qn_debug ("mesh: cached queue settings marked stale: %s", why);
}

// ------------------------------------------------------------------ peers
static s_peer_t *
s_peer_find (self_t *self, const char *address, size_t len)
{
    for (size_t i = 0; i < self->peer_count; i++)
        if (strlen (self->peers [i].address) == len && !memcmp (self->peers [i].address, address, len))
            return &self->peers [i];
    return NULL;
}

static s_peer_t *
s_peer_add (self_t *self, const char *address, size_t len, bool is_static)
{
    s_peer_t *p = s_peer_find (self, address, len);
    if (p || self->peer_count == S_MAX_PEERS || !self->pub)
        return p;
    if ((len == strlen (self->id) && !memcmp (address, self->id, len)) || !memchr (address, ':', len))
        return NULL;
    p = &self->peers [self->peer_count];
    memset (p, 0, sizeof *p);
    p->address = qn_strndup (address, len);
    qn_buf_t e = QN_BUF_INIT;
    qn_buf_printf (&e, "tcp://%s", p->address);
    p->endpoint = qn_buf_detach (&e, NULL);
    p->is_static = is_static;
    if (zmq_connect (self->pub, p->endpoint)) {
        qn_warn ("mesh: cannot dial peer: address=%s error=%s", p->address, zmq_strerror (errno));
        free (p->address);
        free (p->endpoint);
        return NULL;
    }
    self->peer_count++;
    qn_info ("mesh: peer added: address=%s%s", p->address, is_static ? " (static)" : "");
    return p;
}

static void s_peer_metrics (self_t *self, s_peer_t *p, bool up);

static void
s_peer_drop (self_t *self, size_t i)
{
    s_peer_t *p = &self->peers [i];
    s_peer_metrics (self, p, false);
    qn_info ("mesh: peer dropped: address=%s", p->address);
    zmq_disconnect (self->pub, p->endpoint);
    free (p->address);
    free (p->endpoint);
    self->peers [i] = self->peers [--self->peer_count];
}

static bool
s_peer_up (const self_t *self, const s_peer_t *p, int64_t now)
{
    return p->heard_ms && now - p->heard_ms <= S_EXPIRY_BEATS * self->config->mesh_heartbeat_ms;
}

// ------------------------------------------------------------------ sending
static void
s_on_notified (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    (void) env;
    self_t *self = self_;
    self->notify_in_flight--;
}

//  The frame as NOTIFY, for members the mesh does not reach.
static void
s_notify (self_t *self, const qn_buf_t *frame)
{
    static char text [8192];
    size_t len;
    if (self->notify_in_flight >= 64
    ||  qn_mesh_notify_encode (&self->keys, frame->data, frame->len, 7999, text, sizeof text, &len)) {
        qn_count (self->kernel, "mesh_notify_dropped", 1);
        return;
    }
    qn_pg_args_clear (&self->nargs);
    qn_pg_args_str (&self->nargs, text, len);
    if (qn_pg_call (self->kernel, "pg_writer", &self->ncall, QN_SQL_MESH_NOTIFY, NULL, &self->nargs,
                    5000, s_on_notified, NULL) == 0) {
        self->notify_in_flight++;
        self->notify_sent++;
        qn_count (self->kernel, "mesh_notify_sent", 1);
    }
}

//  HELLO frames go over the mesh only; hints also as NOTIFY when needed.
static void
s_send (self_t *self, const qn_buf_t *frame, bool hints)
{
    if (hints && self->fallback)
        s_notify (self, frame);
    if (!self->on || !self->peer_count)
        return;
    if (zmq_send (self->pub, frame->data, frame->len, ZMQ_DONTWAIT) < 0) {
        self->hints_dropped++;
        qn_count (self->kernel, "mesh_frames_dropped", 1);
        return;
    }
    self->frames_sent++;
    qn_count (self->kernel, "mesh_frames_sent", 1);
}

static void
s_send_frame (void *arg, const qn_buf_t *frame)
{
    self_t *self = arg;
    s_send (self, frame, true);
    if (!self->on)
        return;
    size_t i = self->replay_next++ % S_REPLAY_FRAMES;
    qn_buf_reset (&self->replay [i].frame);
    qn_buf_append (&self->replay [i].frame, frame->data, frame->len);
    self->replay [i].at_ms = qn_now_ms ();
}

//  A PUB connection completed its handshake: the recent hints again (to
//  every peer: a repeated hint is only a wake-up more).
static void
s_replay (self_t *self)
{
    int64_t now = qn_now_ms ();
    size_t n = self->replay_next < S_REPLAY_FRAMES ? self->replay_next : S_REPLAY_FRAMES;
    for (size_t k = 0; k < n; k++) {
        size_t i = (self->replay_next - n + k) % S_REPLAY_FRAMES;
        if (now - self->replay [i].at_ms > S_REPLAY_MS)
            continue;
        if (zmq_send (self->pub, self->replay [i].frame.data, self->replay [i].frame.len, ZMQ_DONTWAIT) >= 0) {
            self->replayed++;
            qn_count (self->kernel, "mesh_frames_replayed", 1);
        }
    }
}

static void
s_flush (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    self->flush_armed = false;
    size_t n = qn_mesh_coalesce_count (self->out);
    if (!n)
        return;
    if (self->peer_count || self->fallback) {
        self->hints_sent += n;
        qn_count (self->kernel, "mesh_hints_sent", (int64_t) n);
    }
    qn_mesh_coalesce_flush (self->out, self->id, strlen (self->id), self->epoch, s_send_frame, self);
}

static void
s_add_hint (self_t *self, const qn_mesh_hint_t *h, const char *part, size_t part_len)
{
    qn_mesh_coalesce_add (self->out, h, part, part_len);
    if (!self->flush_armed) {
        self->flush_armed = true;
        qn_timer_add (self->kernel, S_FLUSH_MS, 0, s_flush, NULL);
    }
}

static bool
s_from_me (const qn_env_t *env)
{
    return env->from.len == 4 && !memcmp (env->from.ptr, "mesh", 4);
}

static int
s_on_committed (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    qn_msg_committed_t m;
    if (!self->cell || s_from_me (env) || qn_msg_committed_decode (env->body.ptr, env->body.len, &m))
        return 0;
    qn_mesh_hint_t h = {
        .type = QN_MESH_H_COMMITTED,
        .tenant = { m.tenant, m.tenant_len }, .queue = { m.queue, m.queue_len }
    };
    s_add_hint (self, &h, m.partition, m.partition_len);
    return 0;
}

static int
s_on_qconf (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    qn_msg_mesh_qconf_t m;
    if (!self->cell || s_from_me (env) || qn_msg_mesh_qconf_decode (env->body.ptr, env->body.len, &m))
        return 0;
    qn_mesh_hint_t h = {
        .type = QN_MESH_H_QCONF,
        .tenant = { m.tenant, m.tenant_len }, .queue = { m.queue, m.queue_len }
    };
    s_add_hint (self, &h, NULL, 0);
    return 0;
}

static int
s_on_group (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    qn_msg_mesh_group_t m;
    if (!self->cell || s_from_me (env) || qn_msg_mesh_group_decode (env->body.ptr, env->body.len, &m)
    ||  (m.what != QN_MESH_GROUP_DELETED && m.what != QN_MESH_GROUP_SOUGHT))
        return 0;
    qn_mesh_hint_t h = {
        .type = QN_MESH_H_GROUP, .what = (uint8_t) m.what,
        .tenant = { m.tenant, m.tenant_len }, .queue = { m.queue, m.queue_len },
        .group = { m.group, m.group_len }
    };
    s_add_hint (self, &h, NULL, 0);
    return 0;
}

//  Our own STALE event comes back on "qconf": nothing to do.
static int
s_on_own_stale (void *self_, const qn_env_t *env)
{
    (void) self_;
    (void) env;
    return 0;
}

//  Ephemeral queue operations for the peers (actors/ephemeral/), one or
//  more back to back: one EPH frame each (what every broker of the cell
//  reads, whatever its version), all the parts of one ZeroMQ message, so
//  a pass's operations cross to the peers' mesh together.
static int
s_on_eph (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    if (!self->on || !self->peer_count)
        return 0;
    size_t off = 0;
    qn_msg_eph_peer_t op;
    qn_eph_str_t raw;
    bool pending = false;
    int got;
    while ((got = qn_msg_eph_peer_next (env->body.ptr, env->body.len, &off, &op, &raw)) == 1) {
        if (raw.len > QN_MESH_MAX_EPH)
            continue;
        if (pending && zmq_send (self->pub, self->eph_frame.data, self->eph_frame.len,
                                 ZMQ_DONTWAIT | ZMQ_SNDMORE) >= 0) {
            self->frames_sent++;
            qn_count (self->kernel, "mesh_frames_sent", 1);
        }
        qn_buf_reset (&self->eph_frame);
        qn_mesh_encode_eph (&self->eph_frame, self->id, strlen (self->id), self->epoch, raw.ptr, raw.len);
        pending = true;
    }
    if (pending)
        s_send (self, &self->eph_frame, false);
    return got < 0 ? QN_EPROTO : 0;
}

//  The peers' operations gathered so far go to the table's host.
static void
s_eph_in_flush (self_t *self)
{
    if (!self->eph_in.len)
        return;
    qn_send_body (self->kernel, QN_MESH_EPH_HOST, QN_MSG_MESH_EPH, 0, self->eph_in.data, self->eph_in.len);
    if (self->eph_in.cap > S_EPH_IN_MAX)
        qn_buf_free (&self->eph_in);
    else
        qn_buf_reset (&self->eph_in);
}

static int
s_on_maintenance (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    qn_msg_maint_state_t m;
    if (!self->cell || qn_msg_maint_state_decode (env->body.ptr, env->body.len, &m) || m.sqlstate [0])
        return 0;
    //  pg_writer repeats its flags every 2 s: only a change is a hint.
    bool changed = self->maint_known && (m.push != self->maint_push || m.pop != self->maint_pop);
    self->maint_known = true;
    self->maint_push = m.push;
    self->maint_pop = m.pop;
    if (changed) {
        qn_mesh_hint_t h = { .type = QN_MESH_H_MAINT, .push = m.push, .pop = m.pop };
        s_add_hint (self, &h, NULL, 0);
    }
    return 0;
}

// ------------------------------------------------------------------ receiving
static void
s_republish_committed (self_t *self, const qn_mesh_hint_t *h, const qn_mesh_str_t *part)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_committed_t m = {
        .tenant = h->tenant.ptr, .tenant_len = h->tenant.len,
        .queue = h->queue.ptr, .queue_len = h->queue.len,
        .partition = part ? part->ptr : NULL, .partition_len = part ? part->len : 0
    };
    qn_msg_committed_encode (&b, &m);
    qn_publish (self->kernel, "committed", QN_MSG_COMMITTED, b.data, b.size);
    msgpack_sbuffer_destroy (&b);
}

static void
s_apply_hint (self_t *self, const qn_mesh_hint_t *h)
{
    switch (h->type) {
        case QN_MESH_H_COMMITTED:
            if (!h->part_count)
                s_republish_committed (self, h, NULL);
            for (uint32_t k = 0; k < h->part_count; k++)
                s_republish_committed (self, h, &s_parts [h->part_first + k]);
            break;
        case QN_MESH_H_GROUP: {
            //  Whoever caches group state here drops it; a seek or a
            //  deleted group can make messages claimable: the queue's
            //  parked pops wake.
            msgpack_sbuffer b;
            msgpack_sbuffer_init (&b);
            qn_msg_mesh_group_t m = {
                h->tenant.ptr, h->tenant.len, h->queue.ptr, h->queue.len, h->group.ptr, h->group.len, h->what
            };
            qn_msg_mesh_group_encode (&b, &m);
            qn_publish (self->kernel, "group", QN_MSG_MESH_GROUP, b.data, b.size);
            msgpack_sbuffer_destroy (&b);
            if (h->queue.len)
                s_republish_committed (self, h, NULL);
            break;
        }
        case QN_MESH_H_QCONF: {
            msgpack_sbuffer b;
            msgpack_sbuffer_init (&b);
            qn_msg_mesh_qconf_t m = { h->tenant.ptr, h->tenant.len, h->queue.ptr, h->queue.len };
            qn_msg_mesh_qconf_encode (&b, &m);
            qn_publish (self->kernel, "qconf", QN_MSG_MESH_QCONF, b.data, b.size);
            msgpack_sbuffer_destroy (&b);
            break;
        }
        case QN_MESH_H_MAINT: {
            msgpack_sbuffer b;
            msgpack_sbuffer_init (&b);
            qn_msg_mesh_empty_encode (&b);
            qn_send_body (self->kernel, "pg_writer", QN_MSG_MESH_MAINT_POLL, 0, b.data, b.size);
            msgpack_sbuffer_destroy (&b);
            break;
        }
        case QN_MESH_H_STALE:
            s_publish_stale (self, "a peer said so");
            break;
        default:
            break;
    }
}

static void
s_on_frame (self_t *self, const char *data, size_t len, bool from_mesh)
{
    qn_mesh_frame_t f;
    if (qn_mesh_decode (data, len, &f, s_hints, QN_MESH_MAX_HINTS, s_parts,
                        QN_MESH_MAX_HINTS * QN_MESH_MAX_PARTS)) {
        self->frames_bad++;
        qn_count (self->kernel, "mesh_frames_malformed", 1);
        return;
    }
    if (f.sender.len == strlen (self->id) && !memcmp (f.sender.ptr, self->id, f.sender.len))
        return;                 //  Our own NOTIFY, echoed by PostgreSQL
    self->frames_received++;
    qn_count (self->kernel, "mesh_frames_received", 1);
    int64_t now = qn_now_ms ();
    s_peer_t *p = s_peer_find (self, f.sender.ptr, f.sender.len);
    if (!p && f.sender.len <= 255)
        //  A member we have not listed yet (it registered after our last
        //  beat): dial it back now.
        p = s_peer_add (self, f.sender.ptr, f.sender.len, false);
    if (p) {
        //  A peer we had not heard for a while, or that restarted, may have
        //  changed settings we did not hear about: caches are stale.
        if (!s_peer_up (self, p, now) || p->epoch != f.epoch) {
            if (p->heard_ms)
                p->reconnects++;
            s_publish_stale (self, "a peer (re)appeared");
        }
        p->heard_ms = now;
        p->epoch = f.epoch;
        p->hints_in += f.hint_count;
    }
    if (f.kind == QN_MESH_EPH) {
        //  Ephemeral queues travel over the mesh only, never as NOTIFY.
        //  One whole msgpack object each, or the stream would be unusable.
        if (!from_mesh)
            return;
        if (qn_msgpack_check (f.payload.ptr, f.payload.len) != (int64_t) f.payload.len) {
            self->frames_bad++;
            qn_count (self->kernel, "mesh_frames_malformed", 1);
            return;
        }
        qn_buf_append (&self->eph_in, f.payload.ptr, f.payload.len);
        if (self->eph_in.len >= S_EPH_IN_MAX)
            s_eph_in_flush (self);
        return;
    }
    if (f.kind != QN_MESH_HINTS)
        return;
    self->hints_received += f.hint_count;
    qn_count (self->kernel, "mesh_hints_received", f.hint_count);
    for (uint32_t i = 0; i < f.hint_count; i++) {
        uint8_t t = s_hints [i].type;
        if (t <= QN_MESH_H_STALE) {
            self->received_by_type [t]++;
            qn_metric_add (self->m_by_type [t], 1);
        }
        s_apply_hint (self, &s_hints [i]);
    }
}

static void
s_drain_sub (self_t *self)
{
    for (int n = 0; n < 1000; n++) {
        zmq_msg_t msg;
        zmq_msg_init (&msg);
        if (zmq_msg_recv (&msg, self->sub, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close (&msg);
            break;
        }
        s_on_frame (self, zmq_msg_data (&msg), zmq_msg_size (&msg), true);
        zmq_msg_close (&msg);
    }
    s_eph_in_flush (self);
}

static void
s_on_sub_fd (void *self_, int fd, uint32_t events)
{
    (void) fd;
    (void) events;
    self_t *self = self_;
    uint32_t zev;
    size_t size = sizeof zev;
    //  ZMQ_FD only says "ask ZMQ_EVENTS": drain until nothing is left.
    while (!zmq_getsockopt (self->sub, ZMQ_EVENTS, &zev, &size) && (zev & ZMQ_POLLIN))
        s_drain_sub (self);
}

//  ZAP (RFC 27): admit the CURVE client key of the cell, nothing else.
static void
s_on_zap_fd (void *self_, int fd, uint32_t events)
{
    (void) fd;
    (void) events;
    self_t *self = self_;
    uint32_t zev;
    size_t size = sizeof zev;
    while (!zmq_getsockopt (self->zap, ZMQ_EVENTS, &zev, &size) && (zev & ZMQ_POLLIN)) {
        zmq_msg_t parts [7];
        int n = 0, more = 1;
        while (more) {
            zmq_msg_t part;
            zmq_msg_init (&part);
            if (zmq_msg_recv (&part, self->zap, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close (&part);
                break;
            }
            more = zmq_msg_more (&part);
            if (n < 7)
                parts [n++] = part;
            else
                zmq_msg_close (&part);
        }
        if (n < 2) {
            for (int i = 0; i < n; i++)
                zmq_msg_close (&parts [i]);
            continue;
        }
        bool ok = n == 7 && zmq_msg_size (&parts [5]) == 5
               && !memcmp (zmq_msg_data (&parts [5]), "CURVE", 5)
               && zmq_msg_size (&parts [6]) == 32
               && !memcmp (zmq_msg_data (&parts [6]), self->keys.client_public, 32);
        if (!ok) {
            self->refused++;
            qn_count (self->kernel, "mesh_refused", 1);
            qn_warn ("mesh: refused a peer that does not hold the cell's key");
        }
        //  Reply: version, request id, status, text, user id, metadata.
        zmq_send (self->zap, "1.0", 3, ZMQ_SNDMORE);
        zmq_send (self->zap, zmq_msg_data (&parts [1]), zmq_msg_size (&parts [1]), ZMQ_SNDMORE);
        zmq_send (self->zap, ok ? "200" : "400", 3, ZMQ_SNDMORE);
        zmq_send (self->zap, ok ? "OK" : "unknown key", ok ? 2 : 11, ZMQ_SNDMORE);
        zmq_send (self->zap, "mesh", 4, ZMQ_SNDMORE);
        zmq_send (self->zap, "", 0, 0);
        for (int i = 0; i < n; i++)
            zmq_msg_close (&parts [i]);
    }
}

//  The next event a socket monitor has, or -1 when it has none now. A
//  monitor message is the event (16-bit number, 32-bit value), then the
//  endpoint frame, which is read and dropped.
static int
s_monitor_event (void *mon)
{
    uint32_t zev;
    size_t size = sizeof zev;
    if (zmq_getsockopt (mon, ZMQ_EVENTS, &zev, &size) || !(zev & ZMQ_POLLIN))
        return -1;
    zmq_msg_t m;
    zmq_msg_init (&m);
    if (zmq_msg_recv (&m, mon, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close (&m);
        return -1;
    }
    uint16_t event = 0;
    if (zmq_msg_size (&m) >= 6)
        memcpy (&event, zmq_msg_data (&m), 2);
    bool more = zmq_msg_more (&m);
    zmq_msg_close (&m);
    if (more) {
        zmq_msg_init (&m);
        zmq_msg_recv (&m, mon, ZMQ_DONTWAIT);
        zmq_msg_close (&m);
    }
    return event;
}

//  Handshakes that fail before ZAP (a peer with another server key cannot
//  even finish CURVE's HELLO) are seen only by the socket monitor.
static void
s_on_mon_fd (void *self_, int fd, uint32_t events)
{
    (void) fd;
    (void) events;
    self_t *self = self_;
    int event;
    while ((event = s_monitor_event (self->mon)) >= 0)
        if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
            self->refused++;
            qn_count (self->kernel, "mesh_refused", 1);
            qn_warn ("mesh: refused a handshake (wrong CURVE key or not a mesh peer)");
        }
}

//  The PUB socket's monitor: a connection to a peer is ready (handshake
//  done), so what was sent before it existed can reach that peer now.
static void
s_on_pmon_fd (void *self_, int fd, uint32_t events)
{
    (void) fd;
    (void) events;
    self_t *self = self_;
    bool ready = false;
    int event;
    while ((event = s_monitor_event (self->pmon)) >= 0)
        ready = ready || event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED;
    if (ready)
        s_replay (self);
}

// ------------------------------------------------------------------ membership
static void
s_on_beat (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    self_t *self = self_;
    self->beat_in_flight = false;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    char why [300];
    if (qn_pg_result_failed (&res, why, sizeof why)) {
        qn_debug ("mesh: membership not read (peers kept): %s", why);
        qn_pg_result_free (&res);
        return;
    }
    for (size_t i = 0; i < self->peer_count; i++)
        self->peers [i].listed = false;
    bool fallback = false;
    int64_t now = qn_now_ms ();
    for (uint32_t r = 0; r < res.row_count; r++) {
        const msgpack_object *a = qn_pg_result_col (&res, r, 0);
        if (!a || a->type != MSGPACK_OBJECT_STR || a->via.str.size > 255)
            continue;
        //  A member without a mesh port (or ours is closed): only NOTIFY
        //  reaches it.
        if (!self->on || !memchr (a->via.str.ptr, ':', a->via.str.size)) {
            fallback = true;
            continue;
        }
        s_peer_t *p = s_peer_find (self, a->via.str.ptr, a->via.str.size);
        if (!p)
            p = s_peer_add (self, a->via.str.ptr, a->via.str.size, false);
        if (p)
            p->listed = true;
        if (!p || !s_peer_up (self, p, now))
            fallback = true;
    }
    if (fallback != self->fallback)
        qn_info ("mesh: LISTEN/NOTIFY fallback %s", fallback ? "on: a member is not reachable over the mesh"
                                                             : "off: the mesh reaches every member");
    self->fallback = fallback;
    qn_gauge_set (self->kernel, "mesh_fallback", fallback);
    self->db_listed = true;
    //  A member whose heartbeat expired in PostgreSQL is dropped.
    for (size_t i = self->peer_count; i-- > 0;)
        if (!self->peers [i].listed && !self->peers [i].is_static)
            s_peer_drop (self, i);
    qn_pg_result_free (&res);
}

static void
s_beat (self_t *self)
{
    if (self->beat_in_flight)
        return;
    qn_pg_args_clear (&self->args);
    qn_pg_args_cstr (&self->args, self->id);
    qn_pg_args_int (&self->args, (int64_t) self->epoch);
    qn_pg_args_int (&self->args, S_EXPIRY_BEATS * self->config->mesh_heartbeat_ms);
    if (qn_pg_call (self->kernel, "pg_reader", &self->call, QN_SQL_MESH_BEAT, NULL, &self->args,
                    (uint32_t) (self->config->mesh_heartbeat_ms * 3), s_on_beat, NULL) == 0)
        self->beat_in_flight = true;
}

// ------------------------------------------------------------------ LISTEN connection
static void s_on_listen_fd (void *self_, int fd, uint32_t events);

static void
s_listen_reset (self_t *self, const char *why)
{
    if (self->lfd > 0)
        qn_fd_unwatch (self->kernel, self->lfd);
    self->lfd = 0;
    if (self->lconn) {
        if (self->lstate == L_LISTENING)
            qn_warn ("mesh: LISTEN connection lost (retried every heartbeat): %s", why);
        PQfinish (self->lconn);
        self->lconn = NULL;
    }
    self->lstate = L_OFF;
}

static void
s_listen_watch (self_t *self, uint32_t events)
{
    int fd = PQsocket (self->lconn);
    if (fd < 0)
        return;
    if (fd == self->lfd && qn_fd_modify (self->kernel, fd, events) == 0)
        return;
    if (self->lfd > 0 && self->lfd != fd)
        qn_fd_unwatch (self->kernel, self->lfd);
    self->lfd = fd;
    if (qn_fd_watch (self->kernel, fd, events, s_on_listen_fd))
        qn_fd_modify (self->kernel, fd, events);
}

static void
s_listen_poll (self_t *self)
{
    PostgresPollingStatusType st = PQconnectPoll (self->lconn);
    if (st == PGRES_POLLING_FAILED) {
        qn_debug ("mesh: LISTEN connection failed: %s", PQerrorMessage (self->lconn));
        s_listen_reset (self, "connect failed");
        return;
    }
    if (st != PGRES_POLLING_OK) {
        s_listen_watch (self, st == PGRES_POLLING_WRITING ? QN_FD_OUT : QN_FD_IN);
        return;
    }
    PQsetnonblocking (self->lconn, 1);
    if (!PQsendQuery (self->lconn, "LISTEN queen_mesh")) {
        s_listen_reset (self, PQerrorMessage (self->lconn));
        return;
    }
    self->lstate = L_LISTENING;
    s_listen_watch (self, PQflush (self->lconn) == 1 ? QN_FD_IN | QN_FD_OUT : QN_FD_IN);
    qn_info ("mesh: listening for hints on PostgreSQL channel queen_mesh");
}

static void
s_listen_start (self_t *self)
{
    qn_pg_params_t p;
    qn_pg_params (self->config, &p, 5);
    self->lconn = PQconnectStartParams (p.keys, p.values, 0);
    if (!self->lconn || PQstatus (self->lconn) == CONNECTION_BAD) {
        s_listen_reset (self, "cannot start a connection");
        return;
    }
    self->lstate = L_CONNECTING;
    s_listen_poll (self);
}

static void
s_on_notify (self_t *self, const char *text)
{
    static char frame [8192];
    size_t len;
    if (qn_mesh_notify_decode (&self->keys, text, strlen (text), frame, sizeof frame, &len)) {
        self->notify_refused++;
        qn_count (self->kernel, "mesh_notify_refused", 1);
        return;
    }
    self->notify_received++;
    qn_count (self->kernel, "mesh_notify_received", 1);
    s_on_frame (self, frame, len, false);
}

static void
s_on_listen_fd (void *self_, int fd, uint32_t events)
{
    (void) fd;
    self_t *self = self_;
    if (self->lstate == L_CONNECTING) {
        s_listen_poll (self);
        return;
    }
    if (self->lstate != L_LISTENING)
        return;
    if (events & QN_FD_OUT)
        qn_fd_modify (self->kernel, self->lfd, PQflush (self->lconn) == 1 ? QN_FD_IN | QN_FD_OUT : QN_FD_IN);
    if (!PQconsumeInput (self->lconn)) {
        s_listen_reset (self, PQerrorMessage (self->lconn));
        return;
    }
    while (!PQisBusy (self->lconn)) {
        PGresult *res = PQgetResult (self->lconn);
        if (!res)
            break;
        PQclear (res);
    }
    PGnotify *n;
    while ((n = PQnotifies (self->lconn))) {
        s_on_notify (self, n->extra);
        PQfreemem (n);
    }
    if (PQstatus (self->lconn) == CONNECTION_BAD)
        s_listen_reset (self, "connection closed");
}

// ------------------------------------------------------------------ status
static const char *s_type_names [QN_MESH_H_STALE + 1] = {
    [QN_MESH_H_COMMITTED] = "committed", [QN_MESH_H_QCONF] = "qconf", [QN_MESH_H_MAINT] = "maintenance",
    [QN_MESH_H_GROUP] = "group", [QN_MESH_H_STALE] = "stale"
};

//  Per peer: queen_mesh_peer_up{peer} (1 up, 0 not) and
//  queen_mesh_peer_hints_received_total{peer}, created on first sight.
static void
s_peer_metrics (self_t *self, s_peer_t *p, bool up)
{
    char esc [400], labels [420];
    qn_metric_label_escape (esc, sizeof esc, p->address, strlen (p->address));
    snprintf (labels, sizeof labels, "peer=\"%s\"", esc);
    qn_metric_set (qn_metric (self->kernel, QN_METRIC_GAUGE, "mesh_peer_up", labels), up);
    qn_metric_add (qn_metric (self->kernel, QN_METRIC_COUNTER, "mesh_peer_hints_received_total", labels),
                   (int64_t) (p->hints_in - p->hints_reported));
    p->hints_reported = p->hints_in;
}

static void
s_status (self_t *self, int64_t now)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_obj (&w);
    qn_jw_kbool (&w, "enabled", self->on);
    qn_jw_kbool (&w, "cell", self->cell);
    if (!self->on)
        qn_jw_kstr (&w, "reason", self->off_reason);
    if (self->cell)
        qn_jw_kstr (&w, "id", self->id);
    if (self->on)
        qn_jw_kint (&w, "port", self->config->mesh_port);
    int64_t up = 0;
    qn_jw_key (&w, "peers");
    qn_jw_arr (&w);
    for (size_t i = 0; i < self->peer_count; i++) {
        s_peer_t *p = &self->peers [i];
        bool is_up = s_peer_up (self, p, now);
        up += is_up;
        s_peer_metrics (self, p, is_up);
        qn_jw_obj (&w);
        qn_jw_kstr (&w, "address", p->address);
        qn_jw_kstr (&w, "state", is_up ? "up" : p->heard_ms ? "silent" : "connecting");
        qn_jw_kbool (&w, "static", p->is_static);
        qn_jw_kint (&w, "lastHeardMs", p->heard_ms ? now - p->heard_ms : -1);
        qn_jw_kint (&w, "hintsReceived", (int64_t) p->hints_in);
        qn_jw_kint (&w, "reconnects", (int64_t) p->reconnects);
        qn_jw_obj_end (&w);
    }
    qn_jw_arr_end (&w);
    qn_jw_kint (&w, "peersUp", up);
    qn_jw_key (&w, "hints");
    qn_jw_obj (&w);
    qn_jw_kint (&w, "sent", (int64_t) self->hints_sent);
    qn_jw_kint (&w, "received", (int64_t) self->hints_received);
    qn_jw_kint (&w, "framesSent", (int64_t) self->frames_sent);
    qn_jw_kint (&w, "framesReceived", (int64_t) self->frames_received);
    qn_jw_kint (&w, "framesDropped", (int64_t) self->hints_dropped);
    qn_jw_kint (&w, "framesMalformed", (int64_t) self->frames_bad);
    qn_jw_kint (&w, "coalesced", (int64_t) qn_mesh_coalesce_merged (self->out));
    qn_jw_key (&w, "receivedByType");
    qn_jw_obj (&w);
    for (int t = QN_MESH_H_COMMITTED; t <= QN_MESH_H_STALE; t++)
        qn_jw_kint (&w, s_type_names [t], (int64_t) self->received_by_type [t]);
    qn_jw_obj_end (&w);
    qn_jw_obj_end (&w);
    qn_jw_key (&w, "fallback");
    qn_jw_obj (&w);
    qn_jw_kbool (&w, "active", self->fallback);
    qn_jw_kstr (&w, "listen", self->lstate == L_LISTENING ? "listening"
                            : self->lstate == L_CONNECTING ? "connecting" : "off");
    qn_jw_kint (&w, "notifySent", (int64_t) self->notify_sent);
    qn_jw_kint (&w, "notifyReceived", (int64_t) self->notify_received);
    qn_jw_kint (&w, "notifyRefused", (int64_t) self->notify_refused);
    qn_jw_obj_end (&w);
    qn_jw_kint (&w, "refused", (int64_t) self->refused);
    qn_jw_kint (&w, "staleMarks", (int64_t) self->stale_marks);
    qn_jw_obj_end (&w);
    qn_gauge_set (self->kernel, "mesh_peers", (int64_t) self->peer_count);
    qn_gauge_set (self->kernel, "mesh_peers_up", up);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    qn_msg_mesh_status_encode (&sb, b.data, b.len);
    qn_publish (self->kernel, "mesh", QN_MSG_MESH_STATUS, sb.data, sb.size);
    msgpack_sbuffer_destroy (&sb);
    qn_buf_free (&b);
}

static void
s_tick (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    int64_t now = qn_now_ms ();
    //  A tick far later than due: this process was frozen (SIGSTOP, a VM
    //  pause); whatever peers said meanwhile was lost.
    if (self->tick_ms && now - self->tick_ms > S_EXPIRY_BEATS * self->config->mesh_heartbeat_ms)
        s_publish_stale (self, "this broker was frozen");
    self->tick_ms = now;
    if (self->on) {
        s_drain_all (self);
        qn_buf_t b = QN_BUF_INIT;
        qn_mesh_encode_hello (&b, self->id, strlen (self->id), self->epoch, ++self->hello_seq);
        s_send (self, &b, false);
        qn_buf_free (&b);
    }
    if (self->cell) {
        s_beat (self);
        if (self->lstate == L_OFF)
            s_listen_start (self);
    }
    s_status (self, now);
}

// ------------------------------------------------------------------ start, stop
static int
s_secret (const char *setting, char *out, size_t out_len, char *why, size_t why_len)
{
    if (strncmp (setting, "file:", 5)) {
        snprintf (out, out_len, "%s", setting);
        return 0;
    }
    FILE *f = fopen (setting + 5, "r");
    if (!f) {
        snprintf (why, why_len, "MESH_SECRET file not readable: %s", setting + 5);
        return -1;
    }
    size_t n = fread (out, 1, out_len - 1, f);
    fclose (f);
    out [n] = 0;
    while (n && (out [n - 1] == '\n' || out [n - 1] == '\r' || out [n - 1] == ' '))
        out [--n] = 0;
    return 0;
}

//  ZMQ_FD signals only a change after a read found nothing: a socket's
//  first messages must be drained once by hand, and the heartbeat drains
//  again in case a signal was consumed by a send.
static void
s_drain_all (self_t *self)
{
    if (self->sub)
        s_on_sub_fd (self, 0, 0);
    if (self->zap)
        s_on_zap_fd (self, 0, 0);
    if (self->mon)
        s_on_mon_fd (self, 0, 0);
    if (self->pmon)
        s_on_pmon_fd (self, 0, 0);
}

static int
s_watch (self_t *self, void *socket, int *fd_out, qn_fd_fn *fn)
{
    size_t size = sizeof *fd_out;
    if (zmq_getsockopt (socket, ZMQ_FD, fd_out, &size))
        return -1;
    return qn_fd_watch (self->kernel, *fd_out, QN_FD_IN, fn);
}

static bool
s_open (self_t *self)
{
    const qn_config_t *c = self->config;
    char secret [1024];
    if (!c->mesh_secret [0]) {
        snprintf (self->off_reason, sizeof self->off_reason, "MESH_SECRET is unset");
        return false;
    }
    if (s_secret (c->mesh_secret, secret, sizeof secret, self->off_reason, sizeof self->off_reason))
        return false;
    int rc = qn_mesh_keys_derive (secret, strlen (secret), &self->keys);
    memset (secret, 0, sizeof secret);
    if (rc) {
        snprintf (self->off_reason, sizeof self->off_reason, "MESH_SECRET is shorter than 16 bytes");
        return false;
    }
    //  From here on the broker is a member of the cell: membership and the
    //  LISTEN/NOTIFY fallback run even without a mesh port.
    self->cell = true;
    if (!c->mesh_port) {
        snprintf (self->id, sizeof self->id, "notify-%s-%d", c->mesh_advertised_host, (int) getpid ());
        snprintf (self->off_reason, sizeof self->off_reason, "MESH_PORT is 0 (hints over LISTEN/NOTIFY)");
        return false;
    }
    if (!zmq_has ("curve")) {
        snprintf (self->off_reason, sizeof self->off_reason, "libzmq has no CURVE support");
        return false;
    }
    snprintf (self->id, sizeof self->id, "%s:%lld", c->mesh_advertised_host, (long long) c->mesh_port);
    self->zctx = zmq_ctx_new ();
    int linger = 0, hwm = S_HWM, one = 1;
    //  ZAP first: the server consults it for every handshake.
    self->zap = zmq_socket (self->zctx, ZMQ_REP);
    zmq_setsockopt (self->zap, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_bind (self->zap, S_ZAP_ENDPOINT))
        goto failed;
    self->sub = zmq_socket (self->zctx, ZMQ_SUB);
    zmq_setsockopt (self->sub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt (self->sub, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt (self->sub, ZMQ_CURVE_SERVER, &one, sizeof one);
    zmq_setsockopt (self->sub, ZMQ_CURVE_SECRETKEY, self->keys.server_secret, 32);
    zmq_setsockopt (self->sub, ZMQ_ZAP_DOMAIN, "queen-mesh", 10);
    zmq_setsockopt (self->sub, ZMQ_SUBSCRIBE, "", 0);
    if (zmq_socket_monitor (self->sub, S_MON_ENDPOINT, ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL))
        goto failed;
    self->mon = zmq_socket (self->zctx, ZMQ_PAIR);
    zmq_setsockopt (self->mon, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect (self->mon, S_MON_ENDPOINT))
        goto failed;
    char endpoint [300];
    snprintf (endpoint, sizeof endpoint, "tcp://%s:%lld", c->host [0] ? c->host : "0.0.0.0",
              (long long) c->mesh_port);
    if (zmq_bind (self->sub, endpoint))
        goto failed;
    self->pub = zmq_socket (self->zctx, ZMQ_PUB);
    zmq_setsockopt (self->pub, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt (self->pub, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt (self->pub, ZMQ_CURVE_SERVERKEY, self->keys.server_public, 32);
    zmq_setsockopt (self->pub, ZMQ_CURVE_PUBLICKEY, self->keys.client_public, 32);
    zmq_setsockopt (self->pub, ZMQ_CURVE_SECRETKEY, self->keys.client_secret, 32);
    //  Reconnect quickly to a peer that comes back.
    int ivl = 100, ivl_max = 1000;
    zmq_setsockopt (self->pub, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt (self->pub, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max);
    if (zmq_socket_monitor (self->pub, S_PMON_ENDPOINT, ZMQ_EVENT_HANDSHAKE_SUCCEEDED))
        goto failed;
    self->pmon = zmq_socket (self->zctx, ZMQ_PAIR);
    zmq_setsockopt (self->pmon, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect (self->pmon, S_PMON_ENDPOINT))
        goto failed;
    if (s_watch (self, self->sub, &self->sub_fd, s_on_sub_fd)
    ||  s_watch (self, self->zap, &self->zap_fd, s_on_zap_fd)
    ||  s_watch (self, self->mon, &self->mon_fd, s_on_mon_fd)
    ||  s_watch (self, self->pmon, &self->pmon_fd, s_on_pmon_fd))
        goto failed;
    //  Static peers.
    const char *s = c->queen_peers;
    while (s && *s) {
        const char *end = strchr (s, ',');
        size_t len = end ? (size_t) (end - s) : strlen (s);
        while (len && *s == ' ')
            s++, len--;
        while (len && s [len - 1] == ' ')
            len--;
        if (len && len < 256)
            s_peer_add (self, s, len, true);
        s = end ? end + 1 : NULL;
    }
    s_drain_all (self);
    qn_info ("mesh: listening: endpoint=%s id=%s static_peers=%zu", endpoint, self->id,
             self->peer_count);
    return true;
failed:
    snprintf (self->off_reason, sizeof self->off_reason, "cannot open the mesh port %lld: %s",
              (long long) c->mesh_port, zmq_strerror (errno));
    //  Not reachable at that address (another broker may own it): register
    //  as a member without a mesh port, reached by LISTEN/NOTIFY.
    snprintf (self->id, sizeof self->id, "notify-%s-%d", c->mesh_advertised_host, (int) getpid ());
    qn_error ("mesh: %s (the broker serves; hints wait for the safety net)", self->off_reason);
    return false;
}

static void
s_close (self_t *self)
{
    int fds [4] = { self->sub_fd, self->zap_fd, self->mon_fd, self->pmon_fd };
    for (int i = 0; i < 4; i++)
        if (fds [i] > 0)
            qn_fd_unwatch (self->kernel, fds [i]);
    self->sub_fd = self->zap_fd = self->mon_fd = self->pmon_fd = 0;
    void **socks [5] = { &self->pub, &self->sub, &self->mon, &self->pmon, &self->zap };
    for (int i = 0; i < 5; i++)
        if (*socks [i]) {
            zmq_close (*socks [i]);
            *socks [i] = NULL;
        }
    if (self->zctx) {
        zmq_ctx_term (self->zctx);
        self->zctx = NULL;
    }
}

static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    //  Every counter of /metrics/prometheus from the start, at 0.
    static const char *const counters [] = {
        "mesh_hints_sent", "mesh_hints_received", "mesh_frames_sent", "mesh_frames_received",
        "mesh_frames_dropped", "mesh_frames_malformed", "mesh_refused", "mesh_stale_marks",
        "mesh_notify_sent", "mesh_notify_received", "mesh_notify_refused", "mesh_notify_dropped",
        "mesh_frames_replayed"
    };
    for (size_t i = 0; i < sizeof counters / sizeof counters [0]; i++)
        qn_count (self->kernel, counters [i], 0);
    self->on = s_open (self);
    if (!self->on)
        s_close (self);
    if (self->cell) {
        qn_subscribe (self->kernel, "committed");
        qn_subscribe (self->kernel, "qconf");
        qn_subscribe (self->kernel, "group");
        qn_subscribe (self->kernel, "maintenance");
        s_listen_start (self);
    }
    qn_timer_add (self->kernel, 10, (uint32_t) self->config->mesh_heartbeat_ms, s_tick, NULL);
    return 0;
}

static int
s_on_stop (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    s_close (self);
    s_listen_reset (self, "stopping");
    self->on = self->cell = false;
    return QN_DONE;
}

static void
s_destroy (void **self_p)
{
    self_t *self = *self_p;
    s_close (self);
    if (self->lconn)
        PQfinish (self->lconn);
    for (size_t i = 0; i < self->peer_count; i++) {
        free (self->peers [i].address);
        free (self->peers [i].endpoint);
    }
    qn_mesh_coalesce_destroy (&self->out);
    for (size_t i = 0; i < S_REPLAY_FRAMES; i++)
        qn_buf_free (&self->replay [i].frame);
    msgpack_sbuffer_destroy (&self->call);
    qn_pg_args_free (&self->args);
    msgpack_sbuffer_destroy (&self->ncall);
    qn_pg_args_free (&self->nargs);
    qn_buf_free (&self->eph_in);
    qn_buf_free (&self->eph_frame);
    memset (&self->keys, 0, sizeof self->keys);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_STOP, s_on_stop },
    { QN_MSG_COMMITTED, s_on_committed },
    { QN_MSG_MESH_QCONF, s_on_qconf },
    { QN_MSG_MAINT_STATE, s_on_maintenance },
    { QN_MSG_MESH_EPH, s_on_eph },
    { QN_MSG_MESH_STALE, s_on_own_stale },
    { QN_MSG_MESH_GROUP, s_on_group },
    { 0, NULL }
};

qn_actor_t *
qn_mesh_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    self->epoch = (uint64_t) qn_wall_us ();
    self->out = qn_mesh_coalesce_new ();
    for (int t = QN_MESH_H_COMMITTED; t <= QN_MESH_H_STALE; t++) {
        char labels [64];
        snprintf (labels, sizeof labels, "type=\"%s\"", s_type_names [t]);
        self->m_by_type [t] = qn_metric (kernel, QN_METRIC_COUNTER, "mesh_hints_received_by_type_total", labels);
    }
    msgpack_sbuffer_init (&self->call);
    qn_pg_args_init (&self->args);
    msgpack_sbuffer_init (&self->ncall);
    qn_pg_args_init (&self->nargs);
    qn_actor_def_t def = {
        .name = "mesh", .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}
