/*  actors/retention/retention.c - periodic retention, eviction and segment upkeep
    Every min (RETENTION_INTERVAL, EVICTION_INTERVAL) ms it calls
    queen.retention_run (5000), which in one short transaction deletes
    messages past retentionSeconds / completedRetentionSeconds, moves
    messages waiting past maxWaitTimeSeconds to the dead-letter queue,
    sweeps deleted queues and partitions, and drops one old segment. A job
    that used its whole budget may have more to do, so the call repeats at
    once (at most S_MAX_ROUNDS times per tick). queen.ensure_segments runs
    every 10 s on its own, so new segments exist even between long
    retention intervals; the same tick calls queen._ingest_rollup, which
    folds the partitions' pushed counts into the per-minute ingest counts
    the throughput reads use (docs/operations.md). Each tick also calls queen.sqs_sweep (5000): the
    SQS door's expired dedup entries and the metadata / receive counts of
    messages that are gone (docs/sqs.md).
    Every broker runs this: the SQL is safe to run concurrently (small
    batches, try-locks, lock_timeout on the segment drop), so no leader is
    needed.
    Vacuum of queen.ready: every pop and ack updates or deletes a ready
    row, and the claim scan walks the dead versions' index entries until a
    vacuum removes them. Every S_VACUUM_CHECK_MS this actor reads the
    table's dead rows and churn (queen.ready_churn) on a maintenance
    connection of its own (plain, not pipelined: VACUUM runs outside any
    transaction) and runs VACUUM (SKIP_LOCKED) queen.ready when both the
    dead rows and the churn since its last vacuum reach
    READY_VACUUM_DEAD_ROWS (0 = off). Counter ready_vacuums, log line
    "ready vacuumed".
    Receives  PG_RESULT replies (its own timers drive it)
    Sends     QN_MSG_PG_EXEC to pg_writer
    Owns      its timers and the maintenance connection
    Failure   a failed call is logged (warn once per failure streak) and
              tried again at the next tick; a maintenance connection that
              fails is closed and reopened at a later check
*/
#include "actors/actors.h"
#include "actors/pg/call.h"
#include "actors/pg/statements.h"
#include "wire/msg_pg.h"

#include <libpq-fe.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#define S_BATCH             5000
#define S_MAX_ROUNDS        20          //  Calls per tick while jobs have more
#define S_SEGMENTS_MS       10000
#define S_VACUUM_CHECK_MS   2000        //  Dead-row checks of queen.ready
#define S_VACUUM_RETRY_MS   30000       //  After the maintenance connection failed

typedef enum { V_NONE, V_CHURN, V_VACUUM } s_vstep_t;

typedef struct {
    qn_kernel_t *kernel;        //  Not owned
    const qn_config_t *config;  //  Not owned
    uint32_t interval_ms;
    bool running;               //  A retention_run is in flight
    int rounds;                 //  Calls made in this tick
    bool segments_running;
    bool rollup_running;        //  A _ingest_rollup is in flight
    bool sqs_running;           //  A sqs_sweep is in flight
    bool failing;               //  Last call failed (logged once)
    msgpack_sbuffer out;
    qn_pg_args_t args;
    //  Vacuum of queen.ready (READY_VACUUM_DEAD_ROWS)
    PGconn *vconn;              //  Owned: the maintenance connection
    int vfd;
    s_vstep_t vstep;            //  Statement in flight on vconn
    int64_t vstarted_ms;
    int64_t vretry_ms;          //  No connection before this instant
    int64_t churn_at_vacuum;    //  Churn read before the last vacuum (0 before the first)
    int64_t dead, churn;        //  Last read
    bool vfailing;
} self_t;

//  Sends PG_EXEC [stmt, nil, params] with one int param (or none).
static int
s_exec (self_t *self, uint32_t stmt, int64_t param, bool has_param, qn_reply_fn *cb)
{
    qn_pg_args_clear (&self->args);
    if (has_param)
        qn_pg_args_int (&self->args, param);
    uint32_t timeout = (uint32_t) self->config->db_statement_timeout_ms + 2000;
    return qn_pg_call (self->kernel, "pg_writer", &self->out, stmt, NULL, &self->args, timeout,
                       cb, NULL);
}

