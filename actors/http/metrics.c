/*  actors/http/metrics.c - GET /metrics/prometheus and the HTTP series
    Renders the kernel's counters and series (kernel/counters.c) in the
    Prometheus text exposition format 0.0.4: every family once, with HELP
    and TYPE, its series together. Plain counters become
    queen_<name>_total (counters) or queen_<name> (gauges); series keep
    their family name under the queen_ prefix; histograms are in seconds.
    Process figures (standard process_* names) are read at scrape time.
    Also counts every HTTP answer by route pattern, method and status, and
    its latency (qn_http_metrics_answered, called by qn_http_reply_raw).
    Runs in the codec's thread; owns nothing between calls.
    Failure   none: a family without a HELP text gets a generic one
*/
#include "actors/http/codec.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

//  HELP texts by family name (without the queen_ prefix). Plain counters
//  are named as exposed (with _total).
static const struct {
    const char *family;
    const char *help;
} s_help [] = {
    { "http_requests_total", "HTTP requests framed by the acceptor" },
    { "http_responses_total", "HTTP responses by route pattern, method and status code" },
    { "http_request_duration_seconds", "Time from a request's arrival in the codec to its answer, by route and method" },
    { "http_responses_2xx_total", "HTTP responses with a 2xx status" },
    { "http_responses_3xx_total", "HTTP responses with a 3xx status" },
    { "http_responses_4xx_total", "HTTP responses with a 4xx status" },
    { "http_responses_5xx_total", "HTTP responses with a 5xx status" },
    { "http_connections", "Open client connections" },
    { "http_connections_refused_total", "Connections refused at MAX_CONNECTIONS" },
    { "http_request_timeouts_total", "Requests that did not arrive whole within REQUEST_TIMEOUT_MS" },
    { "http_errors_framing_total", "Requests refused for bad HTTP framing" },
    { "http_client_gone_total", "Clients that closed the connection before every answer" },
    { "http_responses_held_total", "Responses held while the acceptor was at its high-water mark" },
    { "kafka_responses_held_total", "Kafka answers held while kafka_acceptor was at its high-water mark" },
    { "sqs_responses_held_total", "SQS responses held while sqs_acceptor was at its high-water mark" },
    { "messages_pushed_total", "Messages stored by pushes, by queue (capped: queue=\"_other\")" },
    { "messages_popped_total", "Messages handed out by pops, by queue (capped)" },
    { "messages_acked_total", "Messages acknowledged as completed, by queue (capped)" },
    { "messages_failed_total", "Messages acknowledged as failed (nacked), by queue (capped)" },
    { "messages_dead_lettered_total", "Messages moved to the dead-letter queue by acks, by queue (capped)" },
    { "messages_buffered_total", "Messages written to the disk spool" },
    { "parked_pops", "Long-poll pops parked now" },
    { "pop_parked_total", "Long-poll pops parked" },
    { "pop_wakeups_total", "Parked pops woken by a commit or a due instant" },
    { "pop_expired_total", "Parked pops that timed out empty" },
    { "pop_cancelled_total", "Parked pops whose client went away" },
    { "pop_park_races_total", "Pops woken at once because a commit raced their parking" },
    { "db_pool_connections", "Database connections up, by pool" },
    { "db_pool_busy", "Database connections running a statement, by pool" },
    { "db_pool_waiting", "Statements waiting for a database connection, by pool" },
    { "db_pool_size", "Configured hot-path pool size (DB_POOL_SIZE)" },
    { "db_errors_total", "Statements that failed or lost their connection, by pool" },
    { "db_healthy", "1 while the database answers the health ping" },
    { "spool_pending", "Messages in the disk spool waiting for replay" },
    { "spool_appended_total", "Messages appended to the disk spool" },
    { "spool_appended_bytes_total", "Bytes of records appended to the disk spool" },
    { "spool_replayed_total", "Spooled messages replayed into PostgreSQL" },
    { "spool_replay_duplicates_total", "Replayed messages PostgreSQL already had" },
    { "spool_failed_bytes", "Bytes of spool records that could not be replayed" },
    { "spool_fsyncs_total", "fdatasync calls of the spool" },
    { "timers_armed", "Timers armed in the timer actor's heap" },
    { "timers_fired_total", "Timers fired" },
    { "maintenance_push", "1 while push maintenance mode is on" },
    { "maintenance_pop", "1 while pop maintenance mode is on" },
    { "uptime_seconds", "Seconds since the broker started" },
    { "retention_deleted_total", "Messages deleted by retention" },
    { NULL, NULL }
};

