/*  kernel/schema.h - the SQL schema embedded at build time, and its upgrade
    scripts/embed-sql.sh turns schema/ into build/schema_sql.c:
    - qn_schema_migrations: schema/migrations/NNNN_name.sql, tables, indexes
      and data changes. Append-only: each is applied once, in version order,
      and recorded in queen.schema_migrations with its checksum; a recorded
      migration whose checksum differs from the embedded one (the file was
      edited after release) is a boot error.
    - qn_schema_functions: the files of schema/functions/, functions, views and
      types. The set is installed whole (its first file drops the previous
      set) whenever its checksum differs from the one recorded in
      queen.schema_functions, so every boot runs the bodies of its own build.
    At boot qn_schema_apply does all of it in one transaction under the
    schema advisory lock (brokers booting together take turns). A database
    at a migration newer than this build knows is refused (rolling-upgrade
    rule, docs/storage.md "Upgrades"). A database made by a release before
    migrations (queen.schema_version rows "001_catalog.sql", ...) is first
    recognised as being at the matching migrations ("baseline"), never
    re-created.
*/
#ifndef QN_KERNEL_SCHEMA_H
#define QN_KERNEL_SCHEMA_H

#include <stddef.h>

typedef struct {
    const char *name;           //  e.g. "0001_catalog.sql", "12_pop.sql"
    int version;                //  Migrations: the NNNN of the name; functions: 0
    const char *checksum;       //  sha256 of the file, lowercase hex
    const char *sql;
} qn_schema_file_t;

//  NULL-terminated, in order.
extern const qn_schema_file_t qn_schema_migrations [];
extern const qn_schema_file_t qn_schema_functions [];
//  schema/bootstrap.sql: the schema lock and the bookkeeping tables.
extern const char *const qn_schema_bootstrap;
//  The newest migration this build knows.
extern const int qn_schema_version;
//  sha256 of the function files concatenated in order.
extern const char qn_schema_functions_checksum [];

typedef struct pg_conn PGconn;
//  Brings the database on `conn` to this build's schema (blocking; boot
//  only). Returns the number of migrations applied (>= 0), or -1 with a
//  one-line reason in err (a newer database, an edited migration, SQL).
int qn_schema_apply (PGconn *conn, char *err, size_t err_len);

#endif
