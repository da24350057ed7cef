/*  actors/codec_http_push.c - the write side of the JSON API
    POST /api/v1/configure, /api/v1/push, /api/v1/ack, /api/v1/ack/batch,
    /api/v1/transaction and /api/v1/lease/:leaseId/extend (contract §3.5,
    §3.6, §3.10-§3.13). A handler validates the whole request first (400
    naming the field; nothing is written), then makes one call: PG_PUSH
    for a push (pg_writer merges concurrent pushes into one round trip),
    PG_EXEC of a catalogue statement for the others, or SPOOL_APPEND to the
    spool actor when a push cannot reach PostgreSQL.
    Receives  the requests of its routes (from codec_http) and the replies
              of its calls
    Sends     QN_MSG_PG_PUSH / QN_MSG_PG_EXEC to pg_writer,
              QN_MSG_SPOOL_APPEND to spool, "committed" events; with an
              encryption key, QN_MSG_PG_EXEC (queue settings) to pg_reader
    Owns      one call state per request (the parsed body's tokens, which
              point into the request body), freed by the call's callback;
              the queue-encryption cache (section "encryption")
    Failure   bad input gets a 400; database errors are mapped by SQLSTATE;
              a push that neither PostgreSQL nor the spool took gets a 503:
              a push is never acknowledged and then lost
    Size      longer than STYLE §12's ~800 lines: the six routes share the
              item/ack validation, packing and result helpers above them;
              the natural split is _push / _ack / _txn files if it grows.
*/
#include "codec_http.h"
#include "pg_statements.h"
#include "kernel/hashmap.h"
#include "wire/crypto.h"
#include "wire/ids.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_ITEMS     10000   //  Items of a push, flattened operations of a transaction
#define S_MAX_NAME      255     //  Bytes of a queue, partition or group name, of a transactionId
#define S_SPOOL_WAIT_MS 15000   //  The spool answers after fsync
#define S_QCONF_TTL_MS  2000    //  A queue's encryptionEnabled is asked again after this
#define S_QCONF_WAIT_MS 5000    //  Deadline of that question
#define S_QCONF_MAX     10000   //  Cached queues; the cache restarts empty beyond

//  A validated push item: tokens of its fields, -1 when absent (or null,
//  or an empty transactionId/traceId, which mean "none").
typedef struct {
    int queue, partition, txn, trace, payload;
} s_item_t;

//  A validated acknowledgment.
typedef struct {
    int txn;                    //  transactionId (string token)
    int64_t pid;                //  Decoded partitionId
    int64_t seq;                //  Decoded message id, when has_seq
    bool has_seq;
    int status, lease, error, group;    //  Tokens, -1 when absent
} s_ack_t;

//  A flattened transaction operation.
typedef struct {
    bool is_push;
    uint32_t ord;               //  0-based position among the pushes or the acks
    s_item_t item;
    s_ack_t ack;
} s_op_t;

//  Call state: what the callback needs to answer. `doc` points into the
//  request body, which lives as long as the request (read only when the
//  callback gets a live ctx).
typedef struct {
    qn_json_doc_t doc;          //  Owned tokens
    uint32_t count;
    s_item_t *items;            //  Owned: push
    char (*minted) [QN_ID_STR_LEN + 1];     //  Owned: transaction ids minted for the spool
    s_ack_t *acks;              //  Owned: ack, ack/batch
    s_op_t *ops;                //  Owned: transaction
    qn_buf_t *sealed;           //  Owned, or NULL: per item / op, the encrypted
                                //  envelope to store instead of the payload (len 0: none)
    uint32_t npush, nack;
    char *queue, *ns, *task;    //  Owned: configure
    char lease [QN_ID_STR_LEN + 1];         //  extend
} s_call_t;

static void
s_call_free (s_call_t *c)
{
    if (!c)
        return;
    qn_json_doc_free (&c->doc);
    free (c->items);
    free (c->minted);
    free (c->acks);
    free (c->ops);
    for (uint32_t i = 0; c->sealed && i < c->count; i++)
        qn_buf_free (&c->sealed [i]);
    free (c->sealed);
    free (c->queue);
    free (c->ns);
    free (c->task);
    free (c);
}

static s_call_t *
s_call_new (void)
{
    s_call_t *c = qn_zalloc (sizeof *c);
    qn_json_doc_init (&c->doc);
    return c;
}

// ------------------------------------------------------------------ JSON input
//  The unescaped text of string token tok, into *p/*len: a span of the body
//  when it has no escapes, else of `scratch` (valid until its next use).
//  Returns 0, 1 when the text holds a NUL, -1 when tok is not a string.
static int
s_text (const qn_json_doc_t *doc, int tok, qn_buf_t *scratch, const char **p, size_t *len)
{
    if (qn_json_type (doc, tok) != QN_JSON_STRING)
        return -1;
    const qn_json_tok_t *t = &doc->toks [tok];
    if (!t->has_escapes) {
        *p = doc->buf + t->start + 1;
        *len = t->len - 2;
        return 0;
    }
    qn_buf_reset (scratch);
    int rc = qn_json_str (doc, tok, scratch);
    *p = scratch->data;
    *len = scratch->len;
    return rc;
}

//  The member `key` of object obj; -1 when absent or JSON null.
static int
s_field (const qn_json_doc_t *doc, int obj, const char *key)
{
    int tok = qn_json_get (doc, obj, key);
    return tok >= 0 && qn_json_is_null (doc, tok) ? -1 : tok;
}

static bool
s_is_str (const qn_json_doc_t *doc, int tok)
{
    return qn_json_type (doc, tok) == QN_JSON_STRING;
}

//  True for the empty string token.
static bool
s_is_empty_str (const qn_json_doc_t *doc, int tok)
{
    return s_is_str (doc, tok) && doc->toks [tok].len == 2;
}

//  What is wrong with a name or id string (NULL when fine): at most
//  `max` bytes of UTF-8, no NUL.
static const char *
s_text_problem (const qn_json_doc_t *doc, int tok, qn_buf_t *scratch, size_t max)
{
    const char *p;
    size_t len;
    int rc = s_text (doc, tok, scratch, &p, &len);
    if (rc < 0)
        return "must be a string";
    if (rc == 1)
        return "must not contain NUL characters";
    if (len > max)
        return max == S_MAX_NAME ? "must be at most 255 bytes" : "is too long";
    if (!qn_utf8_valid (p, len))
        return "must be valid UTF-8";
    return NULL;
}

//  Validates push item `tok` (number i) in the contract's order (§3.6),
//  then our own limits. Returns 0, or -1 with the message in err.
static int
s_item_check (const qn_json_doc_t *doc, int tok, uint32_t i, s_item_t *it,
              qn_buf_t *scratch, char *err, size_t err_len)
{
    it->queue = qn_json_get (doc, tok, "queue");
    it->partition = s_field (doc, tok, "partition");
    it->txn = s_field (doc, tok, "transactionId");
    it->trace = s_field (doc, tok, "traceId");
    it->payload = qn_json_get (doc, tok, "payload");
    const char *why;
    if (it->partition >= 0 && !s_is_str (doc, it->partition))
        return snprintf (err, err_len, "Partition must be a string"), -1;
    if (!s_is_str (doc, it->queue))
        return snprintf (err, err_len, "Queue must be a string"), -1;
    if (it->txn >= 0 && !s_is_str (doc, it->txn))
        return snprintf (err, err_len, "TransactionId must be a string"), -1;
    if (it->trace >= 0 && !s_is_str (doc, it->trace))
        return snprintf (err, err_len, "TraceId must be a string"), -1;
    if (s_is_empty_str (doc, it->trace))
        it->trace = -1;
    if (it->trace >= 0) {
        const char *p;
        size_t len;
        if (s_text (doc, it->trace, scratch, &p, &len) || !qn_uuid_valid (p, len))
            return snprintf (err, err_len, "TraceId must be a UUID (items[%u].traceId)", i), -1;
    }
    if ((why = s_text_problem (doc, it->queue, scratch, S_MAX_NAME)))
        return snprintf (err, err_len, "items[%u].queue %s", i, why), -1;
    if (it->partition >= 0 && (why = s_text_problem (doc, it->partition, scratch, S_MAX_NAME)))
        return snprintf (err, err_len, "items[%u].partition %s", i, why), -1;
    if (s_is_empty_str (doc, it->txn))
        it->txn = -1;
    if (it->txn >= 0 && (why = s_text_problem (doc, it->txn, scratch, S_MAX_NAME)))
        return snprintf (err, err_len, "items[%u].transactionId %s", i, why), -1;
    return 0;
}

//  Message texts of the ack routes: the single route and transaction acks
//  use §3.10's, the batch route §3.11's.
typedef struct {
    const char *no_txn;
    const char *no_pid;
    const char *prefix;         //  Names the item in our own messages
} s_ack_msgs_t;

