/*  actors/kafka/codec.c - the Kafka codec ("kafka")
    Translates Kafka requests (wire/kafka_proto.h) into the broker's
    operations and answers in the protocol's own shapes. Requests of one
    connection are handled one at a time, in arrival order (Kafka's rule:
    a waiting request holds back the later ones of its connection), so
    answers leave in order; connections are independent.
    Built: ApiVersions (an unsupported version gets the v0 body with error
    35), Metadata (catalogue statement kafka_topics on pg_writer: it may
    auto-create), Produce v3-7 (RecordBatch v2, every codec, acks 0/1/-1;
    one kafka_push statement on pg_writer per request: one transaction,
    with the idempotent producer's sequence checks; not through PUSH, so
    no spool: an outage answers 7 REQUEST_TIMED_OUT, which clients retry,
    docs/kafka.md; with QUEEN_ENCRYPTION_KEY, queue_encryption on pg_reader
    first, and the values of topics with encryptionEnabled sealed by
    actors/seal/seal.h as the SQS door's sends are), CreateTopics / DeleteTopics (kafka_create_topic /
    kafka_delete_topic per topic on pg_writer), FindCoordinator for
    transactions (refused with 53), InitProducerId (kafka_init_producer on
    pg_writer; a transactional id: 53), ListOffsets and Fetch
    (kafka_list_offset / kafka_fetch on pg_reader, one statement per
    partition, all in flight together; payloads of encrypted queues opened
    with the QUEEN_ENCRYPTION_KEY ring).
    A Fetch that finds nothing waits up to its max_wait_ms and runs again
    when a "committed" event names one of its topics (an event that came
    while its statements ran makes it read again first). The group APIs
    (FindCoordinator for a group, JoinGroup, SyncGroup, Heartbeat,
    LeaveGroup, OffsetCommit, OffsetFetch) go to the group coordinator
    (actors/kafka/group.c) on this actor's thread, which answers through
    s_on_group_answer, at once or later. Any key or version outside the
    advertised table closes the connection (spec §3: what Kafka does for
    requests it cannot serve).
    Receives  QN_MSG_KAFKA_REQUEST, QN_MSG_KAFKA_CLOSED from kafka_acceptor;
              PG_RESULT replies; "committed" events
    Sends     QN_MSG_KAFKA_RESPONSE to kafka_acceptor; PG_EXEC to
              pg_writer / pg_reader
    Owns      per-connection request queues and the request in progress
    Failure   a malformed request closes its connection; a database error
              answers the protocol's retriable codes (Fetch/ListOffsets:
              per-partition errors; Metadata: LEADER_NOT_AVAILABLE)
*/
#include "actors/actors.h"
#include "actors/kafka/group.h"
#include "actors/pg/call.h"
#include "actors/pg/statements.h"
#include "actors/seal/seal.h"
#include "base/hashmap.h"
#include "wire/crypto.h"
#include "wire/json.h"
#include "wire/kafka_proto.h"
#include "wire/kafka_records.h"
#include "wire/msg_committed.h"
#include "wire/msg_kafka.h"
#include "wire/msg_pg.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define S_ACCEPTOR      "kafka_acceptor"
#define S_PG_TIMEOUT_MS 30000
#define S_FETCH_ROWS    500             //  Records per partition and statement
#define S_MAX_WAIT_MS   30000           //  Cap on a client's max_wait_ms
#define S_MAX_BATCH     1048588         //  Kafka's default max.message.bytes
#define S_NAME_MAX      255             //  Longest native partition name
#define S_KAFKA_STORAGE_ERROR 56        //  Fetch: a sealed payload that does not open

typedef struct s_conn_s s_conn_t;
typedef struct s_req_s s_req_t;

//  One partition of a Fetch / ListOffsets: its statement's answer.
typedef struct {
    s_req_t *req;
    int32_t topic, part;        //  Indexes into the request
    qn_pg_result_t res;         //  Its rows point into raw
    char *raw;                  //  Owned: a copy of the reply body
    bool done;
} s_part_t;

struct s_req_s {
    s_conn_t *conn;
    s_req_t *next;
    uint32_t seq;
    char *payload;              //  Owned: the frame
    size_t len;
    qn_kafka_req_header_t h;
    const char *body;
    size_t body_len;
    qn_karena_t arena;
    union {
        qn_kafka_fetch_req_t fetch;
        qn_kafka_list_offsets_req_t lo;
        qn_kafka_metadata_req_t md;
        qn_kafka_produce_req_t pr;
        qn_kafka_create_topics_req_t ct;
        qn_kafka_delete_topics_req_t dt;
        qn_kafka_find_coordinator_req_t fc;
        qn_kafka_init_producer_id_req_t ip;
    } u;
    qn_kafka_topics_resp_t tresp;   //  CreateTopics / DeleteTopics answer
    qn_kafka_produce_resp_t presp;  //  Produce: the answer being built
    int32_t *pfirst;            //  Produce: first item of each partition (arena)
    qn_kafka_batches_t *pbs;    //  Produce: each partition's decoded batches (arena)
    uint32_t pitems;            //  Produce: records to store
    bool *tsealed;              //  Produce: per topic, its payloads get sealed (arena)
    s_part_t *parts;            //  Fetch / ListOffsets partitions
    int32_t part_count;
    int32_t pending;            //  Statements in flight
    uint64_t timer;             //  Fetch wait deadline
    int64_t deadline_ms;
    bool parked;                //  A Fetch waiting for data
    bool waited;                //  Its wait is over: answer what there is
    bool woken;                 //  A "committed" for its topics came while its statements ran
};

struct s_conn_s {
    uint64_t id;
    s_req_t *head, *tail;       //  head is in progress when busy
    bool busy;
    bool gone;                  //  Client left while a request was in flight
};

typedef struct {
    qn_kernel_t *kernel;        //  Not owned
    const qn_config_t *config;  //  Not owned
    qn_hashmap_t *conns;        //  id -> s_conn_t *
    msgpack_sbuffer exec;       //  Reused PG_EXEC body
    msgpack_sbuffer body;       //  Reused message body
    qn_crypto_keys_t *ring;     //  Opens payloads of encrypted queues (on first need)
    s_req_t **parked;           //  Fetches waiting for data
    uint32_t parked_len, parked_cap;
    qn_kgroup_t *group;         //  Owned: the group coordinator (actors/kafka/group.c)
} self_t;

static void s_start (self_t *self, s_conn_t *c);
static void s_fetch_run (self_t *self, s_req_t *r);
static void s_on_fetch_timer (void *self_, void *arg);
static void s_on_fetch_rerun (void *self_, void *arg);
static void s_on_produce_encryption (void *self_, void *arg, const qn_env_t *env);
static void s_produce_store (self_t *self, s_req_t *r);

// ------------------------------------------------------------------ requests

static void
s_part_clear (s_part_t *p)
{
    if (p->done)
        qn_pg_result_free (&p->res);
    free (p->raw);
    p->raw = NULL;
    p->done = false;
}

static void
s_req_free (s_req_t *r)
{
    for (int32_t i = 0; i < r->part_count; i++)
        s_part_clear (&r->parts [i]);
    free (r->parts);
    qn_karena_free (&r->arena);
    free (r->payload);
    free (r);
}

static void
s_unpark (self_t *self, s_req_t *r)
{
    for (uint32_t i = 0; i < self->parked_len; i++)
        if (self->parked [i] == r) {
            self->parked [i] = self->parked [--self->parked_len];
            break;
        }
    r->parked = false;
    if (r->timer) {
        qn_timer_cancel (self->kernel, r->timer);
        r->timer = 0;
    }
}

