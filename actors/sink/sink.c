/*  actors/sink/sink.c - the "sink" actor: queues into an S3 bucket, exactly once
    Reads every queue of SINK_QUEUES through the broker's HTTP API as the
    consumer group SINK_GROUP and writes it into the bucket as one object
    per closed window and queue (split into parts of bounded size), in the
    Hive layout of wire/sink_format.h. docs/sink.md tells the whole story.

    Why it stages. A pop leases a partition until its messages are acked,
    so a consumer cannot hold a window's messages unacknowledged while it
    reads more of the same partition. The sink therefore acknowledges each
    popped batch in ONE broker transaction (POST /api/v1/transaction) that
    also writes the batch into the broker's kv, under
        <SINK_KV_BUCKET>/<group>/<queue>/staged/<window label>/<first message id>
    (ifVersion 0: a retry of a bundle whose answer was lost meets a 409 at
    its first operation and knows it committed). Each message is thus
    taken from the queue exactly when it is staged, once.
    When a window closes, the sink reads its staged records back, sorts
    them by (created, message id), cuts parts (SINK_PART_ROWS /
    SINK_PART_BYTES), writes each object (PUT, or multipart above
    SINK_MULTIPART_BYTES), verifies it (HEAD: length and ETag), then
    records the window as committed (kv <group>/<queue>/committed, with
    ifVersion) and deletes the staged keys. A crash anywhere before the
    committed record leaves the staged records in place: the restarted
    sink writes the same objects again, with the same keys and bytes.
    A staged key of a window at or before the committed one is garbage of
    a crash after the commit and is deleted.

    Windows close when the queue's watermark (the newest creation time
    seen) passes the window's end plus SINK_LATENESS_MS, or, when the
    queue's last pop came back empty, when the clock does. A message for a
    window already committed is late: it is staged into the window after
    the committed one and lands in that window's object (SINK_LATE=next)
    or in objects under <prefix>/late/ (SINK_LATE=prefix).

    Queues and their settings: SINK_QUEUES with the environment's
    settings, plus the sections of the SINK_CONFIG file (format,
    compression, window, lateness, late, prefix, fields per queue;
    wire/sink_config.h).

    Memory. A closing window's staged records are read back one kv value
    at a time into an unlinked temporary file (the spill file); memory
    holds one index entry per record, sorted, and one part at a time
    (SINK_PART_BYTES) with its encoded file. The gauge
    sink_window_memory_peak_bytes keeps the most held.

    Receives  START (arms the step timer), STOP
    Sends     nothing to other actors; HTTP to the broker, S3 requests
    Owns      per queue: settings, committed window, staged window list,
              watermark; a curl handle for the broker and the S3 client;
              while a window is written, its spill file (closed after)
    Failure   the broker or the bucket unavailable: the step logs once per
              streak, backs off (up to 5 s) and tries again; nothing is
              acknowledged that is not staged, and no window is recorded
              as committed before its objects are verified.
    Blocking: each step blocks this actor's thread (a pop's long-poll of
    SINK_WAIT_MS, S3 requests); a STOP waits for the step in progress.
*/
#include "actors/sink/sink.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "actors/actors.h"
#include "actors/sink/s3.h"
#include "base/buf.h"
#include "wire/json.h"
#include "wire/sink_config.h"
#include "wire/sink_format.h"

#define S_MAX_QUEUES        QN_SINK_MAX_QUEUES
#define S_BACKOFF_MIN_MS    200
#define S_BACKOFF_MAX_MS    5000
#define S_STAGE_CHUNK_BYTES (900 * 1024)    //  kv values are at most 1 MiB
#define S_DELETE_BATCH      1000
#define S_KEY_MAX           255

typedef struct {
    char *name;
    int64_t committed_ms;       //  Start of the last committed window; INT64_MIN: none
    int64_t committed_version;  //  kv version of the committed record (0: absent)
    int64_t *staged;            //  Sorted starts of windows with staged records
    size_t staged_n, staged_cap;
    int64_t watermark_us;       //  Newest creation time seen (0: none)
    bool idle;                  //  Last pop came back empty
    //  Its settings (the environment's, or its SINK_CONFIG section's)
    int64_t window_ms, lateness_ms;
    qn_sink_format_t format;    //  .fields points at fields below
    qn_sink_field_t fields [QN_SINK_MAX_FIELDS];
    char prefix [256];          //  Object key prefix, no leading/trailing '/'
    bool late_prefix;           //  SINK_LATE=prefix
} queue_t;

typedef struct {
    qn_kernel_t *kernel;
    char *url, *group, *bucket, *token;
    int64_t batch, partitions, wait_ms;
    int64_t part_rows, part_bytes, multipart_bytes;
    queue_t queues [S_MAX_QUEUES];
    size_t queue_count, next_queue;
    CURL *http;
    qn_s3_t *s3;
    bool ready;                 //  Startup state loaded
    int64_t backoff_ms;
    int64_t failing_since_ms;   //  0 when the last step succeeded
    int64_t memory_peak;        //  Most bytes held for a window being written
} self_t;

//  ------------------------------------------------------------------------
//  Configuration

//  The queues and their settings: SINK_QUEUES with the environment's
//  settings, then the SINK_CONFIG file's sections (wire/sink_config.h).
//  Returns the count, or -1 with a one-line reason in err.
static int
s_load_queues (const qn_config_t *c, qn_sink_queue_conf_t *out, char *err, size_t cap)
{
    qn_sink_queue_conf_t def;
    memset (&def, 0, sizeof def);
    snprintf (def.format, sizeof def.format, "%s", c->sink_format);
    snprintf (def.compression, sizeof def.compression, "%s", c->sink_compression);
    snprintf (def.window, sizeof def.window, "%s", c->sink_window);
    snprintf (def.late, sizeof def.late, "%s", c->sink_late);
    snprintf (def.fields, sizeof def.fields, "%s", c->sink_fields);
    def.lateness_ms = c->sink_lateness_ms;
    const char *pre = c->s3_prefix;
    while (*pre == '/')
        pre++;
    size_t pl = strlen (pre);
    while (pl && pre [pl - 1] == '/')
        pl--;
    if (strlen (c->sink_format) >= sizeof def.format || strlen (c->sink_compression) >= sizeof def.compression
    ||  strlen (c->sink_window) >= sizeof def.window || strlen (c->sink_late) >= sizeof def.late
    ||  strlen (c->sink_fields) >= sizeof def.fields || pl >= sizeof def.prefix) {
        snprintf (err, cap, "a SINK_ or S3_PREFIX setting is too long");
        return -1;
    }
    memcpy (def.prefix, pre, pl);
    if (qn_sink_queue_check (&def, 0, NULL, NULL, NULL, err, cap))
        return -1;
    int n = qn_sink_queues_split (c->sink_queues, &def, out, S_MAX_QUEUES, err, cap);
    if (n < 0)
        return -1;
    if (*c->sink_config) {
        FILE *f = fopen (c->sink_config, "rb");
        if (!f) {
            snprintf (err, cap, "SINK_CONFIG %s: %s", c->sink_config, strerror (errno));
            return -1;
        }
        qn_buf_t text = QN_BUF_INIT;
        char chunk [4096];
        size_t got;
        while ((got = fread (chunk, 1, sizeof chunk, f)) > 0 && text.len <= 1024 * 1024)
            qn_buf_append (&text, chunk, got);
        bool failed = ferror (f) != 0;
        fclose (f);
        char why [400];
        if (failed)
            snprintf (why, sizeof why, "cannot read it");
        else
        if (text.len > 1024 * 1024)
            snprintf (why, sizeof why, "larger than 1 MiB");
        else
            n = qn_sink_config_parse (text.data ? text.data : "", text.len, &def, out, (size_t) n,
                                      S_MAX_QUEUES, why, sizeof why);
        qn_buf_free (&text);
        if (failed || n < 0) {
            snprintf (err, cap, "SINK_CONFIG %s: %s", c->sink_config, failed ? "cannot read it" : why);
            return -1;
        }
    }
    if (n == 0) {
        snprintf (err, cap, "SINK_QUEUES: name at least one queue (or give SINK_CONFIG [queue] sections)");
        return -1;
    }
    return n;
}

