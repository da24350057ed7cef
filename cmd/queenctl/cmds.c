/*  cmd/queenctl/cmds.c - the queenctl commands
    Every command is one function over the libqueen client in ctl->client.
    Table output parses the broker's JSON answer; --output json prints the
    answer itself (or, for push/tail/bench, the command's own JSON).
*/
#include "cmd/queenctl/queenctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

//  A GET/POST/DELETE whose answer is printed raw (json) or handed back.
static int
s_call (ctl_t *ctl, const char *method, const char *path, const char *body,
        queen_response_t *resp)
{
    queen_error_t err = { 0 };
    queen_code_t code = queen_request (ctl->client, method, path, body, resp, &err);
    int rc = code ? ctl_fail (ctl, code, &err) : 0;
    queen_error_clear (&err);
    return rc;
}

//  Appends &name=escaped(value) (or ?name= for the first) when value is set.
static void
s_query (qn_buf_t *path, const char *name, const char *value)
{
    if (!value)
        return;
    char *v = queen_escape (value);
    qn_buf_printf (path, "%c%s=%s", strchr (path->data, '?') ? '&' : '?', name, v);
    free (v);
}

static char *
s_path (const char *fmt, const char *a, const char *b)
{
    char *ea = queen_escape (a), *eb = b ? queen_escape (b) : NULL;
    qn_buf_t p = QN_BUF_INIT;
    qn_buf_printf (&p, fmt, ea, eb);
    free (ea);
    free (eb);
    return qn_buf_detach (&p, NULL);
}

//  ---------------------------------------------------------------- status
static int
cmd_status (ctl_t *ctl, const ctl_args_t *a)
{
    (void) a;
    queen_response_t health = { 0 }, overview = { 0 }, maint = { 0 };
    queen_error_t err = { 0 };
    queen_code_t hc = queen_request (ctl->client, "GET", "/health", NULL, &health, &err);
    if (hc == QUEEN_ERR_CONNECT || hc == QUEEN_ERR_TIMEOUT) {
        int rc = ctl_fail (ctl, hc, &err);
        queen_error_clear (&err);
        return rc;
    }
    int rc = s_call (ctl, "GET", "/api/v1/resources/overview", NULL, &overview);
    if (!rc)
        rc = s_call (ctl, "GET", "/api/v1/system/maintenance", NULL, &maint);
    if (!rc && ctl->json) {
        printf ("{\"server\":\"%s\",\"healthy\":%s,\"health\":%s,\"overview\":%s,\"maintenance\":%s}\n",
                ctl->server, hc == QUEEN_OK ? "true" : "false",
                health.body ? health.body : "null", overview.body, maint.body);
    }
    else if (!rc) {
        qn_json_doc_t h, o, m;
        qn_json_doc_init (&h);
        qn_json_doc_init (&o);
        qn_json_doc_init (&m);
        bool hok = health.body && qn_json_parse (&h, health.body, health.len, 0) == 0;
        if (ctl_parse (ctl, &o, &overview) || ctl_parse (ctl, &m, &maint))
            rc = CTL_EXIT_FAILED;
        else {
            const char *hdr [] = { "FIELD", "VALUE" };
            ctl_table_t t;
            ctl_table_init (&t, 2, hdr);
            char *v;
            qn_buf_t b = QN_BUF_INIT;
#define ROW(k, ...) do { qn_buf_reset (&b); qn_buf_printf (&b, __VA_ARGS__); \
                         ctl_table_add (&t, (char *[]) { strdup (k), strdup (b.data) }); } while (0)
            ROW ("server", "%s%s%s", ctl->server, ctl->context ? "  context " : "",
                 ctl->context ? ctl->context : "");
            char *st = hok ? ctl_jtext (&h, 0, "status") : NULL;
            char *db = hok ? ctl_jtext (&h, 0, "database") : NULL;
            ROW ("health", "%s (database %s)", st ? st : "unknown", db ? db : "unknown");
            free (st);
            free (db);
            const char *keys [] = { "queues", "partitions", "namespaces", "tasks" };
            for (int i = 0; i < 4; i++) {
                v = ctl_jtext (&o, 0, keys [i]);
                ROW (keys [i], "%s", v ? v : "-");
                free (v);
            }
            char *mt [6];
            const char *mk [] = { "messages.total", "messages.pending", "messages.processing",
                                  "messages.completed", "messages.deadLetter", "lag.time.max" };
            for (int i = 0; i < 6; i++)
                mt [i] = ctl_jtext (&o, 0, mk [i]);
            ROW ("messages", "total %s  pending %s  processing %s  completed %s  dead-letter %s",
                 mt [0] ? mt [0] : "-", mt [1] ? mt [1] : "-", mt [2] ? mt [2] : "-",
                 mt [3] ? mt [3] : "-", mt [4] ? mt [4] : "-");
            ROW ("max lag", "%s s", mt [5] ? mt [5] : "0");
            for (int i = 0; i < 6; i++)
                free (mt [i]);
            char *pm = ctl_jtext (&m, 0, "maintenanceMode");
            char *pp = ctl_jtext (&m, 0, "popMaintenanceMode");
            char *bm = ctl_jtext (&m, 0, "bufferedMessages");
            ROW ("maintenance", "push %s  pop %s  spooled %s",
                 pm && !strcmp (pm, "true") ? "ON" : "off", pp && !strcmp (pp, "true") ? "ON" : "off",
                 bm ? bm : "0");
            free (pm);
            free (pp);
            free (bm);
#undef ROW
            qn_buf_free (&b);
            ctl_table_print (&t, stdout);
            ctl_table_free (&t);
        }
        qn_json_doc_free (&h);
        qn_json_doc_free (&o);
        qn_json_doc_free (&m);
    }
    if (!rc && hc != QUEEN_OK)
        rc = ctl_fail (ctl, hc, &err);
    queen_error_clear (&err);
    queen_response_free (&health);
    queen_response_free (&overview);
    queen_response_free (&maint);
    return rc;
}

