/*  actors/kafka/fetch.c - the Kafka codec's reads
    ListOffsets and Fetch: one statement per partition (kafka_list_offset /
    kafka_fetch on pg_reader), all in flight together; a Fetch that finds
    nothing waits up to its max_wait_ms and runs again on a "committed"
    event naming one of its topics. Part of the "kafka" actor
    (actors/kafka/kafka_int.h).
*/
#include "actors/kafka/kafka_int.h"

static void s_fetch_run (qn_kcodec_t *self, qn_kreq_t *r);
static void s_on_fetch_timer (void *self_, void *arg);
static void s_on_fetch_rerun (void *self_, void *arg);

// ------------------------------------------------------------------ per-partition statements

//  Topic / partition names of partition slot i of r.
static void
s_part_names (const qn_kreq_t *r, const qn_kpart_t *p, qn_kstr_t *topic, int32_t *part)
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

static void s_parts_done (qn_kcodec_t *self, qn_kreq_t *r);

static void
s_on_part_result (void *self_, void *arg, const qn_env_t *env)
{
    qn_kpart_t *p = arg;
    qn_kreq_t *r = p->req;
    qn_kafka_part_clear (p);
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
void
qn_kafka_parts_run (qn_kcodec_t *self, qn_kreq_t *r)
{
    r->pending = r->part_count;
    for (int32_t i = 0; i < r->part_count; i++) {
        qn_kpart_t *p = &r->parts [i];
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
            qn_pg_args_int (&a, QN_KAFKA_FETCH_ROWS);
            stmt = QN_SQL_KAFKA_FETCH;
        }
        else {
            qn_pg_args_int (&a, r->u.lo.topics [p->topic].partitions [p->part].timestamp);
            stmt = QN_SQL_KAFKA_LIST_OFFSET;
        }
        int rc = qn_pg_call (self->kernel, "pg_reader", &self->exec, stmt, NULL, &a,
                             QN_KAFKA_PG_TIMEOUT_MS, s_on_part_result, p);
        qn_pg_args_free (&a);
        if (rc) {
            qn_kafka_part_clear (p);
            qn_pg_result_decode (NULL, 0, &p->res);
            p->done = true;
            r->pending--;
        }
    }
    if (r->pending == 0)
        s_parts_done (self, r);
}

//  Lays out one slot per requested partition, in request order.
void
qn_kafka_parts_alloc (qn_kreq_t *r)
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
            r->parts [k++] = (qn_kpart_t) { .req = r, .topic = t, .part = p };
    }
}

// ------------------------------------------------------------------ ListOffsets

static void
s_list_offsets_answer (qn_kcodec_t *self, qn_kreq_t *r)
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
                qn_kafka_col_int (res, 0, 0, &err);
                qn_kafka_col_int (res, 0, 1, &off);
                qn_kafka_col_int (res, 0, 2, &ts);
            }
            rp->error_code = (int16_t) err;
            rp->offset = err ? -1 : off;
            rp->timestamp = err ? -1 : ts;
        }
    }
    qn_buf_t b = QN_BUF_INIT;
    qn_kafka_resp_begin (&b, r);
    qn_kafka_list_offsets_resp_encode (&b, r->h.api_version, &out);
    qn_kafka_finish (self, r, &b, false);
    qn_buf_free (&b);
}

// ------------------------------------------------------------------ Fetch