static int s_check_rest (const qn_config_t *c, const qn_sink_queue_conf_t *qs, int n,
                         char *err, size_t cap);

int
qn_sink_check_config (const qn_config_t *c, char *err, size_t cap)
{
    qn_sink_queue_conf_t *qs = qn_zalloc (S_MAX_QUEUES * sizeof *qs);
    int n = s_load_queues (c, qs, err, cap);
    int rc = n < 0 ? -1 : s_check_rest (c, qs, n, err, cap);
    free (qs);
    return rc;
}

static int
s_check_rest (const qn_config_t *c, const qn_sink_queue_conf_t *qs, int n, char *err, size_t cap)
{
    if (!*c->sink_group || strchr (c->sink_group, '/')) {
        snprintf (err, cap, "SINK_GROUP: 1 to 64 bytes without '/'");
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (strlen (c->sink_group) + strlen (qs [i].queue) + 60 > S_KEY_MAX) {
            snprintf (err, cap, "SINK_QUEUES: queue %s with group %s is too long for a kv key "
                      "(group + queue at most %d bytes)", qs [i].queue, c->sink_group, S_KEY_MAX - 60);
            return -1;
        }
    if (strncmp (c->queen_url, "http://", 7) && strncmp (c->queen_url, "https://", 8)) {
        snprintf (err, cap, "QUEEN_URL: expected http(s)://host[:port], got '%s'", c->queen_url);
        return -1;
    }
    if (!*c->sink_kv_bucket) {
        snprintf (err, cap, "SINK_KV_BUCKET: must not be empty");
        return -1;
    }
    if (!*c->s3_endpoint || !*c->s3_bucket) {
        snprintf (err, cap, "S3_ENDPOINT and S3_BUCKET are required");
        return -1;
    }
    qn_s3_t *s3 = qn_s3_new (&(qn_s3_config_t) { c->s3_endpoint, c->s3_bucket, c->s3_region,
        c->s3_access_key_id, c->s3_secret_access_key, c->s3_path_style, 0, 0, 0 }, err, cap);
    if (!s3)
        return -1;
    qn_s3_destroy (&s3);
    return 0;
}

//  ------------------------------------------------------------------------
//  HTTP to the broker

static void
s_encode (qn_buf_t *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char) *s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
        ||  c == '-' || c == '_' || c == '.' || c == '~')
            qn_buf_putc (out, (char) c);
        else
            qn_buf_printf (out, "%%%02X", c);
    }
}

static size_t
s_on_body (char *ptr, size_t size, size_t nmemb, void *arg)
{
    qn_buf_append ((qn_buf_t *) arg, ptr, size * nmemb);
    return size * nmemb;
}