//  ---------------------------------------------------------------- queues
static int
cmd_queues (ctl_t *ctl, const ctl_args_t *a)
{
    queen_response_t resp = { 0 };
    char *path = a->npos ? s_path ("/api/v1/resources/queues/%s", a->pos [0], NULL)
                         : strdup ("/api/v1/resources/queues");
    int rc = s_call (ctl, "GET", path, NULL, &resp);
    free (path);
    if (rc || ctl->json) {
        if (!rc)
            ctl_print_raw (&resp);
        queen_response_free (&resp);
        return rc;
    }
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    if (ctl_parse (ctl, &doc, &resp))
        rc = CTL_EXIT_FAILED;
    else if (a->npos) {
        const char *hdr [] = { "PARTITION", "TOTAL", "PENDING", "PROCESSING", "COMPLETED", "DEAD", "NEWEST" };
        ctl_table_t t;
        ctl_table_init (&t, 7, hdr);
        int parts = qn_json_get (&doc, 0, "partitions");
        for (int p = qn_json_first (&doc, parts); p >= 0; p = qn_json_next_sibling (&doc, parts, p))
            ctl_table_add (&t, (char *[]) {
                ctl_jtext (&doc, p, "name"), ctl_jtext (&doc, p, "stats.total"),
                ctl_jtext (&doc, p, "stats.pending"), ctl_jtext (&doc, p, "stats.processing"),
                ctl_jtext (&doc, p, "stats.completed"), ctl_jtext (&doc, p, "stats.deadLetter"),
                ctl_jtext (&doc, p, "newestMessage") });
        ctl_table_print (&t, stdout);
        ctl_table_free (&t);
    }
    else {
        const char *hdr [] = { "QUEUE", "NAMESPACE", "TASK", "PARTITIONS", "TOTAL", "PENDING", "PROCESSING", "CREATED" };
        ctl_table_t t;
        ctl_table_init (&t, 8, hdr);
        int qs = qn_json_get (&doc, 0, "queues");
        for (int q = qn_json_first (&doc, qs); q >= 0; q = qn_json_next_sibling (&doc, qs, q))
            ctl_table_add (&t, (char *[]) {
                ctl_jtext (&doc, q, "name"), ctl_jtext (&doc, q, "namespace"), ctl_jtext (&doc, q, "task"),
                ctl_jtext (&doc, q, "partitions"), ctl_jtext (&doc, q, "messages.total"),
                ctl_jtext (&doc, q, "messages.pending"), ctl_jtext (&doc, q, "messages.processing"),
                ctl_jtext (&doc, q, "createdAt") });
        ctl_table_print (&t, stdout);
        ctl_table_free (&t);
    }
    qn_json_doc_free (&doc);
    queen_response_free (&resp);
    return rc;
}

//  ---------------------------------------------------------------- push
typedef struct {
    int64_t queued, duplicate, buffered, failed;
} s_push_counts_t;

static queen_code_t
s_push_flush (ctl_t *ctl, queen_item_t *items, char **lines, size_t *n, s_push_counts_t *c,
              queen_error_t *err)
{
    if (*n == 0)
        return QUEEN_OK;
    queen_push_result_t *res = NULL;
    queen_code_t code = queen_push (ctl->client, items, *n, &res, NULL, err);
    for (size_t i = 0; code == QUEEN_OK && i < *n; i++) {
        const char *s = res [i].status ? res [i].status : "";
        if (!strcmp (s, "queued"))
            c->queued++;
        else if (!strcmp (s, "duplicate"))
            c->duplicate++;
        else if (!strcmp (s, "buffered"))
            c->buffered++;
        else
            c->failed++;
    }
    queen_push_results_free (res, *n);
    for (size_t i = 0; i < *n; i++)
        free (lines [i]);
    *n = 0;
    return code;
}

static int
cmd_push (ctl_t *ctl, const ctl_args_t *a)
{
    if (a->npos < 1)
        return ctl_usage (ctl, "push needs a queue");
    const char *queue = a->pos [0];
    const char *file = ctl_opt (a, "file");
    if (!file && a->npos > 1)
        file = a->pos [1];
    const char *partition = ctl_opt (a, "partition");
    int64_t batch = ctl_opt_int (ctl, a, "batch", 500);
    if (batch < 1 || batch > 10000)
        return ctl_usage (ctl, "--batch must be 1..10000");
    bool items_mode = ctl_flag (a, "items");
    FILE *in = stdin;
    int64_t total_bytes = 0;
    if (file && strcmp (file, "-")) {
        in = fopen (file, "r");
        if (!in) {
            fprintf (stderr, "queenctl: push: %s: %s\n", file, strerror (errno));
            return CTL_EXIT_USAGE;
        }
        struct stat st;
        if (fstat (fileno (in), &st) == 0 && S_ISREG (st.st_mode))
            total_bytes = st.st_size;
    }
    queen_item_t *items = calloc ((size_t) batch, sizeof *items);
    char **lines = calloc ((size_t) batch, sizeof *lines);
    //  Items mode keeps the per-line fields alive until the flush
    char **extra = calloc ((size_t) batch * 3, sizeof *extra);
    size_t n = 0;
    s_push_counts_t c = { 0 };
    queen_error_t err = { 0 };
    queen_code_t code = QUEEN_OK;
    int rc = 0;
    int64_t t0 = ctl_now_ms (), lineno = 0, bytes = 0, sent = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    while (!ctl_stop && (len = getline (&line, &cap, in)) >= 0) {
        lineno++;
        bytes += len;
        while (len > 0 && (line [len - 1] == '\n' || line [len - 1] == '\r'))
            line [--len] = 0;
        if (len == 0)
            continue;
        if (qn_json_parse (&doc, line, (size_t) len, 0) != 0) {
            fprintf (stderr, "queenctl: push: line %lld is not JSON: %s\n", (long long) lineno, doc.err);
            rc = CTL_EXIT_USAGE;
            break;
        }
        lines [n] = strndup (line, (size_t) len);
        queen_item_t *it = &items [n];
        *it = (queen_item_t) { .queue = queue, .partition = partition, .payload = lines [n] };
        if (items_mode) {
            if (qn_json_type (&doc, 0) != QN_JSON_OBJECT) {
                fprintf (stderr, "queenctl: push: line %lld: --items wants objects\n", (long long) lineno);
                free (lines [n]);
                rc = CTL_EXIT_USAGE;
                break;
            }
            char **e = &extra [n * 3];
            free (e [0]); free (e [1]); free (e [2]);
            e [0] = ctl_jtext (&doc, 0, "partition");
            e [1] = ctl_jtext (&doc, 0, "transactionId");
            e [2] = ctl_jtext (&doc, 0, "payload");
            int ptok = qn_json_get (&doc, 0, "payload");
            if (ptok >= 0 && qn_json_type (&doc, ptok) == QN_JSON_STRING) {
                //  A string payload stays a JSON string
                size_t rl;
                const char *raw = qn_json_raw (&doc, ptok, &rl);
                free (e [2]);
                e [2] = strndup (raw, rl);
            }
            if (e [0])
                it->partition = e [0];
            it->transaction_id = e [1];
            it->payload = e [2] ? e [2] : "null";
        }
        n++;
        if (n == (size_t) batch) {
            sent += (int64_t) n;
            code = s_push_flush (ctl, items, lines, &n, &c, &err);
            if (code)
                break;
        }
        double secs = (double) (ctl_now_ms () - t0) / 1000.0;
        double rate = secs > 0 ? (double) (sent + (int64_t) n) / secs : 0;
        if (total_bytes > 0) {
            char bar [128];
            ctl_bar (bar, sizeof bar, 30, (double) bytes, (double) total_bytes);
            ctl_live (ctl, false, "push %s %s %3.0f%%  %lld msgs  %.0f msg/s", queue, bar,
                      100.0 * (double) bytes / (double) total_bytes, (long long) sent, rate);
        }
        else
            ctl_live (ctl, false, "push %s: %lld read, %lld pushed  %.0f msg/s", queue,
                      (long long) (sent + (int64_t) n), (long long) sent, rate);
    }
    if (!code) {
        //  Everything read before a bad line is pushed, nothing after it
        sent += (int64_t) n;
        code = s_push_flush (ctl, items, lines, &n, &c, &err);
    }
    for (size_t i = 0; i < n; i++)
        free (lines [i]);
    ctl_live_end (ctl);
    double secs = (double) (ctl_now_ms () - t0) / 1000.0;
    int64_t done = c.queued + c.duplicate + c.buffered + c.failed;
    if (code && !rc)
        rc = ctl_fail (ctl, code, &err);
    if (!rc && c.failed)
        rc = CTL_EXIT_FAILED;
    if (ctl->json)
        printf ("{\"queue\":\"%s\",\"pushed\":%lld,\"queued\":%lld,\"duplicate\":%lld,\"buffered\":%lld,"
                "\"failed\":%lld,\"seconds\":%.3f,\"rate\":%.1f}\n", queue, (long long) done,
                (long long) c.queued, (long long) c.duplicate, (long long) c.buffered,
                (long long) c.failed, secs, secs > 0 ? (double) done / secs : 0);
    else if (!ctl->quiet)
        printf ("pushed %lld messages to %s (%lld queued, %lld duplicate, %lld buffered, %lld failed) "
                "in %.2f s, %.0f msg/s\n", (long long) done, queue, (long long) c.queued,
                (long long) c.duplicate, (long long) c.buffered, (long long) c.failed, secs,
                secs > 0 ? (double) done / secs : 0);
    if (ctl_stop && !rc)
        rc = CTL_EXIT_INTERRUPTED;
    qn_json_doc_free (&doc);
    for (int64_t i = 0; i < batch * 3; i++)
        free (extra [i]);
    free (extra);
    free (line);
    free (items);
    free (lines);
    queen_error_clear (&err);
    if (in != stdin)
        fclose (in);
    return rc;
}

