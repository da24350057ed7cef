/*  kernel/schema.c - bring a database to an embedded schema at boot (see
    schema.h): the one migration runner of the broker and queen-proxy.
    Blocking libpq: runs in main before any actor exists. One transaction
    under the set's advisory lock:
      1. the set's bootstrap.sql: the lock, the bookkeeping tables
         (queen.schema_migrations and queen.schema_functions for the
         broker, queen_proxy.schema_migrations for the proxy);
      2. the set's baseline (the broker's: a database of a release before
         migrations records the files it applied in the table
         queen.schema_version; those become migration rows, and the table
         becomes a view that fails to read, so a broker of such a release
         refuses this database);
      3. refuse a database at a newer migration than this build knows, and
         a recorded migration whose file was edited since;
      4. apply the pending migrations, in order, each recorded;
      5. install the function set when its checksum differs from the one
         recorded (sets with one);
      6. the set's last statement (the broker's: make sure message segments
         exist, a fresh database has none).
    Fails with a one-line reason and rolls all of it back.
*/
#include "kernel/schema.h"
#include "base/log.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  The files of releases before migrations that created the tables of a
//  migration: a database that recorded the file is at that migration.
static const struct {
    const char *file;
    int version;
} s_baseline [] = {
    { "001_catalog.sql", 1 },
    { "030_state.sql", 2 },
    { "040_streams.sql", 3 },
    { NULL, 0 }
};

//  Where queen.schema_version was: brokers of releases before migrations
//  read it at boot; reading this fails, so they refuse to start instead of
//  re-creating tables. The cast fails when a query is planned, not now.
static const char *s_legacy_view =
    "CREATE VIEW queen.schema_version AS SELECT"
    " ('this database is upgraded by migrations (queen.schema_migrations):"
    " the broker reading queen.schema_version is too old for it')::text::int::text AS file,"
    " now () AS applied_at";

//  Keeps the reason on one line.
static void
s_one_line (char *text)
{
    for (char *p = text; *p; p++)
        if (*p == '\n')
            *p = ' ';
}

//  Runs `sql` with text parameters; returns the result, or NULL with the
//  error in err (prefixed with `what`).
static PGresult *
s_query (PGconn *conn, const char *what, const char *sql, int n, const char *const *params,
         char *err, size_t err_len)
{
    PGresult *res = n ? PQexecParams (conn, sql, n, NULL, params, NULL, NULL, 0)
                      : PQexec (conn, sql);
    ExecStatusType st = PQresultStatus (res);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        return res;
    snprintf (err, err_len, "%s: %s", what, PQresultErrorMessage (res));
    s_one_line (err);
    PQclear (res);
    return NULL;
}

static int
s_exec (PGconn *conn, const char *what, const char *sql, int n, const char *const *params,
        char *err, size_t err_len)
{
    PGresult *res = s_query (conn, what, sql, n, params, err, err_len);
    PQclear (res);
    return res ? 0 : -1;
}

static const qn_schema_file_t *
s_migration (const qn_schema_embed_t *embed, int version)
{
    for (const qn_schema_file_t *f = embed->migrations; f->name; f++)
        if (f->version == version)
            return f;
    return NULL;
}