static void
s_failed (self_t *self, const char *what, const char *why)
{
    if (!self->failing)
        qn_warn ("%s failed, retrying next tick: %s", what, why);
    else
        qn_debug ("%s failed: %s", what, why);
    self->failing = true;
}

static void s_run (self_t *self);

static bool
s_job (const msgpack_object *job, const char *name)
{
    return job->via.str.size == strlen (name) && !memcmp (job->via.str.ptr, name, job->via.str.size);
}

static void
s_on_run_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    self_t *self = self_;
    self->running = false;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    char why [300];
    if (qn_pg_result_failed (&res, why, sizeof why)) {
        s_failed (self, "retention run", why);
        qn_pg_result_free (&res);
        return;
    }
    self->failing = false;
    bool more = false;
    int64_t age = 0, completed = 0, evicted = 0, swept = 0, dropped = 0;
    for (uint32_t r = 0; r < res.row_count; r++) {
        const msgpack_object *row = &res.rows [r];
        if (row->type != MSGPACK_OBJECT_ARRAY || row->via.array.size != 2
        ||  row->via.array.ptr [0].type != MSGPACK_OBJECT_STR)
            continue;
        const msgpack_object *job = &row->via.array.ptr [0], *n = &row->via.array.ptr [1];
        int64_t v = n->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? (int64_t) n->via.u64 : 0;
        if (s_job (job, "retention"))
            age = v;
        else
        if (s_job (job, "completed_retention"))
            completed = v;
        else
        if (s_job (job, "max_wait"))
            evicted = v;
        else
        if (s_job (job, "deleted"))
            swept = v;
        else
        if (s_job (job, "drop_segments"))
            dropped = v;
        else
            continue;
        //  A job that used its whole budget (or dropped a segment) may
        //  have more to do.
        if (v >= S_BATCH || (v > 0 && s_job (job, "drop_segments")))
            more = true;
    }
    qn_pg_result_free (&res);
    if (age + completed)
        qn_count (self->kernel, "retention_deleted", age + completed);
    if (evicted)
        qn_count (self->kernel, "retention_evicted", evicted);
    if (swept)
        qn_count (self->kernel, "retention_swept", swept);
    if (dropped)
        qn_count (self->kernel, "retention_segments_dropped", dropped);
    if (age + completed + evicted + swept + dropped)
        qn_debug ("retention: deleted=%lld completed=%lld evicted=%lld swept=%lld segments_dropped=%lld",
                  (long long) age, (long long) completed, (long long) evicted, (long long) swept,
                  (long long) dropped);
    if (more && self->rounds < S_MAX_ROUNDS)
        s_run (self);
}

static void
s_run (self_t *self)
{
    if (self->running)
        return;
    self->rounds++;
    if (s_exec (self, QN_SQL_RETENTION, S_BATCH, true, s_on_run_reply) == 0)
        self->running = true;
}

static void
s_on_sqs_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    self_t *self = self_;
    self->sqs_running = false;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    char why [300];
    if (qn_pg_result_failed (&res, why, sizeof why)) {
        s_failed (self, "sqs sweep", why);
        qn_pg_result_free (&res);
        return;
    }
    int64_t swept = 0;
    for (uint32_t r = 0; r < res.row_count; r++) {
        const msgpack_object *row = &res.rows [r];
        if (row->type == MSGPACK_OBJECT_ARRAY && row->via.array.size == 2
        &&  row->via.array.ptr [1].type == MSGPACK_OBJECT_POSITIVE_INTEGER)
            swept += (int64_t) row->via.array.ptr [1].via.u64;
    }
    qn_pg_result_free (&res);
    if (swept) {
        qn_count (self->kernel, "sqs_swept", swept);
        qn_debug ("sqs sweep: rows=%lld", (long long) swept);
    }
}

