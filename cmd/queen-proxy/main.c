/*  cmd/queen-proxy/main.c - queen-proxy: the tenant-facing boundary
    Config (the broker's settings table, PORT 6630), its own schema
    (schema/proxy/, embedded by scripts/embed-sql.sh, applied by
    kernel/schema.c, version table queen_proxy.schema_migrations), then the
    actors: "proxy_pg" (the broker's PostgreSQL pool, actors/pg/writer.c,
    one connection), "jwks", "proxy_hasher", "proxy" (forwarding, keys,
    roles, users, limits; actors/proxy/, see proxy_int.h) and its HTTP door
    "proxy_acceptor" (qn_http_acceptor_new). Sub-commands manage tenants
    and keys directly in PostgreSQL for the first admin: create-tenant, create-key,
    revoke-key, set-limits, create-operator-key (a key of no tenant for
    the admin routes /proxy/v1/admin/...), create-user (a user of a
    tenant; its password read from stdin). A key is printed once, on stdout, and never logged.
    Exits 0 after a clean shutdown, 1 when it cannot start (PostgreSQL,
    schema, port), 2 for bad configuration or usage.
*/
#include "actors/actors.h"
#include "kernel/schema.h"
#include "wire/proxy_keys.h"
#include "wire/tenant_assert.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void
s_notice (void *arg, const char *message)
{
    (void) arg;
    qn_debug ("postgresql notice: %s", message);
}

static PGconn *
s_connect (const qn_config_t *config)
{
    qn_pg_params_t p;
    qn_pg_params (config, &p, 3);
    int64_t deadline = qn_now_ms () + config->db_connection_timeout_ms;
    for (;;) {
        PGconn *conn = PQconnectdbParams (p.keys, p.values, 0);
        if (PQstatus (conn) == CONNECTION_OK) {
            PQsetNoticeProcessor (conn, s_notice, NULL);
            return conn;
        }
        if (qn_now_ms () >= deadline) {
            char why [512];
            snprintf (why, sizeof why, "%s", PQerrorMessage (conn));
            for (char *c = why; *c; c++)
                if (*c == '\n')
                    *c = ' ';
            qn_error ("cannot connect to PostgreSQL: host=%s port=%lld db=%s error=%s",
                      config->pg_host, (long long) config->pg_port, config->pg_db, why);
            PQfinish (conn);
            return NULL;
        }
        PQfinish (conn);
        usleep (200 * 1000);
    }
}

static int
s_exec (PGconn *conn, const char *sql, int n, const char *const *params, PGresult **out,
        char *err, size_t err_len)
{
    PGresult *res = n ? PQexecParams (conn, sql, n, NULL, params, NULL, NULL, 0) : PQexec (conn, sql);
    ExecStatusType st = PQresultStatus (res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        snprintf (err, err_len, "%s", PQresultErrorMessage (res));
        for (char *c = err; *c; c++)
            if (*c == '\n')
                *c = ' ';
        PQclear (res);
        return -1;
    }
    if (out)
        *out = res;
    else
        PQclear (res);
    return 0;
}

//  Brings queen_proxy to schema/proxy/ with the broker's runner, under the
//  proxy's own lock (schema/proxy/bootstrap.sql).
static int
s_schema (PGconn *conn, char *err, size_t err_len)
{
    return qn_schema_run (conn, &(qn_schema_set_t) {
        .label = "proxy schema",
        .embed = &qn_schema_proxy,
        .migrations_table = "queen_proxy.schema_migrations"
    }, err, err_len);
}

//  Creates a key of `role` for `tenant` and prints it (once).
static int
s_create_key (PGconn *conn, const char *tenant, const char *role, const char *label)
{
    qn_role_t r = qn_role_parse (role, strlen (role));
    if (r == QN_ROLE_NONE) {
        fprintf (stderr, "queen-proxy: role must be admin, read-write, read-only, producer or consumer\n");
        return 2;
    }
    qn_key_new_t k;
    char err [512];
    if (qn_key_generate (&k)) {
        fprintf (stderr, "queen-proxy: key generation failed\n");
        return 1;
    }
    const char *p [5] = { k.id, tenant, qn_role_name (r), k.hash, label ? label : "" };
    if (s_exec (conn, "SELECT queen_proxy.key_create ($1, $2, $3, $4, $5)", 5, p, NULL, err, sizeof err)) {
        fprintf (stderr, "queen-proxy: key not created: %s\n", err);
        return 1;
    }
    printf ("{\"tenant\":\"%s\",\"role\":\"%s\",\"id\":\"%s\",\"key\":\"%s\"}\n", tenant,
            qn_role_name (r), k.id, k.key);
    memset (&k, 0, sizeof k);
    return 0;
}