//  One request; 0 with *status set (any status), or -1 on a network
//  error (message in err).
static int
s_http (CURL *e, const char *base, const char *token, const char *method, const char *path,
        const char *body, size_t len, int64_t timeout_ms, qn_buf_t *resp, long *status,
        char *err, size_t cap)
{
    qn_buf_t url = QN_BUF_INIT;
    qn_buf_printf (&url, "%s%s", base, path);
    qn_buf_reset (resp);
    struct curl_slist *hdrs = curl_slist_append (NULL, "Content-Type: application/json");
    hdrs = curl_slist_append (hdrs, "Expect:");
    if (token && *token) {
        qn_buf_t auth = QN_BUF_INIT;
        qn_buf_printf (&auth, "Authorization: Bearer %s", token);
        hdrs = curl_slist_append (hdrs, auth.data);
        qn_buf_free (&auth);
    }
    curl_easy_reset (e);
    curl_easy_setopt (e, CURLOPT_URL, url.data);
    curl_easy_setopt (e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (e, CURLOPT_TIMEOUT_MS, (long) timeout_ms);
    curl_easy_setopt (e, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt (e, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt (e, CURLOPT_WRITEFUNCTION, s_on_body);
    curl_easy_setopt (e, CURLOPT_WRITEDATA, resp);
    if (strcmp (method, "GET")) {
        curl_easy_setopt (e, CURLOPT_CUSTOMREQUEST, method);
        if (body) {
            curl_easy_setopt (e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) len);
            curl_easy_setopt (e, CURLOPT_POSTFIELDS, body);
        }
    }
    CURLcode cc = curl_easy_perform (e);
    curl_slist_free_all (hdrs);
    qn_buf_free (&url);
    if (cc != CURLE_OK) {
        snprintf (err, cap, "%s", curl_easy_strerror (cc));
        return -1;
    }
    curl_easy_getinfo (e, CURLINFO_RESPONSE_CODE, status);
    if (!resp->data)
        qn_buf_reserve (resp, 1);
    return 0;
}

static int
s_broker (self_t *self, const char *method, const char *path, const char *body, size_t len,
          qn_buf_t *resp, long *status)
{
    char err [256];
    if (s_http (self->http, self->url, self->token, method, path, body, len, self->wait_ms + 30000,
                resp, status, err, sizeof err) == 0)
        return 0;
    qn_count (self->kernel, "sink_broker_errors", 1);
    if (!self->failing_since_ms)
        qn_warn ("sink: broker unreachable: url=%s%s error=%s", self->url, path, err);
    return -1;
}

int
qn_sink_check_remote (const qn_config_t *c, bool check_broker, char *err, size_t cap)
{
    qn_s3_t *s3 = qn_s3_new (&(qn_s3_config_t) { c->s3_endpoint, c->s3_bucket, c->s3_region,
        c->s3_access_key_id, c->s3_secret_access_key, c->s3_path_style, 2, 200,
        (uint32_t) c->s3_timeout_ms }, err, cap);
    if (!s3)
        return -1;
    qn_s3_result_t res;
    qn_s3_result_init (&res);
    int rc = qn_s3_check_bucket (s3, &res);
    if (rc)
        snprintf (err, cap, "bucket %s at %s: %s", c->s3_bucket, c->s3_endpoint, res.error);
    qn_s3_result_free (&res);
    qn_s3_destroy (&s3);
    if (rc || !check_broker)
        return rc ? -1 : 0;
    CURL *e = curl_easy_init ();
    qn_buf_t resp = QN_BUF_INIT;
    int64_t deadline = qn_now_ms () + c->sink_start_timeout_ms;
    char why [256] = "";
    for (;;) {
        long status = 0;
        if (s_http (e, c->queen_url, c->sink_auth_token, "GET", "/health", NULL, 0, 5000, &resp, &status,
                    why, sizeof why) == 0) {
            if (status == 200)
                break;
            snprintf (why, sizeof why, "GET /health answered %ld", status);
        }
        if (qn_now_ms () >= deadline) {
            snprintf (err, cap, "broker %s: %s", c->queen_url, why);
            rc = -1;
            break;
        }
        struct timespec ts = { 0, 200 * 1000000L };
        nanosleep (&ts, NULL);
    }
    qn_buf_free (&resp);
    curl_easy_cleanup (e);
    return rc;
}

//  ------------------------------------------------------------------------
//  Gauges and keys

static void
s_gauges (self_t *self, const queue_t *q)
{
    char name [400];
    snprintf (name, sizeof name, "sink_committed_window_ms{queue=\"%s\"}", q->name);
    qn_gauge_set (self->kernel, name, q->committed_ms == INT64_MIN ? 0 : q->committed_ms);
    snprintf (name, sizeof name, "sink_watermark_ms{queue=\"%s\"}", q->name);
    qn_gauge_set (self->kernel, name, q->watermark_us / 1000);
    snprintf (name, sizeof name, "sink_staged_windows{queue=\"%s\"}", q->name);
    qn_gauge_set (self->kernel, name, (int64_t) q->staged_n);
    //  Lag: how far the committed data is behind the clock (the end of
    //  the last committed window), 0 before the first commit.
    snprintf (name, sizeof name, "sink_lag_ms{queue=\"%s\"}", q->name);
    int64_t lag = q->committed_ms == INT64_MIN ? 0 : qn_wall_us () / 1000 - (q->committed_ms + q->window_ms);
    qn_gauge_set (self->kernel, name, lag < 0 ? 0 : lag);
}

static void
s_staged_prefix (const self_t *self, const queue_t *q, qn_buf_t *out)
{
    qn_buf_printf (out, "%s/%s/staged/", self->group, q->name);
}

static void
s_committed_key (const self_t *self, const queue_t *q, qn_buf_t *out)
{
    qn_buf_printf (out, "%s/%s/committed", self->group, q->name);
}

static void
s_staged_add (queue_t *q, int64_t w)
{
    size_t i = 0;
    while (i < q->staged_n && q->staged [i] < w)
        i++;
    if (i < q->staged_n && q->staged [i] == w)
        return;
    if (q->staged_n == q->staged_cap) {
        q->staged_cap = q->staged_cap ? q->staged_cap * 2 : 16;
        q->staged = qn_realloc (q->staged, q->staged_cap * sizeof (int64_t));
    }
    memmove (q->staged + i + 1, q->staged + i, (q->staged_n - i) * sizeof (int64_t));
    q->staged [i] = w;
    q->staged_n++;
}

//  Window start from a label "20251201T180000Z"; -1 when malformed.
static int
s_label_ms (const char *label, size_t len, int64_t *out)
{
    if (len != 16)
        return -1;
    char iso [32];
    snprintf (iso, sizeof iso, "%.4s-%.2s-%.2sT%.2s:%.2s:%.2sZ", label, label + 4, label + 6,
              label + 9, label + 11, label + 13);
    int64_t us;
    if (label [8] != 'T' || label [15] != 'Z' || qn_sink_parse_iso_us (iso, 20, &us))
        return -1;
    *out = us / 1000;
    return 0;
}

//  ------------------------------------------------------------------------
//  kv helpers (through the broker's routes)

//  Lists keys with `prefix` into keys (one per line). 0 or -1.
static int
s_kv_list (self_t *self, const char *prefix, qn_buf_t *keys)
{
    qn_buf_t path = QN_BUF_INIT, resp = QN_BUF_INIT, after = QN_BUF_INIT;
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    int rc = 0;
    for (;;) {
        qn_buf_reset (&path);
        qn_buf_puts (&path, "/api/v1/kv/");
        s_encode (&path, self->bucket);
        qn_buf_puts (&path, "?limit=1000&prefix=");
        s_encode (&path, prefix);
        if (after.len) {
            qn_buf_puts (&path, "&after=");
            s_encode (&path, after.data);
        }
        long status = 0;
        if (s_broker (self, "GET", path.data, NULL, 0, &resp, &status) || status != 200
        ||  qn_json_parse (&doc, resp.data, resp.len, 0)) {
            if (status && status != 200)
                qn_warn ("sink: kv list answered %ld: %s", status, resp.data);
            rc = -1;
            break;
        }
        int arr = qn_json_get (&doc, 0, "keys");
        for (int t = arr >= 0 ? qn_json_first (&doc, arr) : -1; t >= 0; t = qn_json_next_sibling (&doc, arr, t)) {
            int k = qn_json_get (&doc, t, "key");
            if (k >= 0 && qn_json_str (&doc, k, keys) == 0)
                qn_buf_putc (keys, '\n');
        }
        int next = qn_json_get (&doc, 0, "next");
        if (next < 0 || qn_json_is_null (&doc, next))
            break;
        qn_buf_reset (&after);
        qn_json_str (&doc, next, &after);
    }
    qn_json_doc_free (&doc);
    qn_buf_free (&path);
    qn_buf_free (&resp);
    qn_buf_free (&after);
    return rc;
}

//  Deletes keys (lines of `keys`) in bundles of kv.delete. Best effort.
static void
s_kv_delete_all (self_t *self, const qn_buf_t *keys)
{
    qn_buf_t body = QN_BUF_INIT, resp = QN_BUF_INIT;
    const char *p = keys->data ? keys->data : "";
    while (*p) {
        qn_buf_reset (&body);
        qn_jw_t jw;
        qn_jw_init (&jw, &body);
        qn_jw_obj (&jw);
        qn_jw_key (&jw, "operations");
        qn_jw_arr (&jw);
        int n = 0;
        while (*p && n < S_DELETE_BATCH) {
            const char *nl = strchr (p, '\n');
            size_t len = nl ? (size_t) (nl - p) : strlen (p);
            qn_jw_obj (&jw);
            qn_jw_kstr (&jw, "type", "kv.delete");
            qn_jw_kstr (&jw, "bucket", self->bucket);
            qn_jw_key (&jw, "key");
            qn_jw_strn (&jw, p, len);
            qn_jw_obj_end (&jw);
            n++;
            p += len + (nl ? 1 : 0);
        }
        qn_jw_arr_end (&jw);
        qn_jw_obj_end (&jw);
        long status = 0;
        if (s_broker (self, "POST", "/api/v1/transaction", body.data, body.len, &resp, &status)
        ||  status != 200)
            qn_warn ("sink: deleting staged keys failed (%ld); they are deleted at the next start", status);
    }
    qn_buf_free (&body);
    qn_buf_free (&resp);
}

//  ------------------------------------------------------------------------
//  Startup: committed window and staged windows of each queue

static int
s_load_queue (self_t *self, queue_t *q)
{
    qn_buf_t key = QN_BUF_INIT, path = QN_BUF_INIT, resp = QN_BUF_INIT;
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    int rc = -1;
    s_committed_key (self, q, &key);
    qn_buf_puts (&path, "/api/v1/kv/");
    s_encode (&path, self->bucket);
    qn_buf_putc (&path, '/');
    s_encode (&path, key.data);
    long status = 0;
    if (s_broker (self, "GET", path.data, NULL, 0, &resp, &status))
        goto done;
    q->committed_ms = INT64_MIN;
    q->committed_version = 0;
    if (status == 200 && qn_json_parse (&doc, resp.data, resp.len, 0) == 0) {
        int v = qn_json_get (&doc, 0, "value");
        int w = v >= 0 ? qn_json_get (&doc, v, "window") : -1;
        int ver = qn_json_get (&doc, 0, "version");
        int64_t x;
        if (w >= 0 && qn_json_int (&doc, w, &x) == 0)
            q->committed_ms = x;
        if (ver >= 0 && qn_json_int (&doc, ver, &x) == 0)
            q->committed_version = x;
    }
    else
    if (status != 404) {
        qn_warn ("sink: reading %s answered %ld", key.data, status);
        goto done;
    }
    //  Staged windows; garbage of windows already committed is deleted.
    qn_buf_t prefix = QN_BUF_INIT, keys = QN_BUF_INIT, garbage = QN_BUF_INIT;
    s_staged_prefix (self, q, &prefix);
    q->staged_n = 0;
    if (s_kv_list (self, prefix.data, &keys) == 0) {
        rc = 0;
        const char *p = keys.data ? keys.data : "";
        while (*p) {
            const char *nl = strchr (p, '\n');
            size_t len = (size_t) (nl - p);
            int64_t w;
            const char *label = p + prefix.len;
            if (len > prefix.len + 16 && s_label_ms (label, 16, &w) == 0) {
                if (q->committed_ms != INT64_MIN && w <= q->committed_ms) {
                    qn_buf_append (&garbage, p, len);
                    qn_buf_putc (&garbage, '\n');
                }
                else
                    s_staged_add (q, w);
            }
            p = nl + 1;
        }
        if (garbage.len)
            s_kv_delete_all (self, &garbage);
    }
    qn_buf_free (&prefix);
    qn_buf_free (&keys);
    qn_buf_free (&garbage);
    if (rc == 0) {
        char label [17] = "none";
        if (q->committed_ms != INT64_MIN)
            qn_sink_window_label (q->committed_ms, label);
        qn_info ("sink: queue %s: committed window %s, %zu staged window(s)", q->name, label, q->staged_n);
        s_gauges (self, q);
    }
done:
    qn_json_doc_free (&doc);
    qn_buf_free (&key);
    qn_buf_free (&path);
    qn_buf_free (&resp);
    return rc;
}

//  ------------------------------------------------------------------------
//  Consuming: pop, stage + ack in one transaction

typedef struct {
    int64_t window_ms;          //  Window it is staged into
    bool late;
    const char *id, *txn, *partition, *partition_id, *lease, *trace;
    size_t id_len, txn_len, partition_len, partition_id_len, lease_len, trace_len;
    const char *payload;
    size_t payload_len;
    int64_t created_us;
} popped_t;

//  A string token's text: the raw span when it has no escapes, else the
//  unescaped copy in `arena` (kept alive by the caller).
static const char *
s_tok_str (const qn_json_doc_t *doc, int tok, size_t *len, qn_buf_t *arena, size_t arena_cap)
{
    if (tok < 0 || qn_json_type (doc, tok) != QN_JSON_STRING)
        return NULL;
    const qn_json_tok_t *t = &doc->toks [tok];
    if (!t->has_escapes) {
        *len = t->len - 2;
        return doc->buf + t->start + 1;
    }
    for (size_t i = 0; i < arena_cap; i++)
        if (!arena [i].data) {
            qn_json_str (doc, tok, &arena [i]);
            *len = arena [i].len;
            return arena [i].data;
        }
    return NULL;
}

static int
s_cmp_popped (const void *a_, const void *b_)
{
    const popped_t *a = a_, *b = b_;
    if (a->window_ms != b->window_ms)
        return a->window_ms < b->window_ms ? -1 : 1;
    return 0;
}

//  Stages `n` popped messages of q: one transaction of kv.set (one per
//  window and chunk, ifVersion 0) + one ack per message. 0 when staged
//  (or found staged by a retry), -1 otherwise (the leases run out and
//  the broker delivers the messages again).
static int
s_stage (self_t *self, queue_t *q, popped_t *m, size_t n)
{
    qsort (m, n, sizeof *m, s_cmp_popped);      //  Stable enough: order within a window kept by index below
    qn_buf_t body = QN_BUF_INIT, resp = QN_BUF_INIT, chunk = QN_BUF_INIT;
    qn_jw_t jw;
    qn_jw_init (&jw, &body);
    qn_jw_obj (&jw);
    qn_jw_key (&jw, "operations");
    qn_jw_arr (&jw);
    size_t i = 0;
    while (i < n) {
        //  One kv value: records of one window, at most S_STAGE_CHUNK_BYTES.
        size_t start = i;
        qn_buf_reset (&chunk);
        qn_jw_t cw;
        qn_jw_init (&cw, &chunk);
        qn_jw_arr (&cw);
        while (i < n && m [i].window_ms == m [start].window_ms
               && (i == start || chunk.len + m [i].payload_len + 200 < S_STAGE_CHUNK_BYTES)) {
            qn_jw_arr (&cw);
            qn_jw_strn (&cw, m [i].id, m [i].id_len);
            qn_jw_strn (&cw, m [i].txn, m [i].txn_len);
            qn_jw_strn (&cw, m [i].partition, m [i].partition_len);
            qn_jw_int (&cw, m [i].created_us);
            if (m [i].trace)
                qn_jw_strn (&cw, m [i].trace, m [i].trace_len);
            else
                qn_jw_null (&cw);
            qn_jw_raw (&cw, m [i].payload, m [i].payload_len);
            qn_jw_int (&cw, m [i].late ? 1 : 0);
            qn_jw_arr_end (&cw);
            i++;
        }
        qn_jw_arr_end (&cw);
        char label [17];
        qn_sink_window_label (m [start].window_ms, label);
        qn_buf_t key = QN_BUF_INIT;
        s_staged_prefix (self, q, &key);
        qn_buf_printf (&key, "%s/", label);
        qn_buf_append (&key, m [start].id, m [start].id_len);
        qn_jw_obj (&jw);
        qn_jw_kstr (&jw, "type", "kv.set");
        qn_jw_kstr (&jw, "bucket", self->bucket);
        qn_jw_kstr (&jw, "key", key.data);
        qn_jw_kraw (&jw, "value", chunk.data, chunk.len);
        qn_jw_kint (&jw, "ifVersion", 0);
        qn_jw_obj_end (&jw);
        qn_buf_free (&key);
    }
    for (i = 0; i < n; i++) {
        qn_jw_obj (&jw);
        qn_jw_kstr (&jw, "type", "ack");
        qn_jw_key (&jw, "transactionId");
        qn_jw_strn (&jw, m [i].txn, m [i].txn_len);
        qn_jw_key (&jw, "partitionId");
        qn_jw_strn (&jw, m [i].partition_id, m [i].partition_id_len);
        qn_jw_kstr (&jw, "consumerGroup", self->group);
        qn_jw_key (&jw, "leaseId");
        qn_jw_strn (&jw, m [i].lease, m [i].lease_len);
        qn_jw_kstr (&jw, "status", "completed");
        qn_jw_obj_end (&jw);
    }
    qn_jw_arr_end (&jw);
    qn_jw_obj_end (&jw);

    int rc = -1;
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    for (int attempt = 0; attempt < 5; attempt++) {
        long status = 0;
        if (s_broker (self, "POST", "/api/v1/transaction", body.data, body.len, &resp, &status)) {
            struct timespec ts = { 0, 300 * 1000000L };
            nanosleep (&ts, NULL);
            continue;           //  Answer lost: the retry tells
        }
        bool ok = false;
        if (qn_json_parse (&doc, resp.data, resp.len, 0) == 0) {
            int s = qn_json_get (&doc, 0, "success");
            qn_json_bool (&doc, s, &ok);
        }
        if (status == 200 && ok) {
            rc = 0;
            break;
        }
        int fi = qn_json_get (&doc, 0, "failedIndex");
        int64_t idx = -1;
        if (status == 409 && fi >= 0 && qn_json_int (&doc, fi, &idx) == 0 && idx == 0) {
            rc = 0;             //  A retry of a bundle that had committed
            break;
        }
        if (status >= 500) {
            struct timespec ts = { 0, 300 * 1000000L };
            nanosleep (&ts, NULL);
            continue;
        }
        qn_warn ("sink: staging %zu message(s) of %s refused (%ld): %.300s", n, q->name, status, resp.data);
        break;
    }
    qn_json_doc_free (&doc);
    if (rc == 0) {
        for (i = 0; i < n; i++) {
            s_staged_add (q, m [i].window_ms);
            if (m [i].late)
                qn_count (self->kernel, "sink_late_messages", 1);
        }
        qn_count (self->kernel, "sink_messages_staged", (int64_t) n);
    }
    qn_buf_free (&body);
    qn_buf_free (&resp);
    qn_buf_free (&chunk);
    return rc;
}

//  One pop of q. Returns the number of messages staged, 0 when the pop
//  was empty, -1 on failure.
static int
s_consume (self_t *self, queue_t *q, int64_t wait_ms)
{
    qn_buf_t path = QN_BUF_INIT, resp = QN_BUF_INIT;
    qn_buf_puts (&path, "/api/v1/pop/queue/");
    s_encode (&path, q->name);
    qn_buf_printf (&path, "?batch=%lld&partitions=%lld&consumerGroup=", (long long) self->batch,
                   (long long) self->partitions);
    s_encode (&path, self->group);
    if (wait_ms > 0)
        qn_buf_printf (&path, "&wait=true&timeout=%lld", (long long) wait_ms);
    else
        qn_buf_puts (&path, "&wait=false");
    long status = 0;
    int rc = -1;
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    popped_t *m = NULL;
    qn_buf_t arena [64];
    memset (arena, 0, sizeof arena);
    if (s_broker (self, "GET", path.data, NULL, 0, &resp, &status))
        goto done;
    if (status == 204) {
        q->idle = true;
        rc = 0;
        goto done;
    }
    if (status != 200 || qn_json_parse (&doc, resp.data, resp.len, 0)) {
        if (!self->failing_since_ms)
            qn_warn ("sink: pop of %s answered %ld: %.200s", q->name, status, resp.data);
        goto done;
    }
    q->idle = false;
    int arr = qn_json_get (&doc, 0, "messages");
    int64_t count = arr >= 0 ? qn_json_size (&doc, arr) : -1;
    if (count <= 0) {
        q->idle = true;
        rc = 0;
        goto done;
    }
    m = qn_zalloc ((size_t) count * sizeof *m);
    size_t n = 0;
    for (int t = qn_json_first (&doc, arr); t >= 0; t = qn_json_next_sibling (&doc, arr, t)) {
        popped_t *p = &m [n];
        size_t cl = 0;
        const char *created = s_tok_str (&doc, qn_json_get (&doc, t, "createdAt"), &cl, arena, 64);
        p->id = s_tok_str (&doc, qn_json_get (&doc, t, "id"), &p->id_len, arena, 64);
        p->txn = s_tok_str (&doc, qn_json_get (&doc, t, "transactionId"), &p->txn_len, arena, 64);
        p->partition = s_tok_str (&doc, qn_json_get (&doc, t, "partition"), &p->partition_len, arena, 64);
        p->partition_id = s_tok_str (&doc, qn_json_get (&doc, t, "partitionId"), &p->partition_id_len, arena, 64);
        p->lease = s_tok_str (&doc, qn_json_get (&doc, t, "leaseId"), &p->lease_len, arena, 64);
        p->trace = s_tok_str (&doc, qn_json_get (&doc, t, "traceId"), &p->trace_len, arena, 64);
        int data = qn_json_get (&doc, t, "data");
        p->payload = data >= 0 ? qn_json_raw (&doc, data, &p->payload_len) : NULL;
        if (!created || !p->id || !p->txn || !p->partition || !p->partition_id || !p->lease
        ||  !p->payload || qn_sink_parse_iso_us (created, cl, &p->created_us)) {
            qn_warn ("sink: pop of %s: a message without id, transactionId, partition, "
                     "partitionId, leaseId, data or createdAt; batch left to its lease", q->name);
            goto done;
        }
        int64_t w = qn_sink_window_start (p->created_us, q->window_ms);
        if (q->committed_ms != INT64_MIN && w <= q->committed_ms) {
            p->late = true;
            w = q->committed_ms + q->window_ms;
        }
        p->window_ms = w;
        if (p->created_us > q->watermark_us)
            q->watermark_us = p->created_us;
        n++;
    }
    if (s_stage (self, q, m, n) == 0)
        rc = (int) n;
done:
    for (int i = 0; i < 64; i++)
        qn_buf_free (&arena [i]);
    free (m);
    qn_json_doc_free (&doc);
    qn_buf_free (&path);
    qn_buf_free (&resp);
    return rc;
}

//  ------------------------------------------------------------------------
//  Closing a window: read staged records, write objects, verify, commit

//  A window being written. Its staged records are read back one kv value
//  at a time and appended to a spill file (an unlinked temporary file);
//  memory holds only an index entry per record (its sort key, lengths and
//  where it is in the file) and, while a part is written, that part's
//  records and its encoded file. SINK_PART_BYTES bounds a part, so a
//  window of any size is written in bounded memory (docs/sink.md).
typedef struct {
    qn_sink_record_t rec;       //  id points at id_copy; other pointers NULL
    char *id_copy;
    uint64_t off;               //  Record bytes in the spill file
    bool trace_null;
} spilled_t;

typedef struct {
    spilled_t *v;
    size_t n, cap;
} recvec_t;

typedef struct {
    FILE *file;
    uint64_t size;
} spill_t;

//  Spill record layout: id, txn, partition, trace, payload bytes back to back.
static int
s_spill (spill_t *sp, recvec_t *v, const qn_sink_record_t *r)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 1024;
        v->v = qn_realloc (v->v, v->cap * sizeof *v->v);
    }
    spilled_t *e = &v->v [v->n];
    memset (e, 0, sizeof *e);
    e->rec = *r;
    e->id_copy = qn_strndup (r->id, r->id_len);
    e->rec.id = e->id_copy;
    e->rec.txn = e->rec.partition = e->rec.trace = e->rec.payload = NULL;
    e->trace_null = r->trace == NULL;
    e->off = sp->size;
    const void *parts [5] = { r->id, r->txn, r->partition, r->trace, r->payload };
    size_t lens [5] = { r->id_len, r->txn_len, r->partition_len, r->trace ? r->trace_len : 0, r->payload_len };
    for (int i = 0; i < 5; i++)
        if (lens [i] && fwrite (parts [i], 1, lens [i], sp->file) != lens [i])
            return -1;
    for (int i = 0; i < 5; i++)
        sp->size += lens [i];
    v->n++;
    return 0;
}