static void
s_on_tick (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    self->rounds = 0;
    s_run (self);
    if (!self->sqs_running
    &&  s_exec (self, QN_SQL_SQS_SWEEP, S_BATCH, true, s_on_sqs_reply) == 0)
        self->sqs_running = true;
}

static void
s_on_segments_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    self_t *self = self_;
    self->segments_running = false;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    char why [300];
    if (qn_pg_result_failed (&res, why, sizeof why))
        s_failed (self, "ensure_segments", why);
    else
    if (res.row_count == 1 && res.rows [0].type == MSGPACK_OBJECT_ARRAY
    &&  res.rows [0].via.array.size == 1
    &&  res.rows [0].via.array.ptr [0].type == MSGPACK_OBJECT_POSITIVE_INTEGER
    &&  res.rows [0].via.array.ptr [0].via.u64 > 0)
        qn_debug ("segments created: count=%llu",
                  (unsigned long long) res.rows [0].via.array.ptr [0].via.u64);
    qn_pg_result_free (&res);
}

static void
s_on_rollup_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) arg;
    self_t *self = self_;
    self->rollup_running = false;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    char why [300];
    if (qn_pg_result_failed (&res, why, sizeof why))
        s_failed (self, "ingest rollup", why);
    qn_pg_result_free (&res);
}

static void
s_on_segments_tick (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    if (!self->segments_running
    &&  s_exec (self, QN_SQL_ENSURE_SEGMENTS, 0, false, s_on_segments_reply) == 0)
        self->segments_running = true;
    if (!self->rollup_running
    &&  s_exec (self, QN_SQL_INGEST_ROLLUP, 0, false, s_on_rollup_reply) == 0)
        self->rollup_running = true;
}

// ------------------------------------------------------------------ vacuum
static void s_on_vfd (void *self_, int fd, uint32_t events);

static void
s_vclose (self_t *self, const char *why)
{
    if (why) {
        if (!self->vfailing)
            qn_warn ("ready vacuum: maintenance connection failed, retrying later: %s", why);
        self->vfailing = true;
        self->vretry_ms = qn_now_ms () + S_VACUUM_RETRY_MS;
    }
    if (self->vfd >= 0)
        qn_fd_unwatch (self->kernel, self->vfd);
    self->vfd = -1;
    if (self->vconn)
        PQfinish (self->vconn);
    self->vconn = NULL;
    self->vstep = V_NONE;
}

//  Opens the maintenance connection (blocking, 2 s connect timeout: a
//  local maintenance step, not a request path).
static bool
s_vopen (self_t *self)
{
    if (self->vconn)
        return true;
    if (qn_now_ms () < self->vretry_ms)
        return false;
    qn_pg_params_t p;
    qn_pg_params (self->config, &p, 2);
    self->vconn = PQconnectdbParams (p.keys, p.values, 0);
    if (!self->vconn || PQstatus (self->vconn) != CONNECTION_OK) {
        char why [200];
        snprintf (why, sizeof why, "%s", self->vconn ? PQerrorMessage (self->vconn) : "out of memory");
        s_vclose (self, why);
        return false;
    }
    PQsetnonblocking (self->vconn, 1);
    self->vfd = PQsocket (self->vconn);
    if (self->vfd < 0 || qn_fd_watch (self->kernel, self->vfd, QN_FD_IN, s_on_vfd)) {
        self->vfd = -1;
        s_vclose (self, "cannot watch the socket");
        return false;
    }
    return true;
}

static void
s_vsend (self_t *self, s_vstep_t step, const char *sql)
{
    if (!PQsendQuery (self->vconn, sql)) {
        s_vclose (self, PQerrorMessage (self->vconn));
        return;
    }
    while (PQflush (self->vconn) == 1)
        ;                                   //  A few bytes: the socket takes them
    self->vstep = step;
    self->vstarted_ms = qn_now_ms ();
}