//  create-operator-key [LABEL]: a key of no tenant for the admin routes.
static int
s_operator_key (const qn_config_t *config, const char *label)
{
    PGconn *conn = s_connect (config);
    if (!conn)
        return 1;
    char err [512];
    qn_key_new_t k;
    int rc = 0;
    if (s_schema (conn, err, sizeof err) < 0) {
        fprintf (stderr, "queen-proxy: schema not applied: %s\n", err);
        rc = 1;
    }
    else
    if (qn_key_generate (&k)) {
        fprintf (stderr, "queen-proxy: key generation failed\n");
        rc = 1;
    }
    else {
        const char *p [3] = { k.id, k.hash, label ? label : "operator key" };
        if (s_exec (conn, "SELECT queen_proxy.operator_key_create ($1, $2, $3)", 3, p, NULL, err, sizeof err)) {
            fprintf (stderr, "queen-proxy: key not created: %s\n", err);
            rc = 1;
        }
        else
            printf ("{\"operator\":true,\"role\":\"admin\",\"id\":\"%s\",\"key\":\"%s\"}\n", k.id, k.key);
        memset (&k, 0, sizeof k);
    }
    PQfinish (conn);
    return rc;
}

//  create-user TENANT USER ROLE: the password is the first line of stdin.
static int
s_create_user (const qn_config_t *config, char **argv)
{
    qn_role_t r = qn_role_parse (argv [4], strlen (argv [4]));
    if (r == QN_ROLE_NONE) {
        fprintf (stderr, "queen-proxy: role must be admin, read-write, read-only, producer or consumer\n");
        return 2;
    }
    char pw [1100] = "";
    if (!fgets (pw, sizeof pw, stdin)) {
        fprintf (stderr, "queen-proxy: give the password on stdin\n");
        return 2;
    }
    size_t n = strcspn (pw, "\r\n");
    pw [n] = 0;
    char hash [QN_KEY_HASH_MAX];
    if (n < 8 || n > 1024) {
        fprintf (stderr, "queen-proxy: a password is 8 to 1024 bytes\n");
        memset (pw, 0, sizeof pw);
        return 2;
    }
    int hashed = qn_password_hash (hash, pw, n);
    memset (pw, 0, sizeof pw);
    if (hashed) {
        fprintf (stderr, "queen-proxy: password hashing failed\n");
        return 1;
    }
    PGconn *conn = s_connect (config);
    if (!conn)
        return 1;
    char err [512];
    PGresult *res = NULL;
    int rc = 0;
    const char *p [4] = { argv [2], argv [3], qn_role_name (r), hash };
    if (s_schema (conn, err, sizeof err) < 0) {
        fprintf (stderr, "queen-proxy: schema not applied: %s\n", err);
        rc = 1;
    }
    else
    if (s_exec (conn, "SELECT queen_proxy.admin_user_put ($1, $2, $3, $4, false)", 4, p, &res, err, sizeof err)) {
        fprintf (stderr, "queen-proxy: user not created: %s\n", err);
        rc = 1;
    }
    else {
        printf ("%s\n", PQgetvalue (res, 0, 0));
        PQclear (res);
    }
    PQfinish (conn);
    return rc;
}

