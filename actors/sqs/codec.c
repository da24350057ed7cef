/*  actors/sqs/codec.c - the SQS front door's codec actor ("codec_sqs")
    Behind its own HTTP acceptor ("sqs_acceptor", SQS_PORT). Each request
    is decoded by wire/sqs*.c (AWS query when there is no X-Amz-Target,
    AWS JSON 1.0 when there is), its Signature V4 verified against the key
    table (SQS_CREDENTIALS; wire/sigv4.h), validated, and translated by
    ops.c into the messaging core's operations; the answer goes back in the
    request's protocol, errors in its own shape.
    Receives  QN_MSG_HTTP_REQUEST / HTTP_CLOSED / HTTP_DRAINED from
              sqs_acceptor, PG_RESULT and PUSH_ANSWER replies, "committed"
              and "db" events
    Sends     QN_MSG_HTTP_RESPONSE to sqs_acceptor; PG_EXEC of the SQS
              catalogue statements to pg_writer (access keys: pg_reader);
              QN_MSG_PUSH (SendMessage(Batch)) to pg_writer
    Owns      the request contexts; the parked ReceiveMessage long-polls (a
              park table, actors/park/park.h); responses held while the
              acceptor is full (sent in order when it drains); the key table;
              the last settings read per queue (qcache.c)
    Failure   bad input, bad signatures and unknown queues get the
              protocol's error; database trouble ServiceUnavailable (503) or
              InternalFailure (500); the actor carries on
    Tenancy   a request acts for its access key's tenant: the keys of
              queen.sqs_keys (cached by akeys.c, asked on pg_reader) carry
              one; SQS_CREDENTIALS keys act for the default tenant "".
*/
#include "actors/sqs/sqs_int.h"
#include "actors/door/door.h"
#include "actors/park/park.h"
#include "actors/seal/seal.h"
#include "base/hashmap.h"
#include "base/log.h"
#include "wire/http_api.h"
#include "wire/crypto.h"
#include "wire/ids.h"
#include "wire/msg_db.h"
#include "wire/msg_http.h"
#include "wire/sigv4.h"

#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define S_ACCEPTOR          "sqs_acceptor"
#define S_MAX_SKEW_S        900
#define S_MAX_KEYS          64
#define S_SPOOL_WAIT_MS     15000   //  A push handed to the spool is answered after fsync

typedef struct {
    char *access_key;           //  Owned
    char *secret;               //  Owned
} s_key_t;

struct qn_sqs_codec {
    qn_kernel_t *kernel;        //  Not owned
    const qn_config_t *config;  //  Not owned
    qn_hashmap_t *requests;     //  id -> qn_sqs_req_t *
    uint64_t next_id;
    bool draining;
    qn_park_t *park;            //  Owned
    s_key_t keys [S_MAX_KEYS];  //  Owned: the key table of SQS_CREDENTIALS
    uint32_t key_count;
    qn_sqs_akeys_t *akeys;      //  Owned: the keys of queen.sqs_keys (akeys.c)
    qn_buf_t out;               //  Reusable
    qn_door_out_t *out_door;    //  Owned: responses to sqs_acceptor, held (in
                                //  order) while it is full (actors/door/door.h)
    qn_crypto_keys_t *ring;     //  Owned: payload keys, built on first use
    qn_sqs_qcache_t *qcache;    //  Owned: the last settings read per queue
    bool db_up;                 //  pg_writer's last "db" event
};

//  A call in flight for a request: a statement (cb) or a push (answer).
typedef struct {
    qn_sqs_codec_t *codec;
    uint64_t id;
    qn_sqs_result_fn *cb;
    qn_sqs_answer_fn *answer;
} s_call_t;

