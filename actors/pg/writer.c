/*  actors/pg/writer.c - the PostgreSQL pool (pg_writer, pg_reader)
    Runs prepared statements for the other actors over a pool of
    non-blocking libpq connections in pipeline mode, binary parameters and
    binary results. pg_writer is also the write path: the push operation
    (QN_MSG_PUSH, from the HTTP push route, SQS SendMessage(Batch) and spool
    replays; Kafka Produce runs its own statement) is routed to PostgreSQL
    or the disk spool here (batch.c, push_route.h), and it owns the
    maintenance flags (maint.c).
    This file is the actor: its state, routes, statement jobs and the
    scheduling of work onto connections (conn.c).
    Receives  QN_MSG_PG_EXEC, QN_MSG_PUSH, QN_MSG_MAINT_SET,
              QN_MSG_SPOOL_DRAINED (see actors.h and wire/msg_*.h)
    Sends     QN_MSG_PG_RESULT / QN_MSG_PUSH_ANSWER / QN_MSG_MAINT_STATE
              replies; QN_MSG_SPOOL_APPEND to spool; events "db",
              "maintenance", "committed" (writer only)
    Owns      the connections, the job queues, prepared-statement state,
              the push routing state and the maintenance flags
    Failure   a dead connection fails its job with SQLSTATE 08006 (a push
              goes to the spool instead) and is reconnected with backoff;
              with no connection up or being opened, jobs fail at once
*/
#include "actors/pg/writer_int.h"
#include "wire/msg_pg.h"
#include "wire/pg_codec.h"

#include <stdlib.h>
#include <string.h>

void
qn_pg_params (const qn_config_t *config, qn_pg_params_t *p, int connect_timeout_s)
{
    memset (p, 0, sizeof *p);
    snprintf (p->port, sizeof p->port, "%lld", (long long) config->pg_port);
    snprintf (p->options, sizeof p->options,
              "-c jit=off -c statement_timeout=%lld -c idle_in_transaction_session_timeout=60000"
              " -c lock_timeout=%lld",
              (long long) config->db_statement_timeout_ms, (long long) config->db_statement_timeout_ms);
    snprintf (p->connect_timeout, sizeof p->connect_timeout, "%d", connect_timeout_s);
    const char *k [] = { "host", "port", "user", "password", "dbname", "application_name",
                         "options", "connect_timeout", NULL };
    const char *v [] = { config->pg_host, p->port, config->pg_user, config->pg_password,
                         config->pg_db, "queen", p->options, p->connect_timeout, NULL };
    for (int i = 0; k [i]; i++) {
        p->keys [i] = k [i];
        p->values [i] = v [i];
    }
}

// ------------------------------------------------------------------ replies
void
qn_pgw_send_reply (qn_pgw_t *self, const char *to, uint64_t corr, uint16_t type)
{
    qn_msg_t msg = {
        .to = to, .type = type, .corr = corr, .flags = QN_ENV_FLAG_REPLY,
        .body = self->reply.data, .body_len = self->reply.size
    };
    //  A requester that is gone or full loses its reply; it has its own
    //  deadline and answers its client.
    if (qn_send (self->kernel, &msg))
        qn_count (self->kernel, "pg_reply_dropped", 1);
}

void
qn_pgw_reply_error (qn_pgw_t *self, const char *to, uint64_t corr, const char *sqlstate,
               const char *message, const char *detail)
{
    msgpack_sbuffer_clear (&self->reply);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &self->reply, msgpack_sbuffer_write);
    qn_msg_pg_result_begin (&pk, false, sqlstate, message, detail, 0);
    qn_pgw_send_reply (self, to, corr, QN_MSG_PG_RESULT);
}

