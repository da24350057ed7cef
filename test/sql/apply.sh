#!/bin/sh
# Bring a database to the schema of schema/ the way the broker does
# (kernel/schema.c), in one transaction: schema/bootstrap.sql (the schema
# lock, the bookkeeping tables), the migrations not yet recorded in
# queen.schema_migrations (in order, each recorded with its sha256), the
# function set when its checksum differs from queen.schema_functions, then
# the message segments. (The broker also recognises databases of releases
# before migrations; a fresh test database needs none of that.)
# Usage: test/sql/apply.sh <psql connection args>
set -e
LC_ALL=C
export LC_ALL
here=$(cd "$(dirname "$0")" && pwd)
schema="$here/../../schema"
functions=$(ls "$schema"/functions/*.sql)
# shellcheck disable=SC2086  # the list is split on purpose
fsum=$(cat $functions | sha256sum | cut -d' ' -f1)
nfiles=$(echo "$functions" | wc -l)
last=0
{
  echo "SET client_min_messages = warning;"
  echo "BEGIN;"
  cat "$schema/bootstrap.sql"
  for f in "$schema"/migrations/*.sql; do
    name=$(basename "$f")
    v=$(echo "$name" | cut -c1-4 | sed 's/^0*//')
    last=$v
    sum=$(sha256sum "$f" | cut -d' ' -f1)
    printf "%s\n" "SELECT NOT EXISTS (SELECT 1 FROM queen.schema_migrations WHERE version = $v) AS pending \\gset"
    printf "%s\n" "\\if :pending"
    cat "$f"
    echo ";"
    echo "INSERT INTO queen.schema_migrations (version, name, checksum) VALUES ($v, '$name', '$sum');"
    printf "%s\n" "\\echo applied $name"
    printf "%s\n" "\\endif"
  done
  printf "%s\n" "SELECT NOT EXISTS (SELECT 1 FROM queen.schema_functions WHERE checksum = '$fsum') AS pending \\gset"
  printf "%s\n" "\\if :pending"
  # shellcheck disable=SC2086
  for f in $functions; do
    cat "$f"
    echo ";"
  done
  echo "INSERT INTO queen.schema_functions (version, checksum, files) VALUES ($last, '$fsum', $nfiles)"
  echo "  ON CONFLICT (single) DO UPDATE SET version = EXCLUDED.version, checksum = EXCLUDED.checksum,"
  echo "  files = EXCLUDED.files, installed_at = now();"
  printf "%s\n" "\\echo applied the function set ($nfiles files)"
  printf "%s\n" "\\endif"
  echo "SELECT queen.ensure_segments();"
  echo "COMMIT;"
} | psql -X -q -v ON_ERROR_STOP=1 -o /dev/null "$@"
