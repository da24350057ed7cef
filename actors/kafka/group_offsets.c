/*  actors/kafka/group_offsets.c - OffsetCommit, OffsetFetch and the
    FindCoordinator answer of the Kafka consumer-group coordinator
    (actors/kafka/group.c, group_impl.h; spec kafka.md §4.6, §4.11-4.12).
    An offset request is checked against the group's generation and
    member, then becomes one statement (kafka_offset_commit on pg_writer,
    kafka_offset_fetch on pg_reader) and is answered from its rows.
    Receives  the three APIs' requests from group.c; PG_RESULT replies
    Sends     PG_EXEC to pg_writer / pg_reader; answers through the
              coordinator's queue (qn_kg_out)
    Owns      the in-flight operations (qn_kg_op_t, linked in the
              coordinator), freed when answered or at stop
    Failure   a database error or timeout answers 15
              COORDINATOR_NOT_AVAILABLE per partition (retriable)
*/
#include "actors/kafka/group_impl.h"
#include "actors/pg/call.h"
#include "actors/pg/statements.h"
#include "wire/kafka_group.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ------------------------------------------------------------------ OffsetCommit / OffsetFetch

qn_kg_op_t *
qn_kg_op_new (qn_kgroup_t *self, void *req, const qn_kafka_req_header_t *h)
{
    qn_kg_op_t *op = qn_zalloc (sizeof *op);
    op->self = self;
    op->req = req;
    op->api_key = h->api_key;
    op->version = h->api_version;
    op->corr = h->correlation_id;
    qn_karena_init (&op->arena);
    return op;
}

static void
s_op_link (qn_kgroup_t *self, qn_kg_op_t *op)
{
    op->next = self->ops;
    if (self->ops)
        self->ops->prev = op;
    self->ops = op;
}

void
qn_kg_op_free (qn_kgroup_t *self, qn_kg_op_t *op, bool linked)
{
    if (linked) {
        if (op->prev)
            op->prev->next = op->next;
        else
            self->ops = op->next;
        if (op->next)
            op->next->prev = op->prev;
    }
    qn_karena_free (&op->arena);
    free (op);
}

static void
s_commit_answer (qn_kgroup_t *self, qn_kg_op_t *op)
{
    qn_kafka_offset_commit_resp_encode (qn_kg_out (self, op->req, op->corr), op->version, &op->ocr);
}

static void
s_on_commit_result (void *self_, void *arg, const qn_env_t *env)
{
    (void) self_;
    qn_kg_op_t *op = arg;
    qn_kgroup_t *self = op->self;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    bool failed = qn_pg_result_failed (&res, NULL, 0) || res.row_count != (uint32_t) op->item_count;
    for (int32_t i = 0; i < op->item_count; i++) {
        int64_t err = QN_KAFKA_COORDINATOR_NOT_AVAILABLE;
        if (!failed && !qn_pg_call_int (qn_pg_result_col (&res, (uint32_t) i, 1), &err))
            err = QN_KAFKA_COORDINATOR_NOT_AVAILABLE;
        op->ocr.topics [op->item_topic [i]].partitions [op->item_part [i]].error_code = (int16_t) err;
    }
    if (failed)
        qn_warn ("kafka offset commit failed (answered 15)");
    qn_pg_result_free (&res);
    s_commit_answer (self, op);
    qn_kg_op_free (self, op, true);
    qn_kg_flush (self);
}

