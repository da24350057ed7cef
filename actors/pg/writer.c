/*  actors/pg/writer.c - the PostgreSQL pool
    Runs prepared statements for the other actors over a pool of
    non-blocking libpq connections in pipeline mode, binary parameters and
    binary results. Concurrent pushes are merged into one queen.push call
    (typed arrays): a push waits for a batch only while every connection
    (or every push lane) is busy, so light load gets low latency and heavy
    load gets big batches.
    Receives  QN_MSG_PG_EXEC, QN_MSG_PG_PUSH (see actors.h)
    Sends     QN_MSG_PG_RESULT replies; "db" events (writer only)
    Owns      the connections, the job queues, prepared-statement state
    Failure   a dead connection fails its job with SQLSTATE 08006 and is
              reconnected with backoff; with no connection up or being
              opened, jobs fail at once (callers spool or answer 503)
*/
#include "actors/actors.h"
#include "actors/pg/statements.h"
#include "wire/pg_codec.h"

#include <libpq-fe.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_POOL       128
#define S_PUSH_LANES     2
#define S_PUSH_MAX_PARTS 256
#define S_MAX_QUEUED     200000
#define S_PING_MS        1000
#define S_PING_DEAD_MS   1500
#define S_CONNECT_TIMEOUT_MS 5000
#define S_HEALTH_REPEAT_MS 2000

typedef enum { C_DOWN, C_CONNECTING, C_IDLE, C_BUSY } s_conn_state_t;
typedef enum { J_EXEC, J_PUSH, J_PING } s_job_kind_t;

typedef struct s_push_req {
    struct s_push_req *next;
    char reply_to [QN_ENV_MAX_NAME + 1];
    uint64_t corr;
    msgpack_unpacked msg;       //  Owned: the decoded request body
    char *body;                 //  Owned copy of the body: msg's strings point into it
    char *tenant;               //  Points into msg
    size_t tenant_len;
    const msgpack_object *items;
    uint32_t first_ord;         //  0-based position of item 0 in the batch
    bool solo;                  //  Run alone (after a merged batch failed)
    int retries;
} s_push_req_t;

typedef struct s_job {
    struct s_job *next;
    s_job_kind_t kind;
    char reply_to [QN_ENV_MAX_NAME + 1];
    uint64_t corr;
    uint32_t stmt_id;
    char *sql;                  //  Owned, for QN_SQL_RAW
    uint32_t nparams;
    qn_buf_t params;            //  All parameter bytes back to back
    size_t offsets [QN_SQL_MAX_PARAMS];
    int lengths [QN_SQL_MAX_PARAMS];
    int formats [QN_SQL_MAX_PARAMS];
    bool nulls [QN_SQL_MAX_PARAMS];
    s_push_req_t *reqs;         //  Owned, J_PUSH: the merged requests
    uint32_t item_count;
} s_job_t;

typedef struct {
    PGconn *conn;
    s_conn_state_t state;
    int fd;
    bool want_write;
    int64_t retry_at_ms;
    int64_t backoff_ms;
    s_job_t *job;               //  In flight
    int64_t busy_since_ms;
    int64_t connect_started_ms;
    bool expect_prepare;
    bool prepared [QN_SQL_COUNT_];
    PGresult *result;           //  The statement's result, until SYNC
    char sqlstate [6];
    char *error;                //  First error of the job, owned
    char *detail;
} s_conn_t;

typedef struct {
    qn_kernel_t *kernel;        //  Not owned
    const qn_config_t *config;  //  Not owned
    char name [32];
    bool is_writer;
    uint32_t pool_size;
    s_conn_t pool [S_MAX_POOL];
    s_conn_t health;            //  Writer only: pings, never queued behind jobs
    int64_t ping_sent_ms;       //  0 = no ping in flight
    bool db_up;
    bool db_up_known;
    int64_t health_published_ms;
    s_job_t *head, *tail;       //  Queued exec jobs
    uint32_t queued;
    s_push_req_t *push_head, *push_tail;
    uint32_t push_in_flight;
    qn_pg_params_t params;
    msgpack_sbuffer reply;      //  Reusable encode buffer
} self_t;

static void s_pump (self_t *self);
static void s_conn_start (self_t *self, s_conn_t *c);
static void s_on_fd (void *self_, int fd, uint32_t events);

