/*  actors/pg/batch.c - the push operation in the write path
    Every QN_MSG_PUSH arrives here: the HTTP push route (codec_http), SQS
    SendMessage(Batch) (codec_sqs) and the spool's replays. (Transaction
    bundles are one PG_EXEC of queen.bundle; Kafka Produce is one
    kafka_push statement, not spooled: docs/kafka.md.) A push is routed by
    the pure decision of push_route.h: into PostgreSQL, where concurrent
    pushes are merged into one queen.push call (queen.push_sqs when SQS
    items are in the batch; typed arrays; a push waits for a batch only
    while every push lane is busy, so light load gets low latency and
    heavy load big batches; the second lane starts only on partitions the
    batch in flight does not hold, so two lanes never wait on each other's
    partition locks),
    or to the disk spool with the pusher's reply address, so the spool
    answers the pusher itself after fdatasync. A push that PostgreSQL could
    not take for a connection-class reason goes to the spool too: a push
    is never acknowledged and then lost, nor refused while the spool can
    take it. A replay is never re-routed.
    After a commit this file publishes "committed" for every queue that
    received messages (pushes, replays, transaction bundles).
    Part of the pg_writer actor (writer_int.h).
    Receives  QN_MSG_PUSH [tenant, flags, items] (wire/msg_push.h),
              QN_MSG_SPOOL_DRAINED [appends] from the spool
    Sends     QN_MSG_PUSH_ANSWER to the pusher, QN_MSG_SPOOL_APPEND to the
              spool (reply_to: the pusher), "committed" events
    Owns      the queued push requests (the actor's push queue)
    Failure   a malformed request is refused (XX000); a spool that cannot
              be reached refuses the push (58030): the pusher answers 503
*/
#include "actors/pg/writer_int.h"
#include "actors/pg/committed.h"
#include "wire/ids.h"
#include "wire/msg_push.h"
#include "wire/msg_spool.h"

#include <stdlib.h>
#include <string.h>

#define S_DISTINCT_QUEUES 256   //  Queues remembered per batch for "committed"

// ------------------------------------------------------------------ answers
static void
s_refuse (qn_pgw_t *self, const char *to, uint64_t corr, const char *sqlstate, const char *message)
{
    msgpack_sbuffer_clear (&self->reply);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &self->reply, msgpack_sbuffer_write);
    qn_msg_push_refuse (&pk, sqlstate, message);
    qn_pgw_send_reply (self, to, corr, QN_MSG_PUSH_ANSWER);
}

//  Hands r to the spool, which answers r's sender after fdatasync; every
//  item gets a transaction id (minted when it has none) so a replay
//  deduplicates. Takes r.
static void
s_to_spool (qn_pgw_t *self, qn_pgw_push_t *r)
{
    char (*minted) [37] = qn_zalloc (r->count * sizeof *minted);
    for (uint32_t i = 0; i < r->count; i++)
        if (!r->items [i].txn)
            qn_uuid_v7 (minted [i]);
    msgpack_sbuffer_clear (&self->reply);
    qn_msg_spool_append_encode (&self->reply, r->tenant, r->tenant_len, r->items, r->count, minted);
    free (minted);
    qn_msg_t msg = {
        .to = "spool", .type = QN_MSG_SPOOL_APPEND, .corr = r->corr, .reply_to = r->reply_to,
        .body = self->reply.data, .body_len = self->reply.size
    };
    int rc = qn_send (self->kernel, &msg);
    if (rc)
        s_refuse (self, r->reply_to, r->corr, "58030", rc == QN_ENOENT ? "spool not available"
                                                                      : "spool is busy");
    else {
        qn_push_route_forwarded (&self->route);
        qn_count (self->kernel, "pg_push_spooled", r->count);
    }
    qn_pgw_push_free (r);
}