void
qn_kg_offset_commit (qn_kgroup_t *self, qn_kg_op_t *op)
{
    const qn_kafka_offset_commit_req_t *oc = &op->oc;
    int16_t err = 0;
    if (qn_kg_bad_group_id (oc->group_id))
        err = QN_KAFKA_INVALID_GROUP_ID;
    else {
        qn_kg_group_t *g = qn_kg_group_find (self, oc->group_id, NULL);
        if (oc->generation_id == -1 && oc->member_id.len == 0) {
            if (g && g->member_count > 0)
                err = QN_KAFKA_UNKNOWN_MEMBER_ID;
        }
        else {
            qn_kg_member_t *m = qn_kg_member_find (g, oc->member_id, NULL);
            if (!m)
                err = QN_KAFKA_UNKNOWN_MEMBER_ID;
            else
            if (oc->generation_id != g->generation)
                err = QN_KAFKA_ILLEGAL_GENERATION;
            else
            if (g->state == QN_KG_COMPLETING)
                //  Deviation from spec §7 (which says PreparingRebalance),
                //  as Kafka does: a member of the current generation may
                //  still commit what it consumed until it rejoins; only
                //  while the assignment is being handed out is it 27.
                err = QN_KAFKA_REBALANCE_IN_PROGRESS;
            if (m)
                m->last_seen = qn_now_ms ();
        }
    }
    qn_kafka_offset_commit_resp_t *out = &op->ocr;
    out->topic_count = oc->topic_count;
    out->topics = qn_karena_alloc (&op->arena, (size_t) (oc->topic_count + 1) * sizeof *out->topics);
    int32_t items = 0;
    for (int32_t t = 0; t < oc->topic_count; t++) {
        out->topics [t].name = oc->topics [t].name;
        out->topics [t].partition_count = oc->topics [t].partition_count;
        out->topics [t].partitions = qn_karena_alloc (&op->arena,
            (size_t) (oc->topics [t].partition_count + 1) * sizeof *out->topics [t].partitions);
        items += oc->topics [t].partition_count;
    }
    op->item_topic = qn_karena_alloc (&op->arena, (size_t) (items + 1) * sizeof (int32_t));
    op->item_part = qn_karena_alloc (&op->arena, (size_t) (items + 1) * sizeof (int32_t));
    for (int32_t t = 0; t < oc->topic_count; t++)
        for (int32_t p = 0; p < oc->topics [t].partition_count; p++) {
            const qn_kafka_oc_part_t *in = &oc->topics [t].partitions [p];
            qn_kafka_oc_part_resp_t *rp = &out->topics [t].partitions [p];
            rp->partition_index = in->partition_index;
            rp->error_code = err;
            if (!err && in->metadata.len > QN_KG_META_MAX)
                rp->error_code = QN_KAFKA_OFFSET_METADATA_TOO_LARGE;
            if (rp->error_code == 0) {
                op->item_topic [op->item_count] = t;
                op->item_part [op->item_count++] = p;
            }
        }
    if (op->item_count == 0) {
        s_commit_answer (self, op);
        qn_kg_op_free (self, op, false);
        return;
    }
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, "");
    qn_pg_args_str (&a, oc->group_id.ptr, (size_t) oc->group_id.len);
    for (int col = 0; col < 4; col++) {
        qn_pg_args_array (&a, (uint32_t) op->item_count);
        for (int32_t i = 0; i < op->item_count; i++) {
            const qn_kafka_oc_topic_t *tp = &oc->topics [op->item_topic [i]];
            const qn_kafka_oc_part_t *in = &tp->partitions [op->item_part [i]];
            if (col == 0)
                qn_pg_args_str (&a, tp->name.ptr, (size_t) tp->name.len);
            else
            if (col == 1)
                qn_pg_args_int (&a, in->partition_index);
            else
            if (col == 2)
                qn_pg_args_int (&a, in->committed_offset);
            else
            if (in->metadata.len < 0)
                qn_pg_args_null (&a);
            else
                qn_pg_args_bin (&a, in->metadata.len ? in->metadata.ptr : "", (size_t) in->metadata.len);
        }
    }
    s_op_link (self, op);
    int rc = qn_pg_call (self->kernel, "pg_writer", &self->exec, QN_SQL_KAFKA_OFFSET_COMMIT, NULL, &a,
                         QN_KG_PG_TIMEOUT_MS, s_on_commit_result, op);
    qn_pg_args_free (&a);
    if (rc)
        s_on_commit_result (NULL, op, NULL);
}

