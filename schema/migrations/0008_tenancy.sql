-- 0008_tenancy.sql: multi-tenancy (issue 12, docs/tenancy.md). The broker's
-- tables already key queues, kv and timers by tenant (0001, 0002); this
-- release changes the function set so that every call is scoped by tenant
-- (queen.renew gained p_tenant), which an older build must not overwrite
-- (storage.md "Upgrades", rule 3). Nothing else to change.
SELECT 1;
