-- ---------------------------------------------------------------------------
-- tenancy: plan limits on the number of queues and partitions of a tenant
-- (docs/tenancy.md "Plan limits"). Called by the triggers of migration
-- 0012_tenancy_quotas.sql after a statement created queues or partitions.
-- ---------------------------------------------------------------------------

-- The tenant's limits: queen-proxy's plans and tenants
-- (queen_proxy.tenant_quota, schema/proxy/0002_plans_admin.sql) when the
-- proxy's schema shares the brokers' database; NULL (unlimited) otherwise,
-- for the default tenant and for tenants the proxy does not know.
CREATE FUNCTION queen.tenant_quota(p_tenant text, OUT max_queues int, OUT max_partitions int)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF p_tenant = '' OR to_regprocedure('queen_proxy.tenant_quota(text)') IS NULL THEN
    RETURN;
  END IF;
  EXECUTE 'SELECT max_queues, max_partitions FROM queen_proxy.tenant_quota($1)'
     INTO max_queues, max_partitions USING p_tenant;
END
$$;

-- Raises QN429 (HTTP 429) when the tenant owns more queues (p_kind
-- 'queues') or partitions ('partitions') than its plan allows. Runs after
-- the insert, in the creating transaction: a per-tenant advisory lock
-- makes concurrent creators count one after the other, each seeing the
-- rows of those that committed before it, so the limit is exact.
CREATE FUNCTION queen.tenant_quota_check(p_tenant text, p_kind text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_q   record;
  v_max int;
  v_n   bigint;
BEGIN
  SELECT * INTO v_q FROM queen.tenant_quota(p_tenant);
  v_max := CASE p_kind WHEN 'queues' THEN v_q.max_queues ELSE v_q.max_partitions END;
  IF v_max IS NULL THEN
    RETURN;
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended('queen-tenant-quota:' || p_kind || ':' || p_tenant, 0));
  IF p_kind = 'queues' THEN
    SELECT count(*) INTO v_n FROM queen.queues q WHERE q.tenant = p_tenant;
  ELSE
    SELECT count(*) INTO v_n FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
     WHERE q.tenant = p_tenant;
  END IF;
  IF v_n > v_max THEN
    RAISE EXCEPTION '% limit reached: the plan allows % % for this tenant', initcap(rtrim(p_kind, 's')),
      v_max, p_kind USING ERRCODE = 'QN429';
  END IF;
END
$$;