//  Sends the answer (frame NULL: none) of the request in progress, then
//  starts the connection's next one. close: close after it.
static void
s_finish (self_t *self, s_req_t *r, qn_buf_t *frame, bool close)
{
    s_conn_t *c = r->conn;
    if (!c->gone) {
        msgpack_sbuffer_clear (&self->body);
        qn_msg_kafka_response_encode (&self->body, c->id, r->seq, close);
        qn_frame_t f = { NULL, 0 };
        if (frame) {
            f.data = qn_buf_detach (frame, &f.len);
            if (!f.data)
                f.data = qn_malloc (1);
        }
        qn_msg_t msg = {
            .to = S_ACCEPTOR, .type = QN_MSG_KAFKA_RESPONSE,
            .body = self->body.data, .body_len = self->body.size,
            .frames = frame ? &f : NULL, .frame_count = frame ? 1 : 0
        };
        //  The acceptor bounds what a connection has in flight, so its
        //  queue cannot fill from our answers alone; a refusal is logged.
        if (qn_send (self->kernel, &msg)) {
            qn_warn ("kafka answer dropped: conn=%llu", (unsigned long long) c->id);
            free (f.data);
        }
    }
    c->head = r->next;
    if (!c->head)
        c->tail = NULL;
    c->busy = false;
    s_req_free (r);
    if (c->gone && !c->head) {
        qn_hashmap_remove (self->conns, c->id);
        free (c);
        return;
    }
    if (c->gone) {
        //  Drop what the departed client queued.
        while (c->head) {
            s_req_t *n = c->head->next;
            s_req_free (c->head);
            c->head = n;
        }
        qn_hashmap_remove (self->conns, c->id);
        free (c);
        return;
    }
    s_start (self, c);
}

//  A response frame for r: correlation id (header v0), then the body.
static void
s_resp_begin (qn_buf_t *b, const s_req_t *r)
{
    qn_kw_i32 (b, r->h.correlation_id);
}

// ------------------------------------------------------------------ ApiVersions

static void
s_api_versions (self_t *self, s_req_t *r)
{
    qn_buf_t b = QN_BUF_INIT;
    s_resp_begin (&b, r);
    qn_kafka_apiversions_resp_encode (&b, r->h.api_version);
    s_finish (self, r, &b, false);
    qn_buf_free (&b);
}

// ------------------------------------------------------------------ Metadata

static bool
s_col_int (const qn_pg_result_t *res, uint32_t row, uint32_t col, int64_t *out)
{
    return qn_pg_call_int (qn_pg_result_col (res, row, col), out);
}

static qn_kstr_t
s_col_str (const qn_pg_result_t *res, uint32_t row, uint32_t col)
{
    const msgpack_object *o = qn_pg_result_col (res, row, col);
    if (o && (o->type == MSGPACK_OBJECT_STR || o->type == MSGPACK_OBJECT_BIN))
        return (qn_kstr_t) { o->via.str.ptr, (int32_t) o->via.str.size };
    return QN_KSTR_NULL;
}

static void
s_metadata_answer (self_t *self, s_req_t *r, const qn_pg_result_t *res)
{
    const qn_config_t *cfg = self->config;
    int32_t node = (int32_t) cfg->kafka_node_id;
    qn_kafka_broker_t broker = { node, qn_kstr (cfg->kafka_advertised_host),
                                 (int32_t) cfg->kafka_port, QN_KSTR_NULL };
    qn_kafka_metadata_resp_t out = { 0, 1, &broker, QN_KSTR ("queen"), node, 0, NULL };
    static int32_t s_node [1];
    s_node [0] = node;
    bool failed = res && qn_pg_result_failed (res, NULL, 0);
    if (failed && r->u.md.topic_count > 0) {
        //  Database trouble: every named topic is retriable.
        out.topic_count = r->u.md.topic_count;
        out.topics = qn_karena_alloc (&r->arena, (size_t) out.topic_count * sizeof *out.topics);
        for (int32_t i = 0; i < out.topic_count; i++) {
            out.topics [i].error_code = QN_KAFKA_LEADER_NOT_AVAILABLE;
            out.topics [i].name = r->u.md.topics [i];
        }
    }
    else
    if (res && !failed) {
        out.topic_count = (int32_t) res->row_count;
        out.topics = out.topic_count
                   ? qn_karena_alloc (&r->arena, (size_t) out.topic_count * sizeof *out.topics) : NULL;
        for (uint32_t i = 0; i < res->row_count; i++) {
            qn_kafka_md_topic_t *t = &out.topics [i];
            int64_t n = 0, err = 0;
            s_col_int (res, i, 1, &n);
            s_col_int (res, i, 2, &err);
            t->name = s_col_str (res, i, 0);
            t->error_code = (int16_t) err;
            t->partition_count = err ? 0 : (int32_t) n;
            t->partitions = t->partition_count
                          ? qn_karena_alloc (&r->arena, (size_t) n * sizeof *t->partitions) : NULL;
            for (int32_t p = 0; p < t->partition_count; p++)
                t->partitions [p] = (qn_kafka_md_partition_t) {
                    0, p, node, 1, s_node, 1, s_node, 0, NULL };
        }
    }
    qn_buf_t b = QN_BUF_INIT;
    s_resp_begin (&b, r);
    qn_kafka_metadata_resp_encode (&b, r->h.api_version, &out);
    s_finish (self, r, &b, false);
    qn_buf_free (&b);
}

static void
s_on_metadata_result (void *self_, void *arg, const qn_env_t *env)
{
    s_req_t *r = arg;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    s_metadata_answer (self_, r, &res);
    qn_pg_result_free (&res);
}

static void
s_metadata (self_t *self, s_req_t *r)
{
    qn_kafka_metadata_req_t *md = &r->u.md;
    if (md->topic_count == 0) {
        s_metadata_answer (self, r, NULL);
        return;
    }
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, "");
    if (md->topic_count < 0)
        qn_pg_args_null (&a);
    else {
        qn_pg_args_array (&a, (uint32_t) md->topic_count);
        for (int32_t i = 0; i < md->topic_count; i++)
            qn_pg_args_str (&a, md->topics [i].ptr, (size_t) md->topics [i].len);
    }
    qn_pg_args_bool (&a, md->allow_auto_topic_creation && self->config->kafka_auto_create_topics);
    qn_pg_args_int (&a, self->config->kafka_default_partitions);
    int rc = qn_pg_call (self->kernel, "pg_writer", &self->exec, QN_SQL_KAFKA_TOPICS, NULL, &a,
                         S_PG_TIMEOUT_MS, s_on_metadata_result, r);
    qn_pg_args_free (&a);
    if (rc) {
        qn_pg_result_t res;
        qn_pg_result_decode (NULL, 0, &res);
        s_metadata_answer (self, r, &res);
        qn_pg_result_free (&res);
    }
}

// ------------------------------------------------------------------ per-partition statements

//  Topic / partition names of partition slot i of r.
static void
s_part_names (const s_req_t *r, const s_part_t *p, qn_kstr_t *topic, int32_t *part)
{
    if (r->h.api_key == QN_KAFKA_FETCH) {
        const qn_kafka_fetch_topic_t *t = &r->u.fetch.topics [p->topic];
        *topic = t->topic;
        *part = t->partitions [p->part].partition;
    }
    else {
        const qn_kafka_lo_topic_t *t = &r->u.lo.topics [p->topic];
        *topic = t->name;
        *part = t->partitions [p->part].partition_index;
    }
}

static void s_parts_done (self_t *self, s_req_t *r);

static void
s_on_part_result (void *self_, void *arg, const qn_env_t *env)
{
    s_part_t *p = arg;
    s_req_t *r = p->req;
    s_part_clear (p);
    //  The rows are read after this handler: decode a copy of the body.
    if (env) {
        p->raw = qn_malloc (env->body.len ? env->body.len : 1);
        memcpy (p->raw, env->body.ptr, env->body.len);
    }
    qn_pg_result_decode (p->raw, env ? env->body.len : 0, &p->res);
    p->done = true;
    if (--r->pending == 0)
        s_parts_done (self_, r);
}

