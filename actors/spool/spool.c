/*  actors/spool/spool.c - the disk spool
    Keeps pushes that pg_writer routes here (database down, push
    maintenance, or anything still spooled ahead of them: actors/pg/
    push_route.h) in CRC-framed segment files under FILE_BUFFER_DIR
    (store.c), answers each pusher only once its push is on disk
    (fdatasync, grouped within SPOOL_FSYNC_MS), and replays them in order
    into pg_writer when the database is up and push maintenance is off
    (replay.c). Whenever it holds nothing any more it tells pg_writer how
    many appends it has handled (QN_MSG_SPOOL_DRAINED), so pg_writer sends
    pushes to PostgreSQL again only once nothing it spooled is waiting.
    Receives  QN_MSG_SPOOL_APPEND [tenant, items] (from pg_writer, reply_to
              the pusher; wire/msg_spool.h), QN_MSG_SPOOL_STATS_ASK []
              (replies QN_MSG_SPOOL_STATS_REPLY), events "db" and
              "maintenance", QN_MSG_PUSH_ANSWER replies of its replays
    Sends     QN_MSG_PUSH_ANSWER to the pusher (every item buffered, with
              its transaction id, or a refusal), QN_MSG_SPOOL_DRAINED and
              QN_MSG_PUSH (replay) to pg_writer
    Owns      the spool directory and its file descriptors
    Failure   an append that cannot be made durable (EACCES, ENOSPC, EIO,
              EROFS...) is refused with SQLSTATE 58030 and removed from the
              file again; a replay the database refuses is retried with
              backoff (for good: after 3 tries, moved to failed.qspool)
*/
#include "actors/spool/spool_int.h"
#include "wire/msg_push.h"
#include "wire/msg_spool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>



// ------------------------------------------------------------------ progress
//  Keeps the gauge current and, when everything is replayed (nothing
//  pending, nothing waiting for a sync, no replay in flight), tells
//  pg_writer how many appends that covers: it routes pushes to PostgreSQL
//  again only when that is every append it sent us (push_route.h).
void
qn_sp_progress (qn_sp_t *self)
{
    qn_gauge_set (self->kernel, "spool_pending", (int64_t) self->pending);
    qn_gauge_set (self->kernel, "spool_failed_bytes", (int64_t) self->failed_bytes);
    if (self->pending || self->group_count || self->in_flight || self->stopping)
        return;
    msgpack_sbuffer_clear (&self->out);
    qn_msg_spool_drained_encode (&self->out, self->appends);
    if (qn_send_body (self->kernel, "pg_writer", QN_MSG_SPOOL_DRAINED, 0, self->out.data,
                      self->out.size))
        qn_count (self->kernel, "spool_drained_dropped", 1);   //  The tick repeats it
}

// ------------------------------------------------------------------ appends
//  Answers a pusher: `answer` (a PUSH_ANSWER body), or a refusal.
static void
s_answer (qn_sp_t *self, const char *to, uint64_t corr, const char *answer, size_t answer_len,
          const char *sqlstate, const char *message)
{
    if (!answer) {
        msgpack_sbuffer_clear (&self->out);
        msgpack_packer pk;
        msgpack_packer_init (&pk, &self->out, msgpack_sbuffer_write);
        qn_msg_push_refuse (&pk, sqlstate, message);
        answer = self->out.data;
        answer_len = self->out.size;
    }
    qn_msg_t msg = {
        .to = to, .type = QN_MSG_PUSH_ANSWER, .corr = corr, .flags = QN_ENV_FLAG_REPLY,
        .body = answer, .body_len = answer_len
    };
    if (qn_send (self->kernel, &msg))
        qn_count (self->kernel, "spool_reply_dropped", 1);
}