//  Packs rows [first, last) of res (the row array's elements: its header
//  is packed by qn_msg_pg_result_begin); with ord_base >= 0 column 0 (ord)
//  is rebased for a request merged into a push batch.
void
qn_pgw_pack_rows (msgpack_packer *pk, PGresult *res, int first, int last, int64_t ord_base)
{
    int cols = PQnfields (res);
    for (int r = first; r < last; r++) {
        qn_msg_pg_result_row (pk, (uint32_t) cols);
        for (int c = 0; c < cols; c++) {
            const char *v = PQgetvalue (res, r, c);
            int len = PQgetisnull (res, r, c) ? -1 : PQgetlength (res, r, c);
            if (c == 0 && ord_base >= 0 && len == 4) {
                int32_t ord = (int32_t) ((uint32_t) (uint8_t) v [0] << 24 | (uint32_t) (uint8_t) v [1] << 16
                                       | (uint32_t) (uint8_t) v [2] << 8 | (uint8_t) v [3]);
                qn_msg_pg_result_int (pk, ord - ord_base);
            }
            else
            if (qn_pg_decode_value (PQftype (res, c), v, len, pk))
                qn_msg_pg_result_null (pk);
        }
    }
}

void
qn_pgw_reply_rows (qn_pgw_t *self, const char *to, uint64_t corr, PGresult *res,
              int first, int last, int64_t ord_base)
{
    msgpack_sbuffer_clear (&self->reply);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &self->reply, msgpack_sbuffer_write);
    qn_msg_pg_result_begin (&pk, true, "00000", "", "", (uint32_t) (last - first));
    qn_pgw_pack_rows (&pk, res, first, last, ord_base);
    qn_pgw_send_reply (self, to, corr, QN_MSG_PG_RESULT);
}

// ------------------------------------------------------------------ jobs
void
qn_pgw_push_free (qn_pgw_push_t *r)
{
    msgpack_unpacked_destroy (&r->msg);
    free (r->items);
    free (r->body);
    free (r);
}

void
qn_pgw_job_free (qn_pgw_job_t *j)
{
    qn_buf_free (&j->params);
    free (j->sql);
    free (j->part_keys);
    while (j->parts) {
        qn_pgw_job_t *next = j->parts->next;
        qn_pgw_job_free (j->parts);
        j->parts = next;
    }
    while (j->reqs) {
        qn_pgw_push_t *next = j->reqs->next;
        qn_pgw_push_free (j->reqs);
        j->reqs = next;
    }
    free (j);
}

//  A job can still run here: a connection is up or being opened. At start
//  (and after a reconnect) the health connection may report the database
//  up before the pool's connections are open: a request arriving then
//  waits for them instead of failing (they open, or fail within
//  QN_PGW_CONNECT_TIMEOUT_MS and the queued jobs fail with them).
bool
qn_pgw_any_usable (qn_pgw_t *self)
{
    for (uint32_t i = 0; i < self->pool_size; i++)
        if (self->pool [i].state != C_DOWN)
            return true;
    return false;
}

void
qn_pgw_lane_done (qn_pgw_t *self, qn_pgw_job_t *j)
{
    if (!j->lane)
        return;
    j->lane = false;
    if (j->kind == J_PUSH)
        self->push_in_flight--;
    else
        self->ack_in_flight--;
}

void
qn_pgw_fail_job (qn_pgw_t *self, qn_pgw_job_t *j, const char *sqlstate, const char *message, const char *detail)
{
    qn_pgw_lane_done (self, j);
    if (j->parts) {
        //  A merged ack: every request gets the failure.
        while (j->parts) {
            qn_pgw_job_t *r = j->parts;
            j->parts = r->next;
            r->next = NULL;
            qn_pgw_fail_job (self, r, sqlstate, message, detail);
        }
        qn_pgw_job_free (j);
        return;
    }
    if (j->kind == J_PUSH) {
        qn_pgw_fail_push (self, j, sqlstate, message);
        return;
    }
    if (j->done)
        j->done (self, j, NULL, sqlstate, message);
    else
    if (j->kind == J_EXEC)
        qn_pgw_reply_error (self, j->reply_to, j->corr, sqlstate, message, detail);
    qn_pgw_job_free (j);
}