qn_kernel_t *qn_sqs_kernel (qn_sqs_codec_t *codec) { return codec->kernel; }
const qn_config_t *qn_sqs_config (qn_sqs_codec_t *codec) { return codec->config; }
qn_park_t *qn_sqs_park (qn_sqs_codec_t *codec) { return codec->park; }
bool qn_sqs_draining (qn_sqs_codec_t *codec) { return codec->draining; }
bool qn_sqs_db_up (qn_sqs_codec_t *codec) { return codec->db_up; }
qn_sqs_qcache_t *qn_sqs_qcache (qn_sqs_codec_t *codec) { return codec->qcache; }

qn_crypto_keys_t *
qn_sqs_keys (qn_sqs_codec_t *codec)
{
    return qn_seal_ring (&codec->ring, codec->config);
}

qn_sqs_req_t *
qn_sqs_request (qn_sqs_codec_t *codec, uint64_t id)
{
    return qn_hashmap_get (codec->requests, id);
}

// ------------------------------------------------------------------ the key table
//  "ak:secret,ak2:secret2" or "@path" (one pair a line; '#' comments).
static void
s_keys_add (qn_sqs_codec_t *codec, const char *pair, size_t len)
{
    while (len && (*pair == ' ' || *pair == '\t')) { pair++; len--; }
    while (len && (pair [len - 1] == ' ' || pair [len - 1] == '\r' || pair [len - 1] == '\t'))
        len--;
    if (len == 0 || pair [0] == '#')
        return;
    const char *colon = memchr (pair, ':', len);
    if (!colon || colon == pair || codec->key_count >= S_MAX_KEYS) {
        qn_warn ("sqs credential ignored: entry=%u reason=%s", codec->key_count + 1,
                 colon? "too many keys": "not accessKeyId:secretKey");
        return;
    }
    s_key_t *k = &codec->keys [codec->key_count++];
    k->access_key = qn_strndup (pair, (size_t) (colon - pair));
    k->secret = qn_strndup (colon + 1, len - (size_t) (colon - pair) - 1);
}

static void
s_keys_load (qn_sqs_codec_t *codec, const char *spec)
{
    if (!spec || !spec [0])
        return;
    char *text = NULL;
    if (spec [0] == '@') {
        FILE *f = fopen (spec + 1, "r");
        if (!f) {
            qn_error ("sqs credentials file unreadable: path=%s", spec + 1);
            return;
        }
        qn_buf_t b = QN_BUF_INIT;
        char chunk [4096];
        size_t n;
        while ((n = fread (chunk, 1, sizeof chunk, f)) > 0)
            qn_buf_append (&b, chunk, n);
        fclose (f);
        text = b.data? b.data: qn_strdup ("");
    }
    else
        text = qn_strdup (spec);
    const char *sep = spec [0] == '@'? "\n": ",";
    for (char *p = text; *p; ) {
        size_t n = strcspn (p, sep);
        s_keys_add (codec, p, n);
        p += n;
        if (*p)
            p++;
    }
    free (text);
}

static const char *
s_secret_of (qn_sqs_codec_t *codec, const char *access_key)
{
    for (uint32_t i = 0; i < codec->key_count; i++)
        if (!strcmp (codec->keys [i].access_key, access_key))
            return codec->keys [i].secret;
    return NULL;
}

//  The secret and tenant of an access key: SQS_CREDENTIALS first (the
//  default tenant), then queen.sqs_keys through the cache (akeys.c).
//  Returns a QN_SQS_AKEY_* state; secret and tenant are set with OK.
static int
s_key_of (qn_sqs_codec_t *codec, const char *access_key, const char **secret,
          char tenant [QN_SQS_TENANT_MAX])
{
    const char *s = s_secret_of (codec, access_key);
    if (s) {
        *secret = s;
        tenant [0] = 0;
        return QN_SQS_AKEY_OK;
    }
    return qn_sqs_akeys_find (codec->akeys, access_key, secret, tenant);
}

