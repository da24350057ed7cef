/*  actors/sink/sink.h - the "sink" actor: queues into an S3 bucket
    See actors/sink/sink.c and docs/sink.md.
*/
#ifndef QN_ACTORS_SINK_SINK_H
#define QN_ACTORS_SINK_SINK_H

#include <stdbool.h>
#include <stddef.h>

#include "kernel/kernel.h"

//  Checks the sink settings (queues, window, format, fields, S3 settings)
//  without any I/O. 0, or -1 with a one-line reason in err.
int qn_sink_check_config (const qn_config_t *config, char *err, size_t err_cap);

//  Checks the bucket (endpoint, bucket, credentials: a one-key listing)
//  and, with check_broker, that the broker answers GET /health, retrying
//  the broker for SINK_START_TIMEOUT_MS. 0, or -1 with a one-line reason
//  in err. curl_global_init must have run.
int qn_sink_check_remote (const qn_config_t *config, bool check_broker, char *err, size_t err_cap);

//  The sink actor ("sink"). The config must have passed
//  qn_sink_check_config.
qn_actor_t *qn_sink_new (qn_kernel_t *kernel, const qn_config_t *config);

//  The codec of the sink's own HTTP port ("sink_http", behind an acceptor
//  made with qn_http_acceptor_new): GET /health and GET /metrics
//  (Prometheus text) from the sink's counters and gauges.
qn_actor_t *qn_sink_http_new (qn_kernel_t *kernel, const qn_config_t *config);

#endif
