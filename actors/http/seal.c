/*  actors/http/seal.c - payload encryption of the write routes
    Payloads of queues with encryptionEnabled (§2.10) are sealed before
    the PUSH request, queen.bundle, queen.timer_create or
    queen_streams.cycle, so nothing downstream ever holds their plaintext
    (qn_hw_seal_then, used by the push, transaction, streams cycle and
    timer routes; qn_hw_seal_add adds a timer's payload to a call, sealed
    with a keyed digest of its plaintext for the timer's fingerprint;
    configure reports its settings through qn_hw_configured_encryption).
    Sends     with an encryption key, QN_MSG_PG_EXEC (queue settings) to
              pg_reader
    Owns      nothing: the queue-encryption cache and the key ring
              (qn_http_seal_t) belong to the codec
    Failure   a payload that cannot be sealed answers 500; a setting that
              cannot be read counts as encrypted
*/
#include "actors/http/write.h"
#include "actors/mesh/mesh.h"
#include "actors/pg/statements.h"
#include "wire/crypto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_QCONF_TTL_MS  2000    //  A queue's encryptionEnabled is asked again after this
#define S_QCONF_WAIT_MS 5000    //  Deadline of that question
#define S_QCONF_MAX     10000   //  Cached queues; the cache restarts empty beyond

// ------------------------------------------------------------------ encryption
//  Payloads of queues with encryptionEnabled (§2.10) are sealed here, before
//  the PUSH request or queen.bundle, so nothing downstream ever holds their
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
//  The state (qn_http_seal_t) belongs to the codec, which creates it on
//  first use (qn_codec_seal) and frees it with itself.
typedef struct {
    char *key;                  //  Owned: tenant, NUL, queue name
    size_t key_len;
    bool encrypted;
    int64_t checked_ms;         //  Monotonic: when the database or configure said so
} s_qconf_t;

struct qn_http_seal {
    qn_hashmap_t *queues;       //  Owned: hash of key -> s_qconf_t (owned)
    qn_crypto_keys_t *ring;     //  Owned: the settings' keys
};

//  A pending settings question: the call to finish afterwards.
typedef struct {
    qn_hw_call_t *c;            //  Owned
    qn_hw_send_fn *then;
} s_qconf_ask_t;

static const char *s_qconf_sql =
    "SELECT name, encryption_enabled FROM queen.queue_encryption ($1, $2::jsonb)";

static void s_qconf_free_entry (void *arg, uint64_t key, void *value);

qn_http_seal_t *
qn_http_seal_new (const qn_config_t *config)
{
    qn_http_seal_t *self = qn_zalloc (sizeof *self);
    self->queues = qn_hashmap_new ();
    //  The settings were checked at start: this load cannot fail.
    self->ring = qn_crypto_keys_new ();
    qn_crypto_keys_load (self->ring, config->queen_encryption_key,
                         config->queen_encryption_old_keys, NULL, 0);
    return self;
}

void
qn_http_seal_destroy (qn_http_seal_t **self_p)
{
    qn_http_seal_t *self = *self_p;
    if (!self)
        return;
    qn_hashmap_each (self->queues, s_qconf_free_entry, NULL);
    qn_hashmap_destroy (&self->queues);
    qn_crypto_keys_destroy (&self->ring);
    free (self);
    *self_p = NULL;
}

const qn_crypto_keys_t *
qn_hw_keys (qn_codec_t *codec)
{
    return qn_codec_seal (codec)->ring;
}

//  The ring when this broker encrypts (it has a current key), else NULL.
static const qn_crypto_keys_t *
s_ring (qn_codec_t *codec)
{
    const qn_crypto_keys_t *ring = qn_hw_keys (codec);
    return qn_crypto_keys_can_seal (ring) ? ring : NULL;
}

uint32_t
qn_hw_seal_add (qn_hw_call_t *c, int queue, int payload)
{
    c->extra = qn_realloc (c->extra, (c->nextra + 1) * sizeof *c->extra);
    qn_hw_extra_t *x = &c->extra [c->nextra];
    memset (x, 0, sizeof *x);
    x->queue = queue;
    x->payload = payload;
    return c->nextra++;
}

