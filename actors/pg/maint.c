/*  actors/pg/maint.c - the maintenance flags, owned by pg_writer
    Push maintenance (pushes go to the disk spool, replays wait) and pop
    maintenance (pops answer empty) are rows of queen.system_state
    (maintenance_mode, pop_maintenance_mode; value {"enabled": bool}).
    pg_writer is their one owner: it writes a row when asked
    (QN_MSG_MAINT_SET from the system routes, answered once the row is
    written), reads them at start and every 2 s (another broker may flip
    them), applies push maintenance itself (the routing of push_route.h: no
    event race between a set and the next push) and publishes both on
    "maintenance" (QN_MSG_MAINT_STATE [push, pop, gen]) for the readers:
    the spool pauses replay, codec_http applies pop maintenance and shows
    the flags. gen grows with every change, and the reply to a set
    carries it, so a reader that gets both keeps the newer.
    Part of the pg_writer actor (writer_int.h).
    Receives  QN_MSG_MAINT_SET [pop, enabled] (wire/msg_maint.h),
              QN_MSG_MESH_MAINT_POLL [] (the mesh: a peer changed them)
    Sends     QN_MSG_MAINT_STATE replies and "maintenance" events
    Owns      route.push_maint, pop_maint, maint_gen
    Failure   a set that cannot be written is answered with its SQLSTATE
              and changes nothing; a failed poll keeps the flags
*/
#include "actors/pg/writer_int.h"
#include "wire/json.h"
#include "wire/msg_maint.h"

#include <string.h>

static void
s_encode_state (qn_pgw_t *self, const char *sqlstate, const char *message)
{
    qn_msg_maint_state_t m = {
        .push = self->route.push_maint, .pop = self->pop_maint, .gen = self->maint_gen
    };
    if (sqlstate) {
        snprintf (m.sqlstate, sizeof m.sqlstate, "%s", sqlstate);
        m.message = message;
        m.message_len = strlen (message);
    }
    msgpack_sbuffer_clear (&self->reply);
    qn_msg_maint_state_encode (&self->reply, &m);
}

void
qn_pgw_maint_publish (qn_pgw_t *self)
{
    s_encode_state (self, NULL, NULL);
    qn_publish (self->kernel, "maintenance", QN_MSG_MAINT_STATE, self->reply.data, self->reply.size);
}

//  Takes new flag values: a change is logged, numbered and published.
static void
s_apply (qn_pgw_t *self, bool push, bool pop, const char *how)
{
    bool changed = !self->route.maint_known || push != self->route.push_maint
                || pop != self->pop_maint;
    self->route.maint_known = true;
    self->route.push_maint = push;
    self->pop_maint = pop;
    self->maint_gen++;
    if (changed) {
        qn_info ("maintenance flags %s: push=%s pop=%s", how, push ? "on" : "off", pop ? "on" : "off");
        qn_pgw_maint_publish (self);
    }
}

// ------------------------------------------------------------------ polling
//  {"enabled": bool} into *out; false when it is not that.
static bool
s_enabled (const char *text, int len, bool *out)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    bool ok = false;
    if (!qn_json_parse (&doc, text, (size_t) len, 8) && qn_json_type (&doc, 0) == QN_JSON_OBJECT) {
        int t = qn_json_get (&doc, 0, "enabled");
        ok = t >= 0 && !qn_json_bool (&doc, t, out);
    }
    qn_json_doc_free (&doc);
    return ok;
}

