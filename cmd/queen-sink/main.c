/*  cmd/queen-sink/main.c - queen-sink: queues into an S3 bucket, exactly once
    The same kernel as the broker with three actors: "sink" (consumes
    through the broker's HTTP API, writes the bucket), and, when SINK_PORT
    is not 0, "sink_http" behind "sink_acceptor" (/health, /metrics).
    Exits 0 after a clean shutdown (SIGTERM/SIGINT), 1 when the bucket or
    the broker cannot be reached at start (bad credentials, no bucket,
    broker down past SINK_START_TIMEOUT_MS) or the port is taken, 2 for bad
    configuration. docs/sink.md.
*/
#include "actors/actors.h"
#include "actors/sink/sink.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

int
main (int argc, char **argv)
{
    static const char *const prefixes [] = { "QUEEN_URL", "SINK_", "S3_", "LOG_LEVEL", NULL };
    for (int i = 1; i < argc; i++) {
        if (!strcmp (argv [i], "--help") || !strcmp (argv [i], "-h")) {
            qn_config_help_only (stdout, "usage: queen-sink [--help]\n\n"
                "queen-sink reads queues of a Queen broker (as a consumer group) and writes\n"
                "them into an S3 bucket as Parquet or JSONL, one object per closed window,\n"
                "exactly once (docs/sink.md). It is configured with environment variables:",
                prefixes);
            return 0;
        }
        fprintf (stderr, "queen-sink: unknown argument '%s' (try --help)\n", argv [i]);
        return 2;
    }
    qn_config_t config;
    char err [512];
    if (qn_config_load (&config, err, sizeof err) || qn_sink_check_config (&config, err, sizeof err)) {
        fprintf (stderr, "queen-sink: bad configuration: %s\n", err);
        qn_config_free (&config);
        return 2;
    }
    qn_log_set_level_name (config.log_level);
    curl_global_init (CURL_GLOBAL_DEFAULT);
    if (qn_sink_check_remote (&config, true, err, sizeof err)) {
        fprintf (stderr, "queen-sink: cannot start: %s\n", err);
        qn_config_free (&config);
        curl_global_cleanup ();
        return 1;
    }
    qn_info ("starting: queues=%s broker=%s bucket=%s prefix=%s format=%s window=%s group=%s",
             config.sink_queues, config.queen_url, config.s3_bucket, config.s3_prefix,
             config.sink_format, config.sink_window, config.sink_group);
    qn_kernel_t *kernel = qn_kernel_new (&config);
    bool ok = qn_sink_new (kernel, &config) != NULL;
    if (ok && config.sink_port)
        ok = qn_sink_http_new (kernel, &config)
          && qn_http_acceptor_new (kernel, &config, &(qn_http_door_t) {
                 "sink_acceptor", "sink_http", config.sink_port });
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
    curl_global_cleanup ();
    return rc;
}