//  Validates acknowledgment `tok`. group_tok >= 0 overrides the item's
//  consumerGroup. Returns 0, or -1 with the message in err.
static int
s_ack_check (const qn_json_doc_t *doc, int tok, const s_ack_msgs_t *m, s_ack_t *a,
             qn_buf_t *scratch, char *err, size_t err_len)
{
    const char *p, *why;
    size_t len;
    memset (a, 0, sizeof *a);
    a->txn = s_field (doc, tok, "transactionId");
    if (!s_is_str (doc, a->txn))
        return snprintf (err, err_len, "%s", m->no_txn), -1;
    int pid = s_field (doc, tok, "partitionId");
    if (!s_is_str (doc, pid))
        return snprintf (err, err_len, "%s", m->no_pid), -1;
    if (s_text (doc, a->txn, scratch, &p, &len) == 1)
        return snprintf (err, err_len, "%stransactionId must not contain NUL characters", m->prefix), -1;
    a->has_seq = qn_id_parse (QN_ID_MESSAGE, p, len, &a->seq) == 0;
    if (s_text (doc, pid, scratch, &p, &len) || qn_id_parse (QN_ID_PARTITION, p, len, &a->pid))
        return snprintf (err, err_len, "%spartitionId must be a valid UUID", m->prefix), -1;
    a->status = s_field (doc, tok, "status");
    if (a->status >= 0 && (why = s_text_problem (doc, a->status, scratch, S_MAX_NAME)))
        return snprintf (err, err_len, "%sstatus %s", m->prefix, why), -1;
    a->lease = s_field (doc, tok, "leaseId");
    if (a->lease >= 0 && !s_is_str (doc, a->lease))
        return snprintf (err, err_len, "%sleaseId must be a string", m->prefix), -1;
    if (s_is_empty_str (doc, a->lease))
        a->lease = -1;
    if (a->lease >= 0 && (s_text (doc, a->lease, scratch, &p, &len) || !qn_uuid_valid (p, len)))
        return snprintf (err, err_len, "%sleaseId must be a valid UUID", m->prefix), -1;
    a->error = s_field (doc, tok, "error");
    if (s_is_str (doc, a->error) && s_text (doc, a->error, scratch, &p, &len) == 1)
        return snprintf (err, err_len, "%serror must not contain NUL characters", m->prefix), -1;
    a->group = s_field (doc, tok, "consumerGroup");
    if (a->group >= 0 && (why = s_text_problem (doc, a->group, scratch, S_MAX_NAME)))
        return snprintf (err, err_len, "%sconsumerGroup %s", m->prefix, why), -1;
    return 0;
}

// ------------------------------------------------------------------ msgpack output
static void
s_pack_strn (msgpack_packer *pk, const char *s, size_t len)
{
    msgpack_pack_str (pk, len);
    msgpack_pack_str_body (pk, s, len);
}

static void
s_pack_cstr (msgpack_packer *pk, const char *s)
{
    s_pack_strn (pk, s, strlen (s));
}

//  Packs string token tok unescaped, or nil when tok < 0.
static void
s_pack_tok (msgpack_packer *pk, const qn_json_doc_t *doc, int tok, qn_buf_t *scratch)
{
    const char *p;
    size_t len;
    if (tok < 0 || s_text (doc, tok, scratch, &p, &len) < 0)
        msgpack_pack_nil (pk);
    else
        s_pack_strn (pk, p, len);
}

//  Packs tok's raw JSON text (a non-string error value), or its text.
static void
s_pack_error (msgpack_packer *pk, const qn_json_doc_t *doc, int tok, qn_buf_t *scratch)
{
    if (tok >= 0 && !s_is_str (doc, tok)) {
        size_t len;
        const char *raw = qn_json_raw (doc, tok, &len);
        s_pack_strn (pk, raw, len);
    }
    else
        s_pack_tok (pk, doc, tok, scratch);
}

//  The payload bytes of an item: its raw JSON text, else `dflt`.
static void
s_pack_payload (msgpack_packer *pk, const qn_json_doc_t *doc, int tok, const char *dflt)
{
    size_t len = strlen (dflt);
    const char *raw = tok >= 0 ? qn_json_raw (doc, tok, &len) : dflt;
    msgpack_pack_bin (pk, len);
    msgpack_pack_bin_body (pk, raw, len);
}

//  One PG_PUSH / SPOOL_APPEND item: [queue, partition, txn|nil,
//  payload(bin), trace|nil, producer|nil, encrypted]. `sealed` (or NULL):
//  the envelope that replaces the payload of an encrypted queue.
static void
s_pack_item (msgpack_packer *pk, const qn_json_doc_t *doc, const s_item_t *it,
             const char *minted, const qn_buf_t *sealed, qn_buf_t *scratch)
{
    msgpack_pack_array (pk, 7);
    s_pack_tok (pk, doc, it->queue, scratch);
    if (it->partition >= 0)
        s_pack_tok (pk, doc, it->partition, scratch);
    else
        s_pack_cstr (pk, "Default");
    if (it->txn >= 0)
        s_pack_tok (pk, doc, it->txn, scratch);
    else
    if (minted)
        s_pack_cstr (pk, minted);
    else
        msgpack_pack_nil (pk);
    bool enc = sealed && sealed->len;
    if (enc) {
        msgpack_pack_bin (pk, sealed->len);
        msgpack_pack_bin_body (pk, sealed->data, sealed->len);
    }
    else
        s_pack_payload (pk, doc, it->payload, "null");
    s_pack_tok (pk, doc, it->trace, scratch);
    msgpack_pack_nil (pk);          //  Producer: the JWT subject, once auth exists
    enc ? msgpack_pack_true (pk) : msgpack_pack_false (pk);
}

// ------------------------------------------------------------------ results
static const msgpack_object *
s_col (const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    if (r >= res->row_count || res->rows [r].type != MSGPACK_OBJECT_ARRAY
    ||  c >= res->rows [r].via.array.size)
        return NULL;
    return &res->rows [r].via.array.ptr [c];
}

static bool
s_col_int (const qn_pg_result_t *res, uint32_t r, uint32_t c, int64_t *out)
{
    const msgpack_object *o = s_col (res, r, c);
    if (o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        *out = (int64_t) o->via.u64;
        return true;
    }
    if (o && o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        *out = o->via.i64;
        return true;
    }
    return false;
}

//  -1 for NULL, else 0/1.
static int
s_col_bool (const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    const msgpack_object *o = s_col (res, r, c);
    return o && o->type == MSGPACK_OBJECT_BOOLEAN ? o->via.boolean : -1;
}

static bool
s_col_str (const qn_pg_result_t *res, uint32_t r, uint32_t c, const char **p, size_t *len)
{
    const msgpack_object *o = s_col (res, r, c);
    if (!o || o->type != MSGPACK_OBJECT_STR)
        return false;
    *p = o->via.str.ptr;
    *len = o->via.str.size;
    return true;
}

//  Writes key: the string column, or null.
static void
s_jw_col_str (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    const char *p;
    size_t len;
    qn_jw_key (w, key);
    if (s_col_str (res, r, c, &p, &len))
        qn_jw_strn (w, p, len);
    else
        qn_jw_null (w);
}

static void
s_jw_col_bool (qn_jw_t *w, const char *key, const qn_pg_result_t *res, uint32_t r, uint32_t c)
{
    int b = s_col_bool (res, r, c);
    if (b < 0)
        qn_jw_knull (w, key);
    else
        qn_jw_kbool (w, key, b);
}

static void
s_jw_id (qn_jw_t *w, const char *key, qn_id_kind_t kind, int64_t id)
{
    char s [QN_ID_STR_LEN + 1];
    qn_id_format (kind, id, s);
    qn_jw_kstr (w, key, s);
}

//  Writes key: the raw JSON text of token tok (a string as the client
//  wrote it, escapes included), or `dflt` as a string, or null.
static void
s_jw_tok (qn_jw_t *w, const char *key, const qn_json_doc_t *doc, int tok, const char *dflt)
{
    if (tok >= 0) {
        size_t len;
        const char *raw = qn_json_raw (doc, tok, &len);
        qn_jw_kraw (w, key, raw, len);
    }
    else
    if (dflt)
        qn_jw_kstr (w, key, dflt);
    else
        qn_jw_knull (w, key);
}

static void
s_reply_buf (qn_http_ctx_t *ctx, int status, qn_buf_t *b)
{
    qn_http_reply_json (ctx, status, b->data, b->len);
    qn_buf_free (b);
}

