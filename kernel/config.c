/*  kernel/config.c - settings table and environment loading (see config.h)
    The only file that calls getenv.
*/
#include "kernel/config.h"
#include "base/log.h"
#include "base/buf.h"
#include "wire/crypto.h"
#include "wire/jwt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum { S_INT, S_STR, S_BOOL, S_SECRET } s_kind_t;

typedef struct {
    const char *name;
    s_kind_t kind;
    size_t offset;
    const char *dflt;
    int64_t min, max;
    const char *help;
} s_setting_t;

#define F(field) offsetof (qn_config_t, field)
#define MiB (1024 * 1024)

static const s_setting_t s_settings [] = {
    { "PORT", S_INT, F (port), "6632", 1, 65535, "HTTP listening port" },
    { "HOST", S_STR, F (host), "0.0.0.0", 0, 0, "HTTP listening address" },
    { "MAX_CONNECTIONS", S_INT, F (max_connections), "10000", 1, 1000000, "concurrent client connections; more are refused" },
    { "MAX_BODY_BYTES", S_INT, F (max_body_bytes), "16777216", 1024, 1024LL * MiB, "largest request body (413 beyond)" },
    { "MAX_HEADER_BYTES", S_INT, F (max_header_bytes), "16384", 1024, MiB, "largest request head (431 beyond)" },
    { "IDLE_TIMEOUT_MS", S_INT, F (idle_timeout_ms), "60000", 100, 3600000, "close keep-alive connections idle this long" },
    { "REQUEST_TIMEOUT_MS", S_INT, F (request_timeout_ms), "30000", 100, 3600000, "a request must arrive completely within this (408)" },
    { "SHUTDOWN_TIMEOUT_MS", S_INT, F (shutdown_timeout_ms), "10000", 0, 600000, "on SIGTERM, time to drain in-flight requests" },
    { "ACTOR_QUEUE_HWM", S_INT, F (actor_queue_hwm), "10000", 16, 1000000, "messages between two actors before the sender is told to wait (tests lower it)" },
    { "PG_HOST", S_STR, F (pg_host), "", 0, 0, "PostgreSQL host; unset with `make run` starts a private cluster" },
    { "PG_PORT", S_INT, F (pg_port), "5432", 1, 65535, "PostgreSQL port" },
    { "PG_USER", S_STR, F (pg_user), "postgres", 0, 0, "PostgreSQL user" },
    { "PG_PASSWORD", S_SECRET, F (pg_password), "postgres", 0, 0, "PostgreSQL password" },
    { "PG_DB", S_STR, F (pg_db), "postgres", 0, 0, "PostgreSQL database" },
    { "DB_POOL_SIZE", S_INT, F (db_pool_size), "8", 1, 500, "hot-path connections (push, pop, ack)" },
    { "DB_READ_POOL_SIZE", S_INT, F (db_read_pool_size), "2", 1, 100, "connections for dashboard, status and admin reads" },
    { "DB_STATEMENT_TIMEOUT", S_INT, F (db_statement_timeout_ms), "30000", 100, 3600000, "statement_timeout of broker sessions, ms" },
    { "DB_CONNECTION_TIMEOUT", S_INT, F (db_connection_timeout_ms), "30000", 0, 3600000, "at boot, keep retrying PostgreSQL this long, ms" },
    { "DEFAULT_TIMEOUT", S_INT, F (default_timeout_ms), "30000", 0, 3600000, "long-poll timeout when a pop sends none, ms" },
    { "DEFAULT_BATCH_SIZE", S_INT, F (default_batch_size), "1", 1, 10000, "pop batch when a pop sends none" },
    { "DEFAULT_SUBSCRIPTION_MODE", S_STR, F (default_subscription_mode), "", 0, 0, "subscription mode of new consumer groups (all, new)" },
    { "MAX_WAIT_MS", S_INT, F (max_wait_ms), "3600000", 1000, 86400000, "upper bound of a long-poll timeout, ms" },
    { "PUSH_MAX_BATCH", S_INT, F (push_max_batch), "10000", 1, 100000, "most items per push round trip" },
    { "RETENTION_INTERVAL", S_INT, F (retention_interval_ms), "300000", 100, 86400000, "retention pass period, ms" },
    { "EVICTION_INTERVAL", S_INT, F (eviction_interval_ms), "60000", 100, 86400000, "max-wait eviction pass period, ms" },
    { "ACK_LANES", S_INT, F (ack_lanes), "2", 0, 64, "acks run at once by pg_writer; later acks of a tenant wait and merge into one queen.ack (0 = each ack alone)" },
    { "READY_VACUUM_DEAD_ROWS", S_INT, F (ready_vacuum_dead_rows), "20000", 0, 1000000000, "retention vacuums queen.ready when it holds this many dead rows (0 = leave it to autovacuum)" },
    { "FILE_BUFFER_DIR", S_STR, F (file_buffer_dir), "./.queen/spool", 0, 0, "disk spool for pushes while PostgreSQL is down" },
    { "SPOOL_FSYNC_MS", S_INT, F (spool_fsync_ms), "0", 0, 1000, "group fdatasync window of the spool, ms (0 = sync each write)" },
    { "LOG_LEVEL", S_STR, F (log_level), "info", 0, 0, "debug, info, warn or error" },
    { "QUEEN_ENCRYPTION_KEY", S_SECRET, F (queen_encryption_key), "", 0, 0, "64 hex chars: AES-256 key for queues with encryptionEnabled" },
    { "QUEEN_ENCRYPTION_OLD_KEYS", S_SECRET, F (queen_encryption_old_keys), "", 0, 0, "comma-separated 64-hex keys kept for reading payloads encrypted before a key rotation" },
    { "JWT_ENABLED", S_BOOL, F (jwt_enabled), "false", 0, 0, "require JWT bearer tokens on API routes (spec 1.8)" },
    { "JWT_ALGORITHM", S_STR, F (jwt_algorithm), "auto", 0, 0, "auto, HS256, RS256 or EdDSA" },
    { "JWT_SECRET", S_SECRET, F (jwt_secret), "", 0, 0, "HS256 shared secret" },
    { "JWT_PUBLIC_KEY", S_STR, F (jwt_public_key), "", 0, 0, "PEM public key (RSA or Ed25519) for RS256 / EdDSA" },
    { "JWT_JWKS_URL", S_STR, F (jwt_jwks_url), "", 0, 0, "JWKS URL fetched in the background (RS256 / EdDSA keys)" },
    { "JWT_JWKS_REFRESH_MS", S_INT, F (jwt_jwks_refresh_ms), "3600000", 100, 86400000, "JWKS refresh period, ms" },
    { "JWT_ISSUER", S_STR, F (jwt_issuer), "", 0, 0, "required `iss` claim (unset: not checked)" },
    { "JWT_AUDIENCE", S_STR, F (jwt_audience), "", 0, 0, "required `aud` claim (unset: not checked)" },
    { "JWT_CLOCK_SKEW", S_INT, F (jwt_clock_skew_s), "30", 0, 3600, "leeway on exp, nbf and iat, seconds" },
    { "JWT_ROLES_CLAIM", S_STR, F (jwt_roles_claim), "role", 0, 0, "string claim holding one role" },
    { "JWT_ROLES_ARRAY_CLAIM", S_STR, F (jwt_roles_array_claim), "roles", 0, 0, "array claim holding several roles" },
    { "JWT_ROLE_ADMIN", S_STR, F (jwt_role_admin), "admin", 0, 0, "role value granting admin" },
    { "JWT_ROLE_READ_WRITE", S_STR, F (jwt_role_read_write), "read-write", 0, 0, "role value granting read-write" },
    { "JWT_ROLE_READ_ONLY", S_STR, F (jwt_role_read_only), "read-only", 0, 0, "role value granting read-only" },
    { "JWT_SKIP_PATHS", S_STR, F (jwt_skip_paths), "/health,/metrics/prometheus,/metrics,/", 0, 0, "paths that skip auth; an entry ending in / (other than /) is a prefix" },
    //  sink: queen-sink (and SINK_IN_BROKER), docs/sink.md
    { "QUEEN_URL", S_STR, F (queen_url), "http://127.0.0.1:6632", 0, 0, "sink: the broker's base URL (consumed through its HTTP API)" },
    { "SINK_QUEUES", S_STR, F (sink_queues), "", 0, 0, "sink: comma-separated queues to write to the bucket" },
    { "SINK_FORMAT", S_STR, F (sink_format), "parquet", 0, 0, "sink: parquet or jsonl" },
    { "SINK_COMPRESSION", S_STR, F (sink_compression), "", 0, 0, "sink: parquet none/snappy/gzip/zstd (default zstd); jsonl none/gzip (default gzip)" },
    { "SINK_WINDOW", S_STR, F (sink_window), "1h", 0, 0, "sink: window width by message creation time: <n>s, <n>m, <n>h or 1d dividing a day" },
    { "SINK_LATENESS_MS", S_INT, F (sink_lateness_ms), "60000", 0, 86400000, "sink: a window closes once the watermark passes its end plus this" },
    { "SINK_LATE", S_STR, F (sink_late), "next", 0, 0, "sink: a message for a committed window goes to the next window's object (next) or under <prefix>/late/ (prefix)" },
    { "SINK_GROUP", S_STR, F (sink_group), "queen-sink", 0, 0, "sink: consumer group it reads as" },
    { "SINK_FIELDS", S_STR, F (sink_fields), "", 0, 0, "sink: typed Parquet columns from payload fields: path:type,... (string int64 double bool json timestamp)" },
    { "SINK_BATCH", S_INT, F (sink_batch), "1000", 1, 9000, "sink: messages per pop (and per staging transaction)" },
    { "SINK_PARTITIONS", S_INT, F (sink_partitions), "100", 1, 1000, "sink: partitions one pop may claim" },
    { "SINK_WAIT_MS", S_INT, F (sink_wait_ms), "1000", 0, 60000, "sink: long-poll timeout of a pop, ms" },
    { "SINK_PART_ROWS", S_INT, F (sink_part_rows), "1000000", 1, 1000000000, "sink: most messages in one object (part) of a window" },
    { "SINK_PART_BYTES", S_INT, F (sink_part_bytes), "268435456", 1024, 1LL << 40, "sink: most raw message bytes in one object (part) of a window" },
    { "SINK_ROW_GROUP_ROWS", S_INT, F (sink_row_group_rows), "100000", 1, 100000000, "sink: rows per Parquet row group" },
    { "SINK_MULTIPART_BYTES", S_INT, F (sink_multipart_bytes), "16777216", 1024, 5LL * 1024 * MiB, "sink: objects larger than this are uploaded in parts of this size" },
    { "SINK_KV_BUCKET", S_STR, F (sink_kv_bucket), "queen-sink", 0, 0, "sink: broker kv bucket holding staged messages and committed windows" },
    { "SINK_AUTH_TOKEN", S_SECRET, F (sink_auth_token), "", 0, 0, "sink: bearer token sent to QUEEN_URL (a JWT, or a queen-proxy key when QUEEN_URL is the proxy)" },
    { "SINK_PORT", S_INT, F (sink_port), "6635", 0, 65535, "sink: port of the sink's /health and /metrics (0: none)" },
    { "SINK_START_TIMEOUT_MS", S_INT, F (sink_start_timeout_ms), "30000", 0, 3600000, "sink: at start, keep retrying the broker this long, ms" },
    { "SINK_IN_BROKER", S_BOOL, F (sink_in_broker), "false", 0, 0, "broker: also run the sink actor inside the broker process" },
    /* sink (wave 3): per-queue settings file */
    { "SINK_CONFIG", S_STR, F (sink_config), "", 0, 0, "sink: file of per-queue settings ([queue] sections: format, compression, window, lateness_ms, late, prefix, fields); docs/sink.md" },
    { "S3_ENDPOINT", S_STR, F (s3_endpoint), "", 0, 0, "sink: S3 endpoint, http(s)://host[:port]" },
    { "S3_BUCKET", S_STR, F (s3_bucket), "", 0, 0, "sink: bucket" },
    { "S3_PREFIX", S_STR, F (s3_prefix), "", 0, 0, "sink: key prefix inside the bucket" },
    { "S3_REGION", S_STR, F (s3_region), "us-east-1", 0, 0, "sink: region used in the signature" },
    { "S3_ACCESS_KEY_ID", S_STR, F (s3_access_key_id), "", 0, 0, "sink: access key id" },
    { "S3_SECRET_ACCESS_KEY", S_SECRET, F (s3_secret_access_key), "", 0, 0, "sink: secret access key" },
    { "S3_PATH_STYLE", S_BOOL, F (s3_path_style), "false", 0, 0, "sink: path-style URLs (http://host/bucket/key) instead of virtual-host style" },
    { "S3_RETRIES", S_INT, F (s3_retries), "5", 0, 100, "sink: retries of an S3 request on 5xx and network errors (then the window is tried again later)" },
    { "S3_TIMEOUT_MS", S_INT, F (s3_timeout_ms), "60000", 100, 3600000, "sink: timeout of one S3 request, ms" },
    //  tenancy (issue 12): the tenant of a request (docs/tenancy.md)
    { "TENANT_ASSERTION_SECRET", S_SECRET, F (tenant_assertion_secret), "", 0, 0, "secret shared with queen-proxy (at least 32 bytes): when set, API routes need a tenant assertion signed with it" },
    { "TENANT_ASSERTION_MAX_AGE", S_INT, F (tenant_assertion_max_age_s), "60", 1, 3600, "a tenant assertion's timestamp must be this close to now, seconds" },
    { "JWT_TENANT_CLAIM", S_STR, F (jwt_tenant_claim), "tenant", 0, 0, "JWT claim naming the tenant (no proxy; absent: the default tenant)" },
    { "PROXY_USAGE_FLUSH_MS", S_INT, F (proxy_usage_flush_ms), "10000", 100, 3600000, "queen-proxy only: usage metering is written to PostgreSQL this often (and at shutdown), ms" },
    { "QUEEN_UPSTREAMS", S_STR, F (queen_upstreams), "http://127.0.0.1:6632", 0, 0, "queen-proxy only: comma-separated broker base URLs (http://host:port)" },
    { "PROXY_SESSION_TTL_MS", S_INT, F (proxy_session_ttl_ms), "28800000", 1000, 2592000000, "queen-proxy only: a login session lasts this long, ms (8 h)" },
    //  mesh (issue 13, docs/mesh.md)
    { "MESH_PORT", S_INT, F (mesh_port), "6634", 0, 65535, "mesh port between replicas of a cell (ZeroMQ + CURVE); 0 = off" },
    { "MESH_ADVERTISED_HOST", S_STR, F (mesh_advertised_host), "127.0.0.1", 0, 0, "the address peers dial to reach this broker's mesh port" },
    { "MESH_SECRET", S_SECRET, F (mesh_secret), "", 0, 0, "cell secret the CURVE keys are derived from, or file:/path holding it; unset = mesh off" },
    { "QUEEN_PEERS", S_STR, F (queen_peers), "", 0, 0, "static mesh peers host:port,... added to those registered in PostgreSQL" },
    { "EPHEMERAL_MAX_BYTES", S_INT, F (ephemeral_max_bytes), "67108864", 1024, 64LL * 1024 * MiB, "memory the ephemeral queues may hold on this broker (docs/ephemeral.md); over it sends get 503" },
    { "MESH_HEARTBEAT_MS", S_INT, F (mesh_heartbeat_ms), "1000", 100, 60000, "mesh heartbeat period, ms; a peer silent for 5 periods is dropped" },
    //  Operations (opsweb): metrics and dashboard
    { "METRICS_QUEUE_SERIES", S_INT, F (metrics_queue_series), "100", 1, 10000, "queues with their own series per metric family in /metrics/prometheus; more count as queue=\"_other\"" },
    //  Kafka front door (docs/kafka.md)
    { "KAFKA_PORT", S_INT, F (kafka_port), "9092", 0, 65535, "Kafka protocol listening port; 0 = off" },
    { "KAFKA_ADVERTISED_HOST", S_STR, F (kafka_advertised_host), "127.0.0.1", 0, 0, "host Metadata and FindCoordinator give Kafka clients (they reconnect to it)" },
    { "KAFKA_DEFAULT_PARTITIONS", S_INT, F (kafka_default_partitions), "1", 1, 1024, "Kafka partition count of a queue first seen through Kafka" },
    { "KAFKA_MAX_PARTITIONS", S_INT, F (kafka_max_partitions), "1024", 1, 1024, "largest partition count CreateTopics accepts" },
    { "KAFKA_AUTO_CREATE_TOPICS", S_BOOL, F (kafka_auto_create_topics), "true", 0, 0, "Metadata creates a topic (queue) a client names" },
    { "KAFKA_ALLOW_DELETE_TOPICS", S_BOOL, F (kafka_allow_delete_topics), "true", 0, 0, "DeleteTopics deletes queues" },
    { "KAFKA_MAX_REQUEST_BYTES", S_INT, F (kafka_max_request_bytes), "104857600", 1024, 1024LL * MiB, "largest Kafka request frame (the connection is closed beyond)" },
    { "KAFKA_NODE_ID", S_INT, F (kafka_node_id), "1", 0, 2147483647, "broker id in Metadata" },
    //  Kafka consumer groups (kgroup; docs/kafka.md)
    { "KAFKA_GROUP_MIN_SESSION_MS", S_INT, F (kafka_group_min_session_ms), "6000", 1, 2147483647, "smallest session timeout a Kafka JoinGroup may ask for (else error 26)" },
    { "KAFKA_GROUP_MAX_SESSION_MS", S_INT, F (kafka_group_max_session_ms), "1800000", 1, 2147483647, "largest session timeout a Kafka JoinGroup may ask for (else error 26)" },
    //  SQS front door (issue 15, docs/sqs.md)
    { "SQS_PORT", S_INT, F (sqs_port), "9324", 0, 65535, "SQS API listening port (AWS query and JSON 1.0); 0 = off" },
    { "SQS_CREDENTIALS", S_SECRET, F (sqs_credentials), "", 0, 0, "SQS access keys: comma-separated accessKeyId:secretKey pairs, or @path to a file of such lines" },
    { "SQS_REGION", S_STR, F (sqs_region), "us-east-1", 0, 0, "SQS region (queue ARNs)" },
    { "SQS_VERIFY_SIGNATURES", S_BOOL, F (sqs_verify_signatures), "true", 0, 0, "verify AWS Signature V4 on every SQS request (false: local development only)" },
    { "SQS_PUBLIC_URL", S_STR, F (sqs_public_url), "", 0, 0, "scheme://host:port of returned QueueUrls (unset: from the request's Host header)" },
    //  SQS access keys per tenant (fin; docs/sqs.md)
    { "SQS_KEYS_REFRESH_MS", S_INT, F (sqs_keys_refresh_ms), "5000", 100, 3600000, "how often the SQS door reloads its access keys from queen.sqs_keys (a disabled key is refused within this time)" },
    { NULL, 0, 0, NULL, 0, 0, NULL }
};

