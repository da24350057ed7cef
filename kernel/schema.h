/*  kernel/schema.h - the SQL schema embedded at build time
    scripts/embed-sql.sh turns the schema/ SQL files into build/schema_sql.c, which
    defines qn_schema_files (in name order, NULL-terminated). At boot the
    broker applies the files it has not applied yet, in order, inside one
    transaction under an advisory lock (brokers booting together do not
    race), and records them in queen.schema_version.
*/
#ifndef QN_KERNEL_SCHEMA_H
#define QN_KERNEL_SCHEMA_H

#include <stddef.h>

typedef struct {
    const char *name;           //  e.g. "001_catalog.sql"
    const char *sql;
} qn_schema_file_t;

extern const qn_schema_file_t qn_schema_files [];

typedef struct pg_conn PGconn;
//  Applies pending files on `conn` (blocking; boot only). Returns the
//  number of files applied (>= 0), or -1 with a reason in err.
int qn_schema_apply (PGconn *conn, char *err, size_t err_len);

#endif