//  Publishes "committed" for `queue` unless `seen` already has it.
static void
s_committed_once (qn_codec_t *codec, qn_hashmap_t *seen, const char *tenant,
                  const char *queue, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t) queue [i]) * 1099511628211ULL;
    h = h ? h : 1;
    if (qn_hashmap_get (seen, h))
        return;
    qn_hashmap_put (seen, h, (void *) 1);
    qn_codec_committed (codec, tenant, queue, len);
}

//  Connection failures, operator intervention (shutdown, crash recovery),
//  no connection slot, and no answer in time: PostgreSQL is unavailable
//  rather than the request wrong. A statement timeout (57014) is not: the
//  server is up and rolled the statement back, and a replay would time
//  out the same way; it is answered 503 and the client retries.
static bool
s_db_unavailable (const qn_pg_result_t *res)
{
    const char *s = res->sqlstate;
    return res->timed_out || !strncmp (s, "08", 2)
        || (!strncmp (s, "57", 2) && strcmp (s, "57014")) || !strcmp (s, "53300");
}

// ------------------------------------------------------------------ encryption
//  Payloads of queues with encryptionEnabled (§2.10) are sealed here, before
//  PG_PUSH, the spool or queen.txn, so nothing downstream ever holds their
//  plaintext. Which queues: a cache of name -> encryptionEnabled, asked
//  again with one raw query on pg_reader for the queues of a push not
//  confirmed in the last S_QCONF_TTL_MS (no round trip when warm), and set
//  at once by configure on this broker. A queue the query does not find
//  is created by the push with defaults: not encrypted. A setting that
//  cannot be confirmed (database down, query failed) counts as encrypted:
//  pop decrypts whatever is stored encrypted, so that errs on the safe
//  side. Without QUEEN_ENCRYPTION_KEY nothing is sealed or asked (§2.10:
//  plaintext).
//
//  The state is file-static rather than in struct qn_codec (STYLE §8):
//  codec_http is one actor on one thread and only its thread runs these
//  handlers. It lives until exit (reachable, so not a leak).
typedef struct {
    char *key;                  //  Owned: tenant, NUL, queue name
    size_t key_len;
    bool encrypted;
    int64_t checked_ms;         //  Monotonic: when the database or configure said so
} s_qconf_t;

static struct {
    qn_hashmap_t *queues;       //  Owned: hash of key -> s_qconf_t (owned)
    qn_crypto_keys_t *ring;     //  Owned: the settings' keys, loaded on first use
} s_enc;

typedef void (s_send_fn) (qn_codec_t *codec, qn_http_ctx_t *ctx, s_call_t *c);

//  A pending settings question: the call to finish afterwards.
typedef struct {
    s_call_t *c;                //  Owned
    s_send_fn *then;
} s_qconf_ask_t;

static const char *s_qconf_sql =
    "SELECT name, encryption_enabled FROM queen.queues"
    " WHERE tenant = $1 AND name IN (SELECT jsonb_array_elements_text ($2::jsonb))";

//  The ring when this broker encrypts (it has a current key), else NULL.
static const qn_crypto_keys_t *
s_ring (qn_codec_t *codec)
{
    if (!s_enc.ring) {
        //  The settings were checked at start: this load cannot fail.
        const qn_config_t *cfg = qn_codec_config (codec);
        s_enc.ring = qn_crypto_keys_new ();
        qn_crypto_keys_load (s_enc.ring, cfg->queen_encryption_key,
                             cfg->queen_encryption_old_keys, NULL, 0);
    }
    return qn_crypto_keys_can_seal (s_enc.ring) ? s_enc.ring : NULL;
}

static uint64_t
s_qconf_hash (const char *tenant, const char *name, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = tenant; *p; p++)
        h = (h ^ (uint8_t) *p) * 1099511628211ULL;
    h *= 1099511628211ULL;      //  The NUL between tenant and name
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t) name [i]) * 1099511628211ULL;
    return h ? h : 1;
}

static bool
s_qconf_is (const s_qconf_t *q, const char *tenant, const char *name, size_t len)
{
    size_t tlen = strlen (tenant);
    return q && q->key_len == tlen + 1 + len && !memcmp (q->key, tenant, tlen + 1)
        && !memcmp (q->key + tlen + 1, name, len);
}

static void
s_qconf_free_entry (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    s_qconf_t *q = value;
    free (q->key);
    free (q);
}

//  Records what the database (or configure) says about a queue now.
static void
s_qconf_put (const char *tenant, const char *name, size_t len, bool encrypted)
{
    if (!s_enc.queues)
        s_enc.queues = qn_hashmap_new ();
    uint64_t h = s_qconf_hash (tenant, name, len);
    s_qconf_t *q = qn_hashmap_get (s_enc.queues, h);
    if (!s_qconf_is (q, tenant, name, len)) {
        if (q)                  //  Hash collision: the newer queue wins
            s_qconf_free_entry (NULL, h, qn_hashmap_remove (s_enc.queues, h));
        else
        if (qn_hashmap_size (s_enc.queues) >= S_QCONF_MAX) {
            qn_hashmap_each (s_enc.queues, s_qconf_free_entry, NULL);
            qn_hashmap_destroy (&s_enc.queues);
            s_enc.queues = qn_hashmap_new ();
        }
        size_t tlen = strlen (tenant);
        q = qn_zalloc (sizeof *q);
        q->key_len = tlen + 1 + len;
        q->key = qn_malloc (q->key_len);
        memcpy (q->key, tenant, tlen + 1);
        memcpy (q->key + tlen + 1, name, len);
        qn_hashmap_put (s_enc.queues, h, q);
    }
    q->encrypted = encrypted;
    q->checked_ms = qn_now_ms ();
}

//  1 when the queue is known to be encrypted, 0 known not to be, -1 when
//  not confirmed within S_QCONF_TTL_MS.
static int
s_qconf_get (const char *tenant, const char *name, size_t len)
{
    s_qconf_t *q = s_enc.queues
                 ? qn_hashmap_get (s_enc.queues, s_qconf_hash (tenant, name, len)) : NULL;
    if (!s_qconf_is (q, tenant, name, len) || qn_now_ms () - q->checked_ms > S_QCONF_TTL_MS)
        return -1;
    return q->encrypted;
}

//  The push item at position i of the call (an item of a push, a push
//  operation of a transaction), or NULL for an ack operation.
static const s_item_t *
s_item_at (const s_call_t *c, uint32_t i)
{
    if (c->ops)
        return c->ops [i].is_push ? &c->ops [i].item : NULL;
    return &c->items [i];
}

//  Seals the payloads of the call's encrypted (or unconfirmed) queues into
//  c->sealed, then hands c to `then`. Takes c; on failure answers 500.
static void
s_seal_and_send (qn_codec_t *codec, qn_http_ctx_t *ctx, s_call_t *c, s_send_fn *then)
{
    const qn_crypto_keys_t *ring = s_ring (codec);
    qn_buf_t scratch = QN_BUF_INIT;
    const char *dflt = c->ops ? "{}" : "null";      //  What an absent payload stores
    int64_t sealed = 0;
    for (uint32_t i = 0; i < c->count; i++) {
        const s_item_t *it = s_item_at (c, i);
        const char *q;
        size_t qlen;
        if (!it || s_text (&c->doc, it->queue, &scratch, &q, &qlen) < 0
        ||  s_qconf_get (ctx->tenant, q, qlen) == 0)
            continue;
        if (!c->sealed)
            c->sealed = qn_zalloc (c->count * sizeof *c->sealed);
        size_t len = strlen (dflt);
        const char *raw = it->payload >= 0 ? qn_json_raw (&c->doc, it->payload, &len) : dflt;
        int rc = qn_crypto_seal (ring, raw, len, &c->sealed [i]);
        if (rc) {
            qn_http_reply_errorf (ctx, 500, "payload encryption failed (item %u): %s", i,
                                  qn_crypto_strerror (rc));
            qn_buf_free (&scratch);
            s_call_free (c);
            return;
        }
        sealed++;
    }
    qn_buf_free (&scratch);
    if (sealed)
        qn_count (qn_codec_kernel (codec), "payloads_encrypted", sealed);
    then (codec, ctx, c);
}

//  The settings answer: every queue asked and not found is new (defaults,
//  not encrypted); a failed question leaves them unconfirmed.
static void
s_on_qconf (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    s_qconf_ask_t *ask = arg;
    s_call_t *c = ask->c;
    s_send_fn *then = ask->then;
    free (ask);
    if (!ctx) {
        s_call_free (c);
        return;
    }
    if (res->ok) {
        qn_buf_t scratch = QN_BUF_INIT;
        for (uint32_t i = 0; i < c->count; i++) {
            const s_item_t *it = s_item_at (c, i);
            const char *q;
            size_t qlen;
            if (it && s_text (&c->doc, it->queue, &scratch, &q, &qlen) >= 0
            &&  s_qconf_get (ctx->tenant, q, qlen) < 0)
                s_qconf_put (ctx->tenant, q, qlen, false);
        }
        qn_buf_free (&scratch);
        for (uint32_t r = 0; r < res->row_count; r++) {
            const char *q;
            size_t qlen;
            if (s_col_str (res, r, 0, &q, &qlen))
                s_qconf_put (ctx->tenant, q, qlen, s_col_bool (res, r, 1) == 1);
        }
    }
    else
        qn_info ("queue settings not read, unconfirmed queues get encrypted: sqlstate=%s reason=%s",
                 res->sqlstate, res->timed_out ? "timeout" : res->message ? res->message : "");
    s_seal_and_send (codec, ctx, c, then);
}