static int
s_command (const qn_config_t *config, int argc, char **argv)
{
    const char *cmd = argv [1];
    if (!strcmp (cmd, "create-user")) {
        if (argc != 5 || !qn_tenant_name_ok (argv [2], strlen (argv [2]))) {
            fprintf (stderr, "queen-proxy: create-user TENANT USER ROLE (password on stdin)\n");
            return 2;
        }
        return s_create_user (config, argv);
    }
    if (!strcmp (cmd, "create-operator-key")) {
        if (argc > 3) {
            fprintf (stderr, "queen-proxy: create-operator-key [LABEL]\n");
            return 2;
        }
        return s_operator_key (config, argc > 2 ? argv [2] : NULL);
    }
    int need = !strcmp (cmd, "create-tenant") ? 3 : !strcmp (cmd, "create-key") ? 4
             : !strcmp (cmd, "revoke-key") ? 4 : !strcmp (cmd, "set-limits") ? 7 : 0;
    if (!need || argc < need || argc > need + (strcmp (cmd, "create-key") ? 0 : 1)) {
        fprintf (stderr, "queen-proxy: unknown or incomplete command '%s' (try --help)\n", cmd);
        return 2;
    }
    if (!qn_tenant_name_ok (argv [2], strlen (argv [2]))) {
        fprintf (stderr, "queen-proxy: a tenant name is 1 to 64 characters of A-Z a-z 0-9 . _ -\n");
        return 2;
    }
    PGconn *conn = s_connect (config);
    if (!conn)
        return 1;
    char err [512];
    int rc = 0;
    if (s_schema (conn, err, sizeof err) < 0) {
        fprintf (stderr, "queen-proxy: schema not applied: %s\n", err);
        rc = 1;
    }
    else
    if (!strcmp (cmd, "create-tenant")) {
        const char *p [1] = { argv [2] };
        PGresult *res = NULL;
        if (s_exec (conn, "SELECT queen_proxy.tenant_create ($1)", 1, p, &res, err, sizeof err)) {
            fprintf (stderr, "queen-proxy: tenant not created: %s\n", err);
            rc = 1;
        }
        else {
            bool created = !strcmp (PQgetvalue (res, 0, 0), "t");
            PQclear (res);
            if (!created) {
                fprintf (stderr, "queen-proxy: tenant %s exists already\n", argv [2]);
                rc = 1;
            }
            else
                rc = s_create_key (conn, argv [2], "admin", "first admin key");
        }
    }
    else
    if (!strcmp (cmd, "set-limits")) {
        //  set-limits TENANT REQ_PER_S MSG_PER_S MAX_BODY_BYTES MAX_BATCH ("-": unlimited)
        const char *p [5] = { argv [2], NULL, NULL, NULL, NULL };
        for (int i = 0; i < 4; i++) {
            const char *v = argv [3 + i];
            char *end;
            long n = strtol (v, &end, 10);
            if (strcmp (v, "-") && (*end || n < 1 || n > 2000000000)) {
                fprintf (stderr, "queen-proxy: a limit is a positive integer or -\n");
                PQfinish (conn);
                return 2;
            }
            p [1 + i] = strcmp (v, "-") ? v : NULL;
        }
        PGresult *res = NULL;
        if (s_exec (conn, "SELECT queen_proxy.set_limits ($1, $2, $3, $4, $5)", 5, p, &res, err, sizeof err)) {
            fprintf (stderr, "queen-proxy: %s\n", err);
            rc = 1;
        }
        else {
            rc = strcmp (PQgetvalue (res, 0, 0), "t") ? 1 : 0;
            PQclear (res);
            if (rc)
                fprintf (stderr, "queen-proxy: no tenant %s\n", argv [2]);
            else
                printf ("{\"limits\":true}\n");
        }
    }
    else
    if (!strcmp (cmd, "create-key"))
        rc = s_create_key (conn, argv [2], argv [3], argc > 4 ? argv [4] : NULL);
    else {
        const char *p [2] = { argv [2], argv [3] };
        PGresult *res = NULL;
        if (s_exec (conn, "SELECT queen_proxy.key_revoke ($1, $2)", 2, p, &res, err, sizeof err)) {
            fprintf (stderr, "queen-proxy: %s\n", err);
            rc = 1;
        }
        else {
            rc = strcmp (PQgetvalue (res, 0, 0), "t") ? 1 : 0;
            PQclear (res);
            if (rc)
                fprintf (stderr, "queen-proxy: no active key %s for tenant %s\n", argv [3], argv [2]);
            else
                printf ("{\"revoked\":true}\n");
        }
    }
    PQfinish (conn);
    return rc;
}

int
main (int argc, char **argv)
{
    if (argc > 1 && (!strcmp (argv [1], "--help") || !strcmp (argv [1], "-h"))) {
        qn_config_help_proxy (stdout);
        return 0;
    }
    qn_config_t config;
    char err [512];
    if (qn_config_load_proxy (&config, err, sizeof err)) {
        fprintf (stderr, "queen-proxy: bad configuration: %s\n", err);
        qn_config_free (&config);
        return 2;
    }
    qn_log_set_level_name (config.log_level);
    if (argc > 1) {
        int rc = s_command (&config, argc, argv);
        qn_config_free (&config);
        return rc;
    }
    if (strlen (config.tenant_assertion_secret) < 32) {
        fprintf (stderr, "queen-proxy: bad configuration: TENANT_ASSERTION_SECRET: set it (at least "
                         "32 bytes) to the brokers' value\n");
        qn_config_free (&config);
        return 2;
    }
    qn_info ("starting: port=%lld upstreams=%s pg=%s:%lld/%s", (long long) config.port,
             config.queen_upstreams, config.pg_host, (long long) config.pg_port, config.pg_db);
    PGconn *conn = s_connect (&config);
    int applied = conn ? s_schema (conn, err, sizeof err) : -1;
    if (conn)
        PQfinish (conn);
    if (applied < 0) {
        if (conn)
            qn_error ("schema not applied: %s", err);
        qn_config_free (&config);
        return 1;
    }
    qn_kernel_t *kernel = qn_kernel_new (&config);
    bool ok = qn_pg_writer_new (kernel, &config, "proxy_pg", 1)
           && qn_jwks_new (kernel, &config)
           && qn_proxy_hasher_new (kernel)
           && qn_proxy_new (kernel, &config, "proxy_acceptor")
           && qn_http_acceptor_new (kernel, &config, &(qn_http_door_t) {
                  .name = "proxy_acceptor", .codec = "proxy", .port = config.port });
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