bool
qn_pgw_exec_internal (qn_pgw_t *self, const char *sql, qn_pgw_done_fn *done, int64_t arg)
{
    if (!qn_pgw_any_usable (self))
        return false;
    qn_pgw_job_t *j = qn_zalloc (sizeof *j);
    j->kind = J_EXEC;
    j->stmt_id = QN_SQL_RAW;
    j->sql = qn_strdup (sql);
    j->done = done;
    j->arg = arg;
    qn_pgw_enqueue (self, j);
    qn_pgw_pump (self);
    return true;
}

const char *
qn_pgw_col_text (PGresult *res, int r, int c, int *len)
{
    if (!res || r >= PQntuples (res) || c >= PQnfields (res) || PQgetisnull (res, r, c))
        return NULL;
    *len = PQgetlength (res, r, c);
    return PQgetvalue (res, r, c);
}

//  Encodes the request's parameters for statement `stmt` (types from the
//  catalogue) or as text for raw SQL.
static int
s_job_params (qn_pgw_job_t *j, const qn_sql_stmt_t *stmt, const qn_msg_pg_exec_t *exec,
              char *err, size_t err_len)
{
    if (exec->param_count > QN_SQL_MAX_PARAMS) {
        snprintf (err, err_len, "parameters must be an array of at most %d", QN_SQL_MAX_PARAMS);
        return -1;
    }
    j->nparams = exec->param_count;
    if (stmt && j->nparams != stmt->nparams) {
        snprintf (err, err_len, "statement %s takes %u parameters, got %u",
                  stmt->name, stmt->nparams, j->nparams);
        return -1;
    }
    for (uint32_t i = 0; i < j->nparams; i++) {
        uint32_t oid = stmt ? stmt->types [i] : 0;
        size_t at = j->params.len;
        int rc = qn_pg_encode_param (oid, &exec->params [i], &j->params, err, err_len);
        if (rc < 0)
            return -1;
        j->nulls [i] = rc == 1;
        j->offsets [i] = at;
        j->lengths [i] = (int) (j->params.len - at);
        j->formats [i] = qn_pg_param_format (oid);
        if (!j->formats [i] && rc == 0)
            qn_buf_putc (&j->params, 0);    //  libpq reads a text parameter up to its NUL
    }
    return 0;
}

void
qn_pgw_jobs_append (qn_pgw_job_t **head, qn_pgw_job_t **tail, uint32_t *count, qn_pgw_job_t *j)
{
    j->next = NULL;
    if (*tail)
        (*tail)->next = j;
    else
        *head = j;
    *tail = j;
    (*count)++;
}

qn_pgw_job_t *
qn_pgw_jobs_take (qn_pgw_job_t **head, qn_pgw_job_t **tail, uint32_t *count)
{
    qn_pgw_job_t *j = *head;
    *head = j->next;
    if (!*head)
        *tail = NULL;
    (*count)--;
    j->next = NULL;
    return j;
}

void
qn_pgw_enqueue (qn_pgw_t *self, qn_pgw_job_t *j)
{
    qn_pgw_jobs_append (&self->head, &self->tail, &self->queued, j);
}