//  The value of row i: the stored payload, opened when stored encrypted
//  (a queue with encryptionEnabled: the key ring of QUEEN_ENCRYPTION_KEY /
//  QUEEN_ENCRYPTION_OLD_KEYS, built on first need), as HTTP pop does.
//  False when a sealed payload does not open.
static bool
s_fetch_value (qn_kcodec_t *self, qn_kreq_t *r, const qn_pg_result_t *res, uint32_t i, qn_kstr_t *value)
{
    *value = qn_kafka_col_str (res, i, 6);
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
s_fetch_batch (qn_kcodec_t *self, qn_kreq_t *r, const qn_pg_result_t *res, qn_buf_t *out, bool *bad)
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
        if (!qn_kafka_col_int (res, i, 3, &off))
            continue;
        qn_kafka_col_int (res, i, 4, &ts);
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
        rec->key = qn_kafka_col_str (res, i, 5);
        rec->value = value;
        qn_kstr_t h = qn_kafka_col_str (res, i, 7);
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
bool
qn_kafka_fetch_answer (qn_kcodec_t *self, qn_kreq_t *r)
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
                qn_kafka_col_int (res, 0, 0, &err);
                qn_kafka_col_int (res, 0, 1, &hwm);
                qn_kafka_col_int (res, 0, 2, &lso);
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
                    rp->error_code = QN_KAFKA_STORAGE_ERROR;
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
            int32_t wait = fr->max_wait_ms < QN_KAFKA_MAX_WAIT_MS ? fr->max_wait_ms : QN_KAFKA_MAX_WAIT_MS;
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
    qn_kafka_resp_begin (&b, r);
    qn_kafka_fetch_resp_encode (&b, r->h.api_version, &out);
    for (int32_t i = 0; i < r->part_count; i++)
        qn_buf_free (&batches [i]);
    free (batches);
    qn_kafka_finish (self, r, &b, false);
    qn_buf_free (&b);
    return false;
}

static void
s_parts_done (qn_kcodec_t *self, qn_kreq_t *r)
{
    if (r->h.api_key == QN_KAFKA_LIST_OFFSETS) {
        s_list_offsets_answer (self, r);
        return;
    }
    if (qn_kafka_fetch_answer (self, r) && !r->timer) {
        int64_t left = r->deadline_ms - qn_now_ms ();
        r->timer = qn_timer_add (self->kernel, left > 0 ? (uint32_t) left : 1, 0, s_on_fetch_timer, r);
    }
}

//  The wait is over: run once more and answer whatever there is.
static void
s_on_fetch_timer (void *self_, void *arg)
{
    qn_kcodec_t *self = self_;
    qn_kreq_t *r = arg;
    r->timer = 0;
    qn_kafka_unpark (self, r);
    r->waited = true;
    s_fetch_run (self, r);
}

//  A committed event came while a parked fetch was reading: it reads
//  again (its deadline timer is set when it parks again).
static void
s_on_fetch_rerun (void *self_, void *arg)
{
    qn_kcodec_t *self = self_;
    qn_kreq_t *r = arg;
    r->timer = 0;
    qn_kafka_unpark (self, r);
    s_fetch_run (self, r);
}

static void
s_fetch_run (qn_kcodec_t *self, qn_kreq_t *r)
{
    r->woken = false;
    for (int32_t i = 0; i < r->part_count; i++)
        qn_kafka_part_clear (&r->parts [i]);
    qn_kafka_parts_run (self, r);
}

static bool
s_fetch_names (const qn_kreq_t *r, const char *queue, size_t len)
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
    qn_kconn_t *c = value;
    qn_kreq_t *r = c->head;
    if (c->busy && r && r->h.api_key == QN_KAFKA_FETCH && !r->parked && s_fetch_names (r, w->queue, w->len))
        r->woken = true;
}

//  "committed" [tenant, queue(, partition)]: parked fetches of that queue
//  run again now; running ones run again when their statements are back.
int
qn_kafka_on_committed (void *self_, const qn_env_t *env)
{
    qn_kcodec_t *self = self_;
    qn_msg_committed_t m;
    if (qn_msg_committed_decode (env->body.ptr, env->body.len, &m) || m.tenant_len != 0)
        return 0;
    qn_hashmap_each (self->conns, s_mark_running, &(s_woken_t) { m.queue, m.queue_len });
    for (uint32_t i = 0; i < self->parked_len; ) {
        qn_kreq_t *r = self->parked [i];
        if (s_fetch_names (r, m.queue, m.queue_len)) {
            qn_kafka_unpark (self, r);     //  Moves the last one into slot i
            s_fetch_run (self, r);
        }
        else
            i++;
    }
    return 0;
}