//  Step 2: a pre-migration database becomes one at its migrations.
static int
s_baseline_legacy (PGconn *conn, const qn_schema_embed_t *embed, char *err, size_t err_len)
{
    PGresult *kind = s_query (conn, "cannot look for queen.schema_version",
        "SELECT c.relkind FROM pg_class c WHERE c.oid = to_regclass ('queen.schema_version')",
        0, NULL, err, err_len);
    if (!kind)
        return -1;
    char relkind = PQntuples (kind) ? PQgetvalue (kind, 0, 0) [0] : 0;
    PQclear (kind);
    if (relkind == 'v')
        return 0;
    if (relkind == 'r') {
        PGresult *old = s_query (conn, "cannot read queen.schema_version",
            "SELECT file, applied_at::text FROM queen.schema_version", 0, NULL, err, err_len);
        if (!old)
            return -1;
        for (int i = 0; i < PQntuples (old); i++) {
            const char *file = PQgetvalue (old, i, 0);
            for (int b = 0; s_baseline [b].file; b++) {
                if (strcmp (s_baseline [b].file, file))
                    continue;
                const qn_schema_file_t *m = s_migration (embed, s_baseline [b].version);
                char version [16];
                snprintf (version, sizeof version, "%d", m->version);
                const char *params [5] = {
                    version, m->name, m->checksum, PQgetvalue (old, i, 1), file
                };
                if (s_exec (conn, "cannot record a baseline migration",
                            "INSERT INTO queen.schema_migrations"
                            " (version, name, checksum, applied_at, baseline)"
                            " VALUES ($1::int, $2, $3, $4::timestamptz, $5)"
                            " ON CONFLICT (version) DO NOTHING",
                            5, params, err, err_len)) {
                    PQclear (old);
                    return -1;
                }
                qn_info ("schema baseline: file=%s is migration=%s", file, m->name);
            }
        }
        PQclear (old);
        if (s_exec (conn, "cannot retire queen.schema_version",
                    "DROP TABLE queen.schema_version", 0, NULL, err, err_len))
            return -1;
    }
    return s_exec (conn, "cannot create the view queen.schema_version", s_legacy_view,
                   0, NULL, err, err_len);
}

//  Steps 3 and 4. Returns the number applied, or -1.
static int
s_migrate (PGconn *conn, const qn_schema_set_t *set, char *err, size_t err_len)
{
    const qn_schema_embed_t *embed = set->embed;
    char what [160], sql [256];
    snprintf (what, sizeof what, "cannot read %s", set->migrations_table);
    snprintf (sql, sizeof sql, "SELECT version, name, checksum FROM %s ORDER BY version",
              set->migrations_table);
    PGresult *done = s_query (conn, what, sql, 0, NULL, err, err_len);
    if (!done)
        return -1;
    int rows = PQntuples (done);
    int newest = rows ? atoi (PQgetvalue (done, rows - 1, 0)) : 0;
    if (newest > embed->version) {
        snprintf (err, err_len, "database %s is at migration %d (%s), newer than this"
                  " build knows (%d): refusing to start; run the release that upgraded it,"
                  " or a newer one (docs/storage.md, Upgrades)",
                  set->label, newest, PQgetvalue (done, rows - 1, 1), embed->version);
        PQclear (done);
        return -1;
    }
    for (int i = 0; i < rows; i++) {
        int version = atoi (PQgetvalue (done, i, 0));
        const qn_schema_file_t *m = s_migration (embed, version);
        if (!m) {
            snprintf (err, err_len, "migration %d (%s) recorded in the database is not in"
                      " this build: migrations are append-only", version, PQgetvalue (done, i, 1));
            PQclear (done);
            return -1;
        }
        if (strcmp (m->checksum, PQgetvalue (done, i, 2))) {
            snprintf (err, err_len, "migration %s was edited after it was applied (recorded"
                      " checksum %.12s, this build's %.12s): migrations are append-only,"
                      " restore the file and add a new migration", m->name,
                      PQgetvalue (done, i, 2), m->checksum);
            PQclear (done);
            return -1;
        }
    }
    int applied = 0;
    snprintf (sql, sizeof sql, "INSERT INTO %s (version, name, checksum)"
              " VALUES ($1::int, $2, $3)", set->migrations_table);
    for (const qn_schema_file_t *m = embed->migrations; m->name; m++) {
        bool recorded = false;
        for (int i = 0; i < rows && !recorded; i++)
            recorded = atoi (PQgetvalue (done, i, 0)) == m->version;
        if (recorded)
            continue;
        if (m->version < newest) {
            snprintf (err, err_len, "migration %s is older than the database's newest (%d)"
                      " but was never applied: migrations are append-only", m->name, newest);
            PQclear (done);
            return -1;
        }
        snprintf (what, sizeof what, "%s migration %s failed", set->label, m->name);
        if (s_exec (conn, what, m->sql, 0, NULL, err, err_len)) {
            PQclear (done);
            return -1;
        }
        char version [16];
        snprintf (version, sizeof version, "%d", m->version);
        const char *params [3] = { version, m->name, m->checksum };
        if (s_exec (conn, "cannot record a migration", sql, 3, params, err, err_len)) {
            PQclear (done);
            return -1;
        }
        qn_info ("%s applied: file=%s", set->label, m->name);
        applied++;
    }
    PQclear (done);
    return applied;
}