static int
s_on_exec (void *self_, const qn_env_t *env)
{
    qn_pgw_t *self = self_;
    char to [QN_ENV_MAX_NAME + 1];
    memcpy (to, env->reply_to.ptr, env->reply_to.len);
    to [env->reply_to.len] = 0;
    msgpack_unpacked msg;
    msgpack_unpacked_init (&msg);
    qn_pgw_job_t *j = qn_zalloc (sizeof *j);
    j->kind = J_EXEC;
    memcpy (j->reply_to, to, sizeof to);
    j->corr = env->corr;
    char err [160] = "";
    qn_msg_pg_exec_t exec;
    if (qn_msg_pg_exec_decode (env->body.ptr, env->body.len, &msg, &exec)) {
        snprintf (err, sizeof err, "malformed PG_EXEC body");
        goto failed;
    }
    j->stmt_id = exec.stmt_id;
    const qn_sql_stmt_t *stmt = qn_sql_stmt (j->stmt_id);
    if (j->stmt_id != QN_SQL_RAW && !stmt) {
        snprintf (err, sizeof err, "unknown statement %u", j->stmt_id);
        goto failed;
    }
    if (j->stmt_id == QN_SQL_RAW) {
        if (!exec.sql) {
            snprintf (err, sizeof err, "raw statement without SQL");
            goto failed;
        }
        j->sql = qn_strndup (exec.sql, exec.sql_len);
    }
    if (s_job_params (j, stmt, &exec, err, sizeof err))
        goto failed;
    msgpack_unpacked_destroy (&msg);
    if (!qn_pgw_any_usable (self)) {
        qn_pgw_fail_job (self, j, "08006", "database unavailable", "");
        return 0;
    }
    if (self->queued + self->ack_queued >= QN_PGW_MAX_QUEUED) {
        qn_pgw_fail_job (self, j, "53300", "broker database queue is full", "");
        return 0;
    }
    if (self->is_writer && j->stmt_id == QN_SQL_ACK && self->config->ack_lanes > 0)
        qn_pgw_ack_enqueue (self, j);
    else
        qn_pgw_enqueue (self, j);
    qn_pgw_pump (self);
    return 0;

failed:
    msgpack_unpacked_destroy (&msg);
    qn_warn ("bad statement request: from=%s reason=%s", to, err);
    qn_pgw_fail_job (self, j, "XX000", err, "");
    return 0;
}

// ------------------------------------------------------------------ scheduling
static qn_pgw_conn_t *
s_idle_conn (qn_pgw_t *self)
{
    for (uint32_t i = 0; i < self->pool_size; i++)
        if (self->pool [i].state == C_IDLE)
            return &self->pool [i];
    return NULL;
}

//  The push batch in flight, if any (the lane limit is 2: at most one
//  other).
_Static_assert (QN_PGW_PUSH_LANES == 2, "s_busy_push assumes two push lanes");
static const qn_pgw_job_t *
s_busy_push (qn_pgw_t *self)
{
    for (uint32_t i = 0; i < self->pool_size; i++)
        if (self->pool [i].state == C_BUSY && self->pool [i].job
            && self->pool [i].job->kind == J_PUSH)
            return self->pool [i].job;
    return NULL;
}

//  Hands queued work to idle connections: pushes first (up to the lane
//  limit), then acks (up to ACK_LANES, merged), then statements in
//  arrival order.
void
qn_pgw_pump (qn_pgw_t *self)
{
    qn_pgw_conn_t *c;
    while ((c = s_idle_conn (self))) {
        if (self->push_head && self->push_in_flight < QN_PGW_PUSH_LANES) {
            //  A lane starts only on partitions no push in flight holds:
            //  pushes sharing a partition would serialise on its lock in
            //  PostgreSQL anyway; waiting here lets them merge instead.
            const qn_pgw_job_t *busy = s_busy_push (self);
            if (!busy || !qn_pgw_push_conflicts (self->push_head, busy)) {
                qn_pgw_job_t *j = qn_pgw_build_push_batch (self, busy);
                self->push_in_flight++;
                j->lane = true;
                qn_pgw_conn_send (self, c, j);
                continue;
            }
        }
        if (self->ack_head && self->ack_in_flight < (uint32_t) self->config->ack_lanes) {
            qn_pgw_job_t *j = qn_pgw_build_ack_batch (self);
            self->ack_in_flight++;
            j->lane = true;
            qn_pgw_conn_send (self, c, j);
            continue;
        }
        if (!self->head)
            break;
        qn_pgw_conn_send (self, c, qn_pgw_jobs_take (&self->head, &self->tail, &self->queued));
    }
    qn_gauge_set (self->kernel, self->is_writer ? "pg_writer_queued" : "pg_reader_queued",
                  self->queued + self->ack_queued);
    qn_pgw_pool_gauges (self);
}