//  Sends one statement per partition (all in flight together).
static void
s_parts_run (self_t *self, s_req_t *r)
{
    r->pending = r->part_count;
    for (int32_t i = 0; i < r->part_count; i++) {
        s_part_t *p = &r->parts [i];
        qn_kstr_t topic;
        int32_t part;
        s_part_names (r, p, &topic, &part);
        qn_pg_args_t a;
        qn_pg_args_init (&a);
        qn_pg_args_cstr (&a, "");
        qn_pg_args_str (&a, topic.ptr, (size_t) topic.len);
        qn_pg_args_int (&a, part);
        uint32_t stmt;
        if (r->h.api_key == QN_KAFKA_FETCH) {
            const qn_kafka_fetch_part_t *fp = &r->u.fetch.topics [p->topic].partitions [p->part];
            qn_pg_args_int (&a, fp->fetch_offset);
            qn_pg_args_int (&a, fp->partition_max_bytes > 0 ? fp->partition_max_bytes : 1);
            qn_pg_args_int (&a, S_FETCH_ROWS);
            stmt = QN_SQL_KAFKA_FETCH;
        }
        else {
            qn_pg_args_int (&a, r->u.lo.topics [p->topic].partitions [p->part].timestamp);
            stmt = QN_SQL_KAFKA_LIST_OFFSET;
        }
        int rc = qn_pg_call (self->kernel, "pg_reader", &self->exec, stmt, NULL, &a,
                             S_PG_TIMEOUT_MS, s_on_part_result, p);
        qn_pg_args_free (&a);
        if (rc) {
            s_part_clear (p);
            qn_pg_result_decode (NULL, 0, &p->res);
            p->done = true;
            r->pending--;
        }
    }
    if (r->pending == 0)
        s_parts_done (self, r);
}

//  Lays out one slot per requested partition, in request order.
static void
s_parts_alloc (s_req_t *r)
{
    int32_t n = 0, tc;
    if (r->h.api_key == QN_KAFKA_FETCH) {
        tc = r->u.fetch.topic_count;
        for (int32_t t = 0; t < tc; t++)
            n += r->u.fetch.topics [t].partition_count;
    }
    else {
        tc = r->u.lo.topic_count;
        for (int32_t t = 0; t < tc; t++)
            n += r->u.lo.topics [t].partition_count;
    }
    r->parts = n ? qn_zalloc ((size_t) n * sizeof *r->parts) : NULL;
    r->part_count = n;
    int32_t k = 0;
    for (int32_t t = 0; t < tc; t++) {
        int32_t pc = r->h.api_key == QN_KAFKA_FETCH ? r->u.fetch.topics [t].partition_count
                                                   : r->u.lo.topics [t].partition_count;
        for (int32_t p = 0; p < pc; p++)
            r->parts [k++] = (s_part_t) { .req = r, .topic = t, .part = p };
    }
}

// ------------------------------------------------------------------ ListOffsets

static void
s_list_offsets_answer (self_t *self, s_req_t *r)
{
    qn_kafka_list_offsets_req_t *lo = &r->u.lo;
    qn_kafka_list_offsets_resp_t out = { 0, lo->topic_count, NULL };
    out.topics = lo->topic_count
               ? qn_karena_alloc (&r->arena, (size_t) lo->topic_count * sizeof *out.topics) : NULL;
    int32_t k = 0;
    for (int32_t t = 0; t < lo->topic_count; t++) {
        qn_kafka_lo_topic_resp_t *rt = &out.topics [t];
        rt->name = lo->topics [t].name;
        rt->partition_count = lo->topics [t].partition_count;
        rt->partitions = rt->partition_count
                       ? qn_karena_alloc (&r->arena, (size_t) rt->partition_count * sizeof *rt->partitions) : NULL;
        for (int32_t p = 0; p < rt->partition_count; p++, k++) {
            const qn_pg_result_t *res = &r->parts [k].res;
            qn_kafka_lo_part_resp_t *rp = &rt->partitions [p];
            rp->partition_index = lo->topics [t].partitions [p].partition_index;
            int64_t err = 0, off = -1, ts = -1;
            if (qn_pg_result_failed (res, NULL, 0) || res->row_count != 1)
                err = QN_KAFKA_LEADER_NOT_AVAILABLE;
            else {
                s_col_int (res, 0, 0, &err);
                s_col_int (res, 0, 1, &off);
                s_col_int (res, 0, 2, &ts);
            }
            rp->error_code = (int16_t) err;
            rp->offset = err ? -1 : off;
            rp->timestamp = err ? -1 : ts;
        }
    }
    qn_buf_t b = QN_BUF_INIT;
    s_resp_begin (&b, r);
    qn_kafka_list_offsets_resp_encode (&b, r->h.api_version, &out);
    s_finish (self, r, &b, false);
    qn_buf_free (&b);
}

// ------------------------------------------------------------------ Fetch

//  The value of row i: the stored payload, opened when stored encrypted
//  (a queue with encryptionEnabled: the key ring of QUEEN_ENCRYPTION_KEY /
//  QUEEN_ENCRYPTION_OLD_KEYS, built on first need), as HTTP pop does.
//  False when a sealed payload does not open.
static bool
s_fetch_value (self_t *self, s_req_t *r, const qn_pg_result_t *res, uint32_t i, qn_kstr_t *value)
{
    *value = s_col_str (res, i, 6);
    const msgpack_object *enc = qn_pg_result_col (res, i, 8);
    if (!enc || enc->type != MSGPACK_OBJECT_BOOLEAN || !enc->via.boolean || value->len <= 0)
        return true;
    qn_seal_ring (&self->ring, self->config);
    qn_buf_t plain = QN_BUF_INIT;
    char why [128];
    if (qn_crypto_open (self->ring, value->ptr, (size_t) value->len, &plain, why, sizeof why, NULL)) {
        qn_warn ("kafka fetch: payload decryption failed: %s", why);
        qn_count (self->kernel, "payload_decrypt_failures", 1);
        qn_buf_free (&plain);
        return false;
    }
    char *copy = qn_karena_alloc (&r->arena, plain.len ? plain.len : 1);
    memcpy (copy, plain.data, plain.len);
    *value = (qn_kstr_t) { copy, (int32_t) plain.len };
    qn_buf_free (&plain);
    return true;
}

//  Appends the records of one partition's answer as one RecordBatch (rows
//  are consecutive offsets of one kpart) to out. Returns the bytes added.
//  A sealed payload that does not open ends the batch before it (never
//  sent as stored); *bad when that is the first record.
static size_t
s_fetch_batch (self_t *self, s_req_t *r, const qn_pg_result_t *res, qn_buf_t *out, bool *bad)
{
    *bad = false;
    uint32_t n = 0;
    for (uint32_t i = 0; i < res->row_count; i++) {
        const msgpack_object *o = qn_pg_result_col (res, i, 3);
        if (o && o->type != MSGPACK_OBJECT_NIL)
            n++;
    }
    if (n == 0)
        return 0;
    qn_kafka_record_t *recs = qn_karena_alloc (&r->arena, n * sizeof *recs);
    int64_t base = 0, first_ts = 0;
    uint32_t k = 0;
    for (uint32_t i = 0; i < res->row_count; i++) {
        int64_t off, ts = 0;
        if (!s_col_int (res, i, 3, &off))
            continue;
        s_col_int (res, i, 4, &ts);
        if (k == 0) {
            base = off;
            first_ts = ts;
        }
        qn_kstr_t value;
        if (!s_fetch_value (self, r, res, i, &value)) {
            *bad = k == 0;
            break;
        }
        qn_kafka_record_t *rec = &recs [k++];
        rec->offset_delta = (int32_t) (off - base);
        rec->timestamp_delta = ts - first_ts;
        rec->key = s_col_str (res, i, 5);
        rec->value = value;
        qn_kstr_t h = s_col_str (res, i, 7);
        if (h.len > 0 && qn_kafka_headers_decode (h.ptr, (size_t) h.len, &r->arena,
                                                  &rec->headers, &rec->header_count)) {
            rec->headers = NULL;
            rec->header_count = 0;
        }
    }
    if (k == 0)
        return 0;
    qn_kafka_batch_spec_t spec = { base, first_ts, 0, -1, -1, -1 };
    size_t before = out->len;
    qn_kafka_batch_encode (out, &spec, recs, (int) k);
    return out->len - before;
}