void
qn_pg_params (const qn_config_t *config, qn_pg_params_t *p, int connect_timeout_s)
{
    memset (p, 0, sizeof *p);
    snprintf (p->port, sizeof p->port, "%lld", (long long) config->pg_port);
    snprintf (p->options, sizeof p->options,
              "-c jit=off -c statement_timeout=%lld -c idle_in_transaction_session_timeout=60000"
              " -c lock_timeout=%lld",
              (long long) config->db_statement_timeout_ms, (long long) config->db_statement_timeout_ms);
    static char timeout [16];
    snprintf (timeout, sizeof timeout, "%d", connect_timeout_s);
    const char *k [] = { "host", "port", "user", "password", "dbname", "application_name",
                         "options", "connect_timeout", NULL };
    const char *v [] = { config->pg_host, p->port, config->pg_user, config->pg_password,
                         config->pg_db, "queen", p->options, timeout, NULL };
    for (int i = 0; k [i]; i++) {
        p->keys [i] = k [i];
        p->values [i] = v [i];
    }
}

// ------------------------------------------------------------------ replies
static void
s_pack_str (msgpack_packer *pk, const char *s)
{
    size_t n = s ? strlen (s) : 0;
    msgpack_pack_str (pk, n);
    msgpack_pack_str_body (pk, s ? s : "", n);
}

static void
s_send_reply (self_t *self, const char *to, uint64_t corr)
{
    qn_msg_t msg = {
        .to = to, .type = QN_MSG_PG_RESULT, .corr = corr, .flags = QN_ENV_FLAG_REPLY,
        .body = self->reply.data, .body_len = self->reply.size
    };
    //  A requester that is gone or full loses its reply; it has its own
    //  deadline and answers its client.
    if (qn_send (self->kernel, &msg))
        qn_count (self->kernel, "pg_reply_dropped", 1);
}

static void
s_reply_error (self_t *self, const char *to, uint64_t corr, const char *sqlstate,
               const char *message, const char *detail)
{
    msgpack_sbuffer_clear (&self->reply);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &self->reply, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 5);
    msgpack_pack_false (&pk);
    s_pack_str (&pk, sqlstate);
    s_pack_str (&pk, message);
    s_pack_str (&pk, detail);
    msgpack_pack_array (&pk, 0);
    s_send_reply (self, to, corr);
}

//  Packs rows [first, last) of res; with ord_base >= 0 column 0 (ord) is
//  rebased for a request merged into a push batch.
static void
s_pack_rows (msgpack_packer *pk, PGresult *res, int first, int last, int64_t ord_base)
{
    int cols = PQnfields (res);
    msgpack_pack_array (pk, (size_t) (last - first));
    for (int r = first; r < last; r++) {
        msgpack_pack_array (pk, (size_t) cols);
        for (int c = 0; c < cols; c++) {
            const char *v = PQgetvalue (res, r, c);
            int len = PQgetisnull (res, r, c) ? -1 : PQgetlength (res, r, c);
            if (c == 0 && ord_base >= 0 && len == 4) {
                int32_t ord = (int32_t) ((uint32_t) (uint8_t) v [0] << 24 | (uint32_t) (uint8_t) v [1] << 16
                                       | (uint32_t) (uint8_t) v [2] << 8 | (uint8_t) v [3]);
                msgpack_pack_int64 (pk, ord - ord_base);
            }
            else
            if (qn_pg_decode_value (PQftype (res, c), v, len, pk))
                msgpack_pack_nil (pk);
        }
    }
}

static void
s_reply_rows (self_t *self, const char *to, uint64_t corr, PGresult *res,
              int first, int last, int64_t ord_base)
{
    msgpack_sbuffer_clear (&self->reply);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &self->reply, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 5);
    msgpack_pack_true (&pk);
    s_pack_str (&pk, "00000");
    s_pack_str (&pk, "");
    s_pack_str (&pk, "");
    s_pack_rows (&pk, res, first, last, ord_base);
    s_send_reply (self, to, corr);
}

// ------------------------------------------------------------------ jobs
static void
s_push_req_free (s_push_req_t *r)
{
    msgpack_unpacked_destroy (&r->msg);
    free (r->body);
    free (r);
}

static void
s_job_free (s_job_t *j)
{
    qn_buf_free (&j->params);
    free (j->sql);
    while (j->reqs) {
        s_push_req_t *next = j->reqs->next;
        s_push_req_free (j->reqs);
        j->reqs = next;
    }
    free (j);
}