//  Connections up, busy, and requests waiting for one.
void
qn_pgw_pool_gauges (qn_pgw_t *self)
{
    if (!self->m_size) {
        char labels [64];
        snprintf (labels, sizeof labels, "pool=\"%s\"", self->name);
        self->m_size = qn_metric (self->kernel, QN_METRIC_GAUGE, "db_pool_connections", labels);
        self->m_busy = qn_metric (self->kernel, QN_METRIC_GAUGE, "db_pool_busy", labels);
        self->m_waiting = qn_metric (self->kernel, QN_METRIC_GAUGE, "db_pool_waiting", labels);
        self->m_errors = qn_metric (self->kernel, QN_METRIC_COUNTER, "db_errors_total", labels);
    }
    int64_t up = 0, busy = 0;
    for (uint32_t i = 0; i < self->pool_size; i++) {
        up += self->pool [i].state == C_IDLE || self->pool [i].state == C_BUSY;
        busy += self->pool [i].state == C_BUSY;
    }
    qn_metric_set (self->m_size, up);
    qn_metric_set (self->m_busy, busy);
    qn_metric_set (self->m_waiting, (int64_t) (self->queued + self->ack_queued));
}

static void
s_on_tick (void *self_, void *arg)
{
    (void) arg;
    qn_pgw_t *self = self_;
    int64_t now = qn_now_ms ();
    //  Asynchronous connects have no timeout of their own: a server that
    //  accepts TCP but never answers (frozen) would hold them forever.
    for (uint32_t i = 0; i <= self->pool_size; i++) {
        qn_pgw_conn_t *c = i < self->pool_size ? &self->pool [i] : &self->health;
        if (c->state == C_CONNECTING && now - c->connect_started_ms > QN_PGW_CONNECT_TIMEOUT_MS)
            qn_pgw_conn_drop (self, c, "connect timed out");
    }
    //  A push that has not completed well past the statement timeout is on
    //  a connection that no longer answers (the server is frozen or the
    //  network gone): the write path decides, so it gives the push to the
    //  spool now (dropping the connection) instead of letting the pusher's
    //  deadline expire.
    int64_t stuck_ms = self->config->db_statement_timeout_ms + 2000;
    for (uint32_t i = 0; i < self->pool_size; i++) {
        qn_pgw_conn_t *c = &self->pool [i];
        if (c->state == C_BUSY && c->job && c->job->kind == J_PUSH
        &&  now - c->busy_since_ms > stuck_ms)
            qn_pgw_conn_drop (self, c, "push did not complete in time");
    }
    for (uint32_t i = 0; i < self->pool_size; i++)
        if (self->pool [i].state == C_DOWN && now >= self->pool [i].retry_at_ms)
            qn_pgw_conn_start (self, &self->pool [i]);
    if (self->is_writer) {
        qn_pgw_conn_t *h = &self->health;
        if (h->state == C_CONNECTING && now - h->connect_started_ms > QN_PGW_PING_DEAD_MS)
            qn_pgw_publish_health (self, false);
        if (h->state == C_DOWN && now >= h->retry_at_ms)
            qn_pgw_conn_start (self, h);
        if (self->ping_sent_ms && now - self->ping_sent_ms > QN_PGW_PING_DEAD_MS)
            qn_pgw_publish_health (self, false);     //  Frozen or unreachable
        if (h->state == C_DOWN && (!self->db_up_known || self->db_up)
        &&  h->backoff_ms >= 400)
            qn_pgw_publish_health (self, false);
        if (self->db_up_known)
            qn_pgw_publish_health (self, self->db_up);   //  Repeats, rate-limited
        qn_pgw_maint_tick (self);
    }
    qn_pgw_pump (self);
}

