/*  actors/kafka/admin.c - the Kafka codec's catalogue requests
    Metadata (kafka_topics on pg_writer: it may auto-create), CreateTopics
    / DeleteTopics (kafka_create_topic / kafka_delete_topic per topic),
    FindCoordinator for transactions (refused with 53) and InitProducerId
    (kafka_init_producer). Part of the "kafka" actor (actors/kafka/kafka_int.h).
*/
#include "actors/kafka/kafka_int.h"


static void
s_metadata_answer (qn_kcodec_t *self, qn_kreq_t *r, const qn_pg_result_t *res)
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
            qn_kafka_col_int (res, i, 1, &n);
            qn_kafka_col_int (res, i, 2, &err);
            t->name = qn_kafka_col_str (res, i, 0);
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
    qn_kafka_resp_begin (&b, r);
    qn_kafka_metadata_resp_encode (&b, r->h.api_version, &out);
    qn_kafka_finish (self, r, &b, false);
    qn_buf_free (&b);
}

static void
s_on_metadata_result (void *self_, void *arg, const qn_env_t *env)
{
    qn_kreq_t *r = arg;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    s_metadata_answer (self_, r, &res);
    qn_pg_result_free (&res);
}

void
qn_kafka_metadata (qn_kcodec_t *self, qn_kreq_t *r)
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
                         QN_KAFKA_PG_TIMEOUT_MS, s_on_metadata_result, r);
    qn_pg_args_free (&a);
    if (rc) {
        qn_pg_result_t res;
        qn_pg_result_decode (NULL, 0, &res);
        s_metadata_answer (self, r, &res);
        qn_pg_result_free (&res);
    }
}

// ------------------------------------------------------------------ CreateTopics / DeleteTopics

typedef struct {
    qn_kreq_t *req;
    int32_t index;              //  Topic of the request
} s_topic_op_t;

static void
s_topics_answer (qn_kcodec_t *self, qn_kreq_t *r)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_kafka_resp_begin (&b, r);
    if (r->h.api_key == QN_KAFKA_CREATE_TOPICS)
        qn_kafka_create_topics_resp_encode (&b, r->h.api_version, &r->tresp);
    else
        qn_kafka_delete_topics_resp_encode (&b, r->h.api_version, &r->tresp);
    qn_kafka_finish (self, r, &b, false);
    qn_buf_free (&b);
}

static void
s_on_topic_result (void *self_, void *arg, const qn_env_t *env)
{
    s_topic_op_t *op = arg;
    qn_kreq_t *r = op->req;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    int64_t err = 0;
    if (qn_pg_result_failed (&res, NULL, 0) || !qn_kafka_col_int (&res, 0, 0, &err))
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

void
qn_kafka_topics_admin (qn_kcodec_t *self, qn_kreq_t *r)
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
                            QN_KAFKA_PG_TIMEOUT_MS, s_on_topic_result, &ops [i])) {
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
bool
qn_kafka_coordinator (qn_kcodec_t *self, qn_kreq_t *r)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_kafka_resp_begin (&b, r);
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
    qn_kafka_finish (self, r, &b, false);
    qn_buf_free (&b);
    return true;
}

// ------------------------------------------------------------------ InitProducerId (idempotent)

static void
s_on_init_producer_result (void *self_, void *arg, const qn_env_t *env)
{
    qn_kreq_t *r = arg;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    qn_kafka_init_producer_id_resp_t out = { 0, 0, -1, -1 };
    int64_t pid = -1;
    if (qn_pg_result_failed (&res, NULL, 0) || !qn_kafka_col_int (&res, 0, 0, &pid) || pid < 0) {
        //  Database trouble: retriable for both clients (spec §8)
        out.error_code = QN_KAFKA_COORDINATOR_NOT_AVAILABLE;
        pid = -1;
    }
    else
        out.producer_epoch = 0;
    out.producer_id = pid;
    qn_pg_result_free (&res);
    qn_buf_t b = QN_BUF_INIT;
    qn_kafka_resp_begin (&b, r);
    qn_kafka_init_producer_id_resp_encode (&b, r->h.api_version, &out);
    qn_kafka_finish (self_, r, &b, false);
    qn_buf_free (&b);
}

//  A null transactional id: a new producer id from the PostgreSQL
//  sequence, epoch 0 (spec §4.15); the sequence checks are in kafka_push.
void
qn_kafka_init_producer (qn_kcodec_t *self, qn_kreq_t *r)
{
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    int rc = qn_pg_call (self->kernel, "pg_writer", &self->exec, QN_SQL_KAFKA_INIT_PRODUCER, NULL, &a,
                         QN_KAFKA_PG_TIMEOUT_MS, s_on_init_producer_result, r);
    qn_pg_args_free (&a);
    if (rc)
        s_on_init_producer_result (self, r, NULL);
}