//  Queued pushes (not yet sent) go to the spool too, in order, once one
//  has gone there: no push may overtake one spooled before it. Replays
//  stay queued.
static void
s_divert_queued (qn_pgw_t *self)
{
    qn_pgw_push_t *r = self->push_head, *keep = NULL, *keep_tail = NULL;
    self->push_head = self->push_tail = NULL;
    while (r) {
        qn_pgw_push_t *next = r->next;
        r->next = NULL;
        if (r->replay) {
            if (keep_tail)
                keep_tail->next = r;
            else
                keep = r;
            keep_tail = r;
        }
        else
            s_to_spool (self, r);
        r = next;
    }
    self->push_head = keep;
    self->push_tail = keep_tail;
}

//  PostgreSQL could not take r: the spool takes it when it may (not a
//  replay, a connection-class failure), else it is refused. Takes r.
//  True when it went to the spool.
static bool
s_unavailable (qn_pgw_t *self, qn_pgw_push_t *r, const char *sqlstate, const char *message)
{
    if (!r->replay && qn_push_route_unavailable (sqlstate)) {
        qn_info ("push goes to the spool: sqlstate=%s reason=%s", sqlstate, message);
        s_to_spool (self, r);
        return true;
    }
    s_refuse (self, r->reply_to, r->corr, sqlstate, message);
    qn_pgw_push_free (r);
    return false;
}

void
qn_pgw_fail_push (qn_pgw_t *self, qn_pgw_job_t *j, const char *sqlstate, const char *message)
{
    qn_pgw_push_t *r = j->reqs;
    j->reqs = NULL;
    bool spooled = false;
    while (r) {
        qn_pgw_push_t *next = r->next;
        r->next = NULL;
        spooled |= s_unavailable (self, r, sqlstate, message);
        r = next;
    }
    if (spooled)
        s_divert_queued (self);
    qn_pgw_job_free (j);
}

void
qn_pgw_fail_queued_pushes (qn_pgw_t *self, const char *sqlstate, const char *message, bool may_spool)
{
    qn_pgw_push_t *r = self->push_head;
    self->push_head = self->push_tail = NULL;
    while (r) {
        qn_pgw_push_t *next = r->next;
        r->next = NULL;
        if (may_spool)
            s_unavailable (self, r, sqlstate, message);
        else {
            s_refuse (self, r->reply_to, r->corr, sqlstate, message);
            qn_pgw_push_free (r);
        }
        r = next;
    }
}

// ------------------------------------------------------------------ receiving
int
qn_pgw_push_decode (qn_pgw_push_t *r)
{
    qn_msg_push_t m;
    if (qn_msg_push_decode (r->body, r->body_len, &r->msg, &m) || !m.count)
        return -1;
    r->tenant = m.tenant;
    r->tenant_len = m.tenant_len;
    r->count = m.count;
    r->replay = m.replay;
    r->items = qn_malloc (m.count * sizeof *r->items);
    for (uint32_t i = 0; i < m.count; i++) {
        qn_msg_push_item_decode (&m.items [i], &r->items [i]);     //  Checked by the decoder
        r->sqs |= r->items [i].sqs != NULL;
    }
    return 0;
}

int
qn_pgw_on_push (void *self_, const qn_env_t *env)
{
    qn_pgw_t *self = self_;
    qn_pgw_push_t *r = qn_zalloc (sizeof *r);
    memcpy (r->reply_to, env->reply_to.ptr, env->reply_to.len);
    r->corr = env->corr;
    msgpack_unpacked_init (&r->msg);
    //  msgpack_unpack_next references strings in place, and the envelope
    //  is only borrowed: a request that waits in the queue needs its copy.
    r->body = qn_malloc (env->body.len ? env->body.len : 1);
    r->body_len = env->body.len;
    memcpy (r->body, env->body.ptr, env->body.len);
    if (qn_pgw_push_decode (r) || !self->is_writer) {
        s_refuse (self, r->reply_to, r->corr, "XX000", self->is_writer ? "malformed push request"
                                                                      : "pushes go to pg_writer");
        qn_pgw_push_free (r);
        return 0;
    }
    qn_push_route_to_t to = qn_push_route_push (&self->route, r->replay);
    if (to == QN_PUSH_TO_WAIT) {
        s_refuse (self, r->reply_to, r->corr, "57P03",
                  self->route.push_maint ? "push maintenance: replay waits"
                                         : "maintenance flags not read yet: replay waits");
        qn_pgw_push_free (r);
        return 0;
    }
    if (to == QN_PUSH_TO_SPOOL) {
        s_divert_queued (self);
        s_to_spool (self, r);
        return 0;
    }
    if (!qn_pgw_any_usable (self)) {
        if (s_unavailable (self, r, "08006", "database unavailable"))
            s_divert_queued (self);
        return 0;
    }
    if (self->push_tail)
        self->push_tail->next = r;
    else
        self->push_head = r;
    self->push_tail = r;
    qn_pgw_pump (self);
    return 0;
}

