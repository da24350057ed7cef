/*  actors/spool/replay.c - the spool's replay into PostgreSQL
    Reads records from the cursor (same tenant, bounded), sends them to
    pg_writer as one QN_MSG_PUSH flagged replay (pg_writer never re-routes
    it, and publishes "committed" when it commits), advances the cursor
    and the checkpoint on success. Replay is idempotent: every spooled item
    carries a transaction id, and queen.push deduplicates by it.
    Part of the spool actor (spool_int.h).
    Receives  QN_MSG_PUSH_ANSWER replies; events "db" [up] and
              "maintenance" QN_MSG_MAINT_STATE (replay waits while push
              maintenance is on)
    Sends     QN_MSG_PUSH [tenant, replay, items] to pg_writer
    Owns      the replay cursor and its backoff (actor state)
    Failure   a refused replay is retried with backoff; refused for good
              (data errors, 3 tries, isolated record by record): moved to
              failed.qspool
*/
#include "actors/spool/spool_int.h"
#include "wire/msg_db.h"
#include "wire/msg_maint.h"
#include "wire/msg_push.h"
#include "wire/msg_spool.h"
#include "wire/spool_codec.h"

#include <stdlib.h>
#include <string.h>

static void s_on_replay_reply (void *self_, void *arg, const qn_env_t *env);



static void
s_on_retry (void *self_, void *arg)
{
    (void) arg;
    qn_sp_t *self = self_;
    self->retry_timer = 0;
    qn_sp_replay_next (self);
}

static void
s_retry_later (qn_sp_t *self, const char *sqlstate, const char *message)
{
    if (!self->backoff_ms)
        qn_warn ("spool replay failed, retrying: sqlstate=%s message=%s pending=%llu",
                 sqlstate, message, (unsigned long long) self->pending);
    else
        qn_debug ("spool replay failed, retrying: sqlstate=%s message=%s", sqlstate, message);
    self->backoff_ms = self->backoff_ms ? self->backoff_ms * 2 : QN_SP_BACKOFF_MIN_MS;
    if (self->backoff_ms > QN_SP_BACKOFF_MAX_MS)
        self->backoff_ms = QN_SP_BACKOFF_MAX_MS;
    if (!self->retry_timer)
        self->retry_timer = qn_timer_add (self->kernel, (uint32_t) self->backoff_ms, 0,
                                          s_on_retry, NULL);
}

typedef struct {
    msgpack_sbuffer items;      //  Packed items of the records taken
    msgpack_packer pk;
    uint64_t count;             //  Items
    uint32_t records;
} s_batch_t;

//  Adds the record in self->io (n bytes) to the batch. Returns 1 when
//  added, 0 when it belongs in a later batch (other tenant, batch full),
//  -1 when it does not decode.
static int
s_batch_add (qn_sp_t *self, s_batch_t *b, int64_t n)
{
    msgpack_unpacked rec;
    msgpack_unpacked_init (&rec);
    qn_msg_spool_append_t m;
    //  Bytes from disk: the one (guarded, checked) decoder of the body.
    if (qn_msg_spool_append_decode (self->io.data + QN_SPOOL_HEADER_LEN,
                                    (size_t) n - QN_SPOOL_HEADER_LEN, &rec, &m)) {
        msgpack_unpacked_destroy (&rec);
        return -1;
    }
    if (b->records && (m.tenant_len != self->flight_tenant.len
            || (m.tenant_len && memcmp (m.tenant, self->flight_tenant.data, m.tenant_len))
            || b->count + m.count > (uint64_t) self->config->push_max_batch)) {
        msgpack_unpacked_destroy (&rec);
        return 0;
    }
    if (!b->records)
        qn_buf_append (&self->flight_tenant, m.tenant, m.tenant_len);
    for (uint32_t i = 0; i < m.count; i++)
        qn_msg_push_item_copy (&b->pk, &m.items [i], NULL);
    b->count += m.count;
    b->records++;
    msgpack_unpacked_destroy (&rec);
    return 1;
}


//  Reads the next records (same tenant, bounded) and sends them to
//  pg_writer as one QN_MSG_PUSH flagged replay, unless replay must wait.
void
qn_sp_replay_next (qn_sp_t *self)
{
    if (self->in_flight || self->retry_timer || self->stopping || self->push_maint)
        return;
    qn_sp_advance (self);
    uint64_t end = 0;
    if (!self->seg_count || qn_sp_seg_end (self, self->rseq, &end) || self->roff >= end)
        return;
    s_batch_t b = { .count = 0 };
    msgpack_sbuffer_init (&b.items);
    msgpack_packer_init (&b.pk, &b.items, msgpack_sbuffer_write);
    qn_buf_reset (&self->flight_tenant);
    uint64_t off = self->roff;
    uint32_t max_records = self->solo ? 1 : QN_SP_REPLAY_RECORDS;
    int damage = 0;             //  1: bad frame, 2: frame fine, body not
    while (b.records < max_records && off - self->roff < QN_SP_REPLAY_BYTES) {
        int64_t n = qn_sp_read_record (self, off, end);
        int rc = n > 0 ? s_batch_add (self, &b, n) : 0;
        if (n < 0 || rc < 0)
            damage = n < 0 ? 1 : 2;
        if (n <= 0 || rc <= 0)
            break;
        off += (uint64_t) n;
    }
    if (!b.records) {
        msgpack_sbuffer_destroy (&b.items);
        //  Damage at the cursor: keep it aside, then go on after it.
        int rc = damage == 1 ? qn_sp_set_aside (self, self->rseq, off, "bad record at replay")
               : damage == 2 ? qn_sp_move_to_failed (self, "XX000", "spool record does not decode")
               : -1;
        if (rc)
            s_retry_later (self, "58030", "damaged spool record");
        else {
            qn_sp_advance (self);
            qn_sp_replay_next (self);
        }
        return;
    }
    msgpack_sbuffer_clear (&self->out);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &self->out, msgpack_sbuffer_write);
    qn_msg_push_begin (&pk, self->flight_tenant.data, self->flight_tenant.len, true,
                       (uint32_t) b.count);
    msgpack_sbuffer_write (&self->out, b.items.data, b.items.size);
    msgpack_sbuffer_destroy (&b.items);
    qn_msg_t msg = {
        .to = "pg_writer", .type = QN_MSG_PUSH,
        .body = self->out.data, .body_len = self->out.size
    };
    uint32_t timeout = (uint32_t) self->config->db_statement_timeout_ms + 2000;
    if (qn_request (self->kernel, &msg, timeout, s_on_replay_reply, NULL)) {
        s_retry_later (self, "53300", "pg_writer is busy");
        return;
    }
    self->in_flight = true;
    self->flight_off = off;
    self->flight_items = b.count;
    self->flight_records = b.records;
}

