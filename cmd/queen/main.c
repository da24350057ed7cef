/*  cmd/queen/main.c - the broker: config, schema, start actors, wait, stop
    Exits 0 after a clean shutdown (SIGTERM/SIGINT), 1 when it cannot
    start (PostgreSQL unreachable past DB_CONNECTION_TIMEOUT, schema
    failure, port taken), 2 for bad configuration.
*/
#include "actors/actors.h"
#include "actors/sink/sink.h"
#include "kernel/schema.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

//  Connects with retries until the deadline. Returns the connection or
//  NULL after logging one line naming host, port and the libpq error.
static PGconn *
s_connect (const qn_config_t *config)
{
    qn_pg_params_t p;
    qn_pg_params (config, &p, 3);
    int64_t deadline = qn_now_ms () + config->db_connection_timeout_ms;
    int64_t delay = 100;
    for (;;) {
        PGconn *conn = PQconnectdbParams (p.keys, p.values, 0);
        if (PQstatus (conn) == CONNECTION_OK)
            return conn;
        char why [512];
        snprintf (why, sizeof why, "%s", PQerrorMessage (conn));
        for (char *c = why; *c; c++)
            if (*c == '\n')
                *c = ' ';
        PQfinish (conn);
        int64_t left = deadline - qn_now_ms ();
        if (left <= 0) {
            qn_error ("cannot connect to PostgreSQL: host=%s port=%lld db=%s user=%s error=%s",
                      config->pg_host, (long long) config->pg_port, config->pg_db,
                      config->pg_user, why);
            return NULL;
        }
        qn_debug ("postgresql not ready, retrying: error=%s", why);
        usleep ((useconds_t) (delay < left ? delay : left) * 1000);
        delay = delay * 2 > 2000 ? 2000 : delay * 2;
    }
}

static void
s_notice (void *arg, const char *message)
{
    (void) arg;
    qn_debug ("postgresql notice: %s", message);
}

static int
s_boot_schema (const qn_config_t *config)
{
    PGconn *conn = s_connect (config);
    if (!conn)
        return -1;
    PQsetNoticeProcessor (conn, s_notice, NULL);
    char err [1024];
    int applied = qn_schema_apply (conn, err, sizeof err);
    PQfinish (conn);
    if (applied < 0) {
        qn_error ("schema not applied: %s", err);
        return -1;
    }
    qn_info ("schema ready: files_applied=%d", applied);
    return 0;
}

//  The broker's actors after the two PostgreSQL pools, in start order.
//  Every one is named here: a missing file is a link error.
typedef qn_actor_t *(s_actor_new_fn) (qn_kernel_t *kernel, const qn_config_t *config);
static s_actor_new_fn *const s_actors [] = {
    qn_spool_new,               //  disk spool for database outages
    qn_retention_new,           //  retention, eviction
    qn_timers_new,              //  timers, kv/timer sweeps
    qn_codec_http_new,          //  HTTP routes and the JSON API (hosts the ephemeral queues)
    qn_jwks_new,                //  JWKS fetcher (idle without JWT_JWKS_URL)
    qn_mesh_new,                //  hints between replicas (idle without MESH_PORT/MESH_SECRET)
    qn_acceptor_new             //  the HTTP listener: the front door, last
};

int
main (int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp (argv [i], "--help") || !strcmp (argv [i], "-h")) {
            qn_config_help (stdout);
            return 0;
        }
        if (!strcmp (argv [i], "--config-markdown")) {
            qn_config_markdown (stdout);
            return 0;
        }
        fprintf (stderr, "queen: unknown argument '%s' (try --help)\n", argv [i]);
        return 2;
    }
    qn_config_t config;
    char err [256];
    if (qn_config_load (&config, err, sizeof err)) {
        fprintf (stderr, "queen: bad configuration: %s\n", err);
        qn_config_free (&config);
        return 2;
    }
    qn_log_set_level_name (config.log_level);
    //  sink: SINK_IN_BROKER runs the sink actor in this process (its
    //  settings are checked now; the bucket once the broker is up).
    if (config.sink_in_broker && qn_sink_check_config (&config, err, sizeof err)) {
        fprintf (stderr, "queen: bad configuration: %s\n", err);
        qn_config_free (&config);
        return 2;
    }
    if (config.sink_in_broker && qn_sink_check_remote (&config, false, err, sizeof err)) {
        fprintf (stderr, "queen: cannot start the sink: %s\n", err);
        qn_config_free (&config);
        return 1;
    }
    //  Every client is a file descriptor: take all the kernel allows.
    struct rlimit nofile;
    if (getrlimit (RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit (RLIMIT_NOFILE, &nofile);
    }
    qn_info ("starting: port=%lld pg=%s:%lld/%s pool=%lld", (long long) config.port,
             config.pg_host, (long long) config.pg_port, config.pg_db,
             (long long) config.db_pool_size);
    if (s_boot_schema (&config)) {
        qn_config_free (&config);
        return 1;
    }
    qn_kernel_t *kernel = qn_kernel_new (&config);
    //  Dependency order: the stores first, the front door last, so a stop
    //  in reverse order closes the door before anything behind it.
    bool ok = qn_pg_writer_new (kernel, &config, "pg_writer", (uint32_t) config.db_pool_size)
           && qn_pg_writer_new (kernel, &config, "pg_reader", (uint32_t) config.db_read_pool_size);
    for (size_t i = 0; ok && i < sizeof s_actors / sizeof s_actors [0]; i++)
        ok = s_actors [i] (kernel, &config) != NULL;
    //  The Kafka door (off when KAFKA_PORT is 0): its codec, then its listener.
    if (ok && config.kafka_port)
        ok = qn_kafka_codec_new (kernel, &config) && qn_kafka_acceptor_new (kernel, &config);
    //  The SQS front door (docs/sqs.md), when SQS_PORT is not 0: its codec,
    //  then its listener, so a stop closes the door first.
    if (ok && config.sqs_port)
        ok = qn_codec_sqs_new (kernel, &config) && qn_sqs_acceptor_new (kernel, &config);
    //  sink: started after the front door, as a client of it (QUEEN_URL).
    if (ok && config.sink_in_broker)
        ok = qn_sink_new (kernel, &config) != NULL;
    int rc = 1;
    if (ok) {
        qn_info ("ready");
        rc = qn_kernel_run (kernel, (uint32_t) config.shutdown_timeout_ms) ? 1 : 0;
    }
    else
        qn_kernel_stop_all (kernel, 2000);
    qn_kernel_destroy (&kernel);
    qn_info ("stopped: rc=%d", rc);
    qn_config_free (&config);
    return rc;
}
