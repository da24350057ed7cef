/*  kernel/schema.h - embedded SQL schemas and the one runner that brings a
    database to them at boot (the broker's and queen-proxy's).
    scripts/embed-sql.sh turns a schema directory into a qn_schema_embed_t:
    - bootstrap.sql: the schema's advisory lock and its bookkeeping tables,
      run first at every boot;
    - migrations, NNNN_name.sql: tables, indexes and data changes.
      Append-only (schema/migrations.lock, checked by `make test`): each is
      applied once, in version order, and recorded in the set's migrations
      table with its checksum; a recorded migration whose checksum differs
      from the embedded one (the file was edited after release) is a boot
      error;
    - functions/NN_name.sql (the broker's only): functions, views and types. The
      set is installed whole (its first file drops the previous set)
      whenever its checksum differs from the one recorded in the set's
      functions table, so every boot runs the bodies of its own build.
    qn_schema_run does all of it in one transaction under the set's lock
    (processes booting together take turns). A database at a migration newer
    than this build knows is refused (rolling-upgrade rule, docs/storage.md
    "Upgrades"). The broker's set (qn_schema_apply) also recognises a
    database made by a release before migrations (queen.schema_version rows
    "001_catalog.sql", ...) as being at the matching migrations
    ("baseline"), never re-created.
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

//  One schema directory, as scripts/embed-sql.sh embeds it.
typedef struct {
    const char *bootstrap;                  //  bootstrap.sql: the lock, the bookkeeping tables
    const qn_schema_file_t *migrations;     //  NULL-terminated, in version order
    int version;                            //  the newest migration
    const qn_schema_file_t *functions;      //  NULL-terminated, in order; may be empty
    const char *functions_checksum;         //  sha256 of the function files concatenated
} qn_schema_embed_t;

//  schema/ (build/schema_sql.c, in every binary) and schema/proxy/
//  (build/proxy_sql.c, linked into queen-proxy only).
extern const qn_schema_embed_t qn_schema_broker;
extern const qn_schema_embed_t qn_schema_proxy;

typedef struct pg_conn PGconn;

//  What to bring a database to, and where it is recorded.
typedef struct {
    const char *label;              //  "schema", "proxy schema": starts the log lines
    const qn_schema_embed_t *embed;
    const char *migrations_table;   //  (version, name, checksum, applied_at)
    const char *functions_table;    //  (single, version, checksum, files); NULL: no function set
    //  Run after the bootstrap, before the migrations are read (NULL: none).
    int (*baseline) (PGconn *conn, const qn_schema_embed_t *embed, char *err, size_t err_len);
    const char *finish;             //  SQL run last, before COMMIT (NULL: none)
} qn_schema_set_t;

//  Brings the database on `conn` to `set` (blocking; boot only). Returns the
//  number of migrations applied (>= 0), or -1 with a one-line reason in err
//  (a newer database, an edited migration, SQL).
int qn_schema_run (PGconn *conn, const qn_schema_set_t *set, char *err, size_t err_len);

//  qn_schema_run over the broker's set (schema/, queen.schema_migrations,
//  queen.schema_functions, the baseline, queen.ensure_segments ()).
int qn_schema_apply (PGconn *conn, char *err, size_t err_len);

#endif