//  ---------------------------------------------------------------- tail
static void
s_print_message (const queen_batch_t *b, const queen_message_t *m)
{
    qn_buf_t out = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &out);
    qn_jw_obj (&w);
    qn_jw_kstr (&w, "queue", b->queue);
    qn_jw_kstr (&w, "partition", m->partition);
    qn_jw_kstr (&w, "partitionId", m->partition_id);
    qn_jw_kstr (&w, "id", m->id);
    qn_jw_kstr (&w, "transactionId", m->transaction_id);
    qn_jw_kstr (&w, "createdAt", m->created_at);
    if (m->consumer_group)
        qn_jw_kstr (&w, "consumerGroup", m->consumer_group);
    if (m->trace_id)
        qn_jw_kstr (&w, "traceId", m->trace_id);
    qn_jw_kstr (&w, "leaseId", m->lease_id);
    qn_jw_kraw (&w, "data", m->data ? m->data : "null", m->data ? m->data_len : 4);
    qn_jw_obj_end (&w);
    fwrite (out.data, 1, out.len, stdout);
    fputc ('\n', stdout);
    qn_buf_free (&out);
}

static int
cmd_tail (ctl_t *ctl, const ctl_args_t *a)
{
    if (a->npos < 1)
        return ctl_usage (ctl, "tail needs a queue");
    const char *queue = a->pos [0];
    bool follow = ctl_flag (a, "follow") || ctl_flag (a, "f");
    bool no_ack = ctl_flag (a, "no-ack");
    int64_t limit = ctl_opt_int (ctl, a, "limit", 0);
    int64_t batch = ctl_opt_int (ctl, a, "batch", 100);
    int64_t wait_ms = ctl_opt_int (ctl, a, "wait-ms", 1000);
    if (batch < 1 || batch > 10000 || limit < 0 || wait_ms < 0)
        return ctl_usage (ctl, "--batch 1..10000, --limit >= 0, --wait-ms >= 0");
    queen_pop_opts_t po = {
        .partition = ctl_opt (a, "partition"), .consumer_group = ctl_opt (a, "group"),
        .subscription_mode = ctl_opt (a, "from"), .wait = follow, .timeout_ms = wait_ms,
        .partitions = (int) ctl_opt_int (ctl, a, "partitions", 0),
    };
    int64_t seen = 0, t0 = ctl_now_ms ();
    queen_error_t err = { 0 };
    int rc = 0;
    while (!ctl_stop && !(limit && seen >= limit)) {
        po.batch = (int) (limit && limit - seen < batch ? limit - seen : batch);
        queen_batch_t b;
        queen_code_t code = queen_pop (ctl->client, queue, &po, &b, &err);
        if (code) {
            ctl_live_end (ctl);
            rc = ctl_fail (ctl, code, &err);
            break;
        }
        if (b.count == 0) {
            queen_batch_free (&b);
            if (!follow)
                break;
            ctl_live (ctl, true, "tail %s%s%s: %lld messages, waiting... (Ctrl-C to stop)", queue,
                      po.consumer_group ? " group " : "", po.consumer_group ? po.consumer_group : "",
                      (long long) seen);
            continue;
        }
        ctl_live_end (ctl);
        for (size_t i = 0; i < b.count; i++)
            s_print_message (&b, &b.messages [i]);
        fflush (stdout);
        seen += (int64_t) b.count;
        if (!no_ack) {
            code = queen_ack_all (ctl->client, &b, "completed", &err);
            if (code) {
                rc = ctl_fail (ctl, code, &err);
                queen_batch_free (&b);
                break;
            }
        }
        queen_batch_free (&b);
        double secs = (double) (ctl_now_ms () - t0) / 1000.0;
        ctl_live (ctl, true, "tail %s: %lld messages  %.0f msg/s", queue, (long long) seen,
                  secs > 0 ? (double) seen / secs : 0);
    }
    ctl_live_end (ctl);
    queen_error_clear (&err);
    if (!rc && ctl_stop && !follow)
        rc = CTL_EXIT_INTERRUPTED;
    return rc;
}

//  ---------------------------------------------------------------- ack
static int
cmd_ack (ctl_t *ctl, const ctl_args_t *a)
{
    const char *pid = ctl_opt (a, "partition-id");
    if (a->npos < 1 || !pid)
        return ctl_usage (ctl, "ack needs a transaction id and --partition-id");
    bool failed = ctl_flag (a, "failed");
    queen_ack_t ack = { .transaction_id = a->pos [0], .partition_id = pid,
                        .lease_id = ctl_opt (a, "lease"), .status = failed ? "failed" : "completed",
                        .error = ctl_opt (a, "error") };
    queen_error_t err = { 0 };
    queen_code_t code = queen_ack (ctl->client, &ack, ctl_opt (a, "group"), &err);
    int rc = code ? ctl_fail (ctl, code, &err) : 0;
    if (!rc && ctl->json)
        printf ("{\"acked\":true,\"transactionId\":\"%s\",\"status\":\"%s\"}\n", a->pos [0], ack.status);
    else if (!rc && !ctl->quiet)
        printf ("acked %s (%s)\n", a->pos [0], ack.status);
    queen_error_clear (&err);
    return rc;
}