int
qn_pgw_on_drained (void *self_, const qn_env_t *env)
{
    qn_pgw_t *self = self_;
    uint64_t appends;
    if (qn_msg_spool_drained_decode (env->body.ptr, env->body.len, &appends))
        return QN_EPROTO;
    bool was = self->route.spool_mode;
    qn_push_route_drained (&self->route, appends);
    if (was && !self->route.spool_mode)
        qn_info ("spool drained, pushes go to the database again: forwarded=%llu",
                 (unsigned long long) self->route.forwarded);
    return 0;
}

// ------------------------------------------------------------------ batching
//  Cheap 64-bit key of (queue, partition) for counting distinct partitions.
static uint64_t
s_part_key (const qn_msg_push_item_t *it)
{
    uint64_t h = 1469598103934665603ULL;
    const char *ptr [2] = { it->queue, it->partition };
    size_t len [2] = { it->queue_len, it->partition_len };
    for (int f = 0; f < 2; f++) {
        if (!ptr [f])
            continue;
        for (size_t i = 0; i < len [f]; i++)
            h = (h ^ (uint8_t) ptr [f][i]) * 1099511628211ULL;
        h = (h ^ 0xff) * 1099511628211ULL;
    }
    return h ? h : 1;
}

static int
s_key_cmp (const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}

//  The fields of an item in wire order (wire/msg_push.h): queue,
//  partition, txn, payload, trace, producer, encrypted, not-before, sqs.
#define S_FIELDS 9

//  Field f of an item as the msgpack value its array parameter encodes
//  (nil for an absent one).
static msgpack_object
s_field (const qn_msg_push_item_t *it, int f)
{
    msgpack_object o = { .type = MSGPACK_OBJECT_NIL };
    const char *p = NULL;
    size_t n = 0;
    switch (f) {
        case 0: p = it->queue; n = it->queue_len; break;
        case 1: p = it->partition; n = it->partition_len; break;
        case 2: p = it->txn; n = it->txn_len; break;
        case 3:
            o.type = MSGPACK_OBJECT_BIN;
            o.via.bin.ptr = it->payload;
            o.via.bin.size = (uint32_t) it->payload_len;
            return o;
        case 4: p = it->trace; n = it->trace_len; break;
        case 5: p = it->producer; n = it->producer_len; break;
        case 6:
            o.type = MSGPACK_OBJECT_BOOLEAN;
            o.via.boolean = it->encrypted;
            return o;
        case 7:
            if (it->has_not_before) {
                o.type = MSGPACK_OBJECT_NEGATIVE_INTEGER;
                o.via.i64 = it->not_before_us;
                if (it->not_before_us >= 0) {
                    o.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
                    o.via.u64 = (uint64_t) it->not_before_us;
                }
            }
            return o;
        default: p = it->sqs; n = it->sqs_len; break;
    }
    if (p) {
        o.type = MSGPACK_OBJECT_STR;
        o.via.str.ptr = p;
        o.via.str.size = (uint32_t) n;
    }
    return o;
}