// ------------------------------------------------------------------ requests
static void
s_req_free (qn_sqs_codec_t *codec, qn_sqs_req_t *r)
{
    qn_hashmap_remove (codec->requests, r->id);
    qn_sqs_request_free (&r->req);
    free (r->path_buf);
    free (r->q.attrs_json);
    free (r->q.tags_json);
    free (r);
}

// ------------------------------------------------------------------ answering
static void
s_respond (qn_sqs_codec_t *codec, qn_sqs_req_t *r, int status, const char *content_type,
           const char *extra, const char *body, size_t len)
{
    bool keep = r->keep_alive && !codec->draining;
    qn_buf_t *out = &codec->out;
    qn_buf_reset (out);
    qn_http_response (out, status, content_type, extra, body, len, keep);
    qn_buf_t head = QN_BUF_INIT;
    msgpack_packer pk;
    msgpack_packer_init (&pk, &head, qn_door_buf_write);
    qn_msg_http_response_t m = { .conn_id = r->conn_id, .seq = r->seq, .close = !keep };
    qn_msg_http_response_encode (&pk, &m);
    qn_frame_t frame;
    frame.data = qn_buf_detach (out, &frame.len);
    qn_door_out_send (codec->out_door, head.data, head.len, &frame);
    qn_buf_free (&head);
}

void
qn_sqs_reply (qn_sqs_req_t *r, qn_buf_t *body)
{
    qn_sqs_codec_t *codec = r->codec;
    if (!r->cancelled) {
        char extra [96];
        snprintf (extra, sizeof extra, "x-amzn-RequestId: %s\r\n", r->request_id);
        s_respond (codec, r, 200, qn_sqs_content_type (r->req.proto), extra, body->data,
                   body->len);
        qn_count (codec->kernel, "sqs_responses_2xx", 1);
    }
    s_req_free (codec, r);
}

void
qn_sqs_reply_error (qn_sqs_req_t *r, const qn_sqs_error_t *err)
{
    qn_sqs_codec_t *codec = r->codec;
    if (!r->cancelled) {
        qn_buf_t body = QN_BUF_INIT;
        char qerr [160] = "", extra [320];
        int status = qn_sqs_write_error (r->req.proto, err, r->request_id, &body, qerr, sizeof qerr);
        if (r->req.proto == QN_SQS_JSON)
            snprintf (extra, sizeof extra, "x-amzn-RequestId: %s\r\nx-amzn-query-error: %s\r\n",
                      r->request_id, qerr);
        else
            snprintf (extra, sizeof extra, "x-amzn-RequestId: %s\r\n", r->request_id);
        s_respond (codec, r, status, qn_sqs_content_type (r->req.proto), extra, body.data, body.len);
        qn_buf_free (&body);
        char name [32];
        snprintf (name, sizeof name, "sqs_responses_%dxx", status / 100);
        qn_count (codec->kernel, name, 1);
    }
    s_req_free (codec, r);
}

void
qn_sqs_reply_errorf (qn_sqs_req_t *r, qn_sqs_code_t code, const char *fmt, ...)
{
    qn_sqs_error_t err = { code, "" };
    va_list ap;
    va_start (ap, fmt);
    vsnprintf (err.message, sizeof err.message, fmt, ap);
    va_end (ap);
    qn_sqs_reply_error (r, &err);
}

bool
qn_sqs_pg_unavailable (const qn_pg_result_t *res)
{
    const char *s = res->sqlstate;
    return res->timed_out || !strncmp (s, "08", 2) || !strncmp (s, "57", 2) || !strncmp (s, "53", 2);
}

void
qn_sqs_reply_pg_error (qn_sqs_req_t *r, const qn_pg_result_t *res)
{
    const char *s = res->sqlstate;
    if (qn_sqs_pg_unavailable (res)) {
        qn_sqs_reply_errorf (r, QN_SQS_E_SERVICE_UNAVAILABLE, "The database is unavailable; retry.");
        return;
    }
    qn_warn ("sqs database error: sqlstate=%s message=%s", s, res->message? res->message: "");
    qn_sqs_reply_errorf (r, QN_SQS_E_INTERNAL_FAILURE, "Internal failure (sqlstate %s).", s);
}