static void
s_recvec_free (recvec_t *v)
{
    for (size_t i = 0; i < v->n; i++)
        free (v->v [i].id_copy);
    free (v->v);
    memset (v, 0, sizeof *v);
}

static int
s_cmp_spilled (const void *a, const void *b)
{
    return qn_sink_record_cmp (&((const spilled_t *) a)->rec, &((const spilled_t *) b)->rec);
}

//  Uploads one object and verifies it. 0 or -1.
static int
s_upload (self_t *self, const char *key, const qn_buf_t *file, const char *content_type)
{
    qn_s3_result_t res;
    qn_s3_result_init (&res);
    int rc = -1;
    size_t part = (size_t) self->multipart_bytes;
    if (file->len <= part) {
        if (qn_s3_put (self->s3, key, file->data, file->len, content_type, &res))
            goto fail;
    }
    else {
        char id [512];
        if (qn_s3_multipart_create (self->s3, key, content_type, id, sizeof id, &res))
            goto fail;
        size_t parts = (file->len + part - 1) / part;
        char (*etags) [128] = qn_zalloc (parts * 128);
        for (size_t i = 0; i < parts; i++) {
            size_t n = file->len - i * part < part ? file->len - i * part : part;
            if (qn_s3_multipart_part (self->s3, key, id, (uint32_t) i + 1, file->data + i * part, n, &res)) {
                free (etags);
                qn_s3_result_t ab;
                qn_s3_result_init (&ab);
                qn_s3_multipart_abort (self->s3, key, id, &ab);
                qn_s3_result_free (&ab);
                goto fail;
            }
            snprintf (etags [i], 128, "%s", res.etag);
        }
        int c = qn_s3_multipart_complete (self->s3, key, id, etags, (uint32_t) parts, &res);
        free (etags);
        if (c)
            goto fail;
    }
    if (qn_s3_head (self->s3, key, &res))
        goto fail;
    if (res.content_length != (int64_t) file->len
    ||  !qn_s3_etag_matches (res.etag, file->data, file->len, file->len > part ? part : 0)) {
        snprintf (res.error, sizeof res.error, "verification failed: length %lld of %zu, etag %s",
                  (long long) res.content_length, file->len, res.etag);
        goto fail;
    }
    qn_count (self->kernel, "sink_objects_written", 1);
    qn_count (self->kernel, "sink_bytes_written", (int64_t) file->len);
    rc = 0;
    goto done;
fail:
    qn_count (self->kernel, "sink_s3_errors", 1);
    if (!self->failing_since_ms)
        qn_warn ("sink: writing s3://%s/%s failed: %s", "bucket", key, res.error);
done:
    qn_s3_result_free (&res);
    return rc;
}

