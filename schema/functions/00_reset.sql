-- 00_reset.sql: the function set (schema/functions/*.sql, in name order) is
-- installed as a whole, in the transaction that holds the schema lock
-- (kernel/schema.c; test/sql/apply.sh does the same): first this file drops
-- every function, procedure, view and free-standing type of the schemas
-- queen and queen_streams, then every later file creates its objects afresh.
-- So a changed signature or return type, a renamed or a removed function
-- cannot survive an upgrade, and a database gets exactly the bodies of the
-- binary that installed them (queen.schema_functions records which).
-- Tables (schema/migrations/) never depend on these objects. The view
-- queen.schema_version (left by kernel/schema.c for builds that predate
-- migrations) is not part of the set and stays.
DO $$
DECLARE
  r record;
BEGIN
  FOR r IN
    SELECT c.oid::regclass::text AS name
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname IN ('queen', 'queen_streams') AND c.relkind = 'v'
       AND NOT (n.nspname = 'queen' AND c.relname = 'schema_version')
  LOOP
    EXECUTE format('DROP VIEW %s', r.name);
  END LOOP;
  FOR r IN
    SELECT p.oid::regprocedure::text AS name, p.prokind
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname IN ('queen', 'queen_streams')
  LOOP
    EXECUTE format(CASE r.prokind WHEN 'a' THEN 'DROP AGGREGATE %s' ELSE 'DROP ROUTINE %s' END, r.name);
  END LOOP;
  FOR r IN
    SELECT t.oid::regtype::text AS name
      FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
      LEFT JOIN pg_class c ON c.oid = t.typrelid
     WHERE n.nspname IN ('queen', 'queen_streams')
       AND (t.typtype IN ('e', 'd') OR (t.typtype = 'c' AND c.relkind = 'c'))
  LOOP
    EXECUTE format('DROP TYPE %s', r.name);
  END LOOP;
END
$$;