//  ---------------------------------------------------------------- dlq
static void
s_ids_json (qn_jw_t *w, const ctl_args_t *a, int from)
{
    if (a->npos <= from)
        return;
    qn_jw_key (w, "ids");
    qn_jw_arr (w);
    for (int i = from; i < a->npos; i++)
        qn_jw_str (w, a->pos [i]);
    qn_jw_arr_end (w);
}

static int
cmd_dlq (ctl_t *ctl, const ctl_args_t *a)
{
    const char *sub = a->npos ? a->pos [0] : "list";
    const char *queue = ctl_opt (a, "queue");
    const char *group = ctl_opt (a, "group");
    const char *partition = ctl_opt (a, "partition");
    queen_response_t resp = { 0 };
    int rc;
    if (!strcmp (sub, "list")) {
        qn_buf_t path = QN_BUF_INIT;
        qn_buf_puts (&path, "/api/v1/dlq");
        s_query (&path, "queue", queue);
        s_query (&path, "consumerGroup", group);
        s_query (&path, "partition", partition);
        s_query (&path, "limit", ctl_opt (a, "limit"));
        rc = s_call (ctl, "GET", path.data, NULL, &resp);
        qn_buf_free (&path);
        if (!rc && ctl->json)
            ctl_print_raw (&resp);
        else if (!rc) {
            qn_json_doc_t doc;
            qn_json_doc_init (&doc);
            if (ctl_parse (ctl, &doc, &resp))
                rc = CTL_EXIT_FAILED;
            else {
                const char *hdr [] = { "DLQ_ID", "QUEUE", "PARTITION", "GROUP", "TRANSACTION", "FAILED_AT", "ERROR" };
                ctl_table_t t;
                ctl_table_init (&t, 7, hdr);
                int ms = qn_json_get (&doc, 0, "messages");
                for (int m = qn_json_first (&doc, ms); m >= 0; m = qn_json_next_sibling (&doc, ms, m))
                    ctl_table_add (&t, (char *[]) {
                        ctl_jtext (&doc, m, "dlqId"), ctl_jtext (&doc, m, "queue"),
                        ctl_jtext (&doc, m, "partition"), ctl_jtext (&doc, m, "consumerGroup"),
                        ctl_jtext (&doc, m, "transactionId"), ctl_jtext (&doc, m, "failedAt"),
                        ctl_jtext (&doc, m, "errorMessage") });
                ctl_table_print (&t, stdout);
                ctl_table_free (&t);
                char *total = ctl_jtext (&doc, 0, "total");
                if (!ctl->quiet)
                    printf ("total %s\n", total ? total : "?");
                free (total);
            }
            qn_json_doc_free (&doc);
        }
    }
    else if (!strcmp (sub, "requeue") || !strcmp (sub, "delete")) {
        if (!queue)
            return ctl_usage (ctl, "dlq %s needs --queue", sub);
        bool requeue = !strcmp (sub, "requeue");
        qn_buf_t body = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &body);
        qn_jw_obj (&w);
        qn_jw_kstr (&w, "queue", queue);
        if (group)
            qn_jw_kstr (&w, "consumerGroup", group);
        if (partition)
            qn_jw_kstr (&w, "partition", partition);
        s_ids_json (&w, a, 1);
        qn_jw_obj_end (&w);
        rc = s_call (ctl, requeue ? "POST" : "DELETE", requeue ? "/api/v1/dlq/requeue" : "/api/v1/dlq",
                     body.data, &resp);
        qn_buf_free (&body);
        if (!rc && ctl->json)
            ctl_print_raw (&resp);
        else if (!rc) {
            qn_json_doc_t doc;
            qn_json_doc_init (&doc);
            if (ctl_parse (ctl, &doc, &resp))
                rc = CTL_EXIT_FAILED;
            else {
                char *n = ctl_jtext (&doc, 0, requeue ? "requeued" : "deleted");
                printf ("%s %s dead letter(s) of %s\n", requeue ? "requeued" : "deleted", n ? n : "0", queue);
                free (n);
            }
            qn_json_doc_free (&doc);
        }
    }
    else
        return ctl_usage (ctl, "dlq: unknown subcommand %s (list, requeue, delete)", sub);
    queen_response_free (&resp);
    return rc;
}

//  ---------------------------------------------------------- seek/replay
//  seek GROUP QUEUE --to-end | --time TS; with --partition P also --offset X.
static int
s_seek (ctl_t *ctl, const ctl_args_t *a, bool replay)
{
    if (a->npos < 2)
        return ctl_usage (ctl, "%s needs a consumer group and a queue", replay ? "replay" : "seek");
    const char *group = a->pos [0], *queue = a->pos [1];
    const char *partition = ctl_opt (a, "partition");
    const char *time = ctl_opt (a, replay ? "since" : "time");
    const char *offset = ctl_opt (a, "offset");
    bool to_end = !replay && ctl_flag (a, "to-end");
    if (replay && !time && !offset)
        time = "1970-01-01T00:00:00Z";      //  Everything again
    if (!replay && !to_end && !time && !offset)
        return ctl_usage (ctl, "seek needs --to-end, --time TS or (with --partition) --offset X");
    if (offset && !partition)
        return ctl_usage (ctl, "--offset needs --partition");
    if ((to_end ? 1 : 0) + (time ? 1 : 0) + (offset ? 1 : 0) > 1)
        return ctl_usage (ctl, "give one of --to-end, --time/--since, --offset");
    qn_buf_t body = QN_BUF_INIT;
    qn_jw_t w;
    qn_jw_init (&w, &body);
    qn_jw_obj (&w);
    if (to_end && !partition)
        qn_jw_kbool (&w, "toEnd", true);
    if (time)
        qn_jw_kstr (&w, "timestamp", time);
    if (offset) {
        char *end;
        long long n = strtoll (offset, &end, 10);
        if (*offset && !*end)
            qn_jw_kint (&w, "offset", n);
        else
            qn_jw_kstr (&w, "offset", offset);
    }
    qn_jw_obj_end (&w);
    char *g = queen_escape (group), *q = queen_escape (queue);
    qn_buf_t path = QN_BUF_INIT;
    qn_buf_printf (&path, "/api/v1/consumer-groups/%s/queues/%s", g, q);
    if (partition) {
        char *p = queen_escape (partition);
        qn_buf_printf (&path, "/partitions/%s", p);
        free (p);
    }
    qn_buf_puts (&path, "/seek");
    free (g);
    free (q);
    queen_response_t resp = { 0 };
    int rc = s_call (ctl, "POST", path.data, body.data, &resp);
    if (!rc && ctl->json)
        ctl_print_raw (&resp);
    else if (!rc && !ctl->quiet) {
        qn_json_doc_t doc;
        qn_json_doc_init (&doc);
        if (ctl_parse (ctl, &doc, &resp) == 0) {
            char *n = ctl_jtext (&doc, 0, partition ? "cursor" : "partitionsUpdated");
            if (partition)
                printf ("group %s on %s/%s moved (cursor %s)\n", group, queue, partition, n ? n : "-");
            else
                printf ("group %s on %s moved %s: %s partition(s) updated\n", group, queue,
                        to_end ? "to the end" : "to the time", n ? n : "0");
            free (n);
        }
        qn_json_doc_free (&doc);
    }
    queen_response_free (&resp);
    qn_buf_free (&path);
    qn_buf_free (&body);
    return rc;
}

