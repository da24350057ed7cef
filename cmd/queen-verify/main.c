/*  cmd/queen-verify/main.c - end-to-end verifier for a running broker
    Drives S queues in a pipeline (stage 0 pushes per-partition sequence
    numbers, each next stage moves them on with one transaction per
    batch, a checker reads the last queue) and reports messages,
    duplicates, gaps, order violations and throughput. See docs/verify.md.
    Exits 0 when nothing was duplicated, lost or reordered (and nothing
    was corrupt, no broker crashed, the run finished), 1 when something
    was, 2 for bad flags or when the run could not start or complete.
*/
#include "cmd/queen-verify/verify.h"

#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef enum { A_STR, A_INT, A_I64, A_DBL, A_FLAG, A_U64, A_RANGE } s_arg_kind_t;

typedef struct {
    const char *name;
    s_arg_kind_t kind;
    void *at;
    double min, max;            //  Numeric bounds
    const char *help;
} s_arg_t;

static vf_opts_t s_opts = {
    .url = "http://127.0.0.1:6632",
    .stages = 4,
    .partitions = 1000,
    .messages = 100000,
    .batch = 100,
    .consumers = 4,
    .producers = 2,
    .pop_partitions = 10,
    .payload_bytes = 256,
    .lease_s = 30,
    .pop_timeout_ms = 1000,
    .drain_timeout_s = 120,
    .chaos_min_s = 2,
    .chaos_max_s = 6,
};
static double s_range [2] = { 2, 6 };
static bool s_help;
static int s_lease = -1;        //  -1: 30 s, or 5 s with --chaos

static const s_arg_t s_args [] = {
    { "--url", A_STR, &s_opts.url, 0, 0, "broker base URL (default http://127.0.0.1:6632)" },
    { "--stages", A_INT, &s_opts.stages, 1, 64, "queues in the pipeline (default 4)" },
    { "--partitions", A_INT, &s_opts.partitions, 1, 1000000, "partitions per queue (default 1000)" },
    { "--messages", A_I64, &s_opts.messages, 0, 1e12, "messages pushed into stage 0 (default 100000; 0 = until --duration)" },
    { "--batch", A_INT, &s_opts.batch, 1, 5000, "push size and pop batch (default 100; a transaction carries twice as many operations)" },
    { "--rate", A_DBL, &s_opts.rate, 0, 1e9, "stage 0 cap in msg/s (default 0 = unlimited)" },
    { "--duration", A_DBL, &s_opts.duration_s, 0, 1e7, "stop producing after this many seconds, then drain (default 0 = no limit)" },
    { "--payload-bytes", A_INT, &s_opts.payload_bytes, 16, 4 << 20, "payload size in bytes of JSON (default 256)" },
    { "--consumers", A_INT, &s_opts.consumers, 1, 256, "consumer connections per queue (default 4)" },
    { "--producers", A_INT, &s_opts.producers, 1, 256, "producer connections (default 2)" },
    { "--pop-partitions", A_INT, &s_opts.pop_partitions, 1, 1000, "partitions one pop may claim (default 10)" },
    { "--lease-seconds", A_INT, &s_lease, 1, 3600, "leaseTime of the queues (default 30; 5 with --chaos)" },
    { "--pop-timeout-ms", A_INT, &s_opts.pop_timeout_ms, 0, 600000, "long-poll timeout of a pop (default 1000)" },
    { "--drain-timeout", A_DBL, &s_opts.drain_timeout_s, 1, 1e7, "seconds the drain may go without a new message reaching the checker (default 120)" },
    { "--queue-prefix", A_STR, &s_opts.prefix, 0, 0, "queue name prefix (default vf-<random>)" },
    { "--chaos", A_FLAG, &s_opts.chaos, 0, 0, "SIGKILL and restart the broker started with --broker-bin" },
    { "--chaos-interval", A_RANGE, s_range, 0.1, 3600, "MIN:MAX seconds between kills (default 2:6)" },
    { "--chaos-kills", A_INT, &s_opts.chaos_kills, 0, 1000000, "stop killing after this many kills (default 0 = no limit)" },
    { "--broker-bin", A_STR, &s_opts.broker_bin, 0, 0, "start this broker on a free port (needed by --chaos)" },
    { "--broker-log", A_STR, &s_opts.broker_log, 0, 0, "append the started broker's output here (default /dev/null)" },
    { "--pg-host", A_STR, &s_opts.pg_host, 0, 0, "PostgreSQL host for the started broker (default $PG_HOST or 127.0.0.1)" },
    { "--pg-port", A_STR, &s_opts.pg_port, 0, 0, "PostgreSQL port (default $PG_PORT)" },
    { "--pg-db", A_STR, &s_opts.pg_db, 0, 0, "PostgreSQL database (default $PG_DB)" },
    { "--pg-user", A_STR, &s_opts.pg_user, 0, 0, "PostgreSQL user (default $PG_USER)" },
    { "--pg-password", A_STR, &s_opts.pg_password, 0, 0, "PostgreSQL password (default $PG_PASSWORD)" },
    { "--seed", A_U64, &s_opts.seed, 0, 0, "random seed: queue prefix and kill times (default: time)" },
    { "--token", A_STR, &s_opts.token, 0, 0, "bearer token when the broker has JWT auth on" },
    { "--cleanup", A_FLAG, &s_opts.cleanup, 0, 0, "delete the queues at the end" },
    { "--quiet", A_FLAG, &s_opts.quiet, 0, 0, "print only the summary line" },
    { "--help", A_FLAG, &s_help, 0, 0, "this text" },
    { NULL, 0, NULL, 0, 0, NULL }
};