void
qn_sqs_queue_url (const qn_sqs_req_t *r, const char *name, size_t len, qn_buf_t *out)
{
    qn_buf_printf (out, "%s/" QN_SQS_ACCOUNT "/%.*s", r->base_url, (int) len, name);
}

// ------------------------------------------------------------------ asking
static void
s_on_call_reply (void *self_, void *arg, const qn_env_t *env)
{
    (void) self_;
    s_call_t *call = arg;
    qn_sqs_codec_t *codec = call->codec;
    qn_sqs_req_t *r = qn_hashmap_get (codec->requests, call->id);
    if (r) {
        r->pending--;
        if (r->cancelled) {
            if (r->woken)
                qn_park_settled (codec->park, r->id, false);
            if (!r->pending)
                s_req_free (codec, r);
        }
        else
        if (call->answer)
            call->answer (codec, r, env);
        else {
            qn_pg_result_t res;
            qn_pg_result_decode (env? env->body.ptr: NULL, env? env->body.len: 0, &res);
            call->cb (codec, r, &res);
            qn_pg_result_free (&res);
        }
    }
    free (call);
}

//  Sends msg as a request of r whose reply goes to call; 0 or a QN_E*.
static int
s_call (qn_sqs_codec_t *codec, qn_sqs_req_t *r, qn_msg_t *msg, uint32_t timeout_ms, s_call_t *call)
{
    int rc = qn_request (codec->kernel, msg, timeout_ms, s_on_call_reply, call);
    if (rc)
        free (call);
    else
        r->pending++;
    return rc;
}

int
qn_sqs_exec (qn_sqs_codec_t *codec, qn_sqs_req_t *r, uint32_t stmt, const qn_pg_args_t *args,
             qn_sqs_result_fn *cb)
{
    msgpack_sbuffer b;
    msgpack_sbuffer_init (&b);
    qn_msg_pg_exec_encode (&b, stmt, NULL, args);
    s_call_t *call = qn_zalloc (sizeof *call);
    *call = (s_call_t) { codec, r->id, cb, NULL };
    qn_msg_t msg = { .to = "pg_writer", .type = QN_MSG_PG_EXEC, .body = b.data, .body_len = b.size };
    int rc = s_call (codec, r, &msg, (uint32_t) codec->config->db_statement_timeout_ms + 2000, call);
    msgpack_sbuffer_destroy (&b);
    return rc;
}

int
qn_sqs_push (qn_sqs_codec_t *codec, qn_sqs_req_t *r, const char *body, size_t len,
             qn_sqs_answer_fn *answer)
{
    s_call_t *call = qn_zalloc (sizeof *call);
    *call = (s_call_t) { codec, r->id, NULL, answer };
    qn_msg_t msg = { .to = "pg_writer", .type = QN_MSG_PUSH, .body = body, .body_len = len };
    //  The write path answers within the statement timeout, or after a
    //  hand-off to the spool and its sync.
    return s_call (codec, r, &msg, (uint32_t) codec->config->db_statement_timeout_ms + 2000
                                   + S_SPOOL_WAIT_MS, call);
}

// ------------------------------------------------------------------ Signature V4
static const qn_http_header_t *
s_header (const qn_http_header_t *h, uint32_t n, const char *name)
{
    size_t len = strlen (name);
    for (uint32_t i = 0; i < n; i++)
        if (h [i].name_len == len && !strncasecmp (h [i].name, name, len))
            return &h [i];
    return NULL;
}