//  Seals what must be sealed, then calls `then`, which takes c. Asks
//  pg_reader first (one round trip) when a queue of the call is not
//  confirmed and the database is up. Takes c.
static void
s_seal_then (qn_codec_t *codec, qn_http_ctx_t *ctx, s_call_t *c, s_send_fn *then)
{
    if (!s_ring (codec)) {
        then (codec, ctx, c);
        return;
    }
    //  The unconfirmed queues, each once, as a JSON array of names.
    qn_buf_t names = QN_BUF_INIT, scratch = QN_BUF_INIT;
    qn_hashmap_t *seen = qn_hashmap_new ();
    qn_jw_t w;
    qn_jw_init (&w, &names);
    qn_jw_arr (&w);
    uint32_t unconfirmed = 0;
    for (uint32_t i = 0; i < c->count; i++) {
        const s_item_t *it = s_item_at (c, i);
        const char *q;
        size_t qlen;
        if (!it || s_text (&c->doc, it->queue, &scratch, &q, &qlen) < 0
        ||  s_qconf_get (ctx->tenant, q, qlen) >= 0)
            continue;
        uint64_t h = s_qconf_hash ("", q, qlen);
        if (qn_hashmap_get (seen, h))
            continue;
        qn_hashmap_put (seen, h, (void *) 1);
        qn_jw_strn (&w, q, qlen);
        unconfirmed++;
    }
    qn_jw_arr_end (&w);
    qn_hashmap_destroy (&seen);
    qn_buf_free (&scratch);
    int rc = -1;
    if (unconfirmed && qn_codec_db_up (codec)) {
        msgpack_sbuffer sb;
        msgpack_sbuffer_init (&sb);
        msgpack_packer pk;
        msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
        msgpack_pack_array (&pk, 3);
        msgpack_pack_uint32 (&pk, QN_SQL_RAW);
        s_pack_cstr (&pk, s_qconf_sql);
        msgpack_pack_array (&pk, 2);
        s_pack_cstr (&pk, ctx->tenant);
        s_pack_strn (&pk, names.data, names.len);
        s_qconf_ask_t *ask = qn_zalloc (sizeof *ask);
        ask->c = c;
        ask->then = then;
        rc = qn_codec_call (codec, ctx, "pg_reader", QN_MSG_PG_EXEC, sb.data, sb.size,
                            S_QCONF_WAIT_MS, s_on_qconf, ask);
        if (rc)
            free (ask);
        else
            qn_count (qn_codec_kernel (codec), "queue_settings_queries", 1);
        msgpack_sbuffer_destroy (&sb);
    }
    qn_buf_free (&names);
    if (rc)
        s_seal_and_send (codec, ctx, c, then);
}

// ------------------------------------------------------------------ configure
//  The stored options of a configured queue set its encryption at once.
static void
s_configured_encryption (qn_codec_t *codec, qn_http_ctx_t *ctx, const char *queue,
                         const char *opts, size_t opts_len)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    bool enc = false;
    if (qn_json_parse (&doc, opts, opts_len, 4) == 0
    &&  qn_json_bool (&doc, qn_json_get (&doc, 0, "encryptionEnabled"), &enc) == 0) {
        s_qconf_put (ctx->tenant, queue, strlen (queue), enc);
        if (enc && !s_ring (codec))
            qn_warn ("queue has encryptionEnabled but QUEEN_ENCRYPTION_KEY is unset:"
                     " payloads are stored in plaintext: queue=%s", queue);
    }
    qn_json_doc_free (&doc);
}

static void
s_on_configured (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    s_call_t *c = arg;
    int64_t qid, pid;
    const char *opts;
    size_t opts_len;
    if (!ctx)
        ;
    else
    if (!res->ok)
        qn_http_reply_pg_error (ctx, res);
    else
    if (!s_col_int (res, 0, 0, &qid) || !s_col_int (res, 0, 1, &pid)
    ||  !s_col_str (res, 0, 2, &opts, &opts_len))
        qn_http_reply_error (ctx, 500, "configure returned no row");
    else {
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_obj (&w);
        qn_jw_kbool (&w, "configured", true);
        s_jw_id (&w, "queueId", QN_ID_QUEUE, qid);
        s_jw_id (&w, "partitionId", QN_ID_PARTITION, pid);
        qn_jw_kstr (&w, "queue", c->queue);
        qn_jw_kstr (&w, "namespace", c->ns);
        qn_jw_kstr (&w, "task", c->task);
        qn_jw_kraw (&w, "options", opts, opts_len);
        qn_jw_obj_end (&w);
        s_configured_encryption (codec, ctx, c->queue, opts, opts_len);
        s_reply_buf (ctx, 200, &b);     //  Frees ctx
    }
    s_call_free (c);
}

//  namespace / task: a string (checked), anything else is "".
static int
s_configure_label (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, const char *key,
                   qn_buf_t *scratch, char **out)
{
    int tok = qn_json_get (doc, 0, key);
    if (!s_is_str (doc, tok)) {
        *out = qn_strdup ("");
        return 0;
    }
    const char *why = s_text_problem (doc, tok, scratch, S_MAX_NAME);
    if (why) {
        qn_http_reply_errorf (ctx, 400, "%s %s", key, why);
        return -1;
    }
    const char *p;
    size_t len;
    s_text (doc, tok, scratch, &p, &len);
    *out = qn_strndup (p, len);
    return 0;
}

static void
s_configure (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_call_t *c = s_call_new ();
    qn_json_doc_t *doc = &c->doc;
    qn_buf_t scratch = QN_BUF_INIT;
    const char *p, *why;
    size_t len;
    if (qn_http_parse_body (ctx, doc))
        goto done;
    int queue = qn_json_get (doc, 0, "queue");
    if (!s_is_str (doc, queue)) {
        qn_http_reply_error (ctx, 400, "queue is required");
        goto done;
    }
    if ((why = s_text_problem (doc, queue, &scratch, S_MAX_NAME))) {
        qn_http_reply_errorf (ctx, 400, "queue %s", why);
        goto done;
    }
    s_text (doc, queue, &scratch, &p, &len);
    c->queue = qn_strndup (p, len);
    if (s_configure_label (ctx, doc, "namespace", &scratch, &c->ns)
    ||  s_configure_label (ctx, doc, "task", &scratch, &c->task))
        goto done;
    int options = qn_json_get (doc, 0, "options");
    const char *opts = "{}";
    size_t opts_len = 2;
    if (qn_json_type (doc, options) == QN_JSON_OBJECT)
        opts = qn_json_raw (doc, options, &opts_len);

    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 5);
    s_pack_cstr (&pk, ctx->tenant);
    s_pack_cstr (&pk, c->queue);
    s_pack_cstr (&pk, c->ns);
    s_pack_cstr (&pk, c->task);
    s_pack_strn (&pk, opts, opts_len);
    int rc = qn_codec_exec (codec, ctx, "pg_writer", QN_SQL_CONFIGURE, NULL, sb.data, sb.size,
                            s_on_configured, c);
    msgpack_sbuffer_destroy (&sb);
    if (rc == 0)
        c = NULL;
    else
        qn_http_reply_errorf (ctx, 503, "database unavailable: %s", qn_strerror (rc));
done:
    qn_buf_free (&scratch);
    s_call_free (c);
}

// ------------------------------------------------------------------ push
//  Answers a spooled push: §3.6's maintenance-mode shape, one result per item.
static void
s_on_spooled (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    s_call_t *c = arg;
    if (!ctx)
        ;
    else
    if (!res->ok)
        qn_http_reply_errorf (ctx, 503, "File buffer write failed: %s",
                              res->timed_out ? "the spool did not answer in time"
                              : res->message && res->message [0] ? res->message : "unknown error");
    else {
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_arr (&w);
        for (uint32_t i = 0; i < c->count; i++) {
            const s_item_t *it = &c->items [i];
            qn_jw_obj (&w);
            qn_jw_kint (&w, "index", i);
            qn_jw_kstr (&w, "status", "buffered");
            s_jw_tok (&w, "queue", &c->doc, it->queue, NULL);
            s_jw_tok (&w, "partition", &c->doc, it->partition, "Default");
            s_jw_tok (&w, "transactionId", &c->doc, it->txn, c->minted [i]);
            qn_jw_obj_end (&w);
        }
        qn_jw_arr_end (&w);
        qn_count (qn_codec_kernel (codec), "messages_buffered", c->count);
        s_reply_buf (ctx, 201, &b);
    }
    s_call_free (c);
}