//  Errors that a retry cannot fix: the records themselves are refused.
static bool
s_permanent (const char *sqlstate)
{
    return !strncmp (sqlstate, "22", 2) || !strncmp (sqlstate, "23", 2)
        || !strncmp (sqlstate, "54", 2) || !strcmp (sqlstate, "XX000");
}

static void
s_on_replay_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    qn_sp_t *self = self_;
    self->in_flight = false;
    if (self->stopping)
        return;
    msgpack_unpacked res;
    msgpack_unpacked_init (&res);
    qn_msg_push_answer_t answer;
    bool ok = false;
    char sqlstate [6] = "57014", message [256] = "no answer from pg_writer in time";
    uint64_t duplicates = 0;
    if (env && env->type == QN_MSG_PUSH_ANSWER
    &&  !qn_msg_push_answer_decode (env->body.ptr, env->body.len, &res, &answer)) {
        ok = answer.ok;
        snprintf (sqlstate, sizeof sqlstate, "%s", answer.sqlstate);
        snprintf (message, sizeof message, "%.*s", (int) answer.message_len, answer.message);
        for (uint32_t i = 0; ok && i < answer.count; i++) {
            qn_msg_push_result_t r;
            if (!qn_msg_push_answer_at (&answer, i, &r) && r.status == QN_PUSH_DUPLICATE)
                duplicates++;
        }
    }
    else
    if (env)
        snprintf (message, sizeof message, "malformed answer from pg_writer");
    msgpack_unpacked_destroy (&res);
    if (ok) {
        self->roff = self->flight_off;
        self->pending = self->pending > self->flight_items ? self->pending - self->flight_items : 0;
        self->tries = 0;
        self->backoff_ms = 0;
        self->solo = false;
        qn_count (self->kernel, "spool_replayed", (int64_t) self->flight_items);
        qn_count (self->kernel, "spool_replay_duplicates", (int64_t) duplicates);
        qn_debug ("spool replayed: records=%u items=%llu duplicates=%llu pending=%llu",
                  self->flight_records, (unsigned long long) self->flight_items,
                  (unsigned long long) duplicates, (unsigned long long) self->pending);
        qn_sp_checkpoint_save (self);
        qn_sp_advance (self);
        qn_sp_replay_next (self);
        qn_sp_progress (self);
        return;
    }
    if (s_permanent (sqlstate)) {
        if (self->flight_records > 1) {
            //  Find the record that is refused: one at a time from here.
            self->solo = true;
            self->tries = 0;
            qn_sp_replay_next (self);
            return;
        }
        if (++self->tries >= QN_SP_PERMANENT_TRIES && qn_sp_move_to_failed (self, sqlstate, message) == 0) {
            self->tries = 0;
            self->solo = false;
            qn_sp_advance (self);
            qn_sp_replay_next (self);
            qn_sp_progress (self);
            return;
        }
    }
    s_retry_later (self, sqlstate, message);
}

//  "maintenance" from pg_writer (their owner): replay waits while push
//  maintenance is on (pg_writer would refuse it anyway).
int
qn_sp_on_maintenance (void *self_, const qn_env_t *env)
{
    qn_sp_t *self = self_;
    qn_msg_maint_state_t m;
    if (qn_msg_maint_state_decode (env->body.ptr, env->body.len, &m))
        return QN_EPROTO;
    bool resume = self->push_maint && !m.push;
    self->push_maint = m.push;
    if (resume) {
        if (self->retry_timer)
            qn_timer_cancel (self->kernel, self->retry_timer);
        self->retry_timer = 0;
        self->backoff_ms = 0;
        qn_sp_replay_next (self);
    }
    return 0;
}

int
qn_sp_on_db (void *self_, const qn_env_t *env)
{
    qn_sp_t *self = self_;
    bool up;
    if (qn_msg_db_health_decode (env->body.ptr, env->body.len, &up) == 0) {
        self->db_up = up;
        if (self->db_up) {
            //  Back: retry at once rather than at the end of the backoff.
            if (self->retry_timer)
                qn_timer_cancel (self->kernel, self->retry_timer);
            self->retry_timer = 0;
            self->backoff_ms = 0;
            qn_sp_replay_next (self);
        }
    }
    return 0;
}