//  Builds the OffsetFetch answer from the statement's rows (res NULL or
//  failed: every partition 15).
static void
s_fetch_answer (qn_kgroup_t *self, qn_kg_op_t *op, const qn_pg_result_t *res, int16_t group_err)
{
    const qn_kafka_offset_fetch_req_t *of = &op->of;
    bool failed = !group_err && (!res || qn_pg_result_failed (res, NULL, 0));
    qn_kafka_offset_fetch_resp_t out = { 0, 0, NULL, 0 };
    if (group_err || failed) {
        int16_t e = group_err ? group_err : QN_KAFKA_COORDINATOR_NOT_AVAILABLE;
        out.error_code = e;
        out.topic_count = of->topic_count > 0 ? of->topic_count : 0;
        out.topics = qn_karena_alloc (&op->arena, (size_t) (out.topic_count + 1) * sizeof *out.topics);
        for (int32_t t = 0; t < out.topic_count; t++) {
            qn_kafka_of_topic_resp_t *rt = &out.topics [t];
            rt->name = of->topics [t].name;
            rt->partition_count = of->topics [t].partition_count;
            rt->partitions = qn_karena_alloc (&op->arena, (size_t) (rt->partition_count + 1) * sizeof *rt->partitions);
            for (int32_t p = 0; p < rt->partition_count; p++)
                rt->partitions [p] = (qn_kafka_of_part_resp_t) {
                    of->topics [t].partitions [p], -1, QN_KSTR_NULL, e };
        }
    }
    else
    if (of->topic_count >= 0) {
        out.topic_count = of->topic_count;
        out.topics = qn_karena_alloc (&op->arena, (size_t) (out.topic_count + 1) * sizeof *out.topics);
        uint32_t row = 0;
        for (int32_t t = 0; t < out.topic_count; t++) {
            qn_kafka_of_topic_resp_t *rt = &out.topics [t];
            rt->name = of->topics [t].name;
            rt->partition_count = of->topics [t].partition_count;
            rt->partitions = qn_karena_alloc (&op->arena, (size_t) (rt->partition_count + 1) * sizeof *rt->partitions);
            for (int32_t p = 0; p < rt->partition_count; p++, row++) {
                qn_kafka_of_part_resp_t *rp = &rt->partitions [p];
                *rp = (qn_kafka_of_part_resp_t) { of->topics [t].partitions [p], -1, QN_KSTR_NULL,
                                                  QN_KAFKA_COORDINATOR_NOT_AVAILABLE };
                int64_t err, off = -1;
                if (row < res->row_count && qn_pg_call_int (qn_pg_result_col (res, row, 2), &err)) {
                    qn_pg_call_int (qn_pg_result_col (res, row, 3), &off);
                    const msgpack_object *mo = qn_pg_result_col (res, row, 4);
                    rp->error_code = (int16_t) err;
                    rp->committed_offset = err ? -1 : off;
                    if (!err && mo && (mo->type == MSGPACK_OBJECT_BIN || mo->type == MSGPACK_OBJECT_STR))
                        rp->metadata = (qn_kstr_t) { mo->via.bin.ptr, (int32_t) mo->via.bin.size };
                }
            }
        }
    }
    else {
        //  Every committed offset: rows sorted by topic, one topic per run.
        out.topics = qn_karena_alloc (&op->arena, (size_t) (res->row_count + 1) * sizeof *out.topics);
        for (uint32_t row = 0; row < res->row_count; row++) {
            const msgpack_object *to = qn_pg_result_col (res, row, 0);
            if (!to || to->type != MSGPACK_OBJECT_STR)
                continue;
            qn_kstr_t name = { to->via.str.ptr, (int32_t) to->via.str.size };
            qn_kafka_of_topic_resp_t *rt = out.topic_count ? &out.topics [out.topic_count - 1] : NULL;
            if (!rt || !qn_kstr_eq (rt->name, name)) {
                rt = &out.topics [out.topic_count++];
                rt->name = name;
                rt->partitions = qn_karena_alloc (&op->arena, (size_t) (res->row_count - row + 1) * sizeof *rt->partitions);
            }
            qn_kafka_of_part_resp_t *rp = &rt->partitions [rt->partition_count++];
            int64_t kp = 0, off = -1;
            qn_pg_call_int (qn_pg_result_col (res, row, 1), &kp);
            qn_pg_call_int (qn_pg_result_col (res, row, 3), &off);
            const msgpack_object *mo = qn_pg_result_col (res, row, 4);
            *rp = (qn_kafka_of_part_resp_t) { (int32_t) kp, off, QN_KSTR_NULL, 0 };
            if (mo && (mo->type == MSGPACK_OBJECT_BIN || mo->type == MSGPACK_OBJECT_STR))
                rp->metadata = (qn_kstr_t) { mo->via.bin.ptr, (int32_t) mo->via.bin.size };
        }
    }
    if (failed)
        qn_warn ("kafka offset fetch failed (answered 15)");
    qn_kafka_offset_fetch_resp_encode (qn_kg_out (self, op->req, op->corr), op->version, &out);
}