static const char *
s_content_type (const qn_sink_format_t *f)
{
    if (f->kind == QN_SINK_PARQUET)
        return "application/vnd.apache.parquet";
    return f->gzip ? "application/gzip" : "application/x-ndjson";
}

//  Memory held for the window being written (index + part + file): the
//  gauge sink_window_memory_peak_bytes keeps the largest seen.
static void
s_memory_note (self_t *self, size_t bytes)
{
    if ((int64_t) bytes > self->memory_peak) {
        self->memory_peak = (int64_t) bytes;
        qn_gauge_set (self->kernel, "sink_window_memory_peak_bytes", self->memory_peak);
    }
}

//  Writes the parts of one record set under `prefix`, reading each part's
//  records back from the spill file. Returns the part count, or -1.
static int
s_write_parts (self_t *self, const queue_t *q, const char *prefix, int64_t w, recvec_t *v,
               spill_t *sp)
{
    if (v->n > 1)
        qsort (v->v, v->n, sizeof *v->v, s_cmp_spilled);
    size_t at = 0;
    uint32_t part = 0;
    qn_buf_t key = QN_BUF_INIT, file = QN_BUF_INIT, data = QN_BUF_INIT;
    qn_sink_record_t *recs = NULL;
    size_t recs_cap = 0;
    size_t index_bytes = v->cap * sizeof *v->v;
    for (size_t i = 0; i < v->n; i++)
        index_bytes += v->v [i].rec.id_len + 1;
    int rc = 0;
    while (at < v->n) {
        //  The part's length from the index (lengths only), then its bytes.
        size_t n = 0, bytes = 0;
        for (; at + n < v->n && n < (size_t) self->part_rows; n++) {
            const qn_sink_record_t *r = &v->v [at + n].rec;
            size_t rb = r->id_len + r->txn_len + r->partition_len + r->trace_len + r->payload_len + 32;
            if (n > 0 && bytes + rb > (size_t) self->part_bytes)
                break;
            bytes += rb;
        }
        if (n > recs_cap) {
            recs_cap = n;
            recs = qn_realloc (recs, recs_cap * sizeof *recs);
        }
        qn_buf_reset (&data);
        for (size_t i = 0; i < n; i++) {
            const spilled_t *e = &v->v [at + i];
            size_t len = e->rec.id_len + e->rec.txn_len + e->rec.partition_len + e->rec.trace_len
                       + e->rec.payload_len;
            qn_buf_reserve (&data, len);
            if (fseeko (sp->file, (off_t) e->off, SEEK_SET)
            ||  (len && fread (data.data + data.len, 1, len, sp->file) != len)) {
                qn_warn ("sink: reading the spill file of %s failed", q->name);
                rc = -1;
                break;
            }
            data.len += len;
        }
        if (rc)
            break;
        size_t pos = 0;
        for (size_t i = 0; i < n; i++) {
            const spilled_t *e = &v->v [at + i];
            qn_sink_record_t *r = &recs [i];
            *r = e->rec;
            r->id = data.data + pos;
            pos += r->id_len;
            r->txn = data.data + pos;
            pos += r->txn_len;
            r->partition = data.data + pos;
            pos += r->partition_len;
            r->trace = e->trace_null ? NULL : data.data + pos;
            pos += r->trace_len;
            r->payload = data.data + pos;
            pos += r->payload_len;
        }
        qn_buf_reset (&key);
        qn_buf_reset (&file);
        qn_sink_object_key (&key, prefix, q->name, w, part, qn_sink_extension (&q->format));
        if (qn_sink_file_write (&q->format, recs, n, &file)) {
            rc = -1;
            break;
        }
        s_memory_note (self, index_bytes + data.cap + file.cap + recs_cap * sizeof *recs);
        if (s_upload (self, key.data, &file, s_content_type (&q->format))) {
            rc = -1;
            break;
        }
        qn_count (self->kernel, "sink_rows_written", (int64_t) n);
        at += n;
        part++;
    }
    free (recs);
    qn_buf_free (&key);
    qn_buf_free (&file);
    qn_buf_free (&data);
    return rc ? -1 : (int) part;
}