static const char *
s_help_of (const char *family)
{
    for (size_t i = 0; s_help [i].family; i++)
        if (!strcmp (s_help [i].family, family))
            return s_help [i].help;
    return NULL;
}

typedef struct {
    char family [128];          //  Exposed, without the prefix
    const char *labels;         //  Inside the braces, or ""
    size_t labels_len;
    qn_metric_kind_t kind;
    int64_t value;
    int64_t buckets [QN_METRIC_BUCKETS + 1];
    int64_t sum_us;
    size_t order;
} s_row_t;

typedef struct {
    s_row_t *rows;
    size_t count, cap;
} s_rows_t;

static bool
s_ends_with (const char *s, size_t len, const char *suffix)
{
    size_t n = strlen (suffix);
    return len >= n && !memcmp (s + len - n, suffix, n);
}

static void
s_collect (void *arg, const qn_metric_info_t *info)
{
    s_rows_t *rows = arg;
    if (rows->count == rows->cap) {
        rows->cap = rows->cap ? rows->cap * 2 : 256;
        rows->rows = qn_realloc (rows->rows, rows->cap * sizeof *rows->rows);
    }
    s_row_t *r = &rows->rows [rows->count];
    memset (r, 0, sizeof *r);
    r->order = rows->count++;
    r->kind = info->kind;
    r->value = info->value;
    size_t flen = info->family_len < sizeof r->family - 8 ? info->family_len : sizeof r->family - 8;
    memcpy (r->family, info->name, flen);
    //  Plain counters get the conventional suffix.
    bool plain = info->name [info->family_len] == 0;
    if (plain && r->kind == QN_METRIC_COUNTER && !s_ends_with (r->family, flen, "_total"))
        memcpy (r->family + flen, "_total", 7);
    if (info->name [info->family_len] == '{') {
        r->labels = info->name + info->family_len + 1;
        r->labels_len = strlen (r->labels);
        if (r->labels_len)
            r->labels_len--;                //  The closing brace
    }
    else
        r->labels = "";
    if (info->buckets) {
        memcpy (r->buckets, info->buckets, sizeof r->buckets);
        r->sum_us = info->sum_us;
    }
}

static int
s_row_cmp (const void *a_, const void *b_)
{
    const s_row_t *a = a_, *b = b_;
    int c = strcmp (a->family, b->family);
    if (c)
        return c;
    return a->order < b->order ? -1 : a->order > b->order;
}

static const char *
s_type_name (qn_metric_kind_t kind)
{
    return kind == QN_METRIC_HISTOGRAM ? "histogram" : kind == QN_METRIC_GAUGE ? "gauge" : "counter";
}

static void
s_family_head (qn_buf_t *b, const char *family, const char *type, const char *help)
{
    qn_buf_printf (b, "# HELP queen_%s %s\n# TYPE queen_%s %s\n", family, help, family, type);
}

static void
s_sample (qn_buf_t *b, const char *family, const char *suffix, const char *labels, size_t llen,
          const char *extra, const char *value)
{
    qn_buf_printf (b, "queen_%s%s", family, suffix);
    if (llen || extra) {
        qn_buf_printf (b, "{%.*s", (int) llen, labels);
        if (extra)
            qn_buf_printf (b, "%s%s", llen ? "," : "", extra);
        qn_buf_printf (b, "}");
    }
    qn_buf_printf (b, " %s\n", value);
}

static void
s_render_row (qn_buf_t *b, const s_row_t *r)
{
    char v [64];
    if (r->kind != QN_METRIC_HISTOGRAM) {
        snprintf (v, sizeof v, "%lld", (long long) r->value);
        s_sample (b, r->family, "", r->labels, r->labels_len, NULL, v);
        return;
    }
    //  Cumulative buckets; the count is their sum, so +Inf always equals it.
    int64_t cum = 0;
    for (size_t i = 0; i <= QN_METRIC_BUCKETS; i++) {
        cum += r->buckets [i];
        char le [48];
        if (i < QN_METRIC_BUCKETS)
            snprintf (le, sizeof le, "le=\"%g\"", (double) qn_metric_bounds_us [i] / 1e6);
        else
            snprintf (le, sizeof le, "le=\"+Inf\"");
        snprintf (v, sizeof v, "%lld", (long long) cum);
        s_sample (b, r->family, "_bucket", r->labels, r->labels_len, le, v);
    }
    snprintf (v, sizeof v, "%.6f", (double) r->sum_us / 1e6);
    s_sample (b, r->family, "_sum", r->labels, r->labels_len, NULL, v);
    snprintf (v, sizeof v, "%lld", (long long) cum);
    s_sample (b, r->family, "_count", r->labels, r->labels_len, NULL, v);
}