//  "20150830T123600Z" -> Unix seconds, or -1.
//  Verifies the request's signature (spec §3). Returns 0, or -1 with err.
//  Without verification a present header is still parsed for the key.
static int
s_verify (qn_sqs_codec_t *codec, qn_sqs_req_t *r, const char *method, const char *target,
          size_t target_len, const qn_http_header_t *h, uint32_t n, const char *body,
          size_t body_len, qn_sqs_error_t *err)
{
    bool verify = codec->config->sqs_verify_signatures;
    const qn_http_header_t *auth = s_header (h, n, "authorization");
    if (!auth) {
        if (!verify)
            return 0;
        return qn_sqs_fail (err, QN_SQS_E_MISSING_AUTH_TOKEN,
                            "Request is missing Authentication Token");
    }
    qn_sigv4_auth_t a;
    if (qn_sigv4_parse_authorization (auth->value, auth->value_len, &a) != 0) {
        if (!verify)
            return 0;
        return qn_sqs_fail (err, QN_SQS_E_INCOMPLETE_SIGNATURE,
                            "The request signature does not conform to AWS standards.");
    }
    snprintf (r->access_key, sizeof r->access_key, "%s", a.access_key);
    //  The request acts for the key's tenant (queen.sqs_keys), the
    //  default tenant for SQS_CREDENTIALS keys (and, unverified, unknown ones).
    const char *secret = NULL;
    int state = s_key_of (codec, a.access_key, &secret, r->tenant);
    if (state != QN_SQS_AKEY_OK)
        r->tenant [0] = 0;
    if (!verify)
        return 0;
    if (state == QN_SQS_AKEY_UNKNOWN)
        return qn_sqs_fail (err, QN_SQS_E_INVALID_CLIENT_TOKEN_ID,
                            "The security token included in the request is invalid.");
    if (state != QN_SQS_AKEY_OK)
        return qn_sqs_fail (err, QN_SQS_E_SERVICE_UNAVAILABLE,
                            "The access key could not be checked; retry.");
    if (strcmp (a.service, "sqs"))
        return qn_sqs_fail (err, QN_SQS_E_INCOMPLETE_SIGNATURE,
                            "Credential should be scoped to correct service: 'sqs'.");
    //  Request time: X-Amz-Date, else Date (§3.3).
    const qn_http_header_t *xdate = s_header (h, n, "x-amz-date");
    const qn_http_header_t *hdate = xdate? NULL: s_header (h, n, "date");
    char amz_date [17];
    int64_t t = qn_sigv4_request_time (xdate? xdate->value: NULL, xdate? xdate->value_len: 0,
                                       hdate? hdate->value: NULL, hdate? hdate->value_len: 0,
                                       amz_date);
    if (t < 0)
        return qn_sqs_fail (err, QN_SQS_E_INCOMPLETE_SIGNATURE,
                            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.");
    int64_t now = (int64_t) time (NULL);
    if (t > now + S_MAX_SKEW_S || t < now - S_MAX_SKEW_S)
        return qn_sqs_fail (err, QN_SQS_E_REQUEST_EXPIRED,
                            "Signature expired: %s is now earlier or later than 15 minutes from the server time.",
                            amz_date);
    if (memcmp (a.date, amz_date, 8) != 0)
        return qn_sqs_fail (err, QN_SQS_E_SIGNATURE_DOES_NOT_MATCH,
                            "Credential date does not match the request time.");
    //  host must be signed: "host" as a whole element of the list.
    char list [1030];
    snprintf (list, sizeof list, ";%s;", a.signed_headers);
    if (!strstr (list, ";host;"))
        return qn_sqs_fail (err, QN_SQS_E_INCOMPLETE_SIGNATURE, "'Host' must be a signed header.");
    char body_hash [65];
    qn_sigv4_sha256_hex (body, body_len, body_hash);
    const qn_http_header_t *ph = s_header (h, n, "x-amz-content-sha256");
    char payload [65 + 20];
    if (ph) {
        snprintf (payload, sizeof payload, "%.*s", (int) (ph->value_len < 80? ph->value_len: 80), ph->value);
        if (strcmp (payload, "UNSIGNED-PAYLOAD") && strcmp (payload, body_hash))
            return qn_sqs_fail (err, QN_SQS_E_SIGNATURE_DOES_NOT_MATCH,
                                "The provided x-amz-content-sha256 header does not match what was computed.");
    }
    else
        memcpy (payload, body_hash, sizeof body_hash);
    char *path = qn_strndup (target, target_len);
    char *q = strchr (path, '?');
    if (q)
        *q++ = 0;
    qn_sigv4_request_t sr = {
        .method = method, .path = path [0]? path: "/", .query = q? q: "", .headers = h,
        .header_count = n, .signed_headers = a.signed_headers, .payload_hash = payload,
        .amz_date = amz_date, .region = a.region, .service = a.service, .s3 = false
    };
    char expected [65];
    qn_sigv4_signature (&sr, secret, expected);
    free (path);
    if (!qn_sigv4_equal (expected, a.signature))
        return qn_sqs_fail (err, QN_SQS_E_SIGNATURE_DOES_NOT_MATCH,
                            "The request signature we calculated does not match the signature you provided.");
    return 0;
}

// ------------------------------------------------------------------ a request
static void
s_base_url (qn_sqs_codec_t *codec, qn_sqs_req_t *r, const qn_http_header_t *host)
{
    const char *pub = codec->config->sqs_public_url;
    if (pub && pub [0])
        snprintf (r->base_url, sizeof r->base_url, "%s", pub);
    else
    if (host && host->value_len > 0 && host->value_len < 120)
        snprintf (r->base_url, sizeof r->base_url, "http://%.*s", (int) host->value_len, host->value);
    else
        snprintf (r->base_url, sizeof r->base_url, "http://127.0.0.1:%lld",
                  (long long) codec->config->sqs_port);
    size_t l = strlen (r->base_url);
    while (l > 0 && r->base_url [l - 1] == '/')
        r->base_url [--l] = 0;
}

static int
s_on_request (void *self_, const qn_env_t *env)
{
    qn_sqs_codec_t *codec = self_;
    msgpack_unpacked holder;
    msgpack_unpacked_init (&holder);
    qn_msg_http_request_t m;
    if (qn_msg_http_request_decode (env->body.ptr, env->body.len, &holder, &m)) {
        msgpack_unpacked_destroy (&holder);
        return QN_EPROTO;
    }
    qn_http_header_t *h = qn_malloc ((m.header_count? m.header_count: 1) * sizeof *h);
    for (uint32_t i = 0; i < m.header_count; i++)
        qn_msg_http_request_header (&m, i, &h [i]);
    //  An access key the cache does not hold: the request waits for the
    //  database's answer (a copy of its envelope, replayed then).
    const qn_http_header_t *auth = s_header (h, m.header_count, "authorization");
    qn_sigv4_auth_t ak;
    const char *secret;
    char tenant [QN_SQS_TENANT_MAX];
    if (auth && qn_sigv4_parse_authorization (auth->value, auth->value_len, &ak) == 0
        && s_key_of (codec, ak.access_key, &secret, tenant) == QN_SQS_AKEY_MISS
        && qn_sqs_akeys_wait (codec->akeys, ak.access_key, env) == 0) {
        free (h);
        msgpack_unpacked_destroy (&holder);
        return 0;
    }
    qn_count (codec->kernel, "sqs_requests", 1);
    qn_sqs_req_t *r = qn_zalloc (sizeof *r);
    r->codec = codec;
    r->id = ++codec->next_id;
    r->conn_id = m.conn_id;
    r->seq = m.seq;
    r->keep_alive = m.keep_alive;
    qn_uuid_v4 (r->request_id);
    qn_hashmap_put (codec->requests, r->id, r);
    const char *body = env->frame_count? env->frames [0].ptr: "";
    size_t body_len = env->frame_count? env->frames [0].len: 0;
    char method [16];
    snprintf (method, sizeof method, "%.*s", (int) (m.method_len < 15? m.method_len: 15), m.method);
    size_t path_len = m.target_len;
    const char *qm = memchr (m.target, '?', m.target_len);
    if (qm)
        path_len = (size_t) (qm - m.target);
    r->path_buf = qn_strndup (m.target, path_len);
    r->path = (qn_sqs_str_t) { r->path_buf, path_len };
    s_base_url (codec, r, s_header (h, m.header_count, "host"));
    qn_sqs_error_t err = { 0, "" };
    const qn_http_header_t *target = s_header (h, m.header_count, "x-amz-target");
    r->req.proto = target? QN_SQS_JSON: QN_SQS_QUERY;
    int rc;
    if (strcmp (method, "POST") && strcmp (method, "GET"))
        rc = qn_sqs_fail (&err, QN_SQS_E_INVALID_ACTION, "Method %s is not supported.", method);
    else
        rc = s_verify (codec, r, method, m.target, m.target_len, h, m.header_count, body, body_len, &err);
    if (rc == 0) {
        if (target)
            rc = qn_sqs_decode_json (target->value, target->value_len, body, body_len, &r->req, &err);
        else
        if (!strcmp (method, "GET"))
            rc = qn_sqs_decode_query (qm? qm + 1: "", qm? m.target_len - path_len - 1: 0, &r->req, &err);
        else
            rc = qn_sqs_decode_query (body, body_len, &r->req, &err);
        r->req.proto = target? QN_SQS_JSON: QN_SQS_QUERY;
    }
    free (h);
    msgpack_unpacked_destroy (&holder);
    if (rc) {
        qn_sqs_reply_error (r, &err);
        return 0;
    }
    //  The queue: QueueUrl, else the request path (§2).
    if (!r->req.queue_url.ptr && r->path.len > 1) {
        qn_sqs_str_t name = qn_sqs_queue_from_url (r->path.ptr, r->path.len, NULL);
        if (name.len)
            r->req.queue_url = r->path;
    }
    if (qn_sqs_validate (&r->req, &err)) {
        qn_sqs_reply_error (r, &err);
        return 0;
    }
    qn_sqs_str_t name = r->req.queue_url.ptr
                      ? qn_sqs_queue_from_url (r->req.queue_url.ptr, r->req.queue_url.len, NULL)
                      : r->req.queue_name;
    if (name.ptr && name.len >= sizeof r->queue) {
        qn_sqs_reply_errorf (r, QN_SQS_E_NON_EXISTENT_QUEUE, "The specified queue does not exist.");
        return 0;
    }
    if (name.ptr)
        snprintf (r->queue, sizeof r->queue, "%.*s", (int) name.len, name.ptr);
    qn_sqs_dispatch (codec, r);
    return 0;
}

//  A request that waited for its access key (akeys.c), handled again.
static void
s_replay (void *arg, const qn_env_t *env)
{
    s_on_request (arg, env);
}

static uint64_t
s_conn_of (const void *request)
{
    return ((const qn_sqs_req_t *) request)->conn_id;
}

//  A request of a client that went away: a parked receive leaves the park
//  table; the request is freed now, or when its pending call returns.
static void
s_cancel (void *arg, void *request)
{
    qn_sqs_codec_t *codec = arg;
    qn_sqs_req_t *r = request;
    r->cancelled = true;
    if (r->parked) {
        qn_park_cancel (codec->park, r->id);
        r->parked = false;
    }
    if (!r->pending)
        s_req_free (codec, r);
}

static int
s_on_closed (void *self_, const qn_env_t *env)
{
    qn_sqs_codec_t *codec = self_;
    uint64_t conn_id;
    if (qn_msg_http_closed_decode (env->body.ptr, env->body.len, &conn_id))
        return QN_EPROTO;
    qn_door_cancel_conn (codec->requests, conn_id, s_conn_of, s_cancel, codec);
    return 0;
}

static int
s_on_drained (void *self_, const qn_env_t *env)
{
    qn_sqs_codec_t *codec = self_;
    if (qn_msg_http_drained_decode (env->body.ptr, env->body.len))
        return QN_EPROTO;
    codec->draining = true;
    qn_park_drain (codec->park);
    return 0;
}

static int
s_on_committed (void *self_, const qn_env_t *env)
{
    qn_sqs_codec_t *codec = self_;
    return qn_park_on_committed (codec->park, env);
}

static int
s_on_db (void *self_, const qn_env_t *env)
{
    qn_sqs_codec_t *codec = self_;
    bool up;
    if (qn_msg_db_health_decode (env->body.ptr, env->body.len, &up))
        return QN_EPROTO;
    codec->db_up = up;
    return 0;
}

static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    qn_sqs_codec_t *codec = self_;
    qn_subscribe (codec->kernel, "db");
    qn_park_start (codec->park);
    qn_sqs_akeys_start (codec->akeys);
    return 0;
}