static volatile int s_stop;

static void
s_on_signal (int sig)
{
    (void) sig;
    s_stop = 1;
}

static void
s_usage (FILE *out)
{
    fprintf (out,
        "usage: queen-verify [flags]\n"
        "Pushes per-partition sequence numbers through a pipeline of queues on a running\n"
        "Queen broker (one transaction per batch and stage) and checks that nothing is\n"
        "lost, duplicated or reordered. The last line is the summary:\n"
        "  verify: messages=N duplicates=D gaps=G order_violations=O msg/s=R ...\n"
        "Exit 0 when D, G and O (and corrupt) are 0; 1 otherwise; 2 when the run could\n"
        "not start or complete. See docs/verify.md.\n\nflags:\n");
    for (const s_arg_t *a = s_args; a->name; a++)
        fprintf (out, "  %-18s %s\n", a->name, a->help);
}

static int
s_number (const s_arg_t *a, const char *v, double *out)
{
    char *end;
    errno = 0;
    double d = strtod (v, &end);
    if (errno || end == v || *end || d < a->min || d > a->max) {
        fprintf (stderr, "queen-verify: %s: expected a number from %g to %g, got '%s'\n",
                 a->name, a->min, a->max, v);
        return -1;
    }
    if ((a->kind == A_INT || a->kind == A_I64) && d != (double) (int64_t) d) {
        fprintf (stderr, "queen-verify: %s: expected an integer, got '%s'\n", a->name, v);
        return -1;
    }
    *out = d;
    return 0;
}

static int
s_set (const s_arg_t *a, const char *v)
{
    double d;
    char *end;
    switch (a->kind) {
        case A_STR:
            *(const char **) a->at = v;
            return 0;
        case A_FLAG:
            *(bool *) a->at = true;
            return 0;
        case A_U64:
            errno = 0;
            *(uint64_t *) a->at = strtoull (v, &end, 0);
            if (errno || end == v || *end) {
                fprintf (stderr, "queen-verify: %s: expected an integer, got '%s'\n", a->name, v);
                return -1;
            }
            return 0;
        case A_RANGE: {
            double *r = a->at;
            if (sscanf (v, "%lf:%lf", &r [0], &r [1]) != 2 || r [0] < a->min || r [1] < r [0]
            ||  r [1] > a->max) {
                fprintf (stderr, "queen-verify: %s: expected MIN:MAX seconds, got '%s'\n", a->name, v);
                return -1;
            }
            return 0;
        }
        default:
            if (s_number (a, v, &d) < 0)
                return -1;
            if (a->kind == A_INT)
                *(int *) a->at = (int) d;
            else
            if (a->kind == A_I64)
                *(int64_t *) a->at = (int64_t) d;
            else
                *(double *) a->at = d;
            return 0;
    }
}

//  Accepts "--flag value" and "--flag=value". 0, or -1 after a message.
static int
s_parse (int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        char *name = argv [i], *value = NULL;
        char *eq = strchr (name, '=');
        size_t len = eq ? (size_t) (eq - name) : strlen (name);
        const s_arg_t *a = s_args;
        while (a->name && (strlen (a->name) != len || strncmp (a->name, name, len)))
            a++;
        if (!a->name) {
            fprintf (stderr, "queen-verify: unknown flag '%s' (see --help)\n", name);
            return -1;
        }
        if (a->kind == A_FLAG && !eq)
            value = "1";
        else
        if (eq)
            value = eq + 1;
        else
        if (i + 1 < argc)
            value = argv [++i];
        else {
            fprintf (stderr, "queen-verify: %s needs a value\n", a->name);
            return -1;
        }
        if (s_set (a, value) < 0)
            return -1;
    }
    return 0;
}