//  The queue token of payload i of the call: its push items, then its
//  extras; -1 for an ack.
static int
s_queue_tok (const qn_hw_call_t *c, uint32_t i)
{
    if (i >= c->count)
        return i - c->count < c->nextra ? c->extra [i - c->count].queue : -1;
    const qn_hw_item_t *it = qn_hw_item_at (c, i);
    return it ? it->queue : -1;
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
s_qconf_put (qn_http_seal_t *self, const char *tenant, const char *name, size_t len,
             bool encrypted)
{
    uint64_t h = s_qconf_hash (tenant, name, len);
    s_qconf_t *q = qn_hashmap_get (self->queues, h);
    if (!s_qconf_is (q, tenant, name, len)) {
        if (q)                  //  Hash collision: the newer queue wins
            s_qconf_free_entry (NULL, h, qn_hashmap_remove (self->queues, h));
        else
        if (qn_hashmap_size (self->queues) >= S_QCONF_MAX) {
            qn_hashmap_each (self->queues, s_qconf_free_entry, NULL);
            qn_hashmap_destroy (&self->queues);
            self->queues = qn_hashmap_new ();
        }
        size_t tlen = strlen (tenant);
        q = qn_zalloc (sizeof *q);
        q->key_len = tlen + 1 + len;
        q->key = qn_malloc (q->key_len);
        memcpy (q->key, tenant, tlen + 1);
        memcpy (q->key + tlen + 1, name, len);
        qn_hashmap_put (self->queues, h, q);
    }
    q->encrypted = encrypted;
    q->checked_ms = qn_now_ms ();
}

//  1 when the queue is known to be encrypted, 0 known not to be, -1 when
//  not confirmed within S_QCONF_TTL_MS.
static int
s_qconf_get (qn_http_seal_t *self, const char *tenant, const char *name, size_t len)
{
    s_qconf_t *q = qn_hashmap_get (self->queues, s_qconf_hash (tenant, name, len));
    if (!s_qconf_is (q, tenant, name, len) || qn_now_ms () - q->checked_ms > S_QCONF_TTL_MS)
        return -1;
    return q->encrypted;
}

//  Seals the payloads of the call's encrypted (or unconfirmed) queues into
//  c->sealed (push items) and c->extra (timers: with the keyed digest of
//  the plaintext, QN_HW_TIMER_DIGEST, which stands for the payload in the
//  timer's fingerprint), then hands c to `then`. Takes c; on failure
//  answers 500.
static void
s_seal_and_send (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_hw_call_t *c, qn_hw_send_fn *then)
{
    const qn_crypto_keys_t *ring = s_ring (codec);
    qn_buf_t scratch = QN_BUF_INIT;
    const char *dflt = c->ops ? "{}" : "null";      //  What an absent payload stores
    int64_t sealed = 0;
    for (uint32_t i = 0; i < c->count; i++) {
        const qn_hw_item_t *it = qn_hw_item_at (c, i);
        const char *q;
        size_t qlen;
        if (!it || qn_hw_text (&c->doc, it->queue, &scratch, &q, &qlen) < 0
        ||  s_qconf_get (qn_codec_seal (codec), ctx->tenant, q, qlen) == 0)
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
            qn_hw_call_free (c);
            return;
        }
        sealed++;
    }
    for (uint32_t i = 0; i < c->nextra; i++) {
        qn_hw_extra_t *x = &c->extra [i];
        const char *q;
        size_t qlen, len = 0;
        if (qn_hw_text (&c->doc, x->queue, &scratch, &q, &qlen) < 0
        ||  s_qconf_get (qn_codec_seal (codec), ctx->tenant, q, qlen) == 0)
            continue;
        const char *raw = x->payload >= 0 ? qn_json_raw (&c->doc, x->payload, &len) : NULL;
        if (!raw) {
            raw = "null";
            len = 4;
        }
        int rc = qn_crypto_seal (ring, raw, len, &x->sealed);
        if (!rc)
            rc = qn_crypto_digest (ring, QN_HW_TIMER_DIGEST, raw, len, x->digest);
        if (rc) {
            qn_http_reply_errorf (ctx, 500, "payload encryption failed: %s", qn_crypto_strerror (rc));
            qn_buf_free (&scratch);
            qn_hw_call_free (c);
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
    qn_hw_call_t *c = ask->c;
    qn_hw_send_fn *then = ask->then;
    free (ask);
    if (!ctx) {
        qn_hw_call_free (c);
        return;
    }
    if (res->ok) {
        qn_buf_t scratch = QN_BUF_INIT;
        for (uint32_t i = 0; i < c->count + c->nextra; i++) {
            const char *q;
            size_t qlen;
            int tok = s_queue_tok (c, i);
            if (tok >= 0 && qn_hw_text (&c->doc, tok, &scratch, &q, &qlen) >= 0
            &&  s_qconf_get (qn_codec_seal (codec), ctx->tenant, q, qlen) < 0)
                s_qconf_put (qn_codec_seal (codec), ctx->tenant, q, qlen, false);
        }
        qn_buf_free (&scratch);
        for (uint32_t r = 0; r < res->row_count; r++) {
            const char *q;
            size_t qlen;
            if (qn_hw_col_str (res, r, 0, &q, &qlen))
                s_qconf_put (qn_codec_seal (codec), ctx->tenant, q, qlen, qn_hw_col_bool (res, r, 1) == 1);
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
void
qn_hw_seal_then (qn_codec_t *codec, qn_http_ctx_t *ctx, qn_hw_call_t *c, qn_hw_send_fn *then)
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
    for (uint32_t i = 0; i < c->count + c->nextra; i++) {
        const char *q;
        size_t qlen;
        int tok = s_queue_tok (c, i);
        if (tok < 0 || qn_hw_text (&c->doc, tok, &scratch, &q, &qlen) < 0
        ||  s_qconf_get (qn_codec_seal (codec), ctx->tenant, q, qlen) >= 0)
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
        qn_pg_args_t args;
        qn_pg_args_init (&args);
        qn_pg_args_cstr (&args, ctx->tenant);
        qn_pg_args_str (&args, names.data, names.len);
        msgpack_sbuffer sb;
        msgpack_sbuffer_init (&sb);
        qn_msg_pg_exec_encode (&sb, QN_SQL_RAW, s_qconf_sql, &args);
        qn_pg_args_free (&args);
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

//  The stored options of a configured queue set its encryption at once.
void
qn_hw_configured_encryption (qn_codec_t *codec, qn_http_ctx_t *ctx, const char *queue,
                             const char *opts, size_t opts_len)
{
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    bool enc = false;
    if (qn_json_parse (&doc, opts, opts_len, 4) == 0
    &&  qn_json_bool (&doc, qn_json_get (&doc, 0, "encryptionEnabled"), &enc) == 0) {
        s_qconf_put (qn_codec_seal (codec), ctx->tenant, queue, strlen (queue), enc);
        //  Peers drop their cached settings of this queue (docs/mesh.md).
        qn_mesh_qconf_publish (qn_codec_kernel (codec), ctx->tenant, queue, strlen (queue));
        if (enc && !s_ring (codec))
            qn_warn ("queue has encryptionEnabled but QUEEN_ENCRYPTION_KEY is unset:"
                     " payloads are stored in plaintext: queue=%s", queue);
    }
    qn_json_doc_free (&doc);
}

void
qn_http_seal_forget (qn_codec_t *codec, const char *tenant, size_t tenant_len,
                     const char *queue, size_t queue_len)
{
    qn_http_seal_t *self = qn_codec_seal (codec);
    if (!queue) {
        qn_hashmap_each (self->queues, s_qconf_free_entry, NULL);
        qn_hashmap_destroy (&self->queues);
        self->queues = qn_hashmap_new ();
        return;
    }
    char *t = qn_strndup (tenant, tenant_len);
    if (strlen (t) == tenant_len) {
        uint64_t h = s_qconf_hash (t, queue, queue_len);
        s_qconf_t *q = qn_hashmap_get (self->queues, h);
        if (s_qconf_is (q, t, queue, queue_len))
            s_qconf_free_entry (NULL, h, qn_hashmap_remove (self->queues, h));
    }
    free (t);
}