//  Parameter p of batch j: the array of field f of every item, in order.
static void
s_array_param (qn_pgw_job_t *j, int p, uint32_t elem_oid, int f)
{
    char err [160];
    qn_pg_array_t a;
    j->offsets [p] = j->params.len;
    qn_pg_array_begin (&a, &j->params, elem_oid);
    for (qn_pgw_push_t *r = j->reqs; r; r = r->next)
        for (uint32_t i = 0; i < r->count; i++) {
            msgpack_object v = s_field (&r->items [i], f);
            if (qn_pg_array_add (&a, &v, err, sizeof err)) {
                //  The codec validated every item: this is a bug.
                qn_error ("push item does not encode: field=%d reason=%s", f, err);
                qn_pg_array_add (&a, NULL, err, sizeof err);
            }
        }
    qn_pg_array_end (&a);
    j->lengths [p] = (int) (j->params.len - j->offsets [p]);
    j->formats [p] = 1;
}

bool
qn_pgw_push_conflicts (const qn_pgw_push_t *r, const qn_pgw_job_t *busy)
{
    if (!busy || !busy->part_count)
        return false;
    for (uint32_t i = 0; i < r->count; i++) {
        uint64_t k = s_part_key (&r->items [i]);
        if (bsearch (&k, busy->part_keys, busy->part_count, sizeof k, s_key_cmp))
            return true;
    }
    return false;
}

//  Takes queued push requests into one batch: same tenant, at most
//  PUSH_MAX_BATCH items and 256 distinct partitions (a single request may
//  exceed both: it stays whole, so a push is atomic), none after the
//  first that shares a partition with busy (requests keep their order).
//  Records the batch's partition keys, sorted, for the other lane.
qn_pgw_job_t *
qn_pgw_build_push_batch (qn_pgw_t *self, const qn_pgw_job_t *busy)
{
    qn_pgw_job_t *j = qn_zalloc (sizeof *j);
    j->kind = J_PUSH;
    qn_pgw_push_t *last = NULL;
    uint32_t parts = 0;
    uint64_t seen [QN_PGW_PUSH_MAX_PARTS];
    while (self->push_head) {
        qn_pgw_push_t *r = self->push_head;
        if (last && (last->solo || r->solo
                || r->tenant_len != j->reqs->tenant_len
                || (r->tenant_len && memcmp (r->tenant, j->reqs->tenant, r->tenant_len))
                || j->item_count + r->count > (uint32_t) self->config->push_max_batch))
            break;
        //  Count the partitions this request adds.
        uint32_t added = 0;
        uint64_t fresh [QN_PGW_PUSH_MAX_PARTS];
        bool over = false;
        for (uint32_t i = 0; i < r->count && !over; i++) {
            uint64_t k = s_part_key (&r->items [i]);
            bool known = false;
            for (uint32_t p = 0; p < parts && !known; p++)
                known = seen [p] == k;
            for (uint32_t p = 0; p < added && !known; p++)
                known = fresh [p] == k;
            if (!known) {
                if (parts + added == QN_PGW_PUSH_MAX_PARTS)
                    over = true;
                else
                    fresh [added++] = k;
            }
        }
        if ((over || qn_pgw_push_conflicts (r, busy)) && last)
            break;
        memcpy (seen + parts, fresh, added * sizeof *fresh);
        parts += added;
        self->push_head = r->next;
        if (!self->push_head)
            self->push_tail = NULL;
        r->next = NULL;
        r->first_ord = j->item_count;
        j->item_count += r->count;
        if (last)
            last->next = r;
        else
            j->reqs = r;
        last = r;
        if (over)
            break;
    }
    //  Every partition key of the batch (a request over the cap included),
    //  sorted and distinct.
    j->part_keys = qn_malloc ((j->item_count ? j->item_count : 1) * sizeof *j->part_keys);
    uint32_t nk = 0;
    for (qn_pgw_push_t *r = j->reqs; r; r = r->next)
        for (uint32_t i = 0; i < r->count; i++)
            j->part_keys [nk++] = s_part_key (&r->items [i]);
    qsort (j->part_keys, nk, sizeof *j->part_keys, s_key_cmp);
    j->part_count = 0;
    for (uint32_t i = 0; i < nk; i++)
        if (!j->part_count || j->part_keys [j->part_count - 1] != j->part_keys [i])
            j->part_keys [j->part_count++] = j->part_keys [i];
    //  Parameters: tenant, then one array per item field (queues,
    //  partitions, txn ids, payloads, trace ids, producers, encrypted
    //  flags), strict, the not-before instants (NULL for the whole batch
    //  when no item is delayed) and, for queen.push_sqs, the SQS metadata.
    bool delayed = false, sqs = false;
    for (qn_pgw_push_t *r = j->reqs; r; r = r->next) {
        sqs |= r->sqs;
        for (uint32_t i = 0; i < r->count && !delayed; i++)
            delayed = r->items [i].has_not_before;
    }
    j->stmt_id = sqs ? QN_SQL_PUSH_SQS : QN_SQL_PUSH_AT;
    j->nparams = sqs ? 11 : 10;
    j->offsets [0] = 0;
    qn_buf_append (&j->params, j->reqs->tenant, j->reqs->tenant_len);
    j->lengths [0] = (int) j->reqs->tenant_len;
    j->formats [0] = 1;
    static const uint32_t elems [S_FIELDS] = {
        QN_OID_TEXT, QN_OID_TEXT, QN_OID_TEXT, QN_OID_BYTEA, QN_OID_UUID, QN_OID_TEXT, QN_OID_BOOL,
        QN_OID_INT8, QN_OID_TEXT
    };
    for (int f = 0; f < 7; f++)
        s_array_param (j, f + 1, elems [f], f);
    j->offsets [8] = j->params.len;
    qn_buf_putc (&j->params, 0);
    j->lengths [8] = 1;
    j->formats [8] = 1;
    if (delayed)
        s_array_param (j, 9, elems [7], 7);
    else {
        j->offsets [9] = j->params.len;
        j->nulls [9] = true;
        j->formats [9] = 1;
    }
    if (sqs)
        s_array_param (j, 10, elems [8], 8);
    return j;
}