static const char *
s_env (const char *flag, const char *name)
{
    return flag ? flag : getenv (name);
}

//  Cross-flag rules and defaults that depend on other flags.
static int
s_finish_opts (vf_opts_t *o, char *prefix, size_t prefix_len)
{
    if (o->chaos && !o->broker_bin) {
        fprintf (stderr, "queen-verify: --chaos needs --broker-bin (it kills a broker it started itself)\n");
        return -1;
    }
    if (o->messages == 0 && o->duration_s == 0) {
        fprintf (stderr, "queen-verify: --messages 0 needs --duration\n");
        return -1;
    }
    o->chaos_min_s = s_range [0];
    o->chaos_max_s = s_range [1];
    o->lease_s = s_lease > 0 ? s_lease : o->chaos ? 5 : 30;
    if (!o->seed)
        o->seed = (uint64_t) time (NULL) * 1000003u ^ (uint64_t) getpid () << 20;
    uint64_t rng = o->seed | 1;
    if (!o->prefix) {
        vf_rand (&rng);
        snprintf (prefix, prefix_len, "vf-%08x", (unsigned) (vf_rand (&rng) >> 32));
        o->prefix = prefix;
    }
    for (const char *c = o->prefix; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')
           || *c == '-' || *c == '_' || *c == '.') || c - o->prefix > 180) {
            fprintf (stderr, "queen-verify: --queue-prefix: letters, digits, '-', '_', '.' only, "
                     "at most 180\n");
            return -1;
        }
    if (!*o->prefix) {
        fprintf (stderr, "queen-verify: --queue-prefix must not be empty\n");
        return -1;
    }
    o->pg_host = s_env (o->pg_host, "PG_HOST");
    if (!o->pg_host || !*o->pg_host)
        o->pg_host = "127.0.0.1";
    o->pg_port = s_env (o->pg_port, "PG_PORT");
    o->pg_db = s_env (o->pg_db, "PG_DB");
    o->pg_user = s_env (o->pg_user, "PG_USER");
    o->pg_password = s_env (o->pg_password, "PG_PASSWORD");
    return 0;
}

int
main (int argc, char **argv)
{
    char prefix [32];
    if (s_parse (argc, argv) < 0)
        return 2;
    if (s_help) {
        s_usage (stdout);
        return 0;
    }
    vf_opts_t *o = &s_opts;
    if (s_finish_opts (o, prefix, sizeof prefix) < 0)
        return 2;
    signal (SIGPIPE, SIG_IGN);
    struct sigaction sa = { .sa_handler = s_on_signal };
    sigaction (SIGINT, &sa, NULL);
    sigaction (SIGTERM, &sa, NULL);
    curl_global_init (CURL_GLOBAL_DEFAULT);

    vf_broker_t *broker = NULL;
    const char *url = o->url;
    if (o->broker_bin) {
        char err [300];
        broker = vf_broker_new (o, err, sizeof err);
        if (!broker) {
            fprintf (stderr, "queen-verify: %s\n", err);
            curl_global_cleanup ();
            return 2;
        }
        url = vf_broker_url (broker);
    }
    if (!o->quiet) {
        char count [32] = "unlimited";
        if (o->messages)
            snprintf (count, sizeof count, "%lld", (long long) o->messages);
        printf ("queen-verify: url=%s prefix=%s stages=%d partitions=%d messages=%s batch=%d "
                "consumers=%d producers=%d pop_partitions=%d payload_bytes=%d lease=%ds rate=%g "
                "duration=%gs chaos=%s seed=%llu\n", url, o->prefix, o->stages, o->partitions,
                count, o->batch, o->consumers, o->producers, o->pop_partitions, o->payload_bytes,
                o->lease_s, o->rate, o->duration_s, o->chaos ? "on" : "off",
                (unsigned long long) o->seed);
        fflush (stdout);
    }
    vf_run_t *run = vf_run_new (o, url);
    int code = 2;
    if (vf_run_setup (run, broker ? 60000 : 10000) == 0) {
        vf_run_loop (run, broker, &s_stop);
        if (o->cleanup)
            vf_run_cleanup (run);
        if (broker)
            vf_broker_stop (broker);
        vf_result_t res;
        vf_run_result (run, &res);
        code = vf_report (o, &res, broker, stdout);
        if (res.fatal)
            code = 2;
    }
    vf_run_destroy (&run);
    vf_broker_destroy (&broker);
    curl_global_cleanup ();
    return code;
}