static int
cmd_seek (ctl_t *ctl, const ctl_args_t *a)
{
    return s_seek (ctl, a, false);
}

static int
cmd_replay (ctl_t *ctl, const ctl_args_t *a)
{
    return s_seek (ctl, a, true);
}

//  ---------------------------------------------------------------- lag
static int
cmd_lag (ctl_t *ctl, const ctl_args_t *a)
{
    queen_response_t resp = { 0 };
    int rc = s_call (ctl, "GET", "/api/v1/consumer-groups", NULL, &resp);
    const char *group = ctl_opt (a, "group"), *queue = ctl_opt (a, "queue");
    if (rc) {
        queen_response_free (&resp);
        return rc;
    }
    qn_json_doc_t doc;
    qn_json_doc_init (&doc);
    if (ctl_parse (ctl, &doc, &resp)) {
        queen_response_free (&resp);
        return CTL_EXIT_FAILED;
    }
    const char *hdr [] = { "GROUP", "QUEUE", "PARTITIONS", "LAGGING", "OFFSET_LAG", "MAX_LAG_S", "STATE" };
    ctl_table_t t;
    ctl_table_init (&t, 7, hdr);
    qn_buf_t out = QN_BUF_INIT;
    qn_buf_putc (&out, '[');
    for (int g = qn_json_first (&doc, 0); g >= 0; g = qn_json_next_sibling (&doc, 0, g)) {
        if (group && !qn_json_str_eq (&doc, qn_json_get (&doc, g, "name"), group))
            continue;
        if (queue && !qn_json_str_eq (&doc, qn_json_get (&doc, g, "queueName"), queue))
            continue;
        size_t l;
        const char *raw = qn_json_raw (&doc, g, &l);
        if (out.len > 1)
            qn_buf_putc (&out, ',');
        qn_buf_append (&out, raw, l);
        ctl_table_add (&t, (char *[]) {
            ctl_jtext (&doc, g, "name"), ctl_jtext (&doc, g, "queueName"), ctl_jtext (&doc, g, "members"),
            ctl_jtext (&doc, g, "partitionsWithLag"), ctl_jtext (&doc, g, "offsetLag"),
            ctl_jtext (&doc, g, "maxTimeLag"), ctl_jtext (&doc, g, "state") });
    }
    qn_buf_putc (&out, ']');
    if (ctl->json)
        printf ("%s\n", out.data);
    else
        ctl_table_print (&t, stdout);
    ctl_table_free (&t);
    qn_buf_free (&out);
    qn_json_doc_free (&doc);
    queen_response_free (&resp);
    return 0;
}

//  ---------------------------------------------------------------- kv
static char *
s_read_all (FILE *in)
{
    qn_buf_t b = QN_BUF_INIT;
    char chunk [4096];
    size_t n;
    while ((n = fread (chunk, 1, sizeof chunk, in)) > 0)
        qn_buf_append (&b, chunk, n);
    if (!b.data)
        return strdup ("");
    return qn_buf_detach (&b, NULL);
}

static int
cmd_kv (ctl_t *ctl, const ctl_args_t *a)
{
    if (a->npos < 2)
        return ctl_usage (ctl, "kv needs a subcommand (get, set, del, list) and a bucket");
    const char *sub = a->pos [0], *bucket = a->pos [1];
    const char *key = a->npos > 2 ? a->pos [2] : NULL;
    int64_t if_version = ctl_opt_int (ctl, a, "if-version", QUEEN_KV_ANY_VERSION);
    queen_error_t err = { 0 };
    queen_code_t code;
    int rc = 0;
    if (!strcmp (sub, "get")) {
        if (!key)
            return ctl_usage (ctl, "kv get BUCKET KEY");
        queen_kv_entry_t e;
        code = queen_kv_get (ctl->client, bucket, key, &e, &err);
        if (code)
            rc = ctl_fail (ctl, code, &err);
        else if (ctl->json)
            printf ("{\"bucket\":\"%s\",\"key\":\"%s\",\"value\":%s,\"version\":%lld}\n", bucket, key,
                    e.value, (long long) e.version);
        else
            printf ("%s\n", e.value);
        queen_kv_entry_free (&e);
    }
    else if (!strcmp (sub, "set")) {
        if (!key)
            return ctl_usage (ctl, "kv set BUCKET KEY [VALUE|-]");
        char *value = a->npos > 3 && strcmp (a->pos [3], "-") ? strdup (a->pos [3]) : s_read_all (stdin);
        int64_t version = 0;
        code = queen_kv_set (ctl->client, bucket, key, value, ctl_opt_int (ctl, a, "ttl", 0), if_version,
                             &version, &err);
        free (value);
        if (code)
            rc = ctl_fail (ctl, code, &err);
        else if (ctl->json)
            printf ("{\"bucket\":\"%s\",\"key\":\"%s\",\"version\":%lld}\n", bucket, key, (long long) version);
        else if (!ctl->quiet)
            printf ("set %s/%s version %lld\n", bucket, key, (long long) version);
    }
    else if (!strcmp (sub, "del")) {
        if (!key)
            return ctl_usage (ctl, "kv del BUCKET KEY");
        code = queen_kv_del (ctl->client, bucket, key, if_version, &err);
        if (code)
            rc = ctl_fail (ctl, code, &err);
        else if (ctl->json)
            printf ("{\"deleted\":true,\"bucket\":\"%s\",\"key\":\"%s\"}\n", bucket, key);
        else if (!ctl->quiet)
            printf ("deleted %s/%s\n", bucket, key);
    }
    else if (!strcmp (sub, "list")) {
        queen_response_t resp = { 0 };
        code = queen_kv_list (ctl->client, bucket, ctl_opt (a, "prefix"), ctl_opt (a, "after"),
                              (int) ctl_opt_int (ctl, a, "limit", 0), &resp, &err);
        if (code)
            rc = ctl_fail (ctl, code, &err);
        else if (ctl->json)
            ctl_print_raw (&resp);
        else {
            qn_json_doc_t doc;
            qn_json_doc_init (&doc);
            if (ctl_parse (ctl, &doc, &resp) == 0) {
                const char *hdr [] = { "KEY", "VERSION", "EXPIRES", "UPDATED" };
                ctl_table_t t;
                ctl_table_init (&t, 4, hdr);
                int ks = qn_json_get (&doc, 0, "keys");
                for (int k = qn_json_first (&doc, ks); k >= 0; k = qn_json_next_sibling (&doc, ks, k))
                    ctl_table_add (&t, (char *[]) { ctl_jtext (&doc, k, "key"), ctl_jtext (&doc, k, "version"),
                                                     ctl_jtext (&doc, k, "expiresAt"), ctl_jtext (&doc, k, "updatedAt") });
                ctl_table_print (&t, stdout);
                ctl_table_free (&t);
                char *next = ctl_jtext (&doc, 0, "next");
                if (next)
                    printf ("more after %s (--after %s)\n", next, next);
                free (next);
            }
            else
                rc = CTL_EXIT_FAILED;
            qn_json_doc_free (&doc);
        }
        queen_response_free (&resp);
    }
    else
        return ctl_usage (ctl, "kv: unknown subcommand %s (get, set, del, list)", sub);
    queen_error_clear (&err);
    return rc;
}