// ------------------------------------------------------------------ results
//  A binary integer column (int2, int4, int8), 0 when NULL or other.
static int64_t
s_col_int (PGresult *res, int r, int c)
{
    if (c >= PQnfields (res) || PQgetisnull (res, r, c))
        return 0;
    const uint8_t *v = (const uint8_t *) PQgetvalue (res, r, c);
    int len = PQgetlength (res, r, c);
    uint64_t u = 0;
    for (int i = 0; i < len && i < 8; i++)
        u = u << 8 | v [i];
    if (len == 4)
        return (int32_t) (uint32_t) u;
    if (len == 2)
        return (int16_t) (uint16_t) u;
    return (int64_t) u;
}

//  Adds n to the per-queue counter family{queue} (capped, see kernel.h).
static void
s_count_queue (qn_pgw_t *self, const char *family, const char *queue, size_t len, int64_t n)
{
    qn_metric_add (qn_metric_queue (self->kernel, QN_METRIC_COUNTER, family, queue, len), n);
}

static bool
s_col_true (PGresult *res, int r, int c)
{
    return c < PQnfields (res) && !PQgetisnull (res, r, c) && PQgetlength (res, r, c) == 1
        && PQgetvalue (res, r, c) [0] == 1;
}

typedef struct {
    const char *ptr [S_DISTINCT_QUEUES];
    size_t len [S_DISTINCT_QUEUES];
    uint32_t count;
} s_queues_t;

//  Publishes "committed" for (tenant, queue) unless already done for
//  this result.
static void
s_committed_once (qn_pgw_t *self, s_queues_t *seen, const char *tenant, size_t tenant_len,
                  const char *queue, size_t queue_len)
{
    for (uint32_t i = 0; i < seen->count; i++)
        if (seen->len [i] == queue_len && !memcmp (seen->ptr [i], queue, queue_len))
            return;
    if (seen->count < S_DISTINCT_QUEUES) {
        seen->ptr [seen->count] = queue;
        seen->len [seen->count++] = queue_len;
    }
    qn_committed_publish (self->kernel, tenant, tenant_len, queue, queue_len);
}