//  Answers r, or parks it (returns true: r is still alive then).
static bool
s_fetch_answer (self_t *self, s_req_t *r)
{
    qn_kafka_fetch_req_t *fr = &r->u.fetch;
    qn_kafka_fetch_resp_t out = { 0, 0, 0, fr->topic_count, NULL };
    out.topics = fr->topic_count
               ? qn_karena_alloc (&r->arena, (size_t) fr->topic_count * sizeof *out.topics) : NULL;
    size_t total = 0;
    bool errors = false;
    int32_t k = 0;
    qn_buf_t *batches = r->part_count ? qn_zalloc ((size_t) r->part_count * sizeof *batches) : NULL;
    for (int32_t t = 0; t < fr->topic_count; t++) {
        qn_kafka_fetch_topic_resp_t *rt = &out.topics [t];
        rt->topic = fr->topics [t].topic;
        rt->partition_count = fr->topics [t].partition_count;
        rt->partitions = rt->partition_count
                       ? qn_karena_alloc (&r->arena, (size_t) rt->partition_count * sizeof *rt->partitions) : NULL;
        for (int32_t p = 0; p < rt->partition_count; p++, k++) {
            const qn_pg_result_t *res = &r->parts [k].res;
            qn_kafka_fetch_part_resp_t *rp = &rt->partitions [p];
            rp->partition_index = fr->topics [t].partitions [p].partition;
            rp->aborted_count = -1;
            rp->preferred_read_replica = -1;
            rp->records = QN_KSTR ("");
            int64_t err = 0, hwm = -1, lso = -1;
            if (qn_pg_result_failed (res, NULL, 0) || res->row_count < 1)
                err = QN_KAFKA_LEADER_NOT_AVAILABLE;
            else {
                s_col_int (res, 0, 0, &err);
                s_col_int (res, 0, 1, &hwm);
                s_col_int (res, 0, 2, &lso);
            }
            rp->error_code = (int16_t) err;
            errors = errors || err != 0;
            rp->high_watermark = rp->last_stable_offset = hwm;
            rp->log_start_offset = lso;
            //  The first batch of the response always goes whole; later
            //  ones only while the response stays under max_bytes.
            if (err == 0 && (total == 0 || total < (size_t) (fr->max_bytes > 0 ? fr->max_bytes : 1))) {
                bool bad;
                size_t n = s_fetch_batch (self, r, res, &batches [k], &bad);
                if (bad) {
                    //  Retriable for the client; the message is never sent sealed
                    rp->error_code = S_KAFKA_STORAGE_ERROR;
                    errors = true;
                }
                else
                if (total == 0 || total + n <= (size_t) fr->max_bytes) {
                    total += n;
                    rp->records = (qn_kstr_t) { batches [k].data, (int32_t) batches [k].len };
                }
            }
        }
    }
    //  Nothing yet and the client is willing to wait: park until data
    //  arrives or max_wait_ms passes.
    if (total == 0 && !errors && !r->waited && fr->max_wait_ms > 0 && fr->min_bytes > 0) {
        for (int32_t i = 0; i < r->part_count; i++)
            qn_buf_free (&batches [i]);
        free (batches);
        if (!r->deadline_ms) {
            int32_t wait = fr->max_wait_ms < S_MAX_WAIT_MS ? fr->max_wait_ms : S_MAX_WAIT_MS;
            r->deadline_ms = qn_now_ms () + wait;
        }
        if (self->parked_len == self->parked_cap) {
            self->parked_cap = self->parked_cap ? self->parked_cap * 2 : 16;
            self->parked = qn_realloc (self->parked, self->parked_cap * sizeof *self->parked);
        }
        self->parked [self->parked_len++] = r;
        r->parked = true;
        if (r->woken)               //  Data committed while it read: read again now
            r->timer = qn_timer_add (self->kernel, 1, 0, s_on_fetch_rerun, r);
        return true;
    }
    qn_buf_t b = QN_BUF_INIT;
    s_resp_begin (&b, r);
    qn_kafka_fetch_resp_encode (&b, r->h.api_version, &out);
    for (int32_t i = 0; i < r->part_count; i++)
        qn_buf_free (&batches [i]);
    free (batches);
    s_finish (self, r, &b, false);
    qn_buf_free (&b);
    return false;
}

static void
s_parts_done (self_t *self, s_req_t *r)
{
    if (r->h.api_key == QN_KAFKA_LIST_OFFSETS) {
        s_list_offsets_answer (self, r);
        return;
    }
    if (s_fetch_answer (self, r) && !r->timer) {
        int64_t left = r->deadline_ms - qn_now_ms ();
        r->timer = qn_timer_add (self->kernel, left > 0 ? (uint32_t) left : 1, 0, s_on_fetch_timer, r);
    }
}

//  The wait is over: run once more and answer whatever there is.
static void
s_on_fetch_timer (void *self_, void *arg)
{
    self_t *self = self_;
    s_req_t *r = arg;
    r->timer = 0;
    s_unpark (self, r);
    r->waited = true;
    s_fetch_run (self, r);
}

//  A committed event came while a parked fetch was reading: it reads
//  again (its deadline timer is set when it parks again).
static void
s_on_fetch_rerun (void *self_, void *arg)
{
    self_t *self = self_;
    s_req_t *r = arg;
    r->timer = 0;
    s_unpark (self, r);
    s_fetch_run (self, r);
}

static void
s_fetch_run (self_t *self, s_req_t *r)
{
    r->woken = false;
    for (int32_t i = 0; i < r->part_count; i++)
        s_part_clear (&r->parts [i]);
    s_parts_run (self, r);
}

static bool
s_fetch_names (const s_req_t *r, const char *queue, size_t len)
{
    for (int32_t t = 0; t < r->u.fetch.topic_count; t++) {
        qn_kstr_t n = r->u.fetch.topics [t].topic;
        if ((size_t) n.len == len && memcmp (n.ptr, queue, len) == 0)
            return true;
    }
    return false;
}

//  A Fetch of that queue whose statements are in flight may have read
//  before the commit: it runs again instead of parking (no lost wake-up).
typedef struct {
    const char *queue;
    size_t len;
} s_woken_t;

static void
s_mark_running (void *arg, uint64_t key, void *value)
{
    (void) key;
    const s_woken_t *w = arg;
    s_conn_t *c = value;
    s_req_t *r = c->head;
    if (c->busy && r && r->h.api_key == QN_KAFKA_FETCH && !r->parked && s_fetch_names (r, w->queue, w->len))
        r->woken = true;
}

//  "committed" [tenant, queue(, partition)]: parked fetches of that queue
//  run again now; running ones run again when their statements are back.
static int
s_on_committed (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    qn_msg_committed_t m;
    if (qn_msg_committed_decode (env->body.ptr, env->body.len, &m) || m.tenant_len != 0)
        return 0;
    qn_hashmap_each (self->conns, s_mark_running, &(s_woken_t) { m.queue, m.queue_len });
    for (uint32_t i = 0; i < self->parked_len; ) {
        s_req_t *r = self->parked [i];
        if (s_fetch_names (r, m.queue, m.queue_len)) {
            s_unpark (self, r);     //  Moves the last one into slot i
            s_fetch_run (self, r);
        }
        else
            i++;
    }
    return 0;
}