//  ---------------------------------------------------------------- timers
static int
cmd_timers (ctl_t *ctl, const ctl_args_t *a)
{
    const char *sub = a->npos ? a->pos [0] : "list";
    queen_error_t err = { 0 };
    queen_response_t resp = { 0 };
    queen_code_t code = QUEEN_OK;
    int rc = 0;
    if (!strcmp (sub, "list")) {
        code = queen_timer_list (ctl->client, ctl_opt (a, "queue"), ctl_opt (a, "after"),
                                 (int) ctl_opt_int (ctl, a, "limit", 0), &resp, &err);
        if (!code && !ctl->json) {
            qn_json_doc_t doc;
            qn_json_doc_init (&doc);
            if (ctl_parse (ctl, &doc, &resp) == 0) {
                const char *hdr [] = { "TIMER", "QUEUE", "PARTITION", "FIRE_AT", "PAYLOAD" };
                ctl_table_t t;
                ctl_table_init (&t, 5, hdr);
                int ts = qn_json_get (&doc, 0, "timers");
                for (int k = qn_json_first (&doc, ts); k >= 0; k = qn_json_next_sibling (&doc, ts, k))
                    ctl_table_add (&t, (char *[]) { ctl_jtext (&doc, k, "timerId"), ctl_jtext (&doc, k, "queue"),
                                                     ctl_jtext (&doc, k, "partition"), ctl_jtext (&doc, k, "fireAt"),
                                                     ctl_jtext (&doc, k, "payload") });
                ctl_table_print (&t, stdout);
                ctl_table_free (&t);
            }
            else
                rc = CTL_EXIT_FAILED;
            qn_json_doc_free (&doc);
        }
        else if (!code)
            ctl_print_raw (&resp);
    }
    else if (!strcmp (sub, "get")) {
        if (a->npos < 2)
            return ctl_usage (ctl, "timers get TIMER_ID");
        code = queen_timer_get (ctl->client, a->pos [1], &resp, &err);
        if (!code)
            ctl_print_raw (&resp);
    }
    else if (!strcmp (sub, "cancel")) {
        if (a->npos < 2)
            return ctl_usage (ctl, "timers cancel TIMER_ID");
        code = queen_timer_cancel (ctl->client, a->pos [1], &err);
        if (!code && ctl->json)
            printf ("{\"timerId\":\"%s\",\"cancelled\":true}\n", a->pos [1]);
        else if (!code && !ctl->quiet)
            printf ("cancelled timer %s\n", a->pos [1]);
    }
    else if (!strcmp (sub, "add")) {
        const char *queue = ctl_opt (a, "queue"), *payload = ctl_opt (a, "payload");
        const char *at = ctl_opt (a, "at");
        if (!queue || !payload || (!at && !ctl_opt (a, "delay-ms")))
            return ctl_usage (ctl, "timers add --queue Q --payload JSON (--delay-ms MS | --at TIME)");
        queen_timer_t t = { .timer_id = ctl_opt (a, "id"), .queue = queue, .partition = ctl_opt (a, "partition"),
                            .payload = payload, .fire_at = at, .delay_ms = ctl_opt_int (ctl, a, "delay-ms", 0) };
        char id [256];
        bool created = false;
        code = queen_timer_schedule (ctl->client, &t, id, &created, &err);
        if (!code && ctl->json)
            printf ("{\"timerId\":\"%s\",\"created\":%s}\n", id, created ? "true" : "false");
        else if (!code && !ctl->quiet)
            printf ("timer %s %s\n", id, created ? "scheduled" : "already scheduled");
    }
    else
        return ctl_usage (ctl, "timers: unknown subcommand %s (list, get, add, cancel)", sub);
    if (code)
        rc = ctl_fail (ctl, code, &err);
    queen_response_free (&resp);
    queen_error_clear (&err);
    return rc;
}

//  ---------------------------------------------------------- maintenance
static int
cmd_maintenance (ctl_t *ctl, const ctl_args_t *a)
{
    const char *sub = a->npos ? a->pos [0] : "status";
    bool pop = ctl_flag (a, "pop");
    const char *path = pop ? "/api/v1/system/maintenance/pop" : "/api/v1/system/maintenance";
    queen_response_t resp = { 0 };
    int rc;
    if (!strcmp (sub, "status"))
        rc = s_call (ctl, "GET", "/api/v1/system/maintenance", NULL, &resp);
    else if (!strcmp (sub, "on") || !strcmp (sub, "off"))
        rc = s_call (ctl, "POST", path, !strcmp (sub, "on") ? "{\"enabled\":true}" : "{\"enabled\":false}", &resp);
    else
        return ctl_usage (ctl, "maintenance [status|on|off] [--pop]");
    if (!rc && ctl->json)
        ctl_print_raw (&resp);
    else if (!rc && !ctl->quiet) {
        qn_json_doc_t doc;
        qn_json_doc_init (&doc);
        if (ctl_parse (ctl, &doc, &resp) == 0) {
            char *pm = ctl_jtext (&doc, 0, "maintenanceMode");
            char *pp = ctl_jtext (&doc, 0, "popMaintenanceMode");
            char *bm = ctl_jtext (&doc, 0, "bufferedMessages");
            if (pm)
                printf ("push maintenance: %s\n", !strcmp (pm, "true") ? "on" : "off");
            if (pp)
                printf ("pop maintenance: %s\n", !strcmp (pp, "true") ? "on" : "off");
            if (bm)
                printf ("spooled messages: %s\n", bm);
            free (pm);
            free (pp);
            free (bm);
        }
        else
            rc = CTL_EXIT_FAILED;
        qn_json_doc_free (&doc);
    }
    queen_response_free (&resp);
    return rc;
}