static const char *
s_getenv (const char *name)
{
    return getenv (name);
}

static int
s_set (qn_config_t *c, const s_setting_t *s, const char *value, char *err, size_t err_len)
{
    char *at = (char *) c + s->offset;
    if (s->kind == S_STR || s->kind == S_SECRET) {
        char **p = (char **) at;
        free (*p);
        *p = qn_strdup (value);
        return 0;
    }
    if (s->kind == S_BOOL) {
        bool *b = (bool *) at;
        if (!strcasecmp (value, "true") || !strcmp (value, "1"))
            *b = true;
        else
        if (!strcasecmp (value, "false") || !strcmp (value, "0"))
            *b = false;
        else {
            snprintf (err, err_len, "%s: expected true or false, got '%s'", s->name, value);
            return -1;
        }
        return 0;
    }
    char *end;
    errno = 0;
    long long v = strtoll (value, &end, 10);
    if (errno || end == value || *end) {
        snprintf (err, err_len, "%s: expected an integer, got '%s'", s->name, value);
        return -1;
    }
    if (v < s->min || v > s->max) {
        snprintf (err, err_len, "%s: %lld is out of range [%" PRId64 ", %" PRId64 "]",
                  s->name, v, s->min, s->max);
        return -1;
    }
    *(int64_t *) at = v;
    return 0;
}