static void
s_free_req (void *arg, uint64_t key, void *value)
{
    (void) arg;
    (void) key;
    qn_sqs_req_t *r = value;
    qn_sqs_request_free (&r->req);
    free (r->path_buf);
    free (r->q.attrs_json);
    free (r->q.tags_json);
    free (r);
}

static void
s_destroy (void **self_p)
{
    qn_sqs_codec_t *codec = *self_p;
    qn_hashmap_each (codec->requests, s_free_req, NULL);
    qn_hashmap_destroy (&codec->requests);
    qn_door_out_destroy (&codec->out_door);
    for (uint32_t i = 0; i < codec->key_count; i++) {
        free (codec->keys [i].access_key);
        if (codec->keys [i].secret)
            sodium_memzero (codec->keys [i].secret, strlen (codec->keys [i].secret));
        free (codec->keys [i].secret);
    }
    qn_buf_free (&codec->out);
    qn_park_destroy (&codec->park);
    qn_sqs_akeys_destroy (&codec->akeys);
    qn_crypto_keys_destroy (&codec->ring);
    qn_sqs_qcache_destroy (&codec->qcache);
    free (codec);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_HTTP_REQUEST, s_on_request },
    { QN_MSG_HTTP_CLOSED, s_on_closed },
    { QN_MSG_HTTP_DRAINED, s_on_drained },
    { QN_MSG_COMMITTED, s_on_committed },
    { QN_MSG_DB_HEALTH, s_on_db },
    { 0, NULL }
};

