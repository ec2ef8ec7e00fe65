-- 0006 downgrade: drop the handoffs table with its policies and grants.
SET LOCAL search_path = public, pg_catalog, pg_temp;
SET LOCAL ROLE mneia_owner;
SET LOCAL check_function_bodies = off;
DROP POLICY handoff_read ON handoffs;
DROP POLICY handoff_write ON handoffs;
DROP TABLE handoffs;
RESET ROLE;