//  JWT settings that only make sense together; a broken key fails the
//  start rather than every request. Never prints a secret.
static int
s_check_jwt (const qn_config_t *c, char *err, size_t err_len)
{
    qn_jwt_alg_t alg;
    if (qn_jwt_alg_parse (c->jwt_algorithm, &alg)) {
        snprintf (err, err_len, "JWT_ALGORITHM: expected auto, HS256, RS256 or EdDSA, got '%s'",
                  c->jwt_algorithm);
        return -1;
    }
    qn_jwt_keys_t *keys = qn_jwt_keys_new ();
    char why [128] = "";
    int rc = 0;
    if (c->jwt_public_key [0]
    &&  qn_jwt_keys_add_pem (keys, c->jwt_public_key, strlen (c->jwt_public_key), NULL,
                             why, sizeof why)) {
        snprintf (err, err_len, "JWT_PUBLIC_KEY: %s", why);
        rc = -1;
    }
    qn_jwt_keys_destroy (&keys);
    if (rc || !c->jwt_enabled)
        return rc;
    bool secret = c->jwt_secret [0], pem = c->jwt_public_key [0], jwks = c->jwt_jwks_url [0];
    if ((alg == QN_JWT_HS256 && !secret)
    ||  ((alg == QN_JWT_RS256 || alg == QN_JWT_EDDSA) && !pem && !jwks)
    ||  (alg == QN_JWT_AUTO && !secret && !pem && !jwks)) {
        snprintf (err, err_len, "JWT_ENABLED: JWT_ALGORITHM=%s needs %s", qn_jwt_alg_name (alg),
                  alg == QN_JWT_HS256 ? "JWT_SECRET"
                : alg == QN_JWT_AUTO ? "JWT_SECRET, JWT_PUBLIC_KEY or JWT_JWKS_URL"
                : "JWT_PUBLIC_KEY or JWT_JWKS_URL");
        return -1;
    }
    if (jwks && strncasecmp (c->jwt_jwks_url, "http://", 7) && strncasecmp (c->jwt_jwks_url, "https://", 8)) {
        snprintf (err, err_len, "JWT_JWKS_URL: expected an http:// or https:// URL");
        return -1;
    }
    return 0;
}