static void
s_on_polled (qn_pgw_t *self, qn_pgw_job_t *j, PGresult *res, const char *sqlstate,
             const char *message)
{
    (void) j;
    self->maint_poll_in_flight = false;
    if (!res) {
        qn_debug ("maintenance flags not read: sqlstate=%s message=%s", sqlstate, message);
        return;
    }
    if (self->maint_poll_gen != self->maint_gen)
        return;                 //  A set ran meanwhile: ours is newer
    bool flags [2] = { false, false };
    for (int r = 0; r < PQntuples (res); r++) {
        int klen = 0, vlen = 0;
        const char *key = qn_pgw_col_text (res, r, 0, &klen);
        const char *value = qn_pgw_col_text (res, r, 1, &vlen);
        int which = !key ? -1
                  : klen == 16 && !memcmp (key, "maintenance_mode", 16) ? 0
                  : klen == 20 && !memcmp (key, "pop_maintenance_mode", 20) ? 1 : -1;
        if (which >= 0 && value)
            s_enabled (value, vlen, &flags [which]);
    }
    s_apply (self, flags [0], flags [1], "read");
}

void
qn_pgw_maint_tick (qn_pgw_t *self)
{
    int64_t now = qn_now_ms ();
    if (self->maint_tick_ms && now - self->maint_tick_ms < QN_PGW_MAINT_POLL_MS)
        return;
    self->maint_tick_ms = now;
    //  Events are hints and late subscribers miss the first ones: repeat.
    if (self->route.maint_known)
        qn_pgw_maint_publish (self);
    if (self->maint_poll_in_flight)
        return;
    static const char sql [] = "SELECT key, value FROM queen.maintenance_flags ()";
    self->maint_poll_gen = self->maint_gen;
    if (qn_pgw_exec_internal (self, sql, s_on_polled, 0))
        self->maint_poll_in_flight = true;
}

// ------------------------------------------------------------------ setting
static void
s_on_written (qn_pgw_t *self, qn_pgw_job_t *j, PGresult *res, const char *sqlstate,
              const char *message)
{
    bool pop = j->arg & 2, enabled = j->arg & 1;
    if (res) {
        s_apply (self, pop ? self->route.push_maint : enabled, pop ? enabled : self->pop_maint, "set");
        s_encode_state (self, NULL, NULL);
    }
    else
        s_encode_state (self, sqlstate, message);
    qn_pgw_send_reply (self, j->reply_to, j->corr, QN_MSG_MAINT_STATE);
}

int
qn_pgw_on_maint_set (void *self_, const qn_env_t *env)
{
    qn_pgw_t *self = self_;
    char to [QN_ENV_MAX_NAME + 1];
    memcpy (to, env->reply_to.ptr, env->reply_to.len);
    to [env->reply_to.len] = 0;
    qn_msg_maint_set_t set;
    if (qn_msg_maint_set_decode (env->body.ptr, env->body.len, &set) || !self->is_writer) {
        s_encode_state (self, "XX000", "malformed maintenance request");
        qn_pgw_send_reply (self, to, env->corr, QN_MSG_MAINT_STATE);
        return 0;
    }
    if (!qn_pgw_any_usable (self)) {
        s_encode_state (self, "08006", "database unavailable");
        qn_pgw_send_reply (self, to, env->corr, QN_MSG_MAINT_STATE);
        return 0;
    }
    //  Both values are ours, never client text: literals, no parameters.
    char sql [256];
    snprintf (sql, sizeof sql,
              "SELECT queen.maintenance_set ('%s', %s)",
              set.pop ? "pop_maintenance_mode" : "maintenance_mode", set.enabled ? "true" : "false");
    qn_pgw_job_t *j = qn_zalloc (sizeof *j);
    j->kind = J_EXEC;
    j->stmt_id = QN_SQL_RAW;
    j->sql = qn_strdup (sql);
    j->done = s_on_written;
    j->arg = (set.pop ? 2 : 0) | (set.enabled ? 1 : 0);
    memcpy (j->reply_to, to, sizeof to);
    j->corr = env->corr;
    qn_pgw_enqueue (self, j);
    qn_pgw_pump (self);
    return 0;
}

int
qn_pgw_on_maint_poll (void *self_, const qn_env_t *env)
{
    (void) env;
    qn_pgw_t *self = self_;
    if (self->is_writer) {
        self->maint_tick_ms = 0;            //  Read now, not at the next poll
        qn_pgw_maint_tick (self);
    }
    return 0;
}
