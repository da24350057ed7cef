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
    Owns      per-connection request queues and the request in progress;
              answers held while kafka_acceptor is at its high-water mark
              (qn_door_out_t, actors/door/door.h: sent in order when it
              drains, never dropped)
    Files     codec.c (this: requests, answers, dispatch, lifecycle),
              admin.c, fetch.c, produce.c (actors/kafka/kafka_int.h)
    Failure   a malformed request closes its connection; a database error
              answers the protocol's retriable codes (Fetch/ListOffsets:
              per-partition errors; Metadata: LEADER_NOT_AVAILABLE)
*/
#include "actors/kafka/kafka_int.h"

static void s_start (qn_kcodec_t *self, qn_kconn_t *c);

// ------------------------------------------------------------------ requests

void
qn_kafka_part_clear (qn_kpart_t *p)
{
    if (p->done)
        qn_pg_result_free (&p->res);
    free (p->raw);
    p->raw = NULL;
    p->done = false;
}

static void
s_req_free (qn_kreq_t *r)
{
    for (int32_t i = 0; i < r->part_count; i++)
        qn_kafka_part_clear (&r->parts [i]);
    free (r->parts);
    qn_karena_free (&r->arena);
    free (r->payload);
    free (r);
}

void
qn_kafka_unpark (qn_kcodec_t *self, qn_kreq_t *r)
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
void
qn_kafka_finish (qn_kcodec_t *self, qn_kreq_t *r, qn_buf_t *frame, bool close)
{
    qn_kconn_t *c = r->conn;
    if (!c->gone) {
        msgpack_sbuffer_clear (&self->body);
        qn_msg_kafka_response_encode (&self->body, c->id, r->seq, close);
        qn_frame_t f = { NULL, 0 };
        if (frame) {
            f.data = qn_buf_detach (frame, &f.len);
            if (!f.data)
                f.data = qn_malloc (1);
        }
        //  Sent now, or held (in order) while the acceptor is full.
        qn_door_out_send (self->out, self->body.data, self->body.size, frame ? &f : NULL);
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
            qn_kreq_t *n = c->head->next;
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
void
qn_kafka_resp_begin (qn_buf_t *b, const qn_kreq_t *r)
{
    qn_kw_i32 (b, r->h.correlation_id);
}

// ------------------------------------------------------------------ ApiVersions

static void
s_api_versions (qn_kcodec_t *self, qn_kreq_t *r)
{
    qn_buf_t b = QN_BUF_INIT;
    qn_kafka_resp_begin (&b, r);
    qn_kafka_apiversions_resp_encode (&b, r->h.api_version);
    qn_kafka_finish (self, r, &b, false);
    qn_buf_free (&b);
}

// ------------------------------------------------------------------ dispatch

//  Starts the connection's next request, if any and none is in progress.
static void
s_start (qn_kcodec_t *self, qn_kconn_t *c)
{
    if (c->busy || !c->head)
        return;
    qn_kreq_t *r = c->head;
    c->busy = true;
    int hl = qn_kafka_req_header_decode (r->payload, r->len, &r->h);
    if (hl < 0) {
        qn_kafka_finish (self, r, NULL, true);
        return;
    }
    r->body = r->payload + hl;
    r->body_len = r->len - (size_t) hl;
    int16_t key = r->h.api_key, v = r->h.api_version;
    if (key == QN_KAFKA_API_VERSIONS) {
        //  Any version: a too-new one gets the v0 body with error 35.
        qn_kafka_apiversions_req_t av;
        if (qn_kafka_version_ok (key, v) && qn_kafka_apiversions_req_decode (v, r->body, r->body_len, &av)) {
            qn_kafka_finish (self, r, NULL, true);
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
        qn_kafka_init_producer (self, r);      //  Idempotent producer (kprod)
        return;
    }
    if (rc == 0 && (key == QN_KAFKA_FIND_COORDINATOR || key == QN_KAFKA_INIT_PRODUCER_ID)
     && qn_kafka_coordinator (self, r))
        return;
    if (key == QN_KAFKA_FIND_COORDINATOR || key == QN_KAFKA_INIT_PRODUCER_ID)
        rc = -1;                //  Not built: close (below)
    if (rc) {
        //  Unknown key, version outside the table, an API not built yet,
        //  or a malformed body: close (spec §3, §8).
        qn_info ("kafka request refused: conn=%llu api=%d version=%d (connection closed)",
                 (unsigned long long) c->id, key, v);
        qn_count (self->kernel, "kafka_requests_refused", 1);
        qn_kafka_finish (self, r, NULL, true);
        return;
    }
    if (key == QN_KAFKA_METADATA)
        qn_kafka_metadata (self, r);
    else
    if (key == QN_KAFKA_PRODUCE)
        qn_kafka_produce (self, r);
    else
    if (key == QN_KAFKA_CREATE_TOPICS || key == QN_KAFKA_DELETE_TOPICS)
        qn_kafka_topics_admin (self, r);
    else {
        qn_kafka_parts_alloc (r);
        qn_kafka_parts_run (self, r);
    }
}

//  The group coordinator's answer of request r (payload NULL: close).
static void
s_on_group_answer (void *self_, void *req, qn_buf_t *payload)
{
    qn_kafka_finish (self_, req, payload, payload == NULL);
}

static int
s_on_request (void *self_, const qn_env_t *env)
{
    qn_kcodec_t *self = self_;
    qn_msg_kafka_t m;
    if (env->frame_count != 1 || qn_msg_kafka_request_decode (env->body.ptr, env->body.len, &m))
        return QN_EPROTO;
    qn_kconn_t *c = qn_hashmap_get (self->conns, m.conn_id);
    if (!c) {
        c = qn_zalloc (sizeof *c);
        c->id = m.conn_id;
        qn_hashmap_put (self->conns, c->id, c);
    }
    qn_kreq_t *r = qn_zalloc (sizeof *r);
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
    qn_kcodec_t *self = self_;
    qn_msg_kafka_t m;
    if (qn_msg_kafka_closed_decode (env->body.ptr, env->body.len, &m))
        return QN_EPROTO;
    qn_kconn_t *c = qn_hashmap_get (self->conns, m.conn_id);
    if (!c)
        return 0;
    c->gone = true;
    qn_kreq_t *r = c->head;
    if (c->busy && r && r->parked) {
        //  A waiting Fetch has no statement in flight: drop it now.
        qn_kafka_unpark (self, r);
        qn_kafka_finish (self, r, NULL, false);
        return 0;
    }
    if (!c->busy) {
        while (c->head) {
            qn_kreq_t *n = c->head->next;
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
    qn_kcodec_t *self = self_;
    qn_subscribe (self->kernel, "committed");
    return 0;
}

//  Stopping: waiting fetches answer what they have now.
static int
s_on_stop (void *self_, const qn_env_t *env)
{
    (void) env;
    qn_kcodec_t *self = self_;
    qn_kgroup_stop (self->group);
    while (self->parked_len) {
        qn_kreq_t *r = self->parked [0];
        qn_kafka_unpark (self, r);
        r->waited = true;
        qn_kafka_fetch_answer (self, r);       //  From the results it has
    }
    return QN_DONE;
}

static void
s_free_conn (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    qn_kconn_t *c = value;
    while (c->head) {
        qn_kreq_t *n = c->head->next;
        s_req_free (c->head);
        c->head = n;
    }
    free (c);
}

static void
s_destroy (void **self_p)
{
    qn_kcodec_t *self = *self_p;
    qn_kgroup_destroy (&self->group);
    qn_door_out_destroy (&self->out);
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
    { QN_MSG_COMMITTED, qn_kafka_on_committed },
    { 0, NULL }
};

qn_actor_t *
qn_kafka_codec_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    qn_kcodec_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    self->config = config;
    self->conns = qn_hashmap_new ();
    msgpack_sbuffer_init (&self->exec);
    msgpack_sbuffer_init (&self->body);
    self->group = qn_kgroup_new (kernel, config, s_on_group_answer, self);
    self->out = qn_door_out_new (kernel, QN_KAFKA_ACCEPTOR, QN_MSG_KAFKA_RESPONSE, "kafka_responses_held");
    qn_actor_def_t def = {
        .name = "kafka", .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}