int
qn_config_load_from (qn_config_t *c, const char *(*get) (const char *), char *err, size_t err_len)
{
    memset (c, 0, sizeof *c);
    for (const s_setting_t *s = s_settings; s->name; s++)
        if (s_set (c, s, s->dflt, err, err_len))
            return -1;
    for (const s_setting_t *s = s_settings; s->name; s++) {
        const char *v = get (s->name);
        if (v && s_set (c, s, v, err, err_len))
            return -1;
    }
    c->embedded = !c->pg_host [0];
    if (c->embedded) {
        free (c->pg_host);
        c->pg_host = qn_strdup ("127.0.0.1");
    }
    //  Settings that depend on each other or need parsing.
    static const char *levels [] = { "debug", "info", "warn", "warning", "error", NULL };
    bool ok = false;
    for (int i = 0; levels [i]; i++)
        ok = ok || !strcasecmp (c->log_level, levels [i]);
    if (!ok) {
        snprintf (err, err_len, "LOG_LEVEL: expected debug, info, warn or error, got '%s'", c->log_level);
        return -1;
    }
    if (c->default_subscription_mode [0]
    && strcmp (c->default_subscription_mode, "all")
    && strcmp (c->default_subscription_mode, "new")) {
        snprintf (err, err_len, "DEFAULT_SUBSCRIPTION_MODE: expected all or new, got '%s'",
                  c->default_subscription_mode);
        return -1;
    }
    qn_crypto_keys_t *ring = qn_crypto_keys_new ();
    int krc = qn_crypto_keys_load (ring, c->queen_encryption_key, c->queen_encryption_old_keys,
                                   err, err_len);
    qn_crypto_keys_destroy (&ring);
    if (krc)
        return -1;
    if (c->tenant_assertion_secret [0] && strlen (c->tenant_assertion_secret) < 32) {
        snprintf (err, err_len, "TENANT_ASSERTION_SECRET: use at least 32 bytes");
        return -1;
    }
    return s_check_jwt (c, err, err_len);
}