//  Sends the push to the spool, every item with a transaction id (minted
//  when the client gave none, so a replay deduplicates). Takes c.
static void
s_spool (qn_codec_t *codec, qn_http_ctx_t *ctx, s_call_t *c)
{
    if (!qn_spool_new) {
        //  Not linked into this binary: say so at once rather than time out.
        qn_http_reply_error (ctx, 503, "File buffer write failed: no spool in this build");
        s_call_free (c);
        return;
    }
    qn_buf_t scratch = QN_BUF_INIT;
    c->minted = qn_zalloc (c->count * sizeof *c->minted);
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 2);
    s_pack_cstr (&pk, ctx->tenant);
    msgpack_pack_array (&pk, c->count);
    for (uint32_t i = 0; i < c->count; i++) {
        if (c->items [i].txn < 0)
            qn_uuid_v7 (c->minted [i]);
        s_pack_item (&pk, &c->doc, &c->items [i], c->minted [i],
                     c->sealed ? &c->sealed [i] : NULL, &scratch);
    }
    qn_buf_free (&scratch);
    int rc = qn_codec_call (codec, ctx, "spool", QN_MSG_SPOOL_APPEND, sb.data, sb.size,
                            S_SPOOL_WAIT_MS, s_on_spooled, c);
    msgpack_sbuffer_destroy (&sb);
    if (rc) {
        qn_http_reply_errorf (ctx, 503, "File buffer write failed: spool %s",
                              rc == QN_ENOENT ? "not available" : qn_strerror (rc));
        s_call_free (c);
    }
}

//  One result per item (§3.6), committed events, and the count.
static void
s_push_answer (qn_codec_t *codec, qn_http_ctx_t *ctx, s_call_t *c, qn_pg_result_t *res)
{
    if (res->row_count != c->count) {
        qn_warn ("push result mismatch: items=%u rows=%u", c->count, res->row_count);
        qn_http_reply_error (ctx, 500, "push returned an unexpected result");
        return;
    }
    qn_buf_t b = QN_BUF_INIT, scratch = QN_BUF_INIT;
    qn_hashmap_t *seen = qn_hashmap_new ();
    qn_jw_t w;
    qn_jw_init (&w, &b);
    qn_jw_arr (&w);
    int64_t queued = 0;
    for (uint32_t i = 0; i < c->count; i++) {
        const s_item_t *it = &c->items [i];
        int64_t ord = 0, seq = 0, pid = 0;
        s_col_int (res, i, 0, &ord);
        s_col_int (res, i, 1, &seq);
        s_col_int (res, i, 2, &pid);
        bool dup = s_col_bool (res, i, 4) == 1;
        if (ord != (int64_t) i + 1)
            qn_warn ("push result out of order: item=%u ord=%lld", i, (long long) ord);
        char mid [QN_ID_STR_LEN + 1];
        qn_id_format (QN_ID_MESSAGE, seq, mid);
        qn_jw_obj (&w);
        qn_jw_kint (&w, "index", i);
        s_jw_tok (&w, "transaction_id", &c->doc, it->txn, mid);
        qn_jw_kstr (&w, "status", dup ? "duplicate" : "queued");
        qn_jw_kstr (&w, "message_id", mid);
        if (!dup) {
            s_jw_id (&w, "partition_id", QN_ID_PARTITION, pid);
            qn_jw_key (&w, "trace_id");
            const char *p;
            size_t len;
            uint8_t u [16];
            char trace [QN_ID_STR_LEN + 1];
            if (it->trace >= 0 && !s_text (&c->doc, it->trace, &scratch, &p, &len)
            &&  !qn_uuid_parse (p, len, u)) {
                qn_uuid_format (u, trace);
                qn_jw_str (&w, trace);
            }
            else
                qn_jw_null (&w);
            queued++;
        }
        s_jw_tok (&w, "queueName", &c->doc, it->queue, NULL);
        qn_jw_obj_end (&w);
        const char *q;
        size_t qlen;
        if (!dup && s_text (&c->doc, it->queue, &scratch, &q, &qlen) >= 0)
            s_committed_once (codec, seen, ctx->tenant, q, qlen);
    }
    qn_jw_arr_end (&w);
    qn_hashmap_destroy (&seen);
    qn_buf_free (&scratch);
    qn_count (qn_codec_kernel (codec), "messages_pushed", queued);
    s_reply_buf (ctx, 201, &b);
}

static void
s_on_pushed (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    s_call_t *c = arg;
    if (ctx && !res->ok && s_db_unavailable (res)) {
        qn_info ("push goes to the spool: sqlstate=%s reason=%s", res->sqlstate,
                 res->message ? res->message : "");
        s_spool (codec, ctx, c);
        return;
    }
    if (ctx && !res->ok)
        qn_http_reply_pg_error (ctx, res);
    else
    if (ctx)
        s_push_answer (codec, ctx, c, res);
    s_call_free (c);
}

//  Sends a validated (and sealed) push to the spool or to pg_writer.
//  Takes c.
static void
s_push_send (qn_codec_t *codec, qn_http_ctx_t *ctx, s_call_t *c)
{
    if (qn_codec_push_maintenance (codec) || qn_codec_spool_active (codec) || !qn_codec_db_up (codec)) {
        s_spool (codec, ctx, c);
        return;
    }
    qn_buf_t scratch = QN_BUF_INIT;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 2);
    s_pack_cstr (&pk, ctx->tenant);
    msgpack_pack_array (&pk, c->count);
    for (uint32_t i = 0; i < c->count; i++)
        s_pack_item (&pk, &c->doc, &c->items [i], NULL, c->sealed ? &c->sealed [i] : NULL, &scratch);
    qn_buf_free (&scratch);
    uint32_t timeout = (uint32_t) qn_codec_config (codec)->db_statement_timeout_ms + 2000;
    int rc = qn_codec_call (codec, ctx, "pg_writer", QN_MSG_PG_PUSH, sb.data, sb.size, timeout,
                            s_on_pushed, c);
    msgpack_sbuffer_destroy (&sb);
    if (rc) {
        qn_http_reply_errorf (ctx, 503, "database unavailable: %s", qn_strerror (rc));
        s_call_free (c);
    }
}

static void
s_push (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_call_t *c = s_call_new ();
    qn_json_doc_t *doc = &c->doc;
    qn_buf_t scratch = QN_BUF_INIT;
    char err [256];
    if (qn_http_parse_body (ctx, doc))
        goto done;
    int items = qn_json_get (doc, 0, "items");
    if (qn_json_type (doc, items) != QN_JSON_ARRAY) {
        qn_http_reply_error (ctx, 400, "items array is required");
        goto done;
    }
    int64_t n = qn_json_size (doc, items);
    if (n > S_MAX_ITEMS) {
        qn_http_reply_errorf (ctx, 400, "items array has %lld items; at most %d are allowed",
                              (long long) n, S_MAX_ITEMS);
        goto done;
    }
    if (n == 0) {
        qn_http_reply_json (ctx, 201, "[]", 2);
        goto done;
    }
    c->items = qn_malloc ((size_t) n * sizeof *c->items);
    for (int t = qn_json_first (doc, items); t >= 0; t = qn_json_next_sibling (doc, items, t)) {
        if (s_item_check (doc, t, c->count, &c->items [c->count], &scratch, err, sizeof err)) {
            qn_http_reply_error (ctx, 400, err);
            goto done;
        }
        c->count++;
    }
    //  Encrypted queues' payloads are sealed first (§2.10), then sent.
    s_seal_then (codec, ctx, c, s_push_send);
    c = NULL;
done:
    qn_buf_free (&scratch);
    s_call_free (c);
}