static void
s_on_fetch_result (void *self_, void *arg, const qn_env_t *env)
{
    (void) self_;
    qn_kg_op_t *op = arg;
    qn_kgroup_t *self = op->self;
    qn_pg_result_t res;
    qn_pg_result_decode (env ? env->body.ptr : NULL, env ? env->body.len : 0, &res);
    s_fetch_answer (self, op, &res, 0);
    qn_pg_result_free (&res);
    qn_kg_op_free (self, op, true);
    qn_kg_flush (self);
}

void
qn_kg_offset_fetch (qn_kgroup_t *self, qn_kg_op_t *op)
{
    const qn_kafka_offset_fetch_req_t *of = &op->of;
    if (qn_kg_bad_group_id (of->group_id)) {
        s_fetch_answer (self, op, NULL, QN_KAFKA_INVALID_GROUP_ID);
        qn_kg_op_free (self, op, false);
        return;
    }
    qn_pg_args_t a;
    qn_pg_args_init (&a);
    qn_pg_args_cstr (&a, "");
    qn_pg_args_str (&a, of->group_id.ptr, (size_t) of->group_id.len);
    if (of->topic_count < 0) {
        qn_pg_args_null (&a);
        qn_pg_args_null (&a);
    }
    else {
        uint32_t n = 0;
        for (int32_t t = 0; t < of->topic_count; t++)
            n += (uint32_t) of->topics [t].partition_count;
        qn_pg_args_array (&a, n);
        for (int32_t t = 0; t < of->topic_count; t++)
            for (int32_t p = 0; p < of->topics [t].partition_count; p++)
                qn_pg_args_str (&a, of->topics [t].name.ptr, (size_t) of->topics [t].name.len);
        qn_pg_args_array (&a, n);
        for (int32_t t = 0; t < of->topic_count; t++)
            for (int32_t p = 0; p < of->topics [t].partition_count; p++)
                qn_pg_args_int (&a, of->topics [t].partitions [p]);
    }
    s_op_link (self, op);
    int rc = qn_pg_call (self->kernel, "pg_reader", &self->exec, QN_SQL_KAFKA_OFFSET_FETCH, NULL, &a,
                         QN_KG_PG_TIMEOUT_MS, s_on_fetch_result, op);
    qn_pg_args_free (&a);
    if (rc)
        s_on_fetch_result (NULL, op, NULL);
}

// ------------------------------------------------------------------ FindCoordinator

void
qn_kg_find_coordinator (qn_kgroup_t *self, void *req, const qn_kafka_req_header_t *h,
                    const qn_kafka_find_coordinator_req_t *fc)
{
    qn_kafka_find_coordinator_resp_t out = { 0, 0, QN_KSTR_NULL, (int32_t) self->config->kafka_node_id,
                                             qn_kstr (self->config->kafka_advertised_host),
                                             (int32_t) self->config->kafka_port };
    if (fc->key.len <= 0) {
        out = (qn_kafka_find_coordinator_resp_t) { 0, QN_KAFKA_INVALID_GROUP_ID, QN_KSTR ("empty group id"),
                                                   -1, QN_KSTR (""), -1 };
    }
    qn_kafka_find_coordinator_resp_encode (qn_kg_out (self, req, h->correlation_id), h->api_version, &out);
}