static void
s_on_ping (void *self_, void *arg)
{
    (void) arg;
    qn_pgw_t *self = self_;
    qn_pgw_conn_t *h = &self->health;
    if (h->state != C_IDLE || self->ping_sent_ms)
        return;
    qn_pgw_job_t *j = qn_zalloc (sizeof *j);
    j->kind = J_PING;
    j->stmt_id = QN_SQL_PING;
    self->ping_sent_ms = qn_now_ms ();
    qn_pgw_conn_send (self, h, j);
}

static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    qn_pgw_t *self = self_;
    qn_pg_params (self->config, &self->params, 5);
    for (uint32_t i = 0; i < self->pool_size; i++)
        qn_pgw_conn_start (self, &self->pool [i]);
    if (self->is_writer) {
        qn_pgw_conn_start (self, &self->health);
        qn_timer_add (self->kernel, QN_PGW_PING_MS / 2, QN_PGW_PING_MS / 2, s_on_ping, NULL);
        qn_pgw_maint_tick (self);
    }
    qn_timer_add (self->kernel, 100, 100, s_on_tick, NULL);
    return 0;
}

static int
s_on_stop (void *self_, const qn_env_t *env)
{
    (void) env;
    qn_pgw_t *self = self_;
    //  Callers have stopped before us (reverse start order): fail what is
    //  left so nobody waits on a reply that will not come.
    while (self->head) {
        qn_pgw_job_t *j = self->head;
        self->head = j->next;
        qn_pgw_fail_job (self, j, "57P01", "broker shutting down", "");
    }
    self->tail = NULL;
    self->queued = 0;
    qn_pgw_fail_queued_acks (self, "57P01", "broker shutting down");
    qn_pgw_fail_queued_pushes (self, "57P01", "broker shutting down", false);
    return QN_DONE;
}

static void
s_destroy (void **self_p)
{
    qn_pgw_t *self = *self_p;
    for (uint32_t i = 0; i <= self->pool_size; i++) {
        qn_pgw_conn_t *c = i < self->pool_size ? &self->pool [i] : &self->health;
        if (c->job)
            qn_pgw_job_free (c->job);
        qn_pgw_conn_clear_result (c);
        if (c->conn)
            PQfinish (c->conn);
    }
    while (self->push_head) {
        qn_pgw_push_t *r = self->push_head;
        self->push_head = r->next;
        qn_pgw_push_free (r);
    }
    while (self->ack_head) {
        qn_pgw_job_t *j = self->ack_head;
        self->ack_head = j->next;
        qn_pgw_job_free (j);
    }
    msgpack_sbuffer_destroy (&self->reply);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_STOP, s_on_stop },
    { QN_MSG_PG_EXEC, s_on_exec },
    { QN_MSG_PUSH, qn_pgw_on_push },
    { QN_MSG_SPOOL_DRAINED, qn_pgw_on_drained },
    { QN_MSG_MAINT_SET, qn_pgw_on_maint_set },
    { QN_MSG_MESH_MAINT_POLL, qn_pgw_on_maint_poll },
    { 0, NULL }
};

qn_actor_t *
qn_pg_writer_new (qn_kernel_t *kernel, const qn_config_t *config, const char *name,
                  uint32_t pool_size)
{
    qn_pgw_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    snprintf (self->name, sizeof self->name, "%s", name);
    self->is_writer = !strcmp (name, "pg_writer");
    self->pool_size = pool_size > QN_PGW_MAX_POOL ? QN_PGW_MAX_POOL : pool_size;
    for (uint32_t i = 0; i < QN_PGW_MAX_POOL; i++)
        self->pool [i].fd = -1;
    self->health.fd = -1;
    qn_push_route_init (&self->route);
    msgpack_sbuffer_init (&self->reply);
    qn_actor_def_t def = {
        .name = name, .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}

