/*  actors/pg/conn.c - pg_writer's connection state machine
    One libpq connection per pool slot, non-blocking, in pipeline mode:
    DOWN -> CONNECTING (PQconnectPoll) -> IDLE <-> BUSY (one job: [prepare]
    + execute + sync) -> DOWN on any failure, retried with backoff. The
    writer's extra health connection runs the pings whose answers (or
    their absence) become the "db" events and the routing's db_up.
    Part of the pg_writer actor (writer_int.h): no state of its own.
    Receives  fd events of its connections (from the kernel)
    Sends     "db" events QN_MSG_DB_HEALTH [up] (wire/msg_db.h)
    Owns      nothing beyond the actor's connections
    Failure   a dropped connection fails its job (a push goes to the
              spool, batch.c) and, when no connection is left, every
              queued job
*/
#include "actors/pg/writer_int.h"
#include "wire/msg_db.h"

#include <stdlib.h>
#include <string.h>

static void s_on_fd (void *self_, int fd, uint32_t events);

// ------------------------------------------------------------------ connections
void
qn_pgw_conn_clear_result (qn_pgw_conn_t *c)
{
    if (c->result)
        PQclear (c->result);
    c->result = NULL;
    free (c->error);
    free (c->detail);
    c->error = c->detail = NULL;
    c->sqlstate [0] = 0;
}

//  Publishes a change of health at once, and the current state again
//  every few seconds: bus events are hints and a subscriber that joined
//  late (or lost one) catches up.
void
qn_pgw_publish_health (qn_pgw_t *self, bool up)
{
    int64_t now = qn_now_ms ();
    bool changed = !self->db_up_known || self->db_up != up;
    if (!changed && now - self->health_published_ms < QN_PGW_HEALTH_REPEAT_MS)
        return;
    self->health_published_ms = now;
    self->db_up = up;
    self->db_up_known = true;
    self->route.db_up = up;
    qn_gauge_set (self->kernel, "db_healthy", up);
    if (changed && up)
        qn_info ("database reachable: host=%s port=%lld", self->config->pg_host,
                 (long long) self->config->pg_port);
    else
    if (changed)
        qn_warn ("database unreachable: host=%s port=%lld", self->config->pg_host,
                 (long long) self->config->pg_port);
    msgpack_sbuffer buf;
    msgpack_sbuffer_init (&buf);
    qn_msg_db_health_encode (&buf, up);
    qn_publish (self->kernel, "db", QN_MSG_DB_HEALTH, buf.data, buf.size);
    msgpack_sbuffer_destroy (&buf);
}

void
qn_pgw_conn_drop (qn_pgw_t *self, qn_pgw_conn_t *c, const char *why)
{
    if (c->fd >= 0)
        qn_fd_unwatch (self->kernel, c->fd);
    if (c->job) {
        qn_pgw_job_t *j = c->job;
        c->job = NULL;
        qn_metric_add (self->m_errors, 1);
        qn_pgw_lane_done (self, j);
        if (j->kind != J_PING)
            qn_pgw_fail_job (self, j, "08006", "database connection lost", why);
        else
            qn_pgw_job_free (j);
    }
    if (c == &self->health) {
        self->ping_sent_ms = 0;
        qn_pgw_publish_health (self, false);
    }
    qn_debug ("connection dropped: actor=%s reason=%s", self->name, why);
    qn_pgw_conn_clear_result (c);
    if (c->conn)
        PQfinish (c->conn);         //  `why` may point into it: logged above
    c->conn = NULL;
    c->fd = -1;
    c->state = C_DOWN;
    c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : 100;
    if (c->backoff_ms > 2000)
        c->backoff_ms = 2000;
    c->retry_at_ms = qn_now_ms () + c->backoff_ms;
    memset (c->prepared, 0, sizeof c->prepared);
    why = "connection closed";
    //  Jobs that can no longer run anywhere fail now.
    if (!qn_pgw_any_usable (self) && c != &self->health) {
        while (self->head) {
            qn_pgw_job_t *j = self->head;
            self->head = j->next;
            self->queued--;
            qn_pgw_fail_job (self, j, "08006", "database unavailable", why);
        }
        self->tail = NULL;
        qn_pgw_fail_queued_acks (self, "08006", "database unavailable");
        qn_pgw_fail_queued_pushes (self, "08006", "database unavailable", true);
    }
}

static void
s_conn_watch (qn_pgw_t *self, qn_pgw_conn_t *c, bool write)
{
    c->want_write = write;
    qn_fd_modify (self->kernel, c->fd, QN_FD_IN | (write ? QN_FD_OUT : 0));
}

static void
s_flush (qn_pgw_t *self, qn_pgw_conn_t *c)
{
    int rc = PQflush (c->conn);
    if (rc < 0)
        qn_pgw_conn_drop (self, c, PQerrorMessage (c->conn));
    else
    if ((rc == 1) != c->want_write)
        s_conn_watch (self, c, rc == 1);
}

