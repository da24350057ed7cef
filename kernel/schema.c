/*  kernel/schema.c - apply the embedded schema at boot (see schema.h)
    Blocking libpq: runs in main before any actor exists.
*/
#include "kernel/schema.h"
#include "base/log.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

//  Advisory lock key shared by every broker version: "queen schema".
#define S_LOCK_KEY "7193553170000001"

static int
s_exec (PGconn *conn, const char *sql, char *err, size_t err_len)
{
    PGresult *res = PQexec (conn, sql);
    ExecStatusType st = PQresultStatus (res);
    int rc = 0;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        snprintf (err, err_len, "%s", PQresultErrorMessage (res));
        //  Keep the reason on one line.
        for (char *p = err; *p; p++)
            if (*p == '\n')
                *p = ' ';
        rc = -1;
    }
    PQclear (res);
    return rc;
}

static bool
s_applied (PGresult *res, const char *name)
{
    for (int i = 0; res && i < PQntuples (res); i++)
        if (!strcmp (PQgetvalue (res, i, 0), name))
            return true;
    return false;
}

int
qn_schema_apply (PGconn *conn, char *err, size_t err_len)
{
    if (s_exec (conn, "BEGIN", err, err_len))
        return -1;
    int applied = 0;
    PGresult *done = NULL;
    if (s_exec (conn, "SELECT pg_advisory_xact_lock (" S_LOCK_KEY ")", err, err_len))
        goto failed;
    PGresult *exists = PQexec (conn, "SELECT to_regclass ('queen.schema_version') IS NOT NULL");
    bool have_table = PQresultStatus (exists) == PGRES_TUPLES_OK
                   && PQgetvalue (exists, 0, 0) [0] == 't';
    PQclear (exists);
    if (have_table) {
        done = PQexec (conn, "SELECT file FROM queen.schema_version");
        if (PQresultStatus (done) != PGRES_TUPLES_OK) {
            snprintf (err, err_len, "cannot read queen.schema_version");
            goto failed;
        }
    }
    for (const qn_schema_file_t *f = qn_schema_files; f->name; f++) {
        if (s_applied (done, f->name))
            continue;
        char why [512];
        if (s_exec (conn, f->sql, why, sizeof why)) {
            snprintf (err, err_len, "schema file %s failed: %s", f->name, why);
            goto failed;
        }
        if (s_exec (conn, "CREATE TABLE IF NOT EXISTS queen.schema_version ("
                          " file text COLLATE \"C\" PRIMARY KEY,"
                          " applied_at timestamptz NOT NULL DEFAULT now ())", err, err_len))
            goto failed;
        const char *params [1] = { f->name };
        PGresult *res = PQexecParams (conn, "INSERT INTO queen.schema_version (file) VALUES ($1)",
                                      1, NULL, params, NULL, NULL, 0);
        bool ok = PQresultStatus (res) == PGRES_COMMAND_OK;
        PQclear (res);
        if (!ok) {
            snprintf (err, err_len, "cannot record schema file %s", f->name);
            goto failed;
        }
        qn_info ("schema applied: file=%s", f->name);
        applied++;
    }
    PQclear (done);
    if (s_exec (conn, "COMMIT", err, err_len))
        return -1;
    return applied;

failed:
    PQclear (done);
    char ignore [64];
    s_exec (conn, "ROLLBACK", ignore, sizeof ignore);
    return -1;
}