//  Makes the appends written since the last sync durable and answers them:
//  ok after fdatasync, else an error, with their bytes cut off the file.
void
qn_sp_group_flush (qn_sp_t *self)
{
    if (self->group_timer)
        qn_timer_cancel (self->kernel, self->group_timer);
    self->group_timer = 0;
    if (!self->group_count)
        return;
    char why [256] = "";
    if (self->wfd < 0 || fdatasync (self->wfd)) {
        snprintf (why, sizeof why, "spool write failed: fdatasync: %s (dir=%s)",
                  strerror (self->wfd < 0 ? EBADF : errno), self->dir);
        //  After a failed sync the page cache can no longer be trusted:
        //  drop what we answer as failed and start a fresh segment.
        if (self->wfd >= 0 && ftruncate (self->wfd, (off_t) self->wsynced))
            qn_warn ("spool truncate failed: error=%s", strerror (errno));
        self->wsize = self->wsynced;
        qn_sp_close_write (self);
        self->healthy = false;
        qn_error ("%s", why);
    }
    else {
        self->wsynced = self->wsize;
        self->healthy = true;
        qn_count (self->kernel, "spool_fsyncs", 1);
    }
    uint64_t items = 0;
    for (uint32_t i = 0; i < self->group_count; i++) {
        qn_sp_waiter_t *w = &self->group [i];
        s_answer (self, w->reply_to, w->corr, why [0] ? NULL : w->answer, w->answer_len, "58030", why);
        items += w->items;
        free (w->answer);
        w->answer = NULL;
    }
    self->group_count = 0;
    if (!why [0]) {
        self->pending += items;
        qn_count (self->kernel, "spool_appended", (int64_t) items);
        qn_count (self->kernel, "messages_buffered", (int64_t) items);
    }
    qn_sp_progress (self);
}

static void
s_group_sync (qn_sp_t *self)
{
    qn_sp_group_flush (self);
    qn_sp_replay_next (self);
}

static void
s_on_group_timer (void *self_, void *arg)
{
    (void) arg;
    qn_sp_t *self = self_;
    self->group_timer = 0;
    s_group_sync (self);
}

//  The answer a pusher gets once the append is durable: every item
//  buffered, with the transaction id it carries.
static void
s_buffered_answer (const qn_msg_spool_append_t *m, msgpack_sbuffer *out)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, msgpack_sbuffer_write);
    qn_msg_push_answer_begin (&pk, m->count);
    for (uint32_t i = 0; i < m->count; i++) {
        qn_msg_push_item_t it;
        qn_msg_push_item_decode (&m->items [i], &it);   //  Checked by the append's decoder
        qn_msg_push_result_t r = { .status = QN_PUSH_BUFFERED, .txn = it.txn, .txn_len = it.txn_len };
        qn_msg_push_result (&pk, &r);
    }
}

static int
s_on_append (void *self_, const qn_env_t *env)
{
    qn_sp_t *self = self_;
    char to [QN_ENV_MAX_NAME + 1];
    memcpy (to, env->reply_to.ptr, env->reply_to.len);
    to [env->reply_to.len] = 0;
    self->appends++;
    msgpack_unpacked holder;
    msgpack_unpacked_init (&holder);
    qn_msg_spool_append_t m;
    if (qn_msg_spool_append_decode (env->body.ptr, env->body.len, &holder, &m)) {
        msgpack_unpacked_destroy (&holder);
        s_answer (self, to, env->corr, NULL, 0, "XX000", "malformed spool append");
        qn_sp_progress (self);
        return QN_EPROTO;
    }
    msgpack_sbuffer answer;
    msgpack_sbuffer_init (&answer);
    s_buffered_answer (&m, &answer);
    msgpack_unpacked_destroy (&holder);
    char why [512];
    if (qn_sp_write_record (self, env->body.ptr, env->body.len, why, sizeof why)) {
        msgpack_sbuffer_destroy (&answer);
        self->healthy = false;
        qn_error ("%s", why);
        qn_count (self->kernel, "spool_append_failed", 1);
        s_answer (self, to, env->corr, NULL, 0, "58030", why);
        qn_sp_progress (self);
        return 0;
    }
    qn_count (self->kernel, "spool_appended_bytes", (int64_t) env->body.len);
    if (self->group_count == self->group_cap) {
        self->group_cap = self->group_cap ? self->group_cap * 2 : 64;
        self->group = qn_realloc (self->group, self->group_cap * sizeof *self->group);
    }
    qn_sp_waiter_t *w = &self->group [self->group_count++];
    memcpy (w->reply_to, to, sizeof to);
    w->corr = env->corr;
    w->items = m.count;
    w->answer_len = answer.size;
    w->answer = msgpack_sbuffer_release (&answer);
    if (self->config->spool_fsync_ms <= 0 || self->group_count >= QN_SP_GROUP_MAX)
        s_group_sync (self);
    else
    if (!self->group_timer)
        self->group_timer = qn_timer_add (self->kernel, (uint32_t) self->config->spool_fsync_ms,
                                          0, s_on_group_timer, NULL);
    return 0;
}

