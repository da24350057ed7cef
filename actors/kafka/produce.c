/*  actors/kafka/produce.c - the Kafka codec's Produce
    RecordBatch v2 (every codec, acks 0/1/-1), one kafka_push statement on
    pg_writer per request (one transaction, with the idempotent producer's
    sequence checks); with QUEEN_ENCRYPTION_KEY, queue_encryption on
    pg_reader first and the values of encrypted topics sealed. Part of the
    "kafka" actor (actors/kafka/kafka_int.h).
*/
#include "actors/kafka/kafka_int.h"

static void s_on_produce_encryption (void *self_, void *arg, const qn_env_t *env);
static void s_produce_store (qn_kcodec_t *self, qn_kreq_t *r);

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
s_key_partition (qn_kreq_t *r, qn_kstr_t key, bool *raw)
{
    *raw = false;
    if (key.len < 0)
        return QN_KSTR_NULL;
    if (key.len >= 1 && key.len <= QN_KAFKA_NAME_MAX && s_utf8_ok (key.ptr, key.len))
        return key;
    *raw = true;
    size_t cap = sodium_base64_ENCODED_LEN ((size_t) key.len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    char *name = qn_karena_alloc (&r->arena, 6 + cap);
    memcpy (name, "_kb64:", 6);
    sodium_bin2base64 (name + 6, cap, (const unsigned char *) key.ptr, (size_t) key.len,
                       sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    size_t len = strlen (name);
    return (qn_kstr_t) { name, (int32_t) (len > QN_KAFKA_NAME_MAX ? QN_KAFKA_NAME_MAX : len) };
}

//  Kafka sequence arithmetic: wraps from 2^31 - 1 to 0.
static int32_t
s_seq_add (int32_t base, int32_t n)
{
    int64_t v = (int64_t) base + n;
    return (int32_t) (v > INT32_MAX ? v - ((int64_t) INT32_MAX + 1) : v);
}

static void
s_produce_answer (qn_kcodec_t *self, qn_kreq_t *r)
{
    if (r->u.pr.acks == 0) {
        qn_kafka_finish (self, r, NULL, false);    //  acks=0: no answer at all
        return;
    }
    qn_buf_t b = QN_BUF_INIT;
    qn_kafka_resp_begin (&b, r);
    qn_kafka_produce_resp_encode (&b, r->h.api_version, &r->presp);
    qn_kafka_finish (self, r, &b, false);
    qn_buf_free (&b);
}

static void
s_on_produce_result (void *self_, void *arg, const qn_env_t *env)
{
    qn_kreq_t *r = arg;
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
                qn_kafka_col_int (&res, (uint32_t) first, 1, &err);
                if (!qn_kafka_col_int (&res, (uint32_t) first, 5, &off) && !err)
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
void
qn_kafka_produce (qn_kcodec_t *self, qn_kreq_t *r)
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
                err = qn_kafka_batches_decode (pp->records.ptr, (size_t) pp->records.len, QN_KAFKA_MAX_BATCH,
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
                         QN_KAFKA_PG_TIMEOUT_MS, s_on_produce_encryption, r);
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
    qn_kreq_t *r = arg;
    qn_kafka_produce_req_t *pr = &r->u.pr;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    bool failed = qn_pg_result_failed (&res, NULL, 0);
    for (int32_t t = 0; t < pr->topic_count; t++) {
        r->tsealed [t] = failed;
        for (uint32_t i = 0; !failed && i < res.row_count; i++) {
            qn_kstr_t name = qn_kafka_col_str (&res, i, 0);
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
s_produce_store (qn_kcodec_t *self, qn_kreq_t *r)
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
                         QN_KAFKA_PG_TIMEOUT_MS, s_on_produce_result, r);
    qn_pg_args_free (&a);
    if (rc)
        s_on_produce_result (self, r, NULL);
}