// ------------------------------------------------------------------ Produce

//  Valid UTF-8 without NUL (a PostgreSQL text value).
static bool
s_utf8_ok (const char *p, int32_t len)
{
    const uint8_t *s = (const uint8_t *) p;
    for (int32_t i = 0; i < len; ) {
        uint8_t c = s [i];
        int n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
        if (c == 0 || n < 0 || (n == 1 && c < 0xc2) || i + n >= len + (n == 0))
            return false;
        for (int k = 1; k <= n; k++)
            if ((s [i + k] & 0xc0) != 0x80)
                return false;
        i += n + 1;
    }
    return true;
}

//  The native partition of a record key (spec §6.2): the key itself when
//  it is valid UTF-8 of 1..255 bytes, else "_kb64:" + base64url(key) cut
//  to 255 bytes with the raw key kept (*raw set); NULL key: Default.
static qn_kstr_t
s_key_partition (s_req_t *r, qn_kstr_t key, bool *raw)
{
    *raw = false;
    if (key.len < 0)
        return QN_KSTR_NULL;
    if (key.len >= 1 && key.len <= S_NAME_MAX && s_utf8_ok (key.ptr, key.len))
        return key;
    *raw = true;
    size_t cap = sodium_base64_ENCODED_LEN ((size_t) key.len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    char *name = qn_karena_alloc (&r->arena, 6 + cap);
    memcpy (name, "_kb64:", 6);
    sodium_bin2base64 (name + 6, cap, (const unsigned char *) key.ptr, (size_t) key.len,
                       sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    size_t len = strlen (name);
    return (qn_kstr_t) { name, (int32_t) (len > S_NAME_MAX ? S_NAME_MAX : len) };
}

//  Kafka sequence arithmetic: wraps from 2^31 - 1 to 0.
static int32_t
s_seq_add (int32_t base, int32_t n)
{
    int64_t v = (int64_t) base + n;
    return (int32_t) (v > INT32_MAX ? v - ((int64_t) INT32_MAX + 1) : v);
}

static void
s_produce_answer (self_t *self, s_req_t *r)
{
    if (r->u.pr.acks == 0) {
        s_finish (self, r, NULL, false);    //  acks=0: no answer at all
        return;
    }
    qn_buf_t b = QN_BUF_INIT;
    s_resp_begin (&b, r);
    qn_kafka_produce_resp_encode (&b, r->h.api_version, &r->presp);
    s_finish (self, r, &b, false);
    qn_buf_free (&b);
}

static void
s_on_produce_result (void *self_, void *arg, const qn_env_t *env)
{
    s_req_t *r = arg;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    bool failed = qn_pg_result_failed (&res, NULL, 0);
    if (failed)
        qn_warn ("kafka produce failed: sqlstate=%s message=%s", res.sqlstate, res.message);
    int32_t k = 0;
    for (int32_t t = 0; t < r->presp.topic_count; t++) {
        qn_kafka_produce_topic_resp_t *rt = &r->presp.topics [t];
        for (int32_t p = 0; p < rt->partition_count; p++, k++) {
            qn_kafka_produce_part_resp_t *rp = &rt->partitions [p];
            int32_t first = r->pfirst [k];
            if (rp->error_code || first < 0)
                continue;
            int64_t err = 0, off = -1;
            if (failed || (uint32_t) first >= res.row_count)
                err = QN_KAFKA_REQUEST_TIMED_OUT;       //  Retriable (spec §8)
            else {
                s_col_int (&res, (uint32_t) first, 1, &err);
                if (!s_col_int (&res, (uint32_t) first, 5, &off) && !err)
                    err = QN_KAFKA_UNKNOWN_TOPIC_OR_PARTITION;
            }
            rp->error_code = (int16_t) err;
            rp->base_offset = err ? -1 : off;
            rp->log_start_offset = err ? -1 : 0;
        }
    }
    qn_pg_result_free (&res);
    s_produce_answer (self_, r);
}

//  Decodes every partition's batches, refuses what the spec refuses per
//  partition, and stores the rest in one kafka_push call (one PostgreSQL
//  transaction: each partition's records all or nothing).
static void
s_produce (self_t *self, s_req_t *r)
{
    qn_kafka_produce_req_t *pr = &r->u.pr;
    int32_t slots = 0;
    for (int32_t t = 0; t < pr->topic_count; t++)
        slots += pr->topics [t].partition_count;
    r->pfirst = slots ? qn_karena_alloc (&r->arena, (size_t) slots * sizeof *r->pfirst) : NULL;
    r->presp.topic_count = pr->topic_count;
    r->presp.topics = pr->topic_count
                    ? qn_karena_alloc (&r->arena, (size_t) pr->topic_count * sizeof *r->presp.topics) : NULL;
    //  Pass 1: decode, count records.
    qn_kafka_batches_t *bs = slots ? qn_karena_alloc (&r->arena, (size_t) slots * sizeof *bs) : NULL;
    uint32_t items = 0;
    int32_t k = 0;
    for (int32_t t = 0; t < pr->topic_count; t++) {
        qn_kafka_produce_topic_resp_t *rt = &r->presp.topics [t];
        rt->name = pr->topics [t].name;
        rt->partition_count = pr->topics [t].partition_count;
        rt->partitions = rt->partition_count
                       ? qn_karena_alloc (&r->arena, (size_t) rt->partition_count * sizeof *rt->partitions) : NULL;
        for (int32_t p = 0; p < rt->partition_count; p++, k++) {
            qn_kafka_produce_part_t *pp = &pr->topics [t].partitions [p];
            qn_kafka_produce_part_resp_t *rp = &rt->partitions [p];
            rp->index = pp->index;
            rp->base_offset = -1;
            rp->log_append_time_ms = -1;
            rp->log_start_offset = -1;
            r->pfirst [k] = -1;
            int err = 0;
            if (pr->transactional_id.len >= 0)
                err = QN_KAFKA_TRANSACTIONAL_ID_AUTH_FAILED;
            else
            if (pp->records.len <= 0)
                err = QN_KAFKA_CORRUPT_MESSAGE;
            else
                err = qn_kafka_batches_decode (pp->records.ptr, (size_t) pp->records.len, S_MAX_BATCH,
                                               true, &r->arena, &bs [k]);
            for (int i = 0; !err && i < bs [k].count; i++)
                if (bs [k].batches [i].attributes & QN_KAFKA_ATTR_TRANSACTIONAL)
                    err = QN_KAFKA_INVALID_RECORD;
            rp->error_code = (int16_t) err;
            if (err)
                continue;
            uint32_t n = 0;
            for (int i = 0; i < bs [k].count; i++)
                n += (uint32_t) bs [k].batches [i].records_count;
            if (n) {
                r->pfirst [k] = (int32_t) items;
                items += n;
            }
            else
                rp->error_code = QN_KAFKA_CORRUPT_MESSAGE;
        }
    }
    if (items == 0) {
        s_produce_answer (self, r);
        return;
    }
    r->pbs = bs;
    r->pitems = items;
    r->tsealed = qn_karena_alloc (&r->arena, (size_t) (pr->topic_count ? pr->topic_count : 1) * sizeof (bool));
    memset (r->tsealed, 0, (size_t) (pr->topic_count ? pr->topic_count : 1) * sizeof (bool));
    //  Without QUEEN_ENCRYPTION_KEY nothing is sealed (nor asked)
    if (!qn_seal_can (&self->ring, self->config)) {
        s_produce_store (self, r);
        return;
    }
    //  Which topics are queues with encryptionEnabled (their payloads are
    //  sealed here, as the SQS door's sends and HTTP pushes are)
    qn_buf_t names = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &names);
    qn_jw_arr (&w);
    for (int32_t t = 0; t < pr->topic_count; t++)
        qn_jw_strn (&w, pr->topics [t].name.ptr ? pr->topics [t].name.ptr : "",
                    pr->topics [t].name.len > 0 ? (size_t) pr->topics [t].name.len : 0);
    qn_jw_arr_end (&w);
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, "");
    qn_pg_args_str (&a, names.data, names.len);
    int rc = qn_pg_call (self->kernel, "pg_reader", &self->exec, QN_SQL_QUEUE_ENCRYPTION, NULL, &a,
                         S_PG_TIMEOUT_MS, s_on_produce_encryption, r);
    qn_pg_args_free (&a);
    qn_buf_free (&names);
    if (rc)
        s_on_produce_encryption (self, r, NULL);
}