// ------------------------------------------------------------------ events and requests
static void
s_on_tick (void *self_, void *arg)
{
    (void) arg;
    qn_sp_t *self = self_;
    //  A lost DRAINED would keep pg_writer in spool mode: repeat it.
    qn_sp_progress (self);
    qn_sp_replay_next (self);
}

static int
s_on_stats (void *self_, const qn_env_t *env)
{
    qn_sp_t *self = self_;
    if (!env->reply_to.len)
        return 0;
    qn_msg_spool_stats_t st = {
        .pending = self->pending, .failed = self->failed, .db_healthy = self->db_up,
        .buffer_healthy = self->healthy, .failed_bytes = self->failed_bytes
    };
    msgpack_sbuffer_clear (&self->out);
    qn_msg_spool_stats_encode (&self->out, &st);
    return qn_reply (self->kernel, env, QN_MSG_SPOOL_STATS_REPLY, self->out.data, self->out.size,
                     NULL, 0);
}

// ------------------------------------------------------------------ lifecycle
static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    qn_sp_t *self = self_;
    qn_sp_recover (self);
    qn_subscribe (self->kernel, "db");
    qn_subscribe (self->kernel, "maintenance");
    qn_sp_progress (self);
    qn_sp_replay_next (self);
    qn_timer_add (self->kernel, QN_SP_TICK_MS, QN_SP_TICK_MS, s_on_tick, NULL);
    return 0;
}

static int
s_on_stop (void *self_, const qn_env_t *env)
{
    (void) env;
    qn_sp_t *self = self_;
    //  Everything answered so far is on disk; answer the rest now. A replay
    //  in flight is simply replayed again after the restart.
    self->stopping = true;
    qn_sp_group_flush (self);
    qn_sp_close_write (self);
    qn_sp_close_read (self);
    return QN_DONE;
}

static void
s_destroy (void **self_p)
{
    qn_sp_t *self = *self_p;
    if (!self)
        return;
    qn_sp_close_write (self);
    qn_sp_close_read (self);
    free (self->dir);
    free (self->segs);
    for (uint32_t i = 0; i < self->group_count; i++)
        free (self->group [i].answer);
    free (self->group);
    qn_buf_free (&self->flight_tenant);
    qn_buf_free (&self->io);
    msgpack_sbuffer_destroy (&self->out);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_STOP, s_on_stop },
    { QN_MSG_SPOOL_APPEND, s_on_append },
    { QN_MSG_SPOOL_STATS_ASK, s_on_stats },
    { QN_MSG_DB_HEALTH, qn_sp_on_db },
    { QN_MSG_MAINT_STATE, qn_sp_on_maintenance },
    { 0, NULL }
};

qn_actor_t *
qn_spool_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    qn_sp_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    self->dir = qn_strdup (config->file_buffer_dir && config->file_buffer_dir [0]
                           ? config->file_buffer_dir : ".");
    self->wfd = self->rfd = -1;
    self->healthy = true;
    self->db_up = true;         //  main connected before spawning us
    msgpack_sbuffer_init (&self->out);
    qn_actor_def_t def = {
        .name = "spool", .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}