int
qn_config_load (qn_config_t *c, char *err, size_t err_len)
{
    return qn_config_load_from (c, s_getenv, err, err_len);
}

//  queen-proxy: the same table, PORT defaulting to 6630.
static const char *
s_getenv_proxy (const char *name)
{
    const char *v = getenv (name);
    return !v && !strcmp (name, "PORT") ? "6630" : v;
}

int
qn_config_load_proxy (qn_config_t *c, char *err, size_t err_len)
{
    return qn_config_load_from (c, s_getenv_proxy, err, err_len);
}

void
qn_config_free (qn_config_t *c)
{
    for (const s_setting_t *s = s_settings; s->name; s++)
        if (s->kind == S_STR || s->kind == S_SECRET) {
            char **p = (char **) ((char *) c + s->offset);
            free (*p);
            *p = NULL;
        }
}

void
qn_config_help (FILE *out)
{
    fprintf (out, "usage: queen [--help]\n\n"
                  "Queen is configured with environment variables:\n\n");
    for (const s_setting_t *s = s_settings; s->name; s++)
        fprintf (out, "  %-26s %s (default: %s)\n", s->name, s->help,
                 s->kind == S_SECRET && s->dflt [0] ? "set" : (s->dflt [0] ? s->dflt : "unset"));
}