//  The topics' encryptionEnabled: sealed are those that have it, and, when
//  the settings cannot be read, every topic (as the HTTP push: opening what
//  is stored sealed always works, storing in clear cannot be undone).
static void
s_on_produce_encryption (void *self_, void *arg, const qn_env_t *env)
{
    s_req_t *r = arg;
    qn_kafka_produce_req_t *pr = &r->u.pr;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    bool failed = qn_pg_result_failed (&res, NULL, 0);
    for (int32_t t = 0; t < pr->topic_count; t++) {
        r->tsealed [t] = failed;
        for (uint32_t i = 0; !failed && i < res.row_count; i++) {
            qn_kstr_t name = s_col_str (&res, i, 0);
            const msgpack_object *enc = qn_pg_result_col (&res, i, 1);
            if (name.len == pr->topics [t].name.len && name.len >= 0
                && !memcmp (name.ptr, pr->topics [t].name.ptr, (size_t) name.len)
                && enc && enc->type == MSGPACK_OBJECT_BOOLEAN && enc->via.boolean)
                r->tsealed [t] = true;
        }
    }
    if (failed)
        qn_warn ("kafka produce: queue encryption settings unreadable, sealing every topic: sqlstate=%s",
                 res.sqlstate);
    qn_pg_result_free (&res);
    s_produce_store (self_, r);
}

//  Pass 2: the items as kafka_push's arrays, in partition order; payloads
//  of sealed topics sealed (actors/seal/seal.h, as the SQS door's sends).
static void
s_produce_store (self_t *self, s_req_t *r)
{
    qn_kafka_produce_req_t *pr = &r->u.pr;
    qn_kafka_batches_t *bs = r->pbs;
    uint32_t items = r->pitems;
    int32_t k;
    qn_buf_t sealed = QN_BUF_INIT;
    bool seal_failed = false;
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, "");
    int64_t now_ms = (int64_t) (qn_wall_us () / 1000);
    for (int col = 0; col < 14; col++) {
        //  $11: the kpart count a queue Kafka never named before gets (its view starts now)
        if (col == 9)
            qn_pg_args_int (&a, self->config->kafka_default_partitions);
        qn_pg_args_array (&a, items);
        k = 0;
        for (int32_t t = 0; t < pr->topic_count; t++)
            for (int32_t p = 0; p < pr->topics [t].partition_count; p++, k++) {
                if (r->presp.topics [t].partitions [p].error_code)
                    continue;
                for (int i = 0; i < bs [k].count; i++) {
                    const qn_kafka_batch_t *b = &bs [k].batches [i];
                    for (int32_t j = 0; j < b->records_count; j++) {
                        const qn_kafka_record_t *rec = &b->records [j];
                        bool raw;
                        qn_kstr_t name = s_key_partition (r, rec->key, &raw);
                        bool idem = b->producer_id >= 0;
                        int32_t kpart = pr->topics [t].partitions [p].index;
                        switch (col) {
                            case 0: qn_pg_args_str (&a, pr->topics [t].name.ptr, (size_t) pr->topics [t].name.len); break;
                            case 1: qn_pg_args_str (&a, name.len < 0 ? NULL : name.ptr, name.len < 0 ? 0 : (size_t) name.len); break;
                            case 2: if (idem) {
                                        //  Native dedup also catches a retry (spec §6.2)
                                        char txn [80];
                                        int tl = snprintf (txn, sizeof txn, "kafka:%lld:%d:%d:%d",
                                                           (long long) b->producer_id, (int) b->producer_epoch,
                                                           (int) kpart, (int) s_seq_add (b->base_sequence, j));
                                        qn_pg_args_str (&a, txn, (size_t) tl);
                                    }
                                    else
                                        qn_pg_args_null (&a);
                                    break;
                            case 3: if (qn_seal_arg (&a, r->tsealed [t] && rec->value.len >= 0 ? self->ring : NULL,
                                                     rec->value.len > 0 ? rec->value.ptr : "",
                                                     rec->value.len > 0 ? (size_t) rec->value.len : 0, &sealed)) {
                                        seal_failed = true;
                                        qn_pg_args_bin (&a, "", 0);     //  Keeps the array whole; never sent
                                    }
                                    break;
                            //  Sealed payloads (a null value stays null: nothing to hide)
                            case 13: qn_pg_args_bool (&a, r->tsealed [t] && rec->value.len >= 0); break;
                            case 4: qn_pg_args_int (&a, pr->topics [t].partitions [p].index); break;
                            case 5: qn_pg_args_int (&a, (b->attributes & QN_KAFKA_ATTR_LOG_APPEND) ? now_ms
                                                        : (int64_t) ((uint64_t) b->first_timestamp + (uint64_t) rec->timestamp_delta)); break;
                            case 6: if (raw) qn_pg_args_bin (&a, rec->key.len ? rec->key.ptr : "", (size_t) rec->key.len);
                                    else qn_pg_args_null (&a);
                                    break;
                            case 7: qn_pg_args_bool (&a, rec->value.len < 0); break;
                            //  Idempotence (spec §6.5): producer, epoch, the batch's base and last sequence
                            case 9: qn_pg_args_int (&a, idem ? b->producer_id : -1); break;
                            case 10: qn_pg_args_int (&a, idem ? b->producer_epoch : -1); break;
                            case 11: qn_pg_args_int (&a, idem ? b->base_sequence : -1); break;
                            case 12: qn_pg_args_int (&a, idem ? s_seq_add (b->base_sequence, b->last_offset_delta) : -1); break;
                            case 8:
                                if (rec->header_count > 0) {
                                    qn_buf_t hb = QN_BUF_INIT;
                                    qn_kafka_headers_encode (&hb, rec->headers, rec->header_count);
                                    qn_pg_args_bin (&a, hb.data, hb.len);
                                    qn_buf_free (&hb);
                                }
                                else
                                    qn_pg_args_null (&a);
                        }
                    }
                }
            }
    }
    qn_buf_free (&sealed);
    if (seal_failed) {
        //  Never stored in clear: the client retries (retriable code)
        qn_warn ("kafka produce: a payload could not be sealed");
        qn_pg_args_free (&a);
        s_on_produce_result (self, r, NULL);
        return;
    }
    int rc = qn_pg_call (self->kernel, "pg_writer", &self->exec, QN_SQL_KAFKA_PUSH, NULL, &a,
                         S_PG_TIMEOUT_MS, s_on_produce_result, r);
    qn_pg_args_free (&a);
    if (rc)
        s_on_produce_result (self, r, NULL);
}

// ------------------------------------------------------------------ CreateTopics / DeleteTopics

typedef struct {
    s_req_t *req;
    int32_t index;              //  Topic of the request
} s_topic_op_t;

static void
s_topics_answer (self_t *self, s_req_t *r)
{
    qn_buf_t b = QN_BUF_INIT;
    s_resp_begin (&b, r);
    if (r->h.api_key == QN_KAFKA_CREATE_TOPICS)
        qn_kafka_create_topics_resp_encode (&b, r->h.api_version, &r->tresp);
    else
        qn_kafka_delete_topics_resp_encode (&b, r->h.api_version, &r->tresp);
    s_finish (self, r, &b, false);
    qn_buf_free (&b);
}