//  One statement's result arrived on the maintenance connection.
static void
s_vdone (self_t *self, PGresult *res)
{
    s_vstep_t step = self->vstep;
    self->vstep = V_NONE;
    int64_t limit = self->config->ready_vacuum_dead_rows;
    if (step == V_CHURN) {
        if (PQresultStatus (res) != PGRES_TUPLES_OK || PQntuples (res) != 1) {
            s_vclose (self, PQresultErrorMessage (res));
            return;
        }
        self->vfailing = false;
        self->dead = strtoll (PQgetvalue (res, 0, 0), NULL, 10);
        self->churn = strtoll (PQgetvalue (res, 0, 1), NULL, 10);
        qn_gauge_set (self->kernel, "ready_dead_rows", self->dead);
        //  A vacuum that could not remove rows (an old snapshot sees them)
        //  is not repeated until as much new churn has arrived.
        if (self->churn < self->churn_at_vacuum)
            self->churn_at_vacuum = 0;      //  Statistics were reset
        if (self->dead >= limit && self->churn - self->churn_at_vacuum >= limit)
            s_vsend (self, V_VACUUM, "VACUUM (SKIP_LOCKED) queen.ready");
        return;
    }
    if (PQresultStatus (res) != PGRES_COMMAND_OK) {
        s_vclose (self, PQresultErrorMessage (res));
        return;
    }
    self->churn_at_vacuum = self->churn;
    int64_t ms = qn_now_ms () - self->vstarted_ms;
    qn_count (self->kernel, "ready_vacuums", 1);
    qn_info ("ready vacuumed: dead_rows=%lld churn=%lld ms=%lld", (long long) self->dead,
             (long long) self->churn, (long long) ms);
}

static void
s_on_vfd (void *self_, int fd, uint32_t events)
{
    (void) fd;
    (void) events;
    self_t *self = self_;
    if (!self->vconn)
        return;
    if (!PQconsumeInput (self->vconn)) {
        s_vclose (self, PQerrorMessage (self->vconn));
        return;
    }
    PGresult *res = NULL;
    while (self->vconn && !PQisBusy (self->vconn)) {
        PGresult *r = PQgetResult (self->vconn);
        if (!r) {
            //  The statement is over: act on its (last) result.
            if (res) {
                s_vdone (self, res);
                PQclear (res);
                res = NULL;
            }
            break;
        }
        if (res)
            PQclear (res);
        res = r;
    }
    if (res)
        PQclear (res);
}

static void
s_on_vacuum_tick (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    if (self->vstep != V_NONE) {
        //  Stuck past the statement timeout: the server is gone or frozen.
        if (qn_now_ms () - self->vstarted_ms > self->config->db_statement_timeout_ms + 5000)
            s_vclose (self, "maintenance statement did not complete");
        return;
    }
    if (s_vopen (self))
        s_vsend (self, V_CHURN, "SELECT dead, churn FROM queen.ready_churn ()");
}

static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    qn_timer_add (self->kernel, self->interval_ms, self->interval_ms, s_on_tick, NULL);
    qn_timer_add (self->kernel, S_SEGMENTS_MS, S_SEGMENTS_MS, s_on_segments_tick, NULL);
    if (self->config->ready_vacuum_dead_rows > 0)
        qn_timer_add (self->kernel, S_VACUUM_CHECK_MS, S_VACUUM_CHECK_MS, s_on_vacuum_tick, NULL);
    qn_info ("retention every %u ms", self->interval_ms);
    return 0;
}

static void
s_destroy (void **self_p)
{
    self_t *self = *self_p;
    if (!self)
        return;
    s_vclose (self, NULL);
    msgpack_sbuffer_destroy (&self->out);
    qn_pg_args_free (&self->args);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { 0, NULL }
};

qn_actor_t *
qn_retention_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    int64_t ms = config->retention_interval_ms < config->eviction_interval_ms
               ? config->retention_interval_ms : config->eviction_interval_ms;
    self->interval_ms = ms > 0 ? (uint32_t) ms : 60000;
    msgpack_sbuffer_init (&self->out);
    qn_pg_args_init (&self->args);
    self->vfd = -1;
    qn_actor_def_t def = {
        .name = "retention", .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}