// ------------------------------------------------------------------ process
static void
s_proc_stat (int64_t *rss_bytes, int64_t *vsize_bytes, double *start_s)
{
    *rss_bytes = *vsize_bytes = 0;
    *start_s = 0;
    FILE *f = fopen ("/proc/self/stat", "r");
    if (!f)
        return;
    char line [1024];
    size_t n = fread (line, 1, sizeof line - 1, f);
    fclose (f);
    line [n] = 0;
    char *p = strrchr (line, ')');          //  After the command name
    if (!p)
        return;
    //  Fields from 3 (state) on; starttime is 22, vsize 23, rss 24.
    unsigned long long start_ticks = 0, vsize = 0;
    long long rss = 0;
    int field = 2;
    for (char *tok = strtok (p + 1, " "); tok; tok = strtok (NULL, " ")) {
        field++;
        if (field == 22)
            start_ticks = strtoull (tok, NULL, 10);
        else
        if (field == 23)
            vsize = strtoull (tok, NULL, 10);
        else
        if (field == 24) {
            rss = strtoll (tok, NULL, 10);
            break;
        }
    }
    *rss_bytes = rss * sysconf (_SC_PAGESIZE);
    *vsize_bytes = (int64_t) vsize;
    //  Boot time from /proc/stat "btime".
    f = fopen ("/proc/stat", "r");
    if (!f)
        return;
    long long btime = 0;
    while (fgets (line, sizeof line, f))
        if (!strncmp (line, "btime ", 6)) {
            btime = strtoll (line + 6, NULL, 10);
            break;
        }
    fclose (f);
    long hz = sysconf (_SC_CLK_TCK);
    *start_s = (double) btime + (double) start_ticks / (double) (hz > 0 ? hz : 100);
}

static int64_t
s_open_fds (void)
{
    DIR *d = opendir ("/proc/self/fd");
    if (!d)
        return 0;
    int64_t n = 0;
    struct dirent *e;
    while ((e = readdir (d)))
        if (e->d_name [0] != '.')
            n++;
    closedir (d);
    return n - 1;                           //  Not the directory's own fd
}

static void
s_process (qn_buf_t *b)
{
    struct rusage ru;
    getrusage (RUSAGE_SELF, &ru);
    double cpu = (double) ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6
               + (double) ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    int64_t rss, vsize;
    double start;
    s_proc_stat (&rss, &vsize, &start);
    struct rlimit rl;
    int64_t max_fds = getrlimit (RLIMIT_NOFILE, &rl) == 0 ? (int64_t) rl.rlim_cur : 0;
    qn_buf_printf (b,
        "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
        "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.6f\n"
        "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
        "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %lld\n"
        "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
        "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes %lld\n"
        "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
        "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.2f\n"
        "# HELP process_open_fds Number of open file descriptors.\n"
        "# TYPE process_open_fds gauge\nprocess_open_fds %lld\n"
        "# HELP process_max_fds Maximum number of open file descriptors.\n"
        "# TYPE process_max_fds gauge\nprocess_max_fds %lld\n",
        cpu, (long long) rss, (long long) vsize, start, (long long) s_open_fds (),
        (long long) max_fds);
}

// ------------------------------------------------------------------ the route
static void
s_gauge (qn_buf_t *b, const char *family, const char *value)
{
    const char *help = s_help_of (family);
    s_family_head (b, family, "gauge", help ? help : family);
    s_sample (b, family, "", "", 0, NULL, value);
}