static void
s_on_topic_result (void *self_, void *arg, const qn_env_t *env)
{
    s_topic_op_t *op = arg;
    s_req_t *r = op->req;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    int64_t err = 0;
    if (qn_pg_result_failed (&res, NULL, 0) || !s_col_int (&res, 0, 0, &err))
        err = QN_KAFKA_REQUEST_TIMED_OUT;
    r->tresp.topics [op->index].error_code = (int16_t) err;
    qn_pg_result_free (&res);
    if (--r->pending == 0)
        s_topics_answer (self_, r);
}

//  CreateTopics refusals decided without the database (spec §4.13).
static int16_t
s_create_check (const qn_kafka_ct_topic_t *t, qn_kstr_t *msg)
{
    if (t->assignment_count > 0) {
        *msg = QN_KSTR ("manual replica assignment is not supported");
        return QN_KAFKA_INVALID_REQUEST;
    }
    for (int32_t i = 0; i < t->config_count; i++) {
        qn_kstr_t n = t->configs [i].name, v = t->configs [i].value;
        if (qn_kstr_eq (n, QN_KSTR ("cleanup.policy"))) {
            if (!qn_kstr_eq (v, QN_KSTR ("delete"))) {
                *msg = QN_KSTR ("only cleanup.policy=delete is supported");
                return QN_KAFKA_INVALID_CONFIG;
            }
        }
        else
        if (!qn_kstr_eq (n, QN_KSTR ("retention.ms")) && !qn_kstr_eq (n, QN_KSTR ("max.message.bytes"))) {
            *msg = QN_KSTR ("unknown topic config");
            return QN_KAFKA_INVALID_CONFIG;
        }
    }
    return 0;
}

static void
s_topics_admin (self_t *self, s_req_t *r)
{
    bool create = r->h.api_key == QN_KAFKA_CREATE_TOPICS;
    int32_t n = create ? r->u.ct.topic_count : r->u.dt.topic_count;
    r->tresp.topic_count = n;
    r->tresp.topics = n ? qn_karena_alloc (&r->arena, (size_t) n * sizeof *r->tresp.topics) : NULL;
    s_topic_op_t *ops = n ? qn_karena_alloc (&r->arena, (size_t) n * sizeof *ops) : NULL;
    r->pending = 1;             //  Held until every statement is sent
    for (int32_t i = 0; i < n; i++) {
        qn_kafka_topic_result_t *tr = &r->tresp.topics [i];
        tr->name = create ? r->u.ct.topics [i].name : r->u.dt.topics [i];
        tr->error_message = QN_KSTR_NULL;
        qn_pg_args_t a;
        qn_pg_args_init (&a);
        qn_pg_args_cstr (&a, "");
        qn_pg_args_str (&a, tr->name.ptr, (size_t) tr->name.len);
        uint32_t stmt = QN_SQL_KAFKA_DELETE_TOPIC;
        if (create) {
            const qn_kafka_ct_topic_t *t = &r->u.ct.topics [i];
            tr->error_code = s_create_check (t, &tr->error_message);
            qn_pg_args_int (&a, t->num_partitions == -1 ? self->config->kafka_default_partitions
                                                        : t->num_partitions);
            qn_pg_args_int (&a, self->config->kafka_max_partitions);
            qn_pg_args_bool (&a, r->u.ct.validate_only);
            stmt = QN_SQL_KAFKA_CREATE_TOPIC;
        }
        else
        if (!self->config->kafka_allow_delete_topics)
            tr->error_code = QN_KAFKA_TOPIC_DELETION_DISABLED;
        if (tr->error_code == 0) {
            ops [i] = (s_topic_op_t) { r, i };
            r->pending++;
            if (qn_pg_call (self->kernel, "pg_writer", &self->exec, stmt, NULL, &a,
                            S_PG_TIMEOUT_MS, s_on_topic_result, &ops [i])) {
                r->pending--;
                tr->error_code = QN_KAFKA_REQUEST_TIMED_OUT;
            }
        }
        qn_pg_args_free (&a);
    }
    if (--r->pending == 0)
        s_topics_answer (self, r);
}

// ------------------------------------------------------------------ FindCoordinator / InitProducerId

//  FindCoordinator answers 53 for transaction coordinators (no
//  transactions, spec §8); group keys are the group coordinator's
//  (actors/kafka/group.c: this broker, or 24 for an empty id) and do not
//  come here. InitProducerId answers 53 for a transactional id; false:
//  not answered here (a plain idempotent producer, below).
static bool
s_coordinator (self_t *self, s_req_t *r)
{
    qn_buf_t b = QN_BUF_INIT;
    s_resp_begin (&b, r);
    if (r->h.api_key == QN_KAFKA_FIND_COORDINATOR) {
        qn_kafka_find_coordinator_resp_t out = { 0, 0, QN_KSTR_NULL, -1, QN_KSTR (""), -1 };
        if (r->u.fc.key_type == 1) {
            out.error_code = QN_KAFKA_TRANSACTIONAL_ID_AUTH_FAILED;
            out.error_message = QN_KSTR ("transactions are not supported");
        }
        else
        if (r->u.fc.key.len == 0)
            out.error_code = QN_KAFKA_INVALID_GROUP_ID;
        else {
            qn_buf_free (&b);
            return false;
        }
        qn_kafka_find_coordinator_resp_encode (&b, r->h.api_version, &out);
    }
    else {
        if (r->u.ip.transactional_id.len < 0) {
            qn_buf_free (&b);
            return false;
        }
        qn_kafka_init_producer_id_resp_t out = { 0, QN_KAFKA_TRANSACTIONAL_ID_AUTH_FAILED, -1, -1 };
        qn_kafka_init_producer_id_resp_encode (&b, r->h.api_version, &out);
    }
    s_finish (self, r, &b, false);
    qn_buf_free (&b);
    return true;
}

// ------------------------------------------------------------------ InitProducerId (idempotent)

static void
s_on_init_producer_result (void *self_, void *arg, const qn_env_t *env)
{
    s_req_t *r = arg;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    qn_kafka_init_producer_id_resp_t out = { 0, 0, -1, -1 };
    int64_t pid = -1;
    if (qn_pg_result_failed (&res, NULL, 0) || !s_col_int (&res, 0, 0, &pid) || pid < 0) {
        //  Database trouble: retriable for both clients (spec §8)
        out.error_code = QN_KAFKA_COORDINATOR_NOT_AVAILABLE;
        pid = -1;
    }
    else
        out.producer_epoch = 0;
    out.producer_id = pid;
    qn_pg_result_free (&res);
    qn_buf_t b = QN_BUF_INIT;
    s_resp_begin (&b, r);
    qn_kafka_init_producer_id_resp_encode (&b, r->h.api_version, &out);
    s_finish (self_, r, &b, false);
    qn_buf_free (&b);
}

//  A null transactional id: a new producer id from the PostgreSQL
//  sequence, epoch 0 (spec §4.15); the sequence checks are in kafka_push.
static void
s_init_producer (self_t *self, s_req_t *r)
{
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    int rc = qn_pg_call (self->kernel, "pg_writer", &self->exec, QN_SQL_KAFKA_INIT_PRODUCER, NULL, &a,
                         S_PG_TIMEOUT_MS, s_on_init_producer_result, r);
    qn_pg_args_free (&a);
    if (rc)
        s_on_init_producer_result (self, r, NULL);
}

// ------------------------------------------------------------------ dispatch

