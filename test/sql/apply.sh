#!/bin/sh
# Apply schema/*.sql in name order into a (fresh) database, each file in its
# own transaction, recording it in queen.schema_version like the broker does.
# Usage: test/sql/apply.sh <psql connection args>
set -e
here=$(cd "$(dirname "$0")" && pwd)
schema="$here/../../schema"
for f in "$schema"/*.sql; do
  name=$(basename "$f")
  done_already=$(psql -X -q -At "$@" -c "SELECT 1 FROM pg_tables WHERE schemaname='queen' AND tablename='schema_version'" 2>/dev/null || true)
  if [ "$done_already" = "1" ]; then
    if [ "$(psql -X -q -At "$@" -c "SELECT 1 FROM queen.schema_version WHERE file = '$name'")" = "1" ]; then
      continue
    fi
  fi
  {
    echo "SET client_min_messages = warning;"
    echo "BEGIN;"
    echo "SELECT pg_advisory_xact_lock(7193553170000001);"
    cat "$f"
    echo ";"
    echo "CREATE TABLE IF NOT EXISTS queen.schema_version (file text COLLATE \"C\" PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());"
    echo "INSERT INTO queen.schema_version (file) VALUES ('$name');"
    echo "COMMIT;"
  } | psql -X -q -v ON_ERROR_STOP=1 "$@" >/dev/null
  echo "applied $name"
done