void
qn_http_metrics_render (qn_codec_t *codec, qn_buf_t *b, double uptime_s)
{
    s_process (b);
    char v [64];
    snprintf (v, sizeof v, "%.3f", uptime_s);
    s_gauge (b, "uptime_seconds", v);
    snprintf (v, sizeof v, "%lld", (long long) qn_codec_config (codec)->db_pool_size);
    s_gauge (b, "db_pool_size", v);
    s_gauge (b, "maintenance_push", qn_codec_push_maintenance (codec) ? "1" : "0");
    s_gauge (b, "maintenance_pop", qn_codec_pop_maintenance (codec) ? "1" : "0");
    s_rows_t rows = { NULL, 0, 0 };
    qn_metrics_each (qn_codec_kernel (codec), s_collect, &rows);
    qsort (rows.rows, rows.count, sizeof *rows.rows, s_row_cmp);
    const char *reserved [] = { "uptime_seconds", "db_pool_size", "maintenance_push", "maintenance_pop" };
    for (size_t i = 0; i < rows.count; ) {
        s_row_t *r = &rows.rows [i];
        size_t end = i + 1;
        while (end < rows.count && !strcmp (rows.rows [end].family, r->family))
            end++;
        bool skip = false;
        for (size_t k = 0; k < sizeof reserved / sizeof reserved [0]; k++)
            skip |= !strcmp (r->family, reserved [k]);
        if (!skip) {
            const char *help = s_help_of (r->family);
            char generic [192];
            if (!help) {
                snprintf (generic, sizeof generic, "Queen %s %s (see docs/operations.md)",
                          s_type_name (r->kind), r->family);
                help = generic;
            }
            s_family_head (b, r->family, s_type_name (r->kind), help);
            //  A family is one kind: series of another kind under the same
            //  name (a naming mistake) are left out rather than break it.
            for (size_t k = i; k < end; k++)
                if (rows.rows [k].kind == r->kind)
                    s_render_row (b, &rows.rows [k]);
        }
        i = end;
    }
    free (rows.rows);
}

//  The answer's series, by name (what the cache above keeps).
static void
s_series_of (qn_codec_t *codec, qn_http_ctx_t *ctx, int status, qn_metric_t **count,
             qn_metric_t **duration)
{
    qn_kernel_t *k = qn_codec_kernel (codec);
    char route [96];
    qn_metric_label_escape (route, sizeof route, ctx->route ? ctx->route : "(unmatched)",
                            strlen (ctx->route ? ctx->route : "(unmatched)"));
    //  Only known methods name a series: a client's junk makes none.
    static const char *const known [] = { "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS" };
    const char *method = "OTHER";
    for (size_t i = 0; i < sizeof known / sizeof known [0]; i++)
        if (!strcmp (ctx->method, known [i]))
            method = known [i];
    char labels [192];
    snprintf (labels, sizeof labels, "route=\"%s\",method=\"%s\",code=\"%d\"", route, method, status);
    *count = qn_metric (k, QN_METRIC_COUNTER, "http_responses_total", labels);
    snprintf (labels, sizeof labels, "route=\"%s\",method=\"%s\"", route, method);
    *duration = qn_metric (k, QN_METRIC_HISTOGRAM, "http_request_duration_seconds", labels);
}

//  The two series of an answer, by (route pattern, method, status): found
//  once, then kept (a handle is an atomic add; finding one formats and
//  hashes its name). The cache belongs to the codec (qn_codec_metrics_cache).
typedef struct {
    const char *route;          //  A route table's pattern (static), or NULL
    int method;                 //  Index in `known`, or -1
    int status;
    qn_metric_t *count, *duration;
} s_answered_t;
#define S_ANSWERED_SLOTS 128

void
qn_http_metrics_answered (qn_codec_t *codec, qn_http_ctx_t *ctx, int status)
{
    static const char *const known [] = { "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS" };
    int mi = -1;
    for (size_t i = 0; i < sizeof known / sizeof known [0]; i++)
        if (!strcmp (ctx->method, known [i]))
            mi = (int) i;
    size_t slot = (((uintptr_t) ctx->route >> 3) * 31 + (size_t) (mi + 1) * 7 + (size_t) status)
                % S_ANSWERED_SLOTS;
    void **cache = qn_codec_metrics_cache (codec);
    if (!*cache)
        *cache = qn_zalloc (S_ANSWERED_SLOTS * sizeof (s_answered_t));
    s_answered_t *e = (s_answered_t *) *cache + slot;
    if (!(e->count && e->route == ctx->route && e->method == mi && e->status == status)) {
        s_answered_t fresh = { ctx->route, mi, status, NULL, NULL };
        s_series_of (codec, ctx, status, &fresh.count, &fresh.duration);
        *e = fresh;
    }
    qn_metric_add (e->count, 1);
    int64_t us = ctx->started_us ? qn_now_us () - ctx->started_us : 0;
    qn_metric_observe_us (e->duration, us > 0 ? us : 0);
}