//  Sends job j on idle connection c: [prepare] + execute + sync.
void
qn_pgw_conn_send (qn_pgw_t *self, qn_pgw_conn_t *c, qn_pgw_job_t *j)
{
    const char *values [QN_SQL_MAX_PARAMS];
    for (uint32_t i = 0; i < j->nparams; i++)
        values [i] = j->nulls [i] ? NULL : j->params.data + j->offsets [i];
    const qn_sql_stmt_t *stmt = qn_sql_stmt (j->stmt_id);
    int ok;
    c->expect_prepare = false;
    if (stmt) {
        if (!c->prepared [j->stmt_id]) {
            Oid types [QN_SQL_MAX_PARAMS];
            for (uint32_t i = 0; i < stmt->nparams; i++)
                types [i] = stmt->types [i];
            if (!PQsendPrepare (c->conn, stmt->name, stmt->sql, (int) stmt->nparams, types)) {
                qn_pgw_fail_job (self, j, "08006", "cannot send prepare", PQerrorMessage (c->conn));
                qn_pgw_conn_drop (self, c, "send failed");
                return;
            }
            c->prepared [j->stmt_id] = true;
            c->expect_prepare = true;
        }
        ok = PQsendQueryPrepared (c->conn, stmt->name, (int) j->nparams, values,
                                  j->lengths, j->formats, 1);
    }
    else
        ok = PQsendQueryParams (c->conn, j->sql, (int) j->nparams, NULL, values,
                                j->lengths, j->formats, 1);
    if (!ok || !PQpipelineSync (c->conn)) {
        qn_pgw_fail_job (self, j, "08006", "cannot send statement", PQerrorMessage (c->conn));
        qn_pgw_conn_drop (self, c, "send failed");
        return;
    }
    c->job = j;
    c->state = C_BUSY;
    c->busy_since_ms = qn_now_ms ();
    s_flush (self, c);
}


void
qn_pgw_finish_job (qn_pgw_t *self, qn_pgw_conn_t *c)
{
    qn_pgw_job_t *j = c->job;
    c->job = NULL;
    c->state = C_IDLE;
    c->backoff_ms = 0;
    if (c->error && self->m_errors)
        qn_metric_add (self->m_errors, 1);
    qn_pgw_lane_done (self, j);
    if (j->kind == J_PING) {
        self->ping_sent_ms = 0;
        qn_pgw_publish_health (self, !c->error);
        qn_pgw_job_free (j);
    }
    else
    if (j->kind == J_PUSH)
        qn_pgw_finish_push (self, j, c);
    else
    if (j->kind == J_EXEC && j->stmt_id == QN_SQL_ACK && !j->done && self->is_writer
    &&  self->config->ack_lanes > 0)
        qn_pgw_finish_acks (self, j, c);
    else
    if (j->done) {
        if (c->error)
            j->done (self, j, NULL, c->sqlstate, c->error);
        else
            j->done (self, j, c->result, "00000", "");
        qn_pgw_job_free (j);
    }
    else {
        if (c->error)
            qn_pgw_reply_error (self, j->reply_to, j->corr, c->sqlstate, c->error,
                                c->detail ? c->detail : "");
        else
        if (c->result) {
            qn_pgw_exec_committed (self, j, c->result);
            qn_pgw_reply_rows (self, j->reply_to, j->corr, c->result, 0, PQntuples (c->result), -1);
        }
        else
            qn_pgw_reply_error (self, j->reply_to, j->corr, "XX000", "no result", "");
        qn_pgw_job_free (j);
    }
    qn_pgw_conn_clear_result (c);
}


static void
s_note_error (qn_pgw_conn_t *c, PGresult *r)
{
    if (c->error)
        return;
    const char *state = PQresultErrorField (r, PG_DIAG_SQLSTATE);
    const char *msg = PQresultErrorField (r, PG_DIAG_MESSAGE_PRIMARY);
    const char *detail = PQresultErrorField (r, PG_DIAG_MESSAGE_DETAIL);
    snprintf (c->sqlstate, sizeof c->sqlstate, "%s", state ? state : "XX000");
    c->error = qn_strdup (msg ? msg : PQresultErrorMessage (r));
    c->detail = qn_strdup (detail ? detail : "");
}