//  A job can still run here: a connection is up or being opened. At start
//  (and after a reconnect) the health connection may report the database
//  up before the pool's connections are open: a request arriving then
//  waits for them instead of failing (they open, or fail within
//  S_CONNECT_TIMEOUT_MS and the queued jobs fail with them).
static bool
s_any_usable (self_t *self)
{
    for (uint32_t i = 0; i < self->pool_size; i++)
        if (self->pool [i].state != C_DOWN)
            return true;
    return false;
}

static void
s_fail_job (self_t *self, s_job_t *j, const char *sqlstate, const char *message, const char *detail)
{
    if (j->kind == J_EXEC)
        s_reply_error (self, j->reply_to, j->corr, sqlstate, message, detail);
    else
    if (j->kind == J_PUSH)
        for (s_push_req_t *r = j->reqs; r; r = r->next)
            s_reply_error (self, r->reply_to, r->corr, sqlstate, message, detail);
    s_job_free (j);
}

//  Encodes the request's parameters for statement `stmt` (types from the
//  catalogue) or as text for raw SQL.
static int
s_job_params (s_job_t *j, const qn_sql_stmt_t *stmt, const msgpack_object *params,
              char *err, size_t err_len)
{
    if (params->type != MSGPACK_OBJECT_ARRAY || params->via.array.size > QN_SQL_MAX_PARAMS) {
        snprintf (err, err_len, "parameters must be an array of at most %d", QN_SQL_MAX_PARAMS);
        return -1;
    }
    j->nparams = params->via.array.size;
    if (stmt && j->nparams != stmt->nparams) {
        snprintf (err, err_len, "statement %s takes %u parameters, got %u",
                  stmt->name, stmt->nparams, j->nparams);
        return -1;
    }
    for (uint32_t i = 0; i < j->nparams; i++) {
        uint32_t oid = stmt ? stmt->types [i] : 0;
        size_t at = j->params.len;
        int rc = qn_pg_encode_param (oid, &params->via.array.ptr [i], &j->params, err, err_len);
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

static void
s_enqueue (self_t *self, s_job_t *j)
{
    j->next = NULL;
    if (self->tail)
        self->tail->next = j;
    else
        self->head = j;
    self->tail = j;
    self->queued++;
}

static int
s_on_exec (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    char to [QN_ENV_MAX_NAME + 1];
    memcpy (to, env->reply_to.ptr, env->reply_to.len);
    to [env->reply_to.len] = 0;
    msgpack_unpacked msg;
    msgpack_unpacked_init (&msg);
    s_job_t *j = qn_zalloc (sizeof *j);
    j->kind = J_EXEC;
    memcpy (j->reply_to, to, sizeof to);
    j->corr = env->corr;
    char err [160] = "";
    if (msgpack_unpack_next (&msg, env->body.ptr, env->body.len, NULL) != MSGPACK_UNPACK_SUCCESS
    ||  msg.data.type != MSGPACK_OBJECT_ARRAY || msg.data.via.array.size != 3
    ||  msg.data.via.array.ptr [0].type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
        snprintf (err, sizeof err, "malformed PG_EXEC body");
        goto failed;
    }
    const msgpack_object *f = msg.data.via.array.ptr;
    j->stmt_id = (uint32_t) f [0].via.u64;
    const qn_sql_stmt_t *stmt = qn_sql_stmt (j->stmt_id);
    if (j->stmt_id != QN_SQL_RAW && !stmt) {
        snprintf (err, sizeof err, "unknown statement %u", j->stmt_id);
        goto failed;
    }
    if (j->stmt_id == QN_SQL_RAW) {
        if (f [1].type != MSGPACK_OBJECT_STR) {
            snprintf (err, sizeof err, "raw statement without SQL");
            goto failed;
        }
        j->sql = qn_strndup (f [1].via.str.ptr, f [1].via.str.size);
    }
    if (s_job_params (j, stmt, &f [2], err, sizeof err))
        goto failed;
    msgpack_unpacked_destroy (&msg);
    if (!s_any_usable (self)) {
        s_fail_job (self, j, "08006", "database unavailable", "");
        return 0;
    }
    if (self->queued >= S_MAX_QUEUED) {
        s_fail_job (self, j, "53300", "broker database queue is full", "");
        return 0;
    }
    s_enqueue (self, j);
    s_pump (self);
    return 0;

failed:
    msgpack_unpacked_destroy (&msg);
    qn_warn ("bad statement request: from=%s reason=%s", to, err);
    s_fail_job (self, j, "XX000", err, "");
    return 0;
}

static int
s_on_push (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    s_push_req_t *r = qn_zalloc (sizeof *r);
    memcpy (r->reply_to, env->reply_to.ptr, env->reply_to.len);
    r->corr = env->corr;
    msgpack_unpacked_init (&r->msg);
    const msgpack_object *o = &r->msg.data;
    //  msgpack_unpack_next references strings in place, and the envelope
    //  is only borrowed: a request that waits in the queue needs its copy.
    r->body = qn_malloc (env->body.len ? env->body.len : 1);
    memcpy (r->body, env->body.ptr, env->body.len);
    if (msgpack_unpack_next (&r->msg, r->body, env->body.len, NULL) != MSGPACK_UNPACK_SUCCESS
    ||  o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 2
    ||  o->via.array.ptr [0].type != MSGPACK_OBJECT_STR
    ||  o->via.array.ptr [1].type != MSGPACK_OBJECT_ARRAY) {
        s_reply_error (self, r->reply_to, r->corr, "XX000", "malformed PG_PUSH body", "");
        s_push_req_free (r);
        return 0;
    }
    r->tenant = (char *) o->via.array.ptr [0].via.str.ptr;
    r->tenant_len = o->via.array.ptr [0].via.str.size;
    r->items = &o->via.array.ptr [1];
    if (!s_any_usable (self)) {
        s_reply_error (self, r->reply_to, r->corr, "08006", "database unavailable", "");
        s_push_req_free (r);
        return 0;
    }
    if (self->push_tail)
        self->push_tail->next = r;
    else
        self->push_head = r;
    self->push_tail = r;
    s_pump (self);
    return 0;
}

//  Cheap 64-bit key of (queue, partition) for counting distinct partitions.
static uint64_t
s_part_key (const msgpack_object *item)
{
    uint64_t h = 1469598103934665603ULL;
    for (int f = 0; f < 2; f++) {
        const msgpack_object *s = &item->via.array.ptr [f];
        if (s->type != MSGPACK_OBJECT_STR)
            continue;
        for (uint32_t i = 0; i < s->via.str.size; i++)
            h = (h ^ (uint8_t) s->via.str.ptr [i]) * 1099511628211ULL;
        h = (h ^ 0xff) * 1099511628211ULL;
    }
    return h ? h : 1;
}

//  Takes queued push requests into one batch: same tenant, at most
//  PUSH_MAX_BATCH items and 256 distinct partitions (a single request may
//  exceed both: it stays whole, so a push is atomic).
static s_job_t *
s_build_push_batch (self_t *self)
{
    s_job_t *j = qn_zalloc (sizeof *j);
    j->kind = J_PUSH;
    j->stmt_id = QN_SQL_PUSH_AT;
    s_push_req_t *last = NULL;
    uint32_t parts = 0;
    uint64_t seen [S_PUSH_MAX_PARTS];
    while (self->push_head) {
        s_push_req_t *r = self->push_head;
        if (last && (last->solo || r->solo
                || r->tenant_len != j->reqs->tenant_len
                || (r->tenant_len && memcmp (r->tenant, j->reqs->tenant, r->tenant_len))
                || j->item_count + r->items->via.array.size > (uint32_t) self->config->push_max_batch))
            break;
        //  Count the partitions this request adds.
        uint32_t added = 0;
        uint64_t fresh [S_PUSH_MAX_PARTS];
        bool over = false;
        for (uint32_t i = 0; i < r->items->via.array.size && !over; i++) {
            uint64_t k = s_part_key (&r->items->via.array.ptr [i]);
            bool known = false;
            for (uint32_t p = 0; p < parts && !known; p++)
                known = seen [p] == k;
            for (uint32_t p = 0; p < added && !known; p++)
                known = fresh [p] == k;
            if (!known) {
                if (parts + added == S_PUSH_MAX_PARTS)
                    over = true;
                else
                    fresh [added++] = k;
            }
        }
        if (over && last)
            break;
        memcpy (seen + parts, fresh, added * sizeof *fresh);
        parts += added;
        self->push_head = r->next;
        if (!self->push_head)
            self->push_tail = NULL;
        r->next = NULL;
        r->first_ord = j->item_count;
        j->item_count += r->items->via.array.size;
        if (last)
            last->next = r;
        else
            j->reqs = r;
        last = r;
        if (over)
            break;
    }
    //  Parameters: tenant, queues, partitions, txn ids, payloads, trace
    //  ids, producers, encrypted flags, strict.
    static const uint32_t elems [7] = {
        QN_OID_TEXT, QN_OID_TEXT, QN_OID_TEXT, QN_OID_BYTEA, QN_OID_UUID, QN_OID_TEXT, QN_OID_BOOL
    };
    j->nparams = 9;
    j->offsets [0] = 0;
    qn_buf_append (&j->params, j->reqs->tenant, j->reqs->tenant_len);
    j->lengths [0] = (int) j->reqs->tenant_len;
    j->formats [0] = 1;
    char err [160];
    for (int f = 0; f < 7; f++) {
        qn_pg_array_t a;
        size_t at = j->params.len;
        qn_pg_array_begin (&a, &j->params, elems [f]);
        for (s_push_req_t *r = j->reqs; r; r = r->next)
            for (uint32_t i = 0; i < r->items->via.array.size; i++) {
                const msgpack_object *item = &r->items->via.array.ptr [i];
                const msgpack_object *v = item->type == MSGPACK_OBJECT_ARRAY
                                       && item->via.array.size > (uint32_t) f
                                        ? &item->via.array.ptr [f] : NULL;
                if (qn_pg_array_add (&a, v, err, sizeof err)) {
                    //  The codec validated every item: this is a bug.
                    qn_error ("push item does not encode: field=%d reason=%s", f, err);
                    qn_pg_array_add (&a, NULL, err, sizeof err);
                }
            }
        qn_pg_array_end (&a);
        j->offsets [f + 1] = at;
        j->lengths [f + 1] = (int) (j->params.len - at);
        j->formats [f + 1] = 1;
    }
    j->offsets [8] = j->params.len;
    qn_buf_putc (&j->params, 0);
    j->lengths [8] = 1;
    j->formats [8] = 1;
    //  Per-message not-before instants (item field 7, us since the epoch),
    //  or NULL for the whole batch when no item is delayed.
    j->nparams = 10;
    bool delayed = false;
    for (s_push_req_t *r = j->reqs; r && !delayed; r = r->next)
        for (uint32_t i = 0; i < r->items->via.array.size && !delayed; i++)
            delayed = r->items->via.array.ptr [i].type == MSGPACK_OBJECT_ARRAY
                   && r->items->via.array.ptr [i].via.array.size > 7;
    j->offsets [9] = j->params.len;
    j->nulls [9] = !delayed;
    j->formats [9] = 1;
    if (delayed) {
        qn_pg_array_t a;
        qn_pg_array_begin (&a, &j->params, QN_OID_INT8);
        for (s_push_req_t *r = j->reqs; r; r = r->next)
            for (uint32_t i = 0; i < r->items->via.array.size; i++) {
                const msgpack_object *item = &r->items->via.array.ptr [i];
                const msgpack_object *nb = item->type == MSGPACK_OBJECT_ARRAY
                                        && item->via.array.size > 7 ? &item->via.array.ptr [7] : NULL;
                if (qn_pg_array_add (&a, nb, err, sizeof err))
                    qn_pg_array_add (&a, NULL, err, sizeof err);
            }
        qn_pg_array_end (&a);
    }
    j->lengths [9] = (int) (j->params.len - j->offsets [9]);
    return j;
}

// ------------------------------------------------------------------ connections
static void
s_conn_clear_result (s_conn_t *c)
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
static void
s_publish_health (self_t *self, bool up)
{
    int64_t now = qn_now_ms ();
    bool changed = !self->db_up_known || self->db_up != up;
    if (!changed && now - self->health_published_ms < S_HEALTH_REPEAT_MS)
        return;
    self->health_published_ms = now;
    self->db_up = up;
    self->db_up_known = true;
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
    msgpack_packer pk;
    msgpack_packer_init (&pk, &buf, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 1);
    up ? msgpack_pack_true (&pk) : msgpack_pack_false (&pk);
    qn_publish (self->kernel, "db", QN_MSG_DB_HEALTH, buf.data, buf.size);
    msgpack_sbuffer_destroy (&buf);
}

static void
s_conn_drop (self_t *self, s_conn_t *c, const char *why)
{
    if (c->fd >= 0)
        qn_fd_unwatch (self->kernel, c->fd);
    if (c->job) {
        s_job_t *j = c->job;
        c->job = NULL;
        if (j->kind == J_PUSH)
            self->push_in_flight--;
        if (j->kind != J_PING)
            s_fail_job (self, j, "08006", "database connection lost", why);
        else
            s_job_free (j);
    }
    if (c == &self->health) {
        self->ping_sent_ms = 0;
        s_publish_health (self, false);
    }
    qn_debug ("connection dropped: actor=%s reason=%s", self->name, why);
    s_conn_clear_result (c);
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
    if (!s_any_usable (self) && c != &self->health) {
        while (self->head) {
            s_job_t *j = self->head;
            self->head = j->next;
            self->queued--;
            s_fail_job (self, j, "08006", "database unavailable", why);
        }
        self->tail = NULL;
        while (self->push_head) {
            s_push_req_t *r = self->push_head;
            self->push_head = r->next;
            s_reply_error (self, r->reply_to, r->corr, "08006", "database unavailable", why);
            s_push_req_free (r);
        }
        self->push_tail = NULL;
    }
}

static void
s_conn_watch (self_t *self, s_conn_t *c, bool write)
{
    c->want_write = write;
    qn_fd_modify (self->kernel, c->fd, QN_FD_IN | (write ? QN_FD_OUT : 0));
}

static void
s_flush (self_t *self, s_conn_t *c)
{
    int rc = PQflush (c->conn);
    if (rc < 0)
        s_conn_drop (self, c, PQerrorMessage (c->conn));
    else
    if ((rc == 1) != c->want_write)
        s_conn_watch (self, c, rc == 1);
}

//  Sends job j on idle connection c: [prepare] + execute + sync.
static void
s_conn_send (self_t *self, s_conn_t *c, s_job_t *j)
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
                s_fail_job (self, j, "08006", "cannot send prepare", PQerrorMessage (c->conn));
                s_conn_drop (self, c, "send failed");
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
        s_fail_job (self, j, "08006", "cannot send statement", PQerrorMessage (c->conn));
        s_conn_drop (self, c, "send failed");
        return;
    }
    c->job = j;
    c->state = C_BUSY;
    c->busy_since_ms = qn_now_ms ();
    s_flush (self, c);
}