//  Step 5.
static int
s_functions (PGconn *conn, const qn_schema_set_t *set, char *err, size_t err_len)
{
    const qn_schema_embed_t *embed = set->embed;
    char what [160], sql [512];
    snprintf (what, sizeof what, "cannot read %s", set->functions_table);
    snprintf (sql, sizeof sql, "SELECT version, checksum FROM %s", set->functions_table);
    PGresult *had = s_query (conn, what, sql, 0, NULL, err, err_len);
    if (!had)
        return -1;
    char previous [72] = "none";
    if (PQntuples (had)) {
        int version = atoi (PQgetvalue (had, 0, 0));
        snprintf (previous, sizeof previous, "%s", PQgetvalue (had, 0, 1));
        if (version > embed->version) {
            snprintf (err, err_len, "database functions were installed by a build at"
                      " migration %d, newer than this build knows (%d): refusing to start"
                      " (docs/storage.md, Upgrades)", version, embed->version);
            PQclear (had);
            return -1;
        }
    }
    PQclear (had);
    if (!strcmp (previous, embed->functions_checksum)) {
        qn_debug ("%s functions unchanged: checksum=%.12s", set->label, previous);
        return 0;
    }
    int files = 0;
    for (const qn_schema_file_t *f = embed->functions; f->name; f++, files++) {
        snprintf (what, sizeof what, "%s function file %s failed", set->label, f->name);
        if (s_exec (conn, what, f->sql, 0, NULL, err, err_len))
            return -1;
    }
    char version [16], count [16];
    snprintf (version, sizeof version, "%d", embed->version);
    snprintf (count, sizeof count, "%d", files);
    const char *params [3] = { version, embed->functions_checksum, count };
    snprintf (sql, sizeof sql, "INSERT INTO %s (version, checksum, files)"
              " VALUES ($1::int, $2, $3::int) ON CONFLICT (single) DO UPDATE"
              " SET version = EXCLUDED.version, checksum = EXCLUDED.checksum,"
              " files = EXCLUDED.files, installed_at = now ()", set->functions_table);
    if (s_exec (conn, "cannot record the function set", sql, 3, params, err, err_len))
        return -1;
    qn_info ("%s functions installed: files=%d checksum=%.12s previous=%.12s",
             set->label, files, embed->functions_checksum, previous);
    return 0;
}

int
qn_schema_run (PGconn *conn, const qn_schema_set_t *set, char *err, size_t err_len)
{
    char what [160];
    snprintf (what, sizeof what, "%s bootstrap failed", set->label);
    if (s_exec (conn, "cannot begin", "BEGIN", 0, NULL, err, err_len))
        return -1;
    int applied = -1;
    if (s_exec (conn, what, set->embed->bootstrap, 0, NULL, err, err_len)
    ||  (set->baseline && set->baseline (conn, set->embed, err, err_len)))
        goto failed;
    applied = s_migrate (conn, set, err, err_len);
    if (applied < 0
    ||  (set->functions_table && s_functions (conn, set, err, err_len))
    ||  (set->finish && s_exec (conn, "cannot finish the schema", set->finish,
                                0, NULL, err, err_len))
    ||  s_exec (conn, "cannot commit the schema", "COMMIT", 0, NULL, err, err_len))
        goto failed;
    return applied;

failed:;
    char ignore [256];
    s_exec (conn, "rollback", "ROLLBACK", 0, NULL, ignore, sizeof ignore);
    return -1;
}

int
qn_schema_apply (PGconn *conn, char *err, size_t err_len)
{
    return qn_schema_run (conn, &(qn_schema_set_t) {
        .label = "schema",
        .embed = &qn_schema_broker,
        .migrations_table = "queen.schema_migrations",
        .functions_table = "queen.schema_functions",
        .baseline = s_baseline_legacy,
        .finish = "SELECT queen.ensure_segments ()"
    }, err, err_len);
}
