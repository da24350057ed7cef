/*  kernel/config.h - settings from environment variables
    Only kernel/config.c calls getenv. One table row per setting gives its
    name, kind, bounds, default and help; `queen --help` prints the table
    and the README's configuration table is generated from it.
*/
#ifndef QN_KERNEL_CONFIG_H
#define QN_KERNEL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    //  Listener
    int64_t port;
    char *host;
    int64_t max_connections;
    int64_t max_body_bytes;
    int64_t max_header_bytes;
    int64_t idle_timeout_ms;
    int64_t request_timeout_ms;
    int64_t shutdown_timeout_ms;
    int64_t actor_queue_hwm;    //  Messages an actor queue holds (0: the default)
    //  PostgreSQL
    char *pg_host;
    int64_t pg_port;
    char *pg_user;
    char *pg_password;
    char *pg_db;
    int64_t db_pool_size;
    int64_t db_read_pool_size;
    int64_t db_statement_timeout_ms;
    int64_t db_connection_timeout_ms;
    //  Messaging defaults
    int64_t default_timeout_ms;
    int64_t default_batch_size;
    char *default_subscription_mode;
    int64_t max_wait_ms;
    int64_t push_max_batch;
    int64_t retention_interval_ms;
    int64_t eviction_interval_ms;
    int64_t ack_lanes;          //  Ack statements in flight; more wait and merge (0 = no merging)
    int64_t ready_vacuum_dead_rows; //  Retention vacuums queen.ready past this many dead rows (0 = off)
    //  Spool
    char *file_buffer_dir;
    int64_t spool_fsync_ms;
    //  Misc
    char *log_level;
    char *queen_encryption_key;
    char *queen_encryption_old_keys;    //  Comma-separated, read only (rotation)
    //  Access control (JWT, spec §1.8)
    bool jwt_enabled;
    char *jwt_algorithm;        //  auto, HS256, RS256 or EdDSA
    char *jwt_secret;
    char *jwt_public_key;       //  PEM
    char *jwt_jwks_url;
    int64_t jwt_jwks_refresh_ms;
    char *jwt_issuer;
    char *jwt_audience;
    int64_t jwt_clock_skew_s;
    char *jwt_roles_claim;
    char *jwt_roles_array_claim;
    char *jwt_role_admin;
    char *jwt_role_read_write;
    char *jwt_role_read_only;
    char *jwt_skip_paths;       //  Comma-separated; "/x/" is a prefix
    //  sink (queen-sink, issue 14; docs/sink.md)
    char *queen_url;
    char *sink_queues;          //  Comma-separated
    char *sink_format;          //  parquet, jsonl
    char *sink_compression;     //  "" = zstd (parquet) / gzip (jsonl)
    char *sink_window;          //  30s, 1m, 1h, 1d
    int64_t sink_lateness_ms;
    char *sink_late;            //  next, prefix
    char *sink_group;
    char *sink_fields;
    int64_t sink_batch;
    int64_t sink_partitions;
    int64_t sink_wait_ms;
    int64_t sink_part_rows;
    int64_t sink_part_bytes;
    int64_t sink_row_group_rows;
    int64_t sink_multipart_bytes;
    char *sink_kv_bucket;
    char *sink_auth_token;      //  Bearer token for the broker (or a queen-proxy key)
    int64_t sink_port;
    int64_t sink_start_timeout_ms;
    bool sink_in_broker;
    char *sink_config;          //  Per-queue settings file (wire/sink_config.h); "" = none
    char *s3_endpoint;
    char *s3_bucket;
    char *s3_prefix;
    char *s3_region;
    char *s3_access_key_id;
    char *s3_secret_access_key;
    bool s3_path_style;
    int64_t s3_retries;
    int64_t s3_timeout_ms;
    //  Tenancy (issue 12)
    char *tenant_assertion_secret;  //  Shared with queen-proxy; "" = no proxy
    int64_t tenant_assertion_max_age_s;
    char *jwt_tenant_claim;     //  JWT claim naming the tenant
    char *queen_upstreams;      //  queen-proxy: comma-separated broker URLs
    int64_t proxy_usage_flush_ms;
    int64_t proxy_session_ttl_ms;   //  queen-proxy: login sessions
    //  mesh (issue 13): replicas of a cell exchange latency hints
    int64_t mesh_port;          //  0 = off
    char *mesh_advertised_host;
    char *mesh_secret;          //  Cell secret, or "file:/path" holding it
    char *queen_peers;          //  Comma-separated static host:port
    int64_t mesh_heartbeat_ms;
    int64_t ephemeral_max_bytes;        //  Ephemeral queues: memory cap of the broker
    //  Operations (opsweb): metrics and dashboard
    int64_t metrics_queue_series;   //  Per-queue series per family before "_other"
    //  Kafka front door (docs/kafka.md)
    int64_t kafka_port;         //  0 = off
    char *kafka_advertised_host;
    int64_t kafka_default_partitions;
    int64_t kafka_max_partitions;
    bool kafka_auto_create_topics;
    bool kafka_allow_delete_topics;
    int64_t kafka_max_request_bytes;
    int64_t kafka_node_id;
    //  Kafka consumer groups (kgroup)
    int64_t kafka_group_min_session_ms;
    int64_t kafka_group_max_session_ms;
    //  SQS front door (issue 15)
    int64_t sqs_port;
    char *sqs_credentials;
    char *sqs_region;
    bool sqs_verify_signatures;
    char *sqs_public_url;
    int64_t sqs_keys_refresh_ms;            //  fin: SQS access keys reload period
    bool embedded;              //  Not a setting: PG_HOST was unset
} qn_config_t;

//  Fills `config` from the environment (defaults first). Returns 0, or -1
//  with a one-line reason in err (unknown value, out of bounds).
int qn_config_load (qn_config_t *config, char *err, size_t err_len);
//  Same, from a custom lookup (tests): get(name) returns NULL when unset.
int qn_config_load_from (qn_config_t *config, const char *(*get) (const char *name),
                         char *err, size_t err_len);
//  queen-proxy's settings: the same table with PORT defaulting to 6630.
int qn_config_load_proxy (qn_config_t *config, char *err, size_t err_len);
void qn_config_free (qn_config_t *config);
//  Prints every setting with its default and help, as `queen --help` does.
void qn_config_help (FILE *out);
//  Prints the settings whose names start with one of `prefixes` (NULL
//  ended) after a usage line (queen-sink --help).
void qn_config_help_only (FILE *out, const char *usage, const char *const *prefixes);
//  queen-proxy --help: the settings the proxy reads.
void qn_config_help_proxy (FILE *out);
//  Prints the settings as a Markdown table (README).
void qn_config_markdown (FILE *out);

#endif