qn_actor_t *
qn_codec_sqs_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    qn_sqs_codec_t *codec = qn_zalloc (sizeof *codec);
    codec->kernel = kernel;
    codec->config = config;
    codec->requests = qn_hashmap_new ();
    codec->out_door = qn_door_out_new (kernel, S_ACCEPTOR, QN_MSG_HTTP_RESPONSE, "sqs_responses_held");
    codec->qcache = qn_sqs_qcache_new ();
    codec->db_up = true;            //  main connected and applied the schema
    s_keys_load (codec, config->sqs_credentials);
    codec->akeys = qn_sqs_akeys_new (kernel, config, s_replay, codec);
    qn_park_def_t park = {
        .counter_prefix = "sqs_receive", .gauge = "parked_sqs_receives",
        .wake = qn_sqs_receive_wake, .expire = qn_sqs_receive_expire, .arg = codec,
        .attempt_ms = config->db_statement_timeout_ms + 5000
    };
    codec->park = qn_park_new (kernel, &park);
    qn_actor_def_t def = {
        .name = "codec_sqs", .routes = s_routes, .self = codec, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}

qn_actor_t *
qn_sqs_acceptor_new (qn_kernel_t *kernel, const qn_config_t *config)
{
    qn_http_door_t door = { .name = S_ACCEPTOR, .codec = "codec_sqs", .port = config->sqs_port };
    return qn_http_acceptor_new (kernel, config, &door);
}