static void
s_finish_push (self_t *self, s_job_t *j, s_conn_t *c)
{
    self->push_in_flight--;
    if (c->error) {
        //  A merged batch fails only for systemic reasons when the codec
        //  validated every item; still, never let one request's data fail
        //  another's: rerun each request alone. Deadlocks and
        //  serialisation failures rerun as they were.
        bool transient = !strncmp (c->sqlstate, "40", 2);
        bool systemic = !strncmp (c->sqlstate, "08", 2) || !strncmp (c->sqlstate, "57", 2)
                     || !strncmp (c->sqlstate, "53", 2);
        bool many = j->reqs && j->reqs->next;
        if (!systemic && (transient || many)) {
            s_push_req_t *r = j->reqs, *back = NULL, *back_tail = NULL;
            j->reqs = NULL;
            while (r) {
                s_push_req_t *next = r->next;
                r->next = NULL;
                if (++r->retries > 3) {
                    s_reply_error (self, r->reply_to, r->corr, c->sqlstate, c->error, c->detail);
                    s_push_req_free (r);
                }
                else {
                    r->solo = many;
                    if (back_tail)
                        back_tail->next = r;
                    else
                        back = r;
                    back_tail = r;
                }
                r = next;
            }
            if (back) {
                back_tail->next = self->push_head;
                self->push_head = back;
                if (!self->push_tail)
                    self->push_tail = back_tail;
            }
            s_job_free (j);
            return;
        }
        s_fail_job (self, j, c->sqlstate, c->error, c->detail ? c->detail : "");
        return;
    }
    //  Rows come back in ord order, one per item: split them by request.
    PGresult *res = c->result;
    int rows = res ? PQntuples (res) : 0;
    for (s_push_req_t *r = j->reqs; r; r = r->next) {
        int first = (int) r->first_ord;
        int last = first + (int) r->items->via.array.size;
        if (last > rows)
            last = rows;
        if (first > last)
            first = last;
        s_reply_rows (self, r->reply_to, r->corr, res, first, last, r->first_ord);
    }
    qn_count (self->kernel, "pg_push_batches", 1);
    qn_count (self->kernel, "pg_push_items", j->item_count);
    s_job_free (j);
}