static int
s_close_window (self_t *self, queue_t *q, int64_t w)
{
    char label [17];
    qn_sink_window_label (w, label);
    qn_buf_t prefix = QN_BUF_INIT, keys = QN_BUF_INIT, path = QN_BUF_INIT;
    s_staged_prefix (self, q, &prefix);
    qn_buf_printf (&prefix, "%s/", label);
    //  One staged value at a time in `body`; its records go to the spill
    //  file, an index entry each stays in memory.
    qn_buf_t body = QN_BUF_INIT;
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    recvec_t on_time = { 0 }, late = { 0 };
    qn_buf_t arena = QN_BUF_INIT;       //  Unescaped strings (rare)
    qn_buf_t *strs = NULL;
    size_t str_n = 0;
    spill_t sp = { tmpfile (), 0 };
    int rc = -1;
    if (!sp.file) {
        qn_warn ("sink: cannot make a spill file for %s: %s", q->name, strerror (errno));
        goto done;
    }
    if (s_kv_list (self, prefix.data, &keys))
        goto done;
    const char *p = keys.data ? keys.data : "";
    while (*p) {
        const char *nl = strchr (p, '\n');
        qn_buf_reset (&path);
        qn_buf_puts (&path, "/api/v1/kv/");
        s_encode (&path, self->bucket);
        qn_buf_putc (&path, '/');
        char *k = qn_strndup (p, (size_t) (nl - p));
        s_encode (&path, k);
        free (k);
        p = nl + 1;
        qn_buf_t *b = &body;
        for (size_t i = 0; i < str_n; i++)
            qn_buf_free (&strs [i]);
        str_n = 0;
        long status = 0;
        if (s_broker (self, "GET", path.data, NULL, 0, b, &status))
            goto done;
        if (status == 404)
            continue;           //  Gone meanwhile (another sink committed it)
        if (status != 200 || qn_json_parse (&doc, b->data, b->len, 0)) {
            qn_warn ("sink: reading staged %s answered %ld", path.data, status);
            goto done;
        }
        //  Records point into b: parse again per record set is avoided
        //  by copying token spans now.
        int v = qn_json_get (&doc, 0, "value");
        for (int r = v >= 0 ? qn_json_first (&doc, v) : -1; r >= 0; r = qn_json_next_sibling (&doc, v, r)) {
            qn_sink_record_t rec;
            memset (&rec, 0, sizeof rec);
            int f [7];
            for (int i = 0; i < 7; i++)
                f [i] = qn_json_child (&doc, r, (uint32_t) i);
            const char **dst [4] = { &rec.id, &rec.txn, &rec.partition, &rec.trace };
            size_t *dlen [4] = { &rec.id_len, &rec.txn_len, &rec.partition_len, &rec.trace_len };
            int src [4] = { f [0], f [1], f [2], f [4] };
            bool bad = f [6] < 0;
            for (int i = 0; i < 4 && !bad; i++) {
                if (i == 3 && qn_json_is_null (&doc, src [i]))
                    continue;
                if (qn_json_type (&doc, src [i]) != QN_JSON_STRING) {
                    bad = true;
                    break;
                }
                const qn_json_tok_t *t = &doc.toks [src [i]];
                if (!t->has_escapes) {
                    *dst [i] = doc.buf + t->start + 1;
                    *dlen [i] = t->len - 2;
                }
                else {
                    strs = qn_realloc (strs, (str_n + 1) * sizeof (qn_buf_t));
                    qn_buf_init (&strs [str_n]);
                    qn_json_str (&doc, src [i], &strs [str_n]);
                    *dst [i] = strs [str_n].data;
                    *dlen [i] = strs [str_n].len;
                    str_n++;
                }
            }
            int64_t late_flag = 0;
            if (bad || qn_json_int (&doc, f [3], &rec.created_us) || qn_json_int (&doc, f [6], &late_flag)) {
                qn_warn ("sink: malformed staged record in %s", prefix.data);
                goto done;
            }
            rec.payload = qn_json_raw (&doc, f [5], &rec.payload_len);
            bool to_late = late_flag && q->late_prefix;
            if (s_spill (&sp, to_late ? &late : &on_time, &rec)) {
                qn_warn ("sink: writing the spill file of %s failed: %s", q->name, strerror (errno));
                goto done;
            }
        }
        s_memory_note (self, body.cap + (on_time.cap + late.cap) * sizeof (spilled_t));
    }
    if (fflush (sp.file)) {
        qn_warn ("sink: writing the spill file of %s failed: %s", q->name, strerror (errno));
        goto done;
    }
    //  Objects: the window's own, and its late ones under <prefix>/late.
    int parts = 0, late_parts = 0;
    if (on_time.n && (parts = s_write_parts (self, q, q->prefix, w, &on_time, &sp)) < 0)
        goto done;
    if (late.n) {
        qn_buf_t lp = QN_BUF_INIT;
        qn_buf_printf (&lp, "%s%slate", q->prefix, *q->prefix ? "/" : "");
        late_parts = s_write_parts (self, q, lp.data, w, &late, &sp);
        qn_buf_free (&lp);
        if (late_parts < 0)
            goto done;
    }
    //  Commit: the committed record, compare-and-set on its version.
    {
        qn_buf_t key = QN_BUF_INIT, value = QN_BUF_INIT, resp = QN_BUF_INIT;
        s_committed_key (self, q, &key);
        qn_buf_reset (&path);
        qn_buf_puts (&path, "/api/v1/kv/");
        s_encode (&path, self->bucket);
        qn_buf_putc (&path, '/');
        s_encode (&path, key.data);
        qn_buf_printf (&path, "?ifVersion=%lld", (long long) q->committed_version);
        qn_buf_printf (&value, "{\"window\":%lld,\"label\":\"%s\",\"parts\":%d,\"lateParts\":%d,"
                       "\"rows\":%zu,\"lateRows\":%zu}", (long long) w, label, parts, late_parts,
                       on_time.n, late.n);
        long status = 0;
        int r = s_broker (self, "PUT", path.data, value.data, value.len, &resp, &status);
        if (r == 0 && status == 200 && qn_json_parse (&doc, resp.data, resp.len, 0) == 0) {
            int ver = qn_json_get (&doc, 0, "version");
            qn_json_int (&doc, ver, &q->committed_version);
            rc = 0;
        }
        else
        if (r == 0)
            qn_warn ("sink: recording window %s of %s as committed answered %ld: %.200s",
                     label, q->name, status, resp.data);
        qn_buf_free (&key);
        qn_buf_free (&value);
        qn_buf_free (&resp);
    }
    if (rc == 0) {
        q->committed_ms = w;
        memmove (q->staged, q->staged + 1, (q->staged_n - 1) * sizeof (int64_t));
        q->staged_n--;
        qn_count (self->kernel, "sink_windows_committed", 1);
        qn_info ("sink: committed %s window %s: %zu row(s) in %d object(s), %zu late in %d",
                 q->name, label, on_time.n, parts, late.n, late_parts);
        s_kv_delete_all (self, &keys);
        s_gauges (self, q);
    }
done:
    qn_buf_free (&body);
    if (sp.file)
        fclose (sp.file);
    for (size_t i = 0; i < str_n; i++)
        qn_buf_free (&strs [i]);
    free (strs);
    s_recvec_free (&on_time);
    s_recvec_free (&late);
    qn_buf_free (&arena);
    qn_json_doc_free (&doc);
    qn_buf_free (&prefix);
    qn_buf_free (&keys);
    qn_buf_free (&path);
    return rc;
}