// ------------------------------------------------------------------ ack
//  Packs the eight queen.ack / the seven ack arrays of queen.txn (without
//  the tenant): groups, partition ids, transaction ids, seqs, statuses,
//  lease ids, errors. `group` >= 0 overrides every item's consumerGroup.
static void
s_pack_acks (msgpack_packer *pk, const qn_json_doc_t *doc, const s_ack_t *const *acks,
             uint32_t n, int group, qn_buf_t *scratch)
{
    msgpack_pack_array (pk, n);
    for (uint32_t i = 0; i < n; i++)
        s_pack_tok (pk, doc, group >= 0 ? group : acks [i]->group, scratch);
    msgpack_pack_array (pk, n);
    for (uint32_t i = 0; i < n; i++)
        msgpack_pack_int64 (pk, acks [i]->pid);
    msgpack_pack_array (pk, n);
    for (uint32_t i = 0; i < n; i++)
        s_pack_tok (pk, doc, acks [i]->txn, scratch);
    msgpack_pack_array (pk, n);
    for (uint32_t i = 0; i < n; i++)
        if (acks [i]->has_seq)
            msgpack_pack_int64 (pk, acks [i]->seq);
        else
            msgpack_pack_nil (pk);
    msgpack_pack_array (pk, n);
    for (uint32_t i = 0; i < n; i++)
        if (acks [i]->status >= 0)
            s_pack_tok (pk, doc, acks [i]->status, scratch);
        else
            s_pack_cstr (pk, "completed");
    msgpack_pack_array (pk, n);
    for (uint32_t i = 0; i < n; i++)
        s_pack_tok (pk, doc, acks [i]->lease, scratch);
    msgpack_pack_array (pk, n);
    for (uint32_t i = 0; i < n; i++)
        s_pack_error (pk, doc, acks [i]->error, scratch);
}

//  The §3.10 result array, in request order; committed events for the
//  queues of successful items.
static void
s_on_acked (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    s_call_t *c = arg;
    if (!ctx)
        ;
    else
    if (!res->ok)
        qn_http_reply_pg_error (ctx, res);
    else {
        qn_buf_t b = QN_BUF_INIT;
        qn_hashmap_t *seen = qn_hashmap_new ();
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_arr (&w);
        for (uint32_t r = 0; r < res->row_count; r++) {
            int64_t ord = 0;
            s_col_int (res, r, 0, &ord);
            if (ord < 1 || ord > (int64_t) c->count)
                continue;
            const s_ack_t *a = &c->acks [ord - 1];
            bool ok = s_col_bool (res, r, 1) == 1;
            qn_jw_obj (&w);
            qn_jw_kint (&w, "index", ord - 1);
            s_jw_tok (&w, "transactionId", &c->doc, a->txn, NULL);
            qn_jw_kbool (&w, "success", ok);
            s_jw_col_str (&w, "error", res, r, 2);
            s_jw_col_str (&w, "queueName", res, r, 3);
            s_jw_col_str (&w, "partitionName", res, r, 4);
            s_jw_col_bool (&w, "leaseReleased", res, r, 5);
            qn_jw_kbool (&w, "dlq", s_col_bool (res, r, 6) == 1);
            qn_jw_obj_end (&w);
            const char *q;
            size_t qlen;
            if (ok && s_col_str (res, r, 3, &q, &qlen))
                s_committed_once (codec, seen, ctx->tenant, q, qlen);
        }
        qn_jw_arr_end (&w);
        qn_hashmap_destroy (&seen);
        s_reply_buf (ctx, 200, &b);
    }
    s_call_free (c);
}

//  Validated acks -> one QN_SQL_ACK call. Takes c.
static void
s_ack_exec (qn_codec_t *codec, qn_http_ctx_t *ctx, s_call_t *c, int group)
{
    qn_buf_t scratch = QN_BUF_INIT;
    const s_ack_t **list = qn_malloc ((c->count ? c->count : 1) * sizeof *list);
    for (uint32_t i = 0; i < c->count; i++)
        list [i] = &c->acks [i];
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 8);
    s_pack_cstr (&pk, ctx->tenant);
    s_pack_acks (&pk, &c->doc, list, c->count, group, &scratch);
    free (list);
    qn_buf_free (&scratch);
    int rc = qn_codec_exec (codec, ctx, "pg_writer", QN_SQL_ACK, NULL, sb.data, sb.size,
                            s_on_acked, c);
    msgpack_sbuffer_destroy (&sb);
    if (rc) {
        qn_http_reply_errorf (ctx, 503, "database unavailable: %s", qn_strerror (rc));
        s_call_free (c);
    }
}

static void
s_ack (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    static const s_ack_msgs_t msgs = {
        "transactionId is required", "partitionId is required to ensure message uniqueness", ""
    };
    s_call_t *c = s_call_new ();
    qn_buf_t scratch = QN_BUF_INIT;
    char err [256];
    if (qn_http_parse_body (ctx, &c->doc))
        goto done;
    c->acks = qn_malloc (sizeof *c->acks);
    if (s_ack_check (&c->doc, 0, &msgs, &c->acks [0], &scratch, err, sizeof err)) {
        qn_http_reply_error (ctx, 400, err);
        goto done;
    }
    c->count = 1;
    s_ack_exec (codec, ctx, c, -1);
    c = NULL;
done:
    qn_buf_free (&scratch);
    s_call_free (c);
}

static void
s_ack_batch (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_call_t *c = s_call_new ();
    qn_json_doc_t *doc = &c->doc;
    qn_buf_t scratch = QN_BUF_INIT;
    char err [256];
    if (qn_http_parse_body (ctx, doc))
        goto done;
    int list = qn_json_get (doc, 0, "acknowledgments");
    if (qn_json_type (doc, list) != QN_JSON_ARRAY) {
        qn_http_reply_error (ctx, 400, "acknowledgments array is required");
        goto done;
    }
    int64_t n = qn_json_size (doc, list);
    if (n > S_MAX_ITEMS) {
        qn_http_reply_errorf (ctx, 400, "acknowledgments array has %lld items; at most %d are allowed",
                              (long long) n, S_MAX_ITEMS);
        goto done;
    }
    int group = s_field (doc, 0, "consumerGroup");
    const char *why;
    if (group >= 0 && (why = s_text_problem (doc, group, &scratch, S_MAX_NAME))) {
        qn_http_reply_errorf (ctx, 400, "consumerGroup %s", why);
        goto done;
    }
    if (n == 0) {
        qn_http_reply_json (ctx, 200, "[]", 2);
        goto done;
    }
    c->acks = qn_malloc ((size_t) n * sizeof *c->acks);
    for (int t = qn_json_first (doc, list); t >= 0; t = qn_json_next_sibling (doc, list, t)) {
        char prefix [48];
        snprintf (prefix, sizeof prefix, "acknowledgments[%u].", c->count);
        s_ack_msgs_t msgs = {
            "Each acknowledgment must have a valid transactionId string",
            "Each acknowledgment must have a valid partitionId string to ensure message uniqueness",
            prefix
        };
        if (s_ack_check (doc, t, &msgs, &c->acks [c->count], &scratch, err, sizeof err)) {
            qn_http_reply_error (ctx, 400, err);
            goto done;
        }
        c->count++;
    }
    s_ack_exec (codec, ctx, c, group);
    c = NULL;
done:
    qn_buf_free (&scratch);
    s_call_free (c);
}

// ------------------------------------------------------------------ transaction
//  A result entry for op i (flattened index). `row` < 0: the op ran before
//  the failing one in a transaction that rolled back (no ids).
static void
s_txn_entry (qn_jw_t *w, const s_call_t *c, uint32_t i, const qn_pg_result_t *res, int row)
{
    const s_op_t *op = &c->ops [i];
    qn_jw_obj (w);
    qn_jw_kint (w, "index", i);
    qn_jw_kstr (w, "type", op->is_push ? "push" : "ack");
    qn_jw_kbool (w, "success", true);
    if (op->is_push) {
        int64_t seq = 0, pid = 0;
        bool ran = row >= 0 && s_col_int (res, (uint32_t) row, 2, &seq)
                && s_col_int (res, (uint32_t) row, 3, &pid);
        char mid [QN_ID_STR_LEN + 1];
        qn_id_format (QN_ID_MESSAGE, seq, mid);
        s_jw_tok (w, "transactionId", &c->doc, op->item.txn, ran ? mid : NULL);
        if (ran) {
            qn_jw_kstr (w, "messageId", mid);
            s_jw_id (w, "partitionId", QN_ID_PARTITION, pid);
        }
        else {
            qn_jw_knull (w, "messageId");
            qn_jw_knull (w, "partitionId");
        }
        s_jw_tok (w, "queueName", &c->doc, op->item.queue, NULL);
    }
    else {
        s_jw_tok (w, "transactionId", &c->doc, op->ack.txn, NULL);
        qn_jw_knull (w, "error");
        qn_jw_kbool (w, "dlq", row >= 0 && s_col_bool (res, (uint32_t) row, 8) == 1);
    }
    qn_jw_obj_end (w);
}

//  Starts {"transactionId": fresh, "success": ok, ...
static void
s_txn_head (qn_jw_t *w, bool ok)
{
    char id [QN_ID_STR_LEN + 1];
    qn_uuid_v4 (id);
    qn_jw_obj (w);
    qn_jw_kstr (w, "transactionId", id);
    qn_jw_kbool (w, "success", ok);
}