static void
s_finish_job (self_t *self, s_conn_t *c)
{
    s_job_t *j = c->job;
    c->job = NULL;
    c->state = C_IDLE;
    c->backoff_ms = 0;
    if (j->kind == J_PING) {
        self->ping_sent_ms = 0;
        s_publish_health (self, !c->error);
        s_job_free (j);
    }
    else
    if (j->kind == J_PUSH)
        s_finish_push (self, j, c);
    else {
        if (c->error)
            s_reply_error (self, j->reply_to, j->corr, c->sqlstate, c->error,
                           c->detail ? c->detail : "");
        else
        if (c->result)
            s_reply_rows (self, j->reply_to, j->corr, c->result, 0, PQntuples (c->result), -1);
        else
            s_reply_error (self, j->reply_to, j->corr, "XX000", "no result", "");
        s_job_free (j);
    }
    s_conn_clear_result (c);
}

static void
s_note_error (s_conn_t *c, PGresult *r)
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
s_conn_read (self_t *self, s_conn_t *c)
{
    if (!PQconsumeInput (c->conn)) {
        s_conn_drop (self, c, PQerrorMessage (c->conn));
        return;
    }
    while (c->job && !PQisBusy (c->conn)) {
        PGresult *r = PQgetResult (c->conn);
        if (!r)
            continue;                   //  End of one statement's results
        ExecStatusType st = PQresultStatus (r);
        if (st == PGRES_PIPELINE_SYNC) {
            PQclear (r);
            s_finish_job (self, c);
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
        s_conn_drop (self, c, PQerrorMessage (c->conn));
}

static s_conn_t *
s_conn_of_fd (self_t *self, int fd)
{
    if (self->health.fd == fd && self->health.state != C_DOWN)
        return &self->health;
    for (uint32_t i = 0; i < self->pool_size; i++)
        if (self->pool [i].fd == fd && self->pool [i].state != C_DOWN)
            return &self->pool [i];
    return NULL;
}

static void
s_connect_poll (self_t *self, s_conn_t *c)
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
        s_conn_drop (self, c, PQerrorMessage (c->conn));
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
            s_conn_drop (self, c, "cannot enter pipeline mode");
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
            s_publish_health (self, true);
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

static void
s_conn_start (self_t *self, s_conn_t *c)
{
    c->conn = PQconnectStartParams (self->params.keys, self->params.values, 0);
    if (c->conn)
        PQsetNoticeProcessor (c->conn, s_notice, NULL);
    if (!c->conn || PQstatus (c->conn) == CONNECTION_BAD) {
        s_conn_drop (self, c, c->conn ? PQerrorMessage (c->conn) : "out of memory");
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
    self_t *self = self_;
    s_conn_t *c = s_conn_of_fd (self, fd);
    if (!c) {
        qn_fd_unwatch (self->kernel, fd);
        return;
    }
    if (c->state == C_CONNECTING) {
        s_connect_poll (self, c);
        s_pump (self);
        return;
    }
    if (events & QN_FD_OUT)
        s_flush (self, c);
    if (c->state != C_DOWN && (events & (QN_FD_IN | QN_FD_ERR | QN_FD_HUP)))
        s_conn_read (self, c);
    s_pump (self);
}

// ------------------------------------------------------------------ scheduling
static s_conn_t *
s_idle_conn (self_t *self)
{
    for (uint32_t i = 0; i < self->pool_size; i++)
        if (self->pool [i].state == C_IDLE)
            return &self->pool [i];
    return NULL;
}

//  Hands queued work to idle connections: pushes first (up to the lane
//  limit), then statements in arrival order.
static void
s_pump (self_t *self)
{
    s_conn_t *c;
    while ((c = s_idle_conn (self))) {
        if (self->push_head && self->push_in_flight < S_PUSH_LANES) {
            s_job_t *j = s_build_push_batch (self);
            self->push_in_flight++;
            s_conn_send (self, c, j);
            continue;
        }
        if (!self->head)
            break;
        s_job_t *j = self->head;
        self->head = j->next;
        if (!self->head)
            self->tail = NULL;
        self->queued--;
        s_conn_send (self, c, j);
    }
    qn_gauge_set (self->kernel, self->is_writer ? "pg_writer_queued" : "pg_reader_queued",
                  self->queued);
}

static void
s_on_tick (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    int64_t now = qn_now_ms ();
    //  Asynchronous connects have no timeout of their own: a server that
    //  accepts TCP but never answers (frozen) would hold them forever.
    for (uint32_t i = 0; i <= self->pool_size; i++) {
        s_conn_t *c = i < self->pool_size ? &self->pool [i] : &self->health;
        if (c->state == C_CONNECTING && now - c->connect_started_ms > S_CONNECT_TIMEOUT_MS)
            s_conn_drop (self, c, "connect timed out");
    }
    for (uint32_t i = 0; i < self->pool_size; i++)
        if (self->pool [i].state == C_DOWN && now >= self->pool [i].retry_at_ms)
            s_conn_start (self, &self->pool [i]);
    if (self->is_writer) {
        s_conn_t *h = &self->health;
        if (h->state == C_CONNECTING && now - h->connect_started_ms > S_PING_DEAD_MS)
            s_publish_health (self, false);
        if (h->state == C_DOWN && now >= h->retry_at_ms)
            s_conn_start (self, h);
        if (self->ping_sent_ms && now - self->ping_sent_ms > S_PING_DEAD_MS)
            s_publish_health (self, false);     //  Frozen or unreachable
        if (h->state == C_DOWN && (!self->db_up_known || self->db_up)
        &&  h->backoff_ms >= 400)
            s_publish_health (self, false);
        if (self->db_up_known)
            s_publish_health (self, self->db_up);   //  Repeats, rate-limited
    }
    s_pump (self);
}

static void
s_on_ping (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    s_conn_t *h = &self->health;
    if (h->state != C_IDLE || self->ping_sent_ms)
        return;
    s_job_t *j = qn_zalloc (sizeof *j);
    j->kind = J_PING;
    j->stmt_id = QN_SQL_PING;
    self->ping_sent_ms = qn_now_ms ();
    s_conn_send (self, h, j);
}

static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    qn_pg_params (self->config, &self->params, 5);
    for (uint32_t i = 0; i < self->pool_size; i++)
        s_conn_start (self, &self->pool [i]);
    if (self->is_writer) {
        s_conn_start (self, &self->health);
        qn_timer_add (self->kernel, S_PING_MS / 2, S_PING_MS / 2, s_on_ping, NULL);
    }
    qn_timer_add (self->kernel, 100, 100, s_on_tick, NULL);
    return 0;
}

static int
s_on_stop (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    //  Callers have stopped before us (reverse start order): fail what is
    //  left so nobody waits on a reply that will not come.
    while (self->head) {
        s_job_t *j = self->head;
        self->head = j->next;
        s_fail_job (self, j, "57P01", "broker shutting down", "");
    }
    self->tail = NULL;
    return QN_DONE;
}

static void
s_destroy (void **self_p)
{
    self_t *self = *self_p;
    for (uint32_t i = 0; i <= self->pool_size; i++) {
        s_conn_t *c = i < self->pool_size ? &self->pool [i] : &self->health;
        if (c->job)
            s_job_free (c->job);
        s_conn_clear_result (c);
        if (c->conn)
            PQfinish (c->conn);
    }
    while (self->push_head) {
        s_push_req_t *r = self->push_head;
        self->push_head = r->next;
        s_push_req_free (r);
    }
    msgpack_sbuffer_destroy (&self->reply);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_STOP, s_on_stop },
    { QN_MSG_PG_EXEC, s_on_exec },
    { QN_MSG_PG_PUSH, s_on_push },
    { 0, NULL }
};

qn_actor_t *
qn_pg_writer_new (qn_kernel_t *kernel, const qn_config_t *config, const char *name,
                  uint32_t pool_size)
{
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    snprintf (self->name, sizeof self->name, "%s", name);
    self->is_writer = !strcmp (name, "pg_writer");
    self->pool_size = pool_size > S_MAX_POOL ? S_MAX_POOL : pool_size;
    for (uint32_t i = 0; i < S_MAX_POOL; i++)
        self->pool [i].fd = -1;
    self->health.fd = -1;
    msgpack_sbuffer_init (&self->reply);
    qn_actor_def_t def = {
        .name = name, .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}