//  Starts the connection's next request, if any and none is in progress.
static void
s_start (self_t *self, s_conn_t *c)
{
    if (c->busy || !c->head)
        return;
    s_req_t *r = c->head;
    c->busy = true;
    int hl = qn_kafka_req_header_decode (r->payload, r->len, &r->h);
    if (hl < 0) {
        s_finish (self, r, NULL, true);
        return;
    }
    r->body = r->payload + hl;
    r->body_len = r->len - (size_t) hl;
    int16_t key = r->h.api_key, v = r->h.api_version;
    if (key == QN_KAFKA_API_VERSIONS) {
        //  Any version: a too-new one gets the v0 body with error 35.
        qn_kafka_apiversions_req_t av;
        if (qn_kafka_version_ok (key, v) && qn_kafka_apiversions_req_decode (v, r->body, r->body_len, &av)) {
            s_finish (self, r, NULL, true);
            return;
        }
        s_api_versions (self, r);
        return;
    }
    //  Group coordinator APIs (actors/kafka/group.c), answered through s_on_group_answer.
    if (qn_kgroup_owns (key, v, r->body, r->body_len)) {
        qn_kgroup_request (self->group, r, &r->h, r->body, r->body_len);
        return;
    }
    int rc = -1;
    if (qn_kafka_version_ok (key, v)) {
        if (key == QN_KAFKA_METADATA)
            rc = qn_kafka_metadata_req_decode (v, r->body, r->body_len, &r->arena, &r->u.md);
        else
        if (key == QN_KAFKA_LIST_OFFSETS)
            rc = qn_kafka_list_offsets_req_decode (v, r->body, r->body_len, &r->arena, &r->u.lo);
        else
        if (key == QN_KAFKA_FETCH)
            rc = qn_kafka_fetch_req_decode (v, r->body, r->body_len, &r->arena, &r->u.fetch);
        else
        if (key == QN_KAFKA_PRODUCE)
            rc = qn_kafka_produce_req_decode (v, r->body, r->body_len, &r->arena, &r->u.pr);
        else
        if (key == QN_KAFKA_CREATE_TOPICS)
            rc = qn_kafka_create_topics_req_decode (v, r->body, r->body_len, &r->arena, &r->u.ct);
        else
        if (key == QN_KAFKA_DELETE_TOPICS)
            rc = qn_kafka_delete_topics_req_decode (v, r->body, r->body_len, &r->arena, &r->u.dt);
        else
        if (key == QN_KAFKA_FIND_COORDINATOR)
            rc = qn_kafka_find_coordinator_req_decode (v, r->body, r->body_len, &r->arena, &r->u.fc);
        else
        if (key == QN_KAFKA_INIT_PRODUCER_ID)
            rc = qn_kafka_init_producer_id_req_decode (v, r->body, r->body_len, &r->arena, &r->u.ip);
    }
    if (rc == 0 && key == QN_KAFKA_INIT_PRODUCER_ID && r->u.ip.transactional_id.len < 0) {
        s_init_producer (self, r);      //  Idempotent producer (kprod)
        return;
    }
    if (rc == 0 && (key == QN_KAFKA_FIND_COORDINATOR || key == QN_KAFKA_INIT_PRODUCER_ID)
     && s_coordinator (self, r))
        return;
    if (key == QN_KAFKA_FIND_COORDINATOR || key == QN_KAFKA_INIT_PRODUCER_ID)
        rc = -1;                //  Not built: close (below)
    if (rc) {
        //  Unknown key, version outside the table, an API not built yet,
        //  or a malformed body: close (spec §3, §8).
        qn_info ("kafka request refused: conn=%llu api=%d version=%d (connection closed)",
                 (unsigned long long) c->id, key, v);
        qn_count (self->kernel, "kafka_requests_refused", 1);
        s_finish (self, r, NULL, true);
        return;
    }
    if (key == QN_KAFKA_METADATA)
        s_metadata (self, r);
    else
    if (key == QN_KAFKA_PRODUCE)
        s_produce (self, r);
    else
    if (key == QN_KAFKA_CREATE_TOPICS || key == QN_KAFKA_DELETE_TOPICS)
        s_topics_admin (self, r);
    else {
        s_parts_alloc (r);
        s_parts_run (self, r);
    }
}

//  The group coordinator's answer of request r (payload NULL: close).
static void
s_on_group_answer (void *self_, void *req, qn_buf_t *payload)
{
    s_finish (self_, req, payload, payload == NULL);
}

static int
s_on_request (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    qn_msg_kafka_t m;
    if (env->frame_count != 1 || qn_msg_kafka_request_decode (env->body.ptr, env->body.len, &m))
        return QN_EPROTO;
    s_conn_t *c = qn_hashmap_get (self->conns, m.conn_id);
    if (!c) {
        c = qn_zalloc (sizeof *c);
        c->id = m.conn_id;
        qn_hashmap_put (self->conns, c->id, c);
    }
    s_req_t *r = qn_zalloc (sizeof *r);
    r->conn = c;
    r->seq = m.seq;
    r->len = env->frames [0].len;
    r->payload = qn_malloc (r->len ? r->len : 1);
    memcpy (r->payload, env->frames [0].ptr, r->len);
    qn_karena_init (&r->arena);
    if (c->tail)
        c->tail->next = r;
    else
        c->head = r;
    c->tail = r;
    s_start (self, c);
    return 0;
}

static int
s_on_closed (void *self_, const qn_env_t *env)
{
    self_t *self = self_;
    qn_msg_kafka_t m;
    if (qn_msg_kafka_closed_decode (env->body.ptr, env->body.len, &m))
        return QN_EPROTO;
    s_conn_t *c = qn_hashmap_get (self->conns, m.conn_id);
    if (!c)
        return 0;
    c->gone = true;
    s_req_t *r = c->head;
    if (c->busy && r && r->parked) {
        //  A waiting Fetch has no statement in flight: drop it now.
        s_unpark (self, r);
        s_finish (self, r, NULL, false);
        return 0;
    }
    if (!c->busy) {
        while (c->head) {
            s_req_t *n = c->head->next;
            s_req_free (c->head);
            c->head = n;
        }
        qn_hashmap_remove (self->conns, c->id);
        free (c);
    }
    return 0;
}

// ------------------------------------------------------------------ lifecycle

static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    qn_subscribe (self->kernel, "committed");
    return 0;
}

//  Stopping: waiting fetches answer what they have now.
static int
s_on_stop (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    qn_kgroup_stop (self->group);
    while (self->parked_len) {
        s_req_t *r = self->parked [0];
        s_unpark (self, r);
        r->waited = true;
        s_fetch_answer (self, r);       //  From the results it has
    }
    return QN_DONE;
}

static void
s_free_conn (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    s_conn_t *c = value;
    while (c->head) {
        s_req_t *n = c->head->next;
        s_req_free (c->head);
        c->head = n;
    }
    free (c);
}

static void
s_destroy (void **self_p)
{
    self_t *self = *self_p;
    qn_kgroup_destroy (&self->group);
    qn_hashmap_each (self->conns, s_free_conn, NULL);
    qn_hashmap_destroy (&self->conns);
    msgpack_sbuffer_destroy (&self->exec);
    msgpack_sbuffer_destroy (&self->body);
    qn_crypto_keys_destroy (&self->ring);
    free (self->parked);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_STOP, s_on_stop },
    { QN_MSG_KAFKA_REQUEST, s_on_request },
    { QN_MSG_KAFKA_CLOSED, s_on_closed },
    { QN_MSG_COMMITTED, s_on_committed },
    { 0, NULL }
};

qn_actor_t *
qn_kafka_codec_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    self->conns = qn_hashmap_new ();
    msgpack_sbuffer_init (&self->exec);
    msgpack_sbuffer_init (&self->body);
    self->group = qn_kgroup_new (kernel, config, s_on_group_answer, self);
    qn_actor_def_t def = {
        .name = "kafka", .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}