//  The flattened index of the op named by a DETAIL "op=<kind>:<ord>" (ord
//  1-based among that kind), or -1.
static int64_t
s_txn_failed_op (const s_call_t *c, const char *detail, bool *is_ack)
{
    const char *at = detail ? strstr (detail, "op=") : NULL;
    if (!at)
        return -1;
    long ord = 0;
    char kind [8];
    if (sscanf (at, "op=%7[a-z]:%ld", kind, &ord) != 2 || ord < 1)
        return -1;
    *is_ack = !strcmp (kind, "ack");
    if (!*is_ack && strcmp (kind, "push"))
        return -1;
    for (uint32_t i = 0; i < c->count; i++)
        if (c->ops [i].is_push == !*is_ack && c->ops [i].ord == (uint32_t) ord - 1)
            return i;
    return -1;
}

static void
s_txn_failed (qn_http_ctx_t *ctx, const s_call_t *c, const qn_pg_result_t *res)
{
    bool is_ack = false;
    int64_t failed = s_txn_failed_op (c, res->detail, &is_ack);
    const char *msg = res->message && res->message [0] ? res->message : "database error";
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    s_txn_head (&w, false);
    qn_jw_kstr (&w, "error", msg);
    qn_jw_key (&w, "results");
    qn_jw_arr (&w);
    for (int64_t i = 0; i < failed; i++)
        s_txn_entry (&w, c, (uint32_t) i, res, -1);
    if (failed >= 0 && is_ack) {
        const char *prefix = "ACK operation failed: ";
        if (!strncmp (msg, prefix, strlen (prefix)))
            msg += strlen (prefix);
        qn_jw_obj (&w);
        qn_jw_kint (&w, "index", failed);
        qn_jw_kstr (&w, "type", "ack");
        qn_jw_kbool (&w, "success", false);
        s_jw_tok (&w, "transactionId", &c->doc, c->ops [failed].ack.txn, NULL);
        qn_jw_kstr (&w, "error", msg);
        qn_jw_kbool (&w, "dlq", false);
        qn_jw_obj_end (&w);
    }
    qn_jw_arr_end (&w);
    qn_jw_obj_end (&w);
    s_reply_buf (ctx, 200, &b);
}

static void
s_on_txn (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    s_call_t *c = arg;
    if (!ctx)
        ;
    else
    if (!res->ok && (s_db_unavailable (res) || !strncmp (res->sqlstate, "57", 2)
                 ||  !strncmp (res->sqlstate, "53", 2) || !strncmp (res->sqlstate, "40", 2)))
        //  Systemic (unavailable, timed out, out of resources, serialisation
        //  failure or deadlock): 503, which the client retries; nothing applied.
        qn_http_reply_errorf (ctx, 503, "%s", res->timed_out ? "database did not answer in time"
                              : res->message && res->message [0] ? res->message : "database unavailable");
    else
    if (!res->ok)
        s_txn_failed (ctx, c, res);
    else {
        //  Rows: pushes and acks by their 1-based ord; map them to ops.
        int *row_of = qn_malloc (c->count * sizeof *row_of);
        for (uint32_t i = 0; i < c->count; i++)
            row_of [i] = -1;
        int *push_op = qn_malloc ((c->npush + 1) * sizeof *push_op);
        int *ack_op = qn_malloc ((c->nack + 1) * sizeof *ack_op);
        for (uint32_t i = 0; i < c->count; i++)
            (c->ops [i].is_push ? push_op : ack_op) [c->ops [i].ord] = (int) i;
        qn_hashmap_t *seen = qn_hashmap_new ();
        int64_t pushed = 0;
        for (uint32_t r = 0; r < res->row_count; r++) {
            const char *kind, *q;
            size_t klen, qlen;
            int64_t ord = 0;
            if (!s_col_str (res, r, 0, &kind, &klen) || !s_col_int (res, r, 1, &ord) || ord < 1)
                continue;
            bool push = klen == 4 && !memcmp (kind, "push", 4);
            if (ord > (int64_t) (push ? c->npush : c->nack))
                continue;
            row_of [(push ? push_op : ack_op) [ord - 1]] = (int) r;
            pushed += push;
            if (s_col_str (res, r, 5, &q, &qlen))
                s_committed_once (codec, seen, ctx->tenant, q, qlen);
        }
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        s_txn_head (&w, true);
        qn_jw_key (&w, "results");
        qn_jw_arr (&w);
        for (uint32_t i = 0; i < c->count; i++)
            s_txn_entry (&w, c, i, res, row_of [i]);
        qn_jw_arr_end (&w);
        qn_jw_obj_end (&w);
        qn_hashmap_destroy (&seen);
        free (row_of);
        free (push_op);
        free (ack_op);
        qn_count (qn_codec_kernel (codec), "messages_pushed", pushed);
        s_reply_buf (ctx, 200, &b);
    }
    s_call_free (c);
}

//  Unknown operation type: answered without touching the database.
static void
s_txn_unknown (qn_http_ctx_t *ctx, const s_call_t *c, int type_tok)
{
    qn_buf_t scratch = QN_BUF_INIT, msg = QN_BUF_INIT;
    const char *p;
    size_t len;
    s_text (&c->doc, type_tok, &scratch, &p, &len);
    qn_buf_puts (&msg, "Unknown operation type: ");
    qn_buf_append (&msg, p, len);
    qn_buf_t b = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &b);
    s_txn_head (&w, false);
    qn_jw_key (&w, "error");
    qn_jw_strn (&w, msg.data, msg.len);
    qn_jw_key (&w, "results");
    qn_jw_arr (&w);
    for (uint32_t i = 0; i < c->count; i++)
        s_txn_entry (&w, c, i, NULL, -1);
    qn_jw_obj (&w);
    qn_jw_kint (&w, "index", c->count);
    qn_jw_key (&w, "type");
    qn_jw_strn (&w, p, len);
    qn_jw_kbool (&w, "success", false);
    qn_jw_key (&w, "error");
    qn_jw_strn (&w, msg.data, msg.len);
    qn_jw_obj_end (&w);
    qn_jw_arr_end (&w);
    qn_jw_obj_end (&w);
    qn_buf_free (&scratch);
    qn_buf_free (&msg);
    s_reply_buf (ctx, 200, &b);
}

//  Validates operations into c->ops. Returns 0; 1 when it answered (bad
//  input or an unknown type).
static int
s_txn_parse (qn_http_ctx_t *ctx, s_call_t *c, int ops, qn_buf_t *scratch)
{
    static const s_ack_msgs_t msgs = {
        "transactionId is required", "partitionId is required to ensure message uniqueness", ""
    };
    const qn_json_doc_t *doc = &c->doc;
    char err [256];
    //  Count the flattened operations first: the limit comes before the work.
    int64_t total = 0;
    for (int t = qn_json_first (doc, ops); t >= 0; t = qn_json_next_sibling (doc, ops, t)) {
        int items = qn_json_get (doc, t, "items");
        total += qn_json_str_eq (doc, qn_json_get (doc, t, "type"), "push")
              && qn_json_type (doc, items) == QN_JSON_ARRAY ? qn_json_size (doc, items) : 1;
    }
    if (total > S_MAX_ITEMS) {
        qn_http_reply_errorf (ctx, 400, "transaction has %lld operations; at most %d are allowed",
                              (long long) total, S_MAX_ITEMS);
        return 1;
    }
    c->ops = qn_zalloc ((size_t) (total ? total : 1) * sizeof *c->ops);
    uint32_t k = 0;
    for (int t = qn_json_first (doc, ops); t >= 0; t = qn_json_next_sibling (doc, ops, t), k++) {
        int type = qn_json_get (doc, t, "type");
        if (!s_is_str (doc, type)) {
            qn_http_reply_errorf (ctx, 400, "operations[%u].type must be a string", k);
            return 1;
        }
        if (qn_json_str_eq (doc, type, "push")) {
            int items = qn_json_get (doc, t, "items");
            if (qn_json_type (doc, items) != QN_JSON_ARRAY) {
                qn_http_reply_errorf (ctx, 400, "operations[%u].items array is required", k);
                return 1;
            }
            for (int i = qn_json_first (doc, items); i >= 0; i = qn_json_next_sibling (doc, items, i)) {
                s_op_t *op = &c->ops [c->count];
                if (s_item_check (doc, i, c->count, &op->item, scratch, err, sizeof err)) {
                    qn_http_reply_error (ctx, 400, err);
                    return 1;
                }
                op->is_push = true;
                op->ord = c->npush++;
                c->count++;
            }
        }
        else
        if (qn_json_str_eq (doc, type, "ack")) {
            s_op_t *op = &c->ops [c->count];
            if (s_ack_check (doc, t, &msgs, &op->ack, scratch, err, sizeof err)) {
                qn_http_reply_errorf (ctx, 400, "operations[%u]: %s", k, err);
                return 1;
            }
            op->ord = c->nack++;
            c->count++;
        }
        else {
            s_txn_unknown (ctx, c, type);
            return 1;
        }
    }
    return 0;
}