//  ---------------------------------------------------------- sqs-keys
//  The SQS door's access keys per tenant (/api/v1/system/sqs-keys,
//  docs/sqs.md "Access keys").
static int
cmd_sqs_keys (ctl_t *ctl, const ctl_args_t *a)
{
    const char *sub = a->npos ? a->pos [0] : "list";
    queen_response_t resp = { 0 };
    int rc;
    enum { LIST, CREATE, DISABLE } what;
    if (!strcmp (sub, "list")) {
        what = LIST;
        qn_buf_t path = QN_BUF_INIT;
        qn_buf_printf (&path, "/api/v1/system/sqs-keys");
        s_query (&path, "tenant", ctl_opt (a, "tenant"));
        rc = s_call (ctl, "GET", path.data, NULL, &resp);
        qn_buf_free (&path);
    }
    else if (!strcmp (sub, "create")) {
        what = CREATE;
        const char *tenant = ctl_opt (a, "tenant");
        if (!tenant)
            return ctl_usage (ctl, "sqs-keys create --tenant T [--id ID] [--secret S]");
        qn_buf_t body = QN_BUF_INIT;
        qn_jw_t w;
        qn_jw_init (&w, &body);
        qn_jw_obj (&w);
        qn_jw_kstr (&w, "tenant", tenant);
        if (ctl_opt (a, "id"))
            qn_jw_kstr (&w, "accessKeyId", ctl_opt (a, "id"));
        if (ctl_opt (a, "secret"))
            qn_jw_kstr (&w, "secretAccessKey", ctl_opt (a, "secret"));
        qn_jw_obj_end (&w);
        rc = s_call (ctl, "POST", "/api/v1/system/sqs-keys", body.data, &resp);
        qn_buf_free (&body);
    }
    else if (!strcmp (sub, "disable") && a->npos == 2) {
        what = DISABLE;
        char *path = s_path ("/api/v1/system/sqs-keys/%s/disable", a->pos [1], NULL);
        rc = s_call (ctl, "POST", path, NULL, &resp);
        free (path);
    }
    else
        return ctl_usage (ctl, "sqs-keys [list [--tenant T] | create --tenant T [--id ID] [--secret S] | disable ID]");
    if (!rc && ctl->json)
        ctl_print_raw (&resp);
    else if (!rc && !ctl->quiet) {
        qn_json_doc_t doc;
        qn_json_doc_init (&doc);
        if (ctl_parse (ctl, &doc, &resp))
            rc = CTL_EXIT_FAILED;
        else if (what == LIST) {
            const char *hdr [] = { "ACCESS KEY ID", "TENANT", "ENABLED", "CREATED", "DISABLED" };
            ctl_table_t t;
            ctl_table_init (&t, 5, hdr);
            int ks = qn_json_get (&doc, 0, "keys");
            for (int k = qn_json_first (&doc, ks); k >= 0; k = qn_json_next_sibling (&doc, ks, k))
                ctl_table_add (&t, (char *[]) {
                    ctl_jtext (&doc, k, "accessKeyId"), ctl_jtext (&doc, k, "tenant"),
                    ctl_jtext (&doc, k, "enabled"), ctl_jtext (&doc, k, "createdAt"),
                    ctl_jtext (&doc, k, "disabledAt") });
            ctl_table_print (&t, stdout);
            ctl_table_free (&t);
        }
        else {
            const char *keys [] = { "accessKeyId", "secretAccessKey", "tenant", "enabled", "createdAt",
                                    "disabledAt" };
            for (size_t i = 0; i < sizeof keys / sizeof keys [0]; i++) {
                char *v = ctl_jtext (&doc, 0, keys [i]);
                if (v)
                    printf ("%s: %s\n", keys [i], v);
                free (v);
            }
            if (what == CREATE)
                printf ("(the secret is shown only now)\n");
        }
        qn_json_doc_free (&doc);
    }
    queen_response_free (&resp);
    return rc;
}

//  ---------------------------------------------------------------- bench
static int
cmd_bench (ctl_t *ctl, const ctl_args_t *a)
{
    int64_t messages = ctl_opt_int (ctl, a, "messages", 10000);
    int64_t batch = ctl_opt_int (ctl, a, "batch", 100);
    int64_t payload_bytes = ctl_opt_int (ctl, a, "payload-bytes", 64);
    if (messages < 1 || batch < 1 || batch > 10000 || payload_bytes < 16 || payload_bytes > 1000000)
        return ctl_usage (ctl, "--messages >= 1, --batch 1..10000, --payload-bytes 16..1000000");
    char qname [64];
    const char *queue = ctl_opt (a, "queue");
    if (!queue) {
        char u [37];
        queen_uuid7 (u);
        snprintf (qname, sizeof qname, "queenctl-bench-%.8s", u + 28);
        queue = qname;
    }
    //  {"n":123456789,"pad":"xxx..."}
    qn_buf_t payload = QN_BUF_INIT;
    qn_buf_puts (&payload, "{\"pad\":\"");
    while (payload.len < (size_t) payload_bytes - 2)
        qn_buf_putc (&payload, 'x');
    qn_buf_puts (&payload, "\"}");
    queen_item_t *items = calloc ((size_t) batch, sizeof *items);
    for (int64_t i = 0; i < batch; i++)
        items [i] = (queen_item_t) { .queue = queue, .payload = payload.data };
    queen_error_t err = { 0 };
    queen_code_t code = QUEEN_OK;
    int64_t pushed = 0, popped = 0, t0 = ctl_now_ms ();
    char bar [128];
    while (!ctl_stop && pushed < messages) {
        size_t n = (size_t) (messages - pushed < batch ? messages - pushed : batch);
        code = queen_push (ctl->client, items, n, NULL, NULL, &err);
        if (code)
            break;
        pushed += (int64_t) n;
        double s = (double) (ctl_now_ms () - t0) / 1000.0;
        ctl_bar (bar, sizeof bar, 20, (double) pushed, (double) messages);
        ctl_live (ctl, false, "bench push %s %lld/%lld  %.0f msg/s", bar, (long long) pushed,
                  (long long) messages, s > 0 ? (double) pushed / s : 0);
    }
    int64_t t1 = ctl_now_ms ();
    queen_pop_opts_t po = { .batch = (int) batch, .wait = true, .timeout_ms = 2000 };
    while (!code && !ctl_stop && popped < pushed) {
        queen_batch_t b;
        code = queen_pop (ctl->client, queue, &po, &b, &err);
        if (!code && b.count == 0) {
            queen_batch_free (&b);
            code = QUEEN_ERR_PROTOCOL;
            snprintf (err.message, sizeof err.message, "pop found nothing after %lld of %lld messages",
                      (long long) popped, (long long) pushed);
            break;
        }
        if (!code)
            code = queen_ack_all (ctl->client, &b, "completed", &err);
        popped += (int64_t) b.count;
        queen_batch_free (&b);
        double s = (double) (ctl_now_ms () - t1) / 1000.0;
        ctl_bar (bar, sizeof bar, 20, (double) popped, (double) pushed);
        ctl_live (ctl, false, "bench pop+ack %s %lld/%lld  %.0f msg/s", bar, (long long) popped,
                  (long long) pushed, s > 0 ? (double) popped / s : 0);
    }
    int64_t t2 = ctl_now_ms ();
    ctl_live_end (ctl);
    int rc = code ? ctl_fail (ctl, code, &err) : 0;
    if (!ctl_flag (a, "keep")) {
        char *path = s_path ("/api/v1/resources/queues/%s", queue, NULL);
        queen_error_t e2 = { 0 };
        queen_request (ctl->client, "DELETE", path, NULL, NULL, &e2);
        queen_error_clear (&e2);
        free (path);
    }
    double ps = (double) (t1 - t0) / 1000.0, cs = (double) (t2 - t1) / 1000.0;
    if (ctl->json)
        printf ("{\"queue\":\"%s\",\"messages\":%lld,\"pushed\":%lld,\"popped\":%lld,\"pushSeconds\":%.3f,"
                "\"popSeconds\":%.3f,\"pushRate\":%.1f,\"popRate\":%.1f}\n", queue, (long long) messages,
                (long long) pushed, (long long) popped, ps, cs, ps > 0 ? (double) pushed / ps : 0,
                cs > 0 ? (double) popped / cs : 0);
    else
        printf ("bench %s: pushed %lld in %.2f s (%.0f msg/s), popped+acked %lld in %.2f s (%.0f msg/s)\n",
                queue, (long long) pushed, ps, ps > 0 ? (double) pushed / ps : 0, (long long) popped, cs,
                cs > 0 ? (double) popped / cs : 0);
    if (!rc && ctl_stop)
        rc = CTL_EXIT_INTERRUPTED;
    free (items);
    qn_buf_free (&payload);
    queen_error_clear (&err);
    return rc;
}