void
qn_config_help_only (FILE *out, const char *usage, const char *const *prefixes)
{
    fprintf (out, "%s\n\n", usage);
    for (const s_setting_t *s = s_settings; s->name; s++)
        for (int i = 0; prefixes [i]; i++)
            if (!strncmp (s->name, prefixes [i], strlen (prefixes [i]))) {
                fprintf (out, "  %-26s %s (default: %s)\n", s->name, s->help,
                         s->kind == S_SECRET && s->dflt [0] ? "set" : (s->dflt [0] ? s->dflt : "unset"));
                break;
            }
}

void
qn_config_help_proxy (FILE *out)
{
    static const char *const names [] = {
        "PORT", "HOST", "QUEEN_UPSTREAMS", "TENANT_ASSERTION_SECRET", "PROXY_USAGE_FLUSH_MS", "PROXY_SESSION_TTL_MS", "PG_HOST", "PG_PORT", "PG_USER",
        "PG_PASSWORD", "PG_DB", "DB_CONNECTION_TIMEOUT", "MAX_CONNECTIONS", "MAX_BODY_BYTES",
        "MAX_HEADER_BYTES", "IDLE_TIMEOUT_MS", "REQUEST_TIMEOUT_MS", "SHUTDOWN_TIMEOUT_MS",
        "ACTOR_QUEUE_HWM", "LOG_LEVEL", "JWT_ENABLED", "JWT_ALGORITHM", "JWT_SECRET", "JWT_PUBLIC_KEY",
        "JWT_JWKS_URL", "JWT_JWKS_REFRESH_MS", "JWT_ISSUER", "JWT_AUDIENCE", "JWT_CLOCK_SKEW",
        "JWT_ROLES_CLAIM", "JWT_ROLES_ARRAY_CLAIM", "JWT_ROLE_ADMIN", "JWT_ROLE_READ_WRITE",
        "JWT_ROLE_READ_ONLY", "JWT_TENANT_CLAIM", NULL
    };
    fprintf (out, "usage: queen-proxy [--help]\n"
                  "       queen-proxy create-tenant NAME    create a tenant and print its first admin key\n"
                  "       queen-proxy create-key TENANT ROLE [LABEL]   print a new key (admin, read-write,\n"
                  "                                         read-only, producer, consumer)\n"
                  "       queen-proxy revoke-key TENANT ID\n"
                  "       queen-proxy set-limits TENANT REQ_PER_S MSG_PER_S MAX_BODY_BYTES MAX_BATCH\n"
                  "                                         plan limits (- for unlimited)\n"
                  "       queen-proxy create-operator-key [LABEL]   print a key for /proxy/v1/admin/...\n"
                  "       queen-proxy create-user TENANT USER ROLE   a user; the password is read from stdin\n\n"
                  "queen-proxy is configured with environment variables:\n\n");
    for (int i = 0; names [i]; i++)
        for (const s_setting_t *s = s_settings; s->name; s++)
            if (!strcmp (s->name, names [i])) {
                const char *d = !strcmp (s->name, "PORT") ? "6630" : s->dflt;
                fprintf (out, "  %-26s %s (default: %s)\n", s->name,
                         !strcmp (s->name, "PORT") ? "HTTP listening port" : s->help,
                         s->kind == S_SECRET && d [0] ? "set" : (d [0] ? d : "unset"));
            }
}

void
qn_config_markdown (FILE *out)
{
    fprintf (out, "| variable | default | meaning |\n|---|---|---|\n");
    for (const s_setting_t *s = s_settings; s->name; s++)
        fprintf (out, "| `%s` | %s%s%s | %s |\n", s->name, s->dflt [0] ? "`" : "",
                 s->dflt [0] ? s->dflt : "unset", s->dflt [0] ? "`" : "", s->help);
}