//  Closes every window of q that is due, oldest first. 0 or -1.
static int
s_close_due (self_t *self, queue_t *q)
{
    int64_t now_ms = qn_wall_us () / 1000;
    while (q->staged_n) {
        int64_t w = q->staged [0];
        int64_t due = w + q->window_ms + q->lateness_ms;
        bool by_watermark = q->watermark_us / 1000 >= due;
        bool by_clock = q->idle && now_ms >= due;
        if (!by_watermark && !by_clock)
            break;
        if (s_close_window (self, q, w))
            return -1;
    }
    s_gauges (self, q);
    return 0;
}

//  ------------------------------------------------------------------------
//  The step: one pop per queue in turn, then due windows

static void s_schedule (self_t *self, uint32_t delay_ms);

static void
s_on_step (void *self_, void *arg)
{
    (void) arg;
    self_t *self = self_;
    if (qn_kernel_stopping (self->kernel))
        return;
    int rc = 0;
    if (!self->ready) {
        for (size_t i = 0; i < self->queue_count && rc == 0; i++)
            rc = s_load_queue (self, &self->queues [i]);
        self->ready = rc == 0;
    }
    if (rc == 0) {
        queue_t *q = &self->queues [self->next_queue];
        self->next_queue = (self->next_queue + 1) % self->queue_count;
        //  Long-poll only when every queue was idle: one queue's wait must
        //  not hold up another's backlog.
        bool all_idle = true;
        for (size_t i = 0; i < self->queue_count; i++)
            all_idle = all_idle && self->queues [i].idle;
        int n = s_consume (self, q, all_idle ? self->wait_ms / (int64_t) self->queue_count : 0);
        if (n < 0)
            rc = -1;
        for (size_t i = 0; i < self->queue_count && rc == 0; i++)
            rc = s_close_due (self, &self->queues [i]);
    }
    if (rc == 0) {
        if (self->failing_since_ms)
            qn_info ("sink: working again after %lld ms", (long long) (qn_now_ms () - self->failing_since_ms));
        self->failing_since_ms = 0;
        self->backoff_ms = 0;
        s_schedule (self, 0);
        return;
    }
    if (!self->failing_since_ms)
        self->failing_since_ms = qn_now_ms ();
    self->backoff_ms = self->backoff_ms ? self->backoff_ms * 2 : S_BACKOFF_MIN_MS;
    if (self->backoff_ms > S_BACKOFF_MAX_MS)
        self->backoff_ms = S_BACKOFF_MAX_MS;
    qn_gauge_set (self->kernel, "sink_failing", 1);
    s_schedule (self, (uint32_t) self->backoff_ms);
}