//  Answers r from rows [first, last) of res (one per item, in order) and
//  wakes the queues it wrote to.
static void
s_answer (qn_pgw_t *self, qn_pgw_push_t *r, PGresult *res, int first, int last, s_queues_t *seen)
{
    msgpack_sbuffer_clear (&self->reply);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &self->reply, msgpack_sbuffer_write);
    qn_msg_push_answer_begin (&pk, (uint32_t) (last - first));
    for (int row = first; row < last; row++) {
        qn_msg_push_result_t it = {
            .status = s_col_true (res, row, 4) ? QN_PUSH_DUPLICATE : QN_PUSH_QUEUED,
            .seq = s_col_int (res, row, 1),
            .partition_id = s_col_int (res, row, 2)
        };
        qn_msg_push_result (&pk, &it);
    }
    qn_pgw_send_reply (self, r->reply_to, r->corr, QN_MSG_PUSH_ANSWER);
    const qn_msg_push_item_t *run = NULL;   //  Item of the current run of stored items
    int64_t run_n = 0;
    for (int row = first; row < last; row++) {
        const qn_msg_push_item_t *q = &r->items [row - first];
        if (s_col_true (res, row, 4))
            continue;
        s_committed_once (self, seen, r->tenant, r->tenant_len, q->queue, q->queue_len);
        if (run && (run->queue_len != q->queue_len || memcmp (run->queue, q->queue, q->queue_len))) {
            s_count_queue (self, "messages_pushed_total", run->queue, run->queue_len, run_n);
            run_n = 0;
        }
        run = q;
        run_n++;
    }
    if (run)
        s_count_queue (self, "messages_pushed_total", run->queue, run->queue_len, run_n);
}


qn_pgw_merge_fate_t
qn_pgw_merge_fate (const char *sqlstate, uint32_t requests)
{
    //  A merged batch fails only for systemic reasons when the codec
    //  validated every item; still, never let one request's data fail
    //  another's: rerun each request alone. Deadlocks and serialisation
    //  failures rerun as they were.
    bool transient = !strncmp (sqlstate, "40", 2);
    bool systemic = !strncmp (sqlstate, "08", 2) || !strncmp (sqlstate, "57", 2)
                 || !strncmp (sqlstate, "53", 2);
    return !systemic && (transient || requests > 1) ? QN_PGW_MERGE_RERUN : QN_PGW_MERGE_FAIL;
}