//  Reads whatever results are complete; finishes the job at SYNC.
static void
s_conn_read (qn_pgw_t *self, qn_pgw_conn_t *c)
{
    if (!PQconsumeInput (c->conn)) {
        qn_pgw_conn_drop (self, c, PQerrorMessage (c->conn));
        return;
    }
    while (c->job && !PQisBusy (c->conn)) {
        PGresult *r = PQgetResult (c->conn);
        if (!r)
            continue;                   //  End of one statement's results
        ExecStatusType st = PQresultStatus (r);
        if (st == PGRES_PIPELINE_SYNC) {
            PQclear (r);
            qn_pgw_finish_job (self, c);
            break;
        }
        if (c->expect_prepare) {
            c->expect_prepare = false;
            if (st != PGRES_COMMAND_OK) {
                c->prepared [c->job->stmt_id] = false;
                s_note_error (c, r);
            }
            PQclear (r);
            continue;
        }
        if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
            if (c->result)
                PQclear (c->result);
            c->result = r;
            continue;
        }
        if (st == PGRES_FATAL_ERROR || st == PGRES_NONFATAL_ERROR)
            s_note_error (c, r);
        PQclear (r);
    }
    if (PQstatus (c->conn) == CONNECTION_BAD)
        qn_pgw_conn_drop (self, c, PQerrorMessage (c->conn));
}

static qn_pgw_conn_t *
s_conn_of_fd (qn_pgw_t *self, int fd)
{
    if (self->health.fd == fd && self->health.state != C_DOWN)
        return &self->health;
    for (uint32_t i = 0; i < self->pool_size; i++)
        if (self->pool [i].fd == fd && self->pool [i].state != C_DOWN)
            return &self->pool [i];
    return NULL;
}

static void
s_connect_poll (qn_pgw_t *self, qn_pgw_conn_t *c)
{
    PostgresPollingStatusType st = PQconnectPoll (c->conn);
    int fd = PQsocket (c->conn);
    if (fd != c->fd && fd >= 0) {
        //  libpq may switch sockets while trying addresses.
        if (c->fd >= 0)
            qn_fd_unwatch (self->kernel, c->fd);
        c->fd = fd;
        c->want_write = true;
        qn_fd_watch (self->kernel, fd, QN_FD_IN | QN_FD_OUT, s_on_fd);
    }
    if (st == PGRES_POLLING_FAILED) {
        qn_pgw_conn_drop (self, c, PQerrorMessage (c->conn));
        return;
    }
    if (st == PGRES_POLLING_READING)
        s_conn_watch (self, c, false);
    else
    if (st == PGRES_POLLING_WRITING)
        s_conn_watch (self, c, true);
    else
    if (st == PGRES_POLLING_OK) {
        PQsetnonblocking (c->conn, 1);
        if (!PQenterPipelineMode (c->conn)) {
            qn_pgw_conn_drop (self, c, "cannot enter pipeline mode");
            return;
        }
        c->state = C_IDLE;
        s_conn_watch (self, c, false);
        qn_debug ("connection ready: actor=%s", self->name);
        if (c == &self->health)
            self->ping_sent_ms = 0;
        else
        if (self->is_writer && self->db_up_known && !self->db_up) {
            //  A pool connection opened: the database is back, even if the
            //  health connection is still in its backoff (requests would
            //  otherwise go to the spool meanwhile). It reconnects now.
            qn_pgw_publish_health (self, true);
            if (self->health.state == C_DOWN) {
                self->health.backoff_ms = 0;
                self->health.retry_at_ms = qn_now_ms ();
            }
        }
    }
}

//  Server notices go to the debug log, not to stderr.
static void
s_notice (void *arg, const char *message)
{
    (void) arg;
    qn_debug ("postgresql notice: %s", message);
}

void
qn_pgw_conn_start (qn_pgw_t *self, qn_pgw_conn_t *c)
{
    c->conn = PQconnectStartParams (self->params.keys, self->params.values, 0);
    if (c->conn)
        PQsetNoticeProcessor (c->conn, s_notice, NULL);
    if (!c->conn || PQstatus (c->conn) == CONNECTION_BAD) {
        qn_pgw_conn_drop (self, c, c->conn ? PQerrorMessage (c->conn) : "out of memory");
        return;
    }
    c->state = C_CONNECTING;
    c->connect_started_ms = qn_now_ms ();
    c->fd = PQsocket (c->conn);
    if (c->fd >= 0) {
        c->want_write = true;
        qn_fd_watch (self->kernel, c->fd, QN_FD_IN | QN_FD_OUT, s_on_fd);
    }
    s_connect_poll (self, c);
}

static void
s_on_fd (void *self_, int fd, uint32_t events)
{
    qn_pgw_t *self = self_;
    qn_pgw_conn_t *c = s_conn_of_fd (self, fd);
    if (!c) {
        qn_fd_unwatch (self->kernel, fd);
        return;
    }
    if (c->state == C_CONNECTING) {
        s_connect_poll (self, c);
        qn_pgw_pump (self);
        return;
    }
    if (events & QN_FD_OUT)
        s_flush (self, c);
    if (c->state != C_DOWN && (events & (QN_FD_IN | QN_FD_ERR | QN_FD_HUP)))
        s_conn_read (self, c);
    qn_pgw_pump (self);
}