static void
s_schedule (self_t *self, uint32_t delay_ms)
{
    if (delay_ms == 0)
        qn_gauge_set (self->kernel, "sink_failing", 0);
    qn_timer_add (self->kernel, delay_ms, 0, s_on_step, NULL);
}

static int
s_on_start (void *self_, const qn_env_t *env)
{
    (void) env;
    self_t *self = self_;
    self->http = curl_easy_init ();
    if (!self->http)
        return QN_EIO;
    s_schedule (self, 0);
    return 0;
}

static int
s_on_stop (void *self_, const qn_env_t *env)
{
    (void) self_;
    (void) env;
    return QN_DONE;
}

static void
s_destroy (void **self_p)
{
    self_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->queue_count; i++) {
        free (self->queues [i].name);
        free (self->queues [i].staged);
    }
    if (self->http)
        curl_easy_cleanup (self->http);
    qn_s3_destroy (&self->s3);
    free (self->url);
    free (self->group);
    free (self->bucket);
    free (self->token);
    free (self);
    *self_p = NULL;
}

static const qn_route_t s_routes [] = {
    { QN_MSG_START, s_on_start },
    { QN_MSG_STOP, s_on_stop },
    { 0, NULL }
};

qn_actor_t *
qn_sink_new (qn_kernel_t *kernel, const qn_config_t *c)
{
    char err [256];
    self_t *self = qn_zalloc (sizeof *self);
    self->kernel = kernel;
    qn_sink_queue_conf_t *qs = qn_zalloc (S_MAX_QUEUES * sizeof *qs);
    int n = s_load_queues (c, qs, err, sizeof err);
    for (int i = 0; i < n; i++) {
        queue_t *q = &self->queues [i];
        if (qn_sink_queue_check (&qs [i], (uint32_t) c->sink_row_group_rows, &q->format, q->fields,
                                 &q->window_ms, err, sizeof err)) {
            n = -1;
            break;
        }
        q->name = qn_strdup (qs [i].queue);
        q->committed_ms = INT64_MIN;
        q->lateness_ms = qs [i].lateness_ms;
        q->late_prefix = !strcmp (qs [i].late, "prefix");
        memcpy (q->prefix, qs [i].prefix, sizeof q->prefix);
        self->queue_count = (size_t) i + 1;
    }
    free (qs);
    if (n < 0) {
        qn_error ("sink: %s", err);
        void *p = self;
        s_destroy (&p);
        return NULL;
    }
    self->url = qn_strdup (c->queen_url);
    size_t ul = strlen (self->url);
    while (ul && self->url [ul - 1] == '/')
        self->url [--ul] = 0;
    self->group = qn_strdup (c->sink_group);
    self->bucket = qn_strdup (c->sink_kv_bucket);
    self->token = qn_strdup (c->sink_auth_token);
    self->batch = c->sink_batch;
    self->partitions = c->sink_partitions;
    self->wait_ms = c->sink_wait_ms;
    self->part_rows = c->sink_part_rows;
    self->part_bytes = c->sink_part_bytes;
    self->multipart_bytes = c->sink_multipart_bytes;
    self->s3 = qn_s3_new (&(qn_s3_config_t) { c->s3_endpoint, c->s3_bucket, c->s3_region,
        c->s3_access_key_id, c->s3_secret_access_key, c->s3_path_style, (uint32_t) c->s3_retries,
        S_BACKOFF_MIN_MS, (uint32_t) c->s3_timeout_ms }, err, sizeof err);
    if (!self->s3) {
        qn_error ("sink: %s", err);
        void *p = self;
        s_destroy (&p);
        return NULL;
    }
    qn_actor_def_t def = {
        .name = "sink", .routes = s_routes, .self = self, .destroy = s_destroy
    };
    return qn_actor_spawn (kernel, &def);
}