//  requiredLeases: absent/null -> nil; else an array of lease UUIDs
//  (empty strings skipped). Returns 0, or -1 after answering 400.
static int
s_pack_required (qn_http_ctx_t *ctx, const qn_json_doc_t *doc, msgpack_packer *pk,
                 qn_buf_t *scratch)
{
    int leases = s_field (doc, 0, "requiredLeases");
    if (leases < 0) {
        msgpack_pack_nil (pk);
        return 0;
    }
    if (qn_json_type (doc, leases) != QN_JSON_ARRAY) {
        qn_http_reply_error (ctx, 400, "requiredLeases must be an array of lease ids");
        return -1;
    }
    uint32_t n = 0;
    for (int t = qn_json_first (doc, leases); t >= 0; t = qn_json_next_sibling (doc, leases, t)) {
        const char *p;
        size_t len;
        if (s_text (doc, t, scratch, &p, &len) || (len && !qn_uuid_valid (p, len))) {
            qn_http_reply_errorf (ctx, 400, "requiredLeases[%u] must be a valid UUID", n);
            return -1;
        }
        n += len > 0;
    }
    msgpack_pack_array (pk, n);
    for (int t = qn_json_first (doc, leases); t >= 0; t = qn_json_next_sibling (doc, leases, t))
        if (!s_is_empty_str (doc, t))
            s_pack_tok (pk, doc, t, scratch);
    return 0;
}

//  Packs a validated (and sealed) transaction into one queen.txn call.
//  Takes c.
static void
s_txn_send (qn_codec_t *codec, qn_http_ctx_t *ctx, s_call_t *c)
{
    const qn_json_doc_t *doc = &c->doc;
    qn_buf_t scratch = QN_BUF_INIT;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    //  queen.txn: tenant, 7 push arrays, 7 ack arrays, required leases.
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 16);
    s_pack_cstr (&pk, ctx->tenant);
    for (int f = 0; f < 7; f++) {
        msgpack_pack_array (&pk, c->npush);
        for (uint32_t i = 0; i < c->count; i++) {
            const s_item_t *it = &c->ops [i].item;
            const qn_buf_t *sealed = c->sealed && c->sealed [i].len ? &c->sealed [i] : NULL;
            if (!c->ops [i].is_push)
                continue;
            switch (f) {
                case 0: s_pack_tok (&pk, doc, it->queue, &scratch); break;
                case 1: it->partition >= 0 ? s_pack_tok (&pk, doc, it->partition, &scratch)
                                           : s_pack_cstr (&pk, "Default"); break;
                case 2: s_pack_tok (&pk, doc, it->txn, &scratch); break;
                case 3: if (sealed) {
                            msgpack_pack_bin (&pk, sealed->len);
                            msgpack_pack_bin_body (&pk, sealed->data, sealed->len);
                        }
                        else
                            s_pack_payload (&pk, doc, it->payload, "{}");
                        break;
                case 4: s_pack_tok (&pk, doc, it->trace, &scratch); break;
                case 5: msgpack_pack_nil (&pk); break;
                default: sealed ? msgpack_pack_true (&pk) : msgpack_pack_false (&pk); break;
            }
        }
    }
    const s_ack_t **list = qn_malloc ((c->nack + 1) * sizeof *list);
    for (uint32_t i = 0, j = 0; i < c->count; i++)
        if (!c->ops [i].is_push)
            list [j++] = &c->ops [i].ack;
    s_pack_acks (&pk, doc, list, c->nack, -1, &scratch);
    free (list);
    if (s_pack_required (ctx, doc, &pk, &scratch))
        goto done;
    int rc = qn_codec_exec (codec, ctx, "pg_writer", QN_SQL_TXN, NULL, sb.data, sb.size,
                            s_on_txn, c);
    if (rc == 0)
        c = NULL;
    else
        qn_http_reply_errorf (ctx, 503, "database unavailable: %s", qn_strerror (rc));
done:
    msgpack_sbuffer_destroy (&sb);
    qn_buf_free (&scratch);
    s_call_free (c);
}

static void
s_transaction (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_call_t *c = s_call_new ();
    qn_json_doc_t *doc = &c->doc;
    qn_buf_t scratch = QN_BUF_INIT;
    if (qn_http_parse_body (ctx, doc))
        goto done;
    int ops = qn_json_get (doc, 0, "operations");
    if (qn_json_type (doc, ops) != QN_JSON_ARRAY) {
        qn_http_reply_error (ctx, 400, "operations array required");
        goto done;
    }
    if (qn_json_size (doc, ops) == 0) {
        qn_http_reply_error (ctx, 400, "operations array cannot be empty");
        goto done;
    }
    if (s_txn_parse (ctx, c, ops, &scratch))
        goto done;
    //  Encrypted queues' payloads are sealed first (§2.10), then sent.
    s_seal_then (codec, ctx, c, s_txn_send);
    c = NULL;
done:
    qn_buf_free (&scratch);
    s_call_free (c);
}

// ------------------------------------------------------------------ lease extension
static void
s_on_extended (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_pg_result_t *res, void *arg)
{
    (void) codec;
    s_call_t *c = arg;
    const char *status;
    size_t slen;
    if (!ctx)
        ;
    else
    if (!res->ok)
        qn_http_reply_pg_error (ctx, res);
    else
    if (!s_col_str (res, 0, 0, &status, &slen))
        qn_http_reply_error (ctx, 500, "renew returned no row");
    else {
        bool ok = slen == 2 && !memcmp (status, "ok", 2);
        int64_t expires = 0;
        qn_buf_t b = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &b);
        qn_jw_arr (&w);
        qn_jw_obj (&w);
        qn_jw_kint (&w, "index", 0);
        qn_jw_kstr (&w, "leaseId", c->lease);
        qn_jw_kbool (&w, "success", ok);
        qn_jw_key (&w, "error");
        if (ok)
            qn_jw_null (&w);
        else
            qn_jw_strn (&w, status, slen);
        if (ok && s_col_int (res, 0, 1, &expires)) {
            char ts [32];
            qn_ts_ms (expires, ts);
            qn_jw_kstr (&w, "expiresAt", ts);
        }
        else
            qn_jw_knull (&w, "expiresAt");
        qn_jw_obj_end (&w);
        qn_jw_arr_end (&w);
        s_reply_buf (ctx, 200, &b);
    }
    s_call_free (c);
}

static void
s_extend (qn_codec_t *codec, qn_http_ctx_t *ctx)
{
    s_call_t *c = s_call_new ();
    const char *lease = qn_http_param (ctx, 0);
    uint8_t u [16];
    if (!lease || qn_uuid_parse (lease, strlen (lease), u)) {
        qn_http_reply_error (ctx, 400, "leaseId must be a valid UUID");
        goto done;
    }
    qn_uuid_format (u, c->lease);
    if (qn_http_parse_body (ctx, &c->doc))
        goto done;
    if (qn_json_type (&c->doc, 0) != QN_JSON_OBJECT) {
        qn_http_reply_error (ctx, 400, "Request body must be a JSON object");
        goto done;
    }
    int64_t seconds = 60;
    int tok = s_field (&c->doc, 0, "seconds");
    if (tok >= 0 && (qn_json_int (&c->doc, tok, &seconds) || seconds < 1 || seconds > 86400)) {
        qn_http_reply_error (ctx, 400, "seconds must be an integer between 1 and 86400");
        goto done;
    }
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array (&pk, 2);
    s_pack_cstr (&pk, c->lease);
    msgpack_pack_int64 (&pk, seconds);
    int rc = qn_codec_exec (codec, ctx, "pg_writer", QN_SQL_RENEW, NULL, sb.data, sb.size,
                            s_on_extended, c);
    msgpack_sbuffer_destroy (&sb);
    if (rc == 0)
        c = NULL;
    else
        qn_http_reply_errorf (ctx, 503, "database unavailable: %s", qn_strerror (rc));
done:
    s_call_free (c);
}

const qn_http_route_t qn_http_routes_push [] = {
    { "POST", "/api/v1/configure", s_configure, QN_AUTH_READ_WRITE },
    { "POST", "/api/v1/push", s_push, QN_AUTH_READ_WRITE },
    { "POST", "/api/v1/ack", s_ack, QN_AUTH_READ_WRITE },
    { "POST", "/api/v1/ack/batch", s_ack_batch, QN_AUTH_READ_WRITE },
    { "POST", "/api/v1/transaction", s_transaction, QN_AUTH_READ_WRITE },
    { "POST", "/api/v1/lease/:leaseId/extend", s_extend, QN_AUTH_READ_WRITE },
    { NULL, NULL, NULL, 0 }
};
