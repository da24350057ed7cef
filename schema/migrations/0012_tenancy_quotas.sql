-- 0012_tenancy_quotas.sql: per-tenant counts of queues and partitions
-- (issue 12, docs/tenancy.md "Plan limits"). Statement triggers on the two
-- tables see every queue and partition created, whatever creates it (push,
-- configure, the Kafka and SQS doors), and hand the tenants concerned to
-- queen.tenant_quota_check (schema/functions/68_tenancy.sql), which raises
-- SQLSTATE QN429 when a tenant is over its plan: the statement, and with it
-- the request, is refused; nothing is created. The trigger functions live in
-- their own schema so that the function set's reset (00_reset.sql) never
-- drops them; their bodies only call into the function set.
CREATE SCHEMA IF NOT EXISTS queen_tenancy;

CREATE FUNCTION queen_tenancy.queues_created() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM queen.tenant_quota_check(t.tenant, 'queues')
     FROM (SELECT DISTINCT n.tenant FROM created n WHERE n.tenant <> '' ORDER BY 1) t;
  RETURN NULL;
END
$$;

CREATE FUNCTION queen_tenancy.partitions_created() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM queen.tenant_quota_check(t.tenant, 'partitions')
     FROM (SELECT DISTINCT q.tenant FROM created n JOIN queen.queues q ON q.id = n.queue_id
            WHERE q.tenant <> '' ORDER BY 1) t;
  RETURN NULL;
END
$$;

CREATE TRIGGER queues_tenant_quota AFTER INSERT ON queen.queues
  REFERENCING NEW TABLE AS created
  FOR EACH STATEMENT EXECUTE FUNCTION queen_tenancy.queues_created();

CREATE TRIGGER partitions_tenant_quota AFTER INSERT ON queen.partitions
  REFERENCING NEW TABLE AS created
  FOR EACH STATEMENT EXECUTE FUNCTION queen_tenancy.partitions_created();