//  ---------------------------------------------------------------- table
const ctl_cmd_t ctl_commands [] = {
    { "status", cmd_status, "", "", "status",
      "broker health, counts, maintenance",
      "Shows the broker's health, the overview counts (queues, partitions,\n"
      "messages by status, lag) and the maintenance switches. Exit 3 when the\n"
      "broker cannot be reached, 1 when it answers unhealthy.\n" },
    { "queues", cmd_queues, "", "", "queues [QUEUE]",
      "list queues, or one queue's partitions",
      "Without QUEUE: every queue with its partition and message counts.\n"
      "With QUEUE: its partitions and their counts (exit 4 if unknown).\n" },
    { "push", cmd_push, "file partition batch", "items", "push QUEUE [FILE|-] [--file F] [--partition P] [--batch N] [--items]",
      "push NDJSON messages from stdin or a file",
      "Reads one JSON value per line (NDJSON) and pushes each as a message's\n"
      "payload, in requests of --batch items (default 500), each with a fresh\n"
      "transaction id. With --items each line is an object\n"
      "{\"payload\":..., \"partition\":..., \"transactionId\":...}.\n"
      "On a terminal a progress bar (file) or live counter (stdin) shows the\n"
      "rate. Prints a summary; exit 1 if any item failed, 2 at a line that is\n"
      "not JSON (the lines before it are pushed, none after it).\n" },
    { "tail", cmd_tail, "group partition limit batch from wait-ms partitions", "follow f no-ack",
      "tail QUEUE [-f] [--group G] [--partition P] [--limit N] [--from all|new|now|TIME] [--no-ack]",
      "print messages as JSON lines (and ack them)",
      "Pops messages and prints one JSON object per line: queue, partition,\n"
      "partitionId, id, transactionId, createdAt, consumerGroup, leaseId, data.\n"
      "Each batch is acked after it is printed, unless --no-ack (the lease\n"
      "then runs out and the messages come back). Without -f it stops when\n"
      "the queue is empty; with -f (--follow) it long-polls until Ctrl-C.\n"
      "--group consumes as a consumer group (--from sets its start).\n" },
    { "ack", cmd_ack, "partition-id lease group error", "failed",
      "ack TRANSACTION_ID --partition-id ID [--lease L] [--group G] [--failed [--error TEXT]]",
      "acknowledge one message",
      "Acks one message as completed (or failed: retried, then dead-lettered).\n"
      "Exit 1 when the broker refuses it (e.g. the lease is not held).\n" },
    { "dlq", cmd_dlq, "queue group partition limit", "", "dlq list|requeue|delete [--queue Q] [--group G] [--partition P] [IDS...]",
      "browse, requeue or delete dead letters",
      "dlq list      dead letters, newest first (--queue, --group, --partition, --limit)\n"
      "dlq requeue   push them back as new messages (--queue required; IDS are\n"
      "              message or dlq ids, none = every match)\n"
      "dlq delete    delete them (--queue required)\n" },
    { "seek", cmd_seek, "partition time offset", "to-end", "seek GROUP QUEUE (--to-end | --time TIME) | --partition P (--offset X | --time TIME | --to-end)",
      "move a consumer group's cursor",
      "Moves GROUP on every partition of QUEUE to the end or to the newest\n"
      "message at or before TIME (ISO-8601). With --partition only that\n"
      "partition, also to an --offset (message id or offset number; 0 = from\n"
      "the beginning).\n" },
    { "replay", cmd_replay, "partition since offset", "", "replay GROUP QUEUE [--since TIME] [--partition P [--offset X]]",
      "make a group consume again",
      "Seeks GROUP back so messages are delivered again: from --since TIME\n"
      "(default: the beginning), or on one partition from --offset X.\n" },
    { "lag", cmd_lag, "group queue", "", "lag [--group G] [--queue Q]",
      "consumer groups and their lag",
      "One row per (group, queue): partitions with state, partitions lagging,\n"
      "offset lag (messages after the cursor), max time lag in seconds, state.\n" },
    { "kv", cmd_kv, "ttl if-version prefix after limit", "", "kv get|set|del|list BUCKET [KEY] [VALUE|-] [--ttl S] [--if-version V]",
      "read and write the key/value store",
      "kv get B K            print the value (JSON)\n"
      "kv set B K [VALUE|-]  write a JSON value (from stdin with - or no VALUE);\n"
      "                      --ttl seconds, --if-version V (0 = only if absent)\n"
      "kv del B K            delete (--if-version)\n"
      "kv list B             keys (--prefix, --after, --limit)\n"
      "Exit 4 for a missing key, 5 for a version conflict.\n" },
    { "timers", cmd_timers, "queue after limit payload at delay-ms id partition", "",
      "timers [list|get ID|cancel ID|add --queue Q --payload JSON (--delay-ms MS|--at TIME)]",
      "list, inspect, schedule and cancel timers",
      "timers list     pending timers, earliest first (--queue, --limit, --after)\n"
      "timers get ID   one timer (pending or fired)\n"
      "timers add      schedule (--queue, --payload, --delay-ms or --at, --id, --partition)\n"
      "timers cancel ID\n" },
    { "maintenance", cmd_maintenance, "", "pop", "maintenance [status|on|off] [--pop]",
      "show or switch maintenance mode",
      "status (default) shows push and pop maintenance and the spool;\n"
      "on/off switches push maintenance (pushes go to the disk spool), with\n"
      "--pop pop maintenance (pops answer empty).\n" },
    { "sqs-keys", cmd_sqs_keys, "tenant id secret", "",
      "sqs-keys [list [--tenant T] | create --tenant T [--id ID] [--secret S] | disable ID]",
      "the SQS door's access keys per tenant",
      "list (default) shows every key (or one tenant's) without secrets;\n"
      "create makes a key acting for tenant T over SQS and prints its secret,\n"
      "shown only this once (generated unless --secret; --id keeps an existing\n"
      "access key id); disable ID refuses the key from then on. Admin only.\n" },
    { "bench", cmd_bench, "queue messages batch payload-bytes", "keep",
      "bench [--messages N] [--batch B] [--payload-bytes S] [--queue Q] [--keep]",
      "quick push then pop+ack benchmark",
      "Pushes N messages (default 10000) in batches of B (100) into a fresh\n"
      "queue, then pops and acks them, with a live progress line on a\n"
      "terminal; prints both rates. The queue is deleted unless --keep.\n" },
    { NULL, NULL, NULL, NULL, NULL, NULL, NULL }
};