void
qn_pgw_finish_push (qn_pgw_t *self, qn_pgw_job_t *j, qn_pgw_conn_t *c)
{
    if (c->error) {
        bool many = j->reqs && j->reqs->next;
        if (qn_pgw_merge_fate (c->sqlstate, many ? 2 : 1) == QN_PGW_MERGE_RERUN) {
            qn_pgw_push_t *r = j->reqs, *back = NULL, *back_tail = NULL;
            j->reqs = NULL;
            while (r) {
                qn_pgw_push_t *next = r->next;
                r->next = NULL;
                if (++r->retries > QN_PGW_MERGE_RETRIES) {
                    s_refuse (self, r->reply_to, r->corr, c->sqlstate, c->error);
                    qn_pgw_push_free (r);
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
            qn_pgw_job_free (j);
            return;
        }
        qn_pgw_fail_push (self, j, c->sqlstate, c->error);
        return;
    }
    //  Rows come back in ord order, one per item: split them by request.
    PGresult *res = c->result;
    int rows = res ? PQntuples (res) : 0;
    s_queues_t seen = { .count = 0 };
    for (qn_pgw_push_t *r = j->reqs; r; r = r->next) {
        int first = (int) r->first_ord;
        int last = first + (int) r->count;
        if (last > rows)
            last = rows;
        if (first > last)
            first = last;
        s_answer (self, r, res, first, last, &seen);
    }
    qn_count (self->kernel, "pg_push_batches", 1);
    qn_count (self->kernel, "pg_push_items", j->item_count);
    qn_pgw_job_free (j);
}

// ------------------------------------------------------------------ other commits
//  The elements of a binary one-dimensional text[] parameter, in one pass:
//  a malloc'd array of *count (pointer, length) pairs (a NULL element has
//  length 0) the caller frees; NULL with *count 0 when p is not such an
//  array. Walking the array once matters: a bundle or a merged ack carries
//  thousands of elements, and finding each from the start is quadratic.
typedef struct {
    const char *data;
    int len;
} s_elem_t;

static s_elem_t *
s_text_elems (const char *p, size_t len, int *count)
{
    *count = 0;
    //  ndim, hasnull, elemtype, then (size, lbound) per dimension
    if (!p || len < 20 || (uint8_t) p [3] != 1)
        return NULL;
    int32_t dim = (int32_t) ((uint32_t) (uint8_t) p [12] << 24 | (uint32_t) (uint8_t) p [13] << 16
                           | (uint32_t) (uint8_t) p [14] << 8 | (uint32_t) (uint8_t) p [15]);
    if (dim <= 0 || (size_t) dim > (len - 20) / 4)
        return NULL;
    s_elem_t *e = malloc ((size_t) dim * sizeof *e);
    if (!e)
        return NULL;
    size_t at = 20;
    int k = 0;
    while (k < dim && at + 4 <= len) {
        int32_t n = (int32_t) ((uint32_t) (uint8_t) p [at] << 24 | (uint32_t) (uint8_t) p [at + 1] << 16
                             | (uint32_t) (uint8_t) p [at + 2] << 8 | (uint32_t) (uint8_t) p [at + 3]);
        at += 4;
        if (n < 0)
            n = 0;
        if (at + (size_t) n > len)
            break;
        e [k++] = (s_elem_t) { p + at, n };
        at += (size_t) n;
    }
    *count = k;
    return e;
}

static bool
s_elem_is (const s_elem_t *e, int count, int64_t i, const char *word)
{
    size_t n = strlen (word);
    return i >= 0 && i < count && (size_t) e [i].len == n && !memcmp (e [i].data, word, n);
}

//  Acks: per queue, acknowledged (completed), failed (nacked) and
//  dead-lettered messages; one row per item in request order, the
//  statuses are parameter 6.
static void
s_count_acks (qn_pgw_t *self, const qn_pgw_job_t *j, PGresult *res)
{
    int nst = 0;
    s_elem_t *st = j->nparams > 5 && !j->nulls [5]
                 ? s_text_elems (j->params.data + j->offsets [5], (size_t) j->lengths [5], &nst) : NULL;
    for (int r = 0; r < PQntuples (res); r++) {
        int qlen = 0;
        const char *queue = qn_pgw_col_text (res, r, 3, &qlen);
        if (!queue || !s_col_true (res, r, 1))
            continue;
        s_count_queue (self, s_elem_is (st, nst, r, "failed") ? "messages_failed_total" : "messages_acked_total",
                       queue, (size_t) qlen, 1);
        if (s_col_true (res, r, 6))
            s_count_queue (self, "messages_dead_lettered_total", queue, (size_t) qlen, 1);
    }
    free (st);
}

//  Transaction bundles (they commit whole or not at all): their pushes
//  (rows of kind "push": column 2 the kind, column 5 the queue) and their
//  acks (rows of kind "ack", column 1 the flattened operation index,
//  column 6 dlq). An ack row's status is element k of parameter 15 (the
//  ack statuses), k its rank among the acks of parameter 2 (the operation
//  kinds, in order).
static void
s_count_bundle (qn_pgw_t *self, const qn_pgw_job_t *j, PGresult *res)
{
    int nk = 0, nst = 0;
    s_elem_t *kinds = j->nparams > 14 && !j->nulls [1]
                    ? s_text_elems (j->params.data + j->offsets [1], (size_t) j->lengths [1], &nk) : NULL;
    s_elem_t *st = j->nparams > 14 && !j->nulls [14]
                 ? s_text_elems (j->params.data + j->offsets [14], (size_t) j->lengths [14], &nst) : NULL;
    //  rank [i]: the acks among kinds [0, i)
    int *rank = nk > 0 ? malloc ((size_t) nk * sizeof *rank) : NULL;
    for (int i = 0, acks = 0; rank && i < nk; i++) {
        rank [i] = acks;
        acks += s_elem_is (kinds, nk, i, "ack");
    }
    for (int r = 0; r < PQntuples (res); r++) {
        int klen = 0, qlen = 0;
        const char *kind = qn_pgw_col_text (res, r, 1, &klen);
        const char *queue = qn_pgw_col_text (res, r, 4, &qlen);
        if (!kind || !queue)
            continue;
        if (klen == 4 && !memcmp (kind, "push", 4))
            s_count_queue (self, "messages_pushed_total", queue, (size_t) qlen, 1);
        else
        if (klen == 3 && !memcmp (kind, "ack", 3)) {
            int64_t idx = PQgetisnull (res, r, 0) ? -1 : s_col_int (res, r, 0);
            bool failed = rank && idx >= 0 && idx < nk && s_elem_is (st, nst, rank [idx], "failed");
            s_count_queue (self, failed ? "messages_failed_total" : "messages_acked_total",
                           queue, (size_t) qlen, 1);
            if (s_col_true (res, r, 5))
                s_count_queue (self, "messages_dead_lettered_total", queue, (size_t) qlen, 1);
        }
    }
    free (rank);
    free (kinds);
    free (st);
}

//  Pops (every front door): messages handed out, per queue, in runs of
//  rows of one queue; the row that only carries the next due instant has
//  no message (seq NULL).
static void
s_count_pops (qn_pgw_t *self, PGresult *res)
{
    const char *run = NULL;
    int run_len = 0;
    int64_t n = 0;
    for (int r = 0; r <= PQntuples (res); r++) {
        int qlen = 0;
        bool end = r == PQntuples (res);
        const char *queue = end ? NULL : qn_pgw_col_text (res, r, 0, &qlen);
        if (!end && (!queue || PQgetisnull (res, r, 3)))
            continue;
        if (run && (!queue || qlen != run_len || memcmp (queue, run, (size_t) qlen))) {
            s_count_queue (self, "messages_popped_total", run, (size_t) run_len, n);
            n = 0;
        }
        run = queue;
        run_len = qlen;
        n++;
    }
}

void
qn_pgw_exec_committed (qn_pgw_t *self, const qn_pgw_job_t *j, PGresult *res)
{
    if (j->stmt_id == QN_SQL_ACK && self->is_writer)
        s_count_acks (self, j, res);
    if (j->stmt_id == QN_SQL_POP || j->stmt_id == QN_SQL_POP_NS)
        s_count_pops (self, res);
    if (j->stmt_id == QN_SQL_BUNDLE && self->is_writer)
        s_count_bundle (self, j, res);
    const qn_sql_stmt_t *stmt = qn_sql_stmt (j->stmt_id);
    if (!stmt || !stmt->wake_queue_col || !self->is_writer || j->nparams < 1 || j->nulls [0])
        return;
    //  The tenant is parameter 1 (text, as its bytes).
    const char *tenant = j->params.data + j->offsets [0];
    size_t tenant_len = (size_t) j->lengths [0];
    s_queues_t seen = { .count = 0 };
    int kc = stmt->wake_kind_col - 1, qc = stmt->wake_queue_col - 1;
    for (int r = 0; r < PQntuples (res); r++) {
        int klen = 0, qlen = 0;
        const char *kind = kc >= 0 ? qn_pgw_col_text (res, r, kc, &klen) : "push";
        const char *queue = qn_pgw_col_text (res, r, qc, &qlen);
        if (stmt->wake_ok_col) {
            //  A binary bool: one byte, 1 for true.
            int olen = 0;
            const char *ok = qn_pgw_col_text (res, r, stmt->wake_ok_col - 1, &olen);
            if (!ok || olen != 1 || ok [0] != 1)
                continue;
        }
        if (kc >= 0 && kind && !((klen == 4 && !memcmp (kind, "push", 4))
                              || (klen == 3 && !memcmp (kind, "ack", 3))))
            continue;
        if (kind && queue)
            s_committed_once (self, &seen, tenant, tenant_len, queue, (size_t) qlen);
    }
}
