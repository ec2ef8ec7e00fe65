-- Roles (R1). Applied as the database's administrator; everything after this
-- file is created as mneia_owner.
--
-- mneia_owner (NOLOGIN) owns every object. Migrations and the `mneia admin`
--   commands act as it; a session that can is trusted (it could drop any
--   trigger), so the authority guards bind everyone else.
-- mneia_app (LOGIN) is what the server connects as: it owns nothing, is no
--   superuser, has no BYPASSRLS, creates nothing and deletes nothing.
--
-- Roles are cluster-wide: create them only when missing, so that several
-- databases of one server can each hold a Mneia schema.

DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'mneia_owner') THEN
    CREATE ROLE mneia_owner NOLOGIN NOSUPERUSER NOBYPASSRLS;
  END IF;
  IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'mneia_app') THEN
    CREATE ROLE mneia_app LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
  END IF;
END
$$;

GRANT mneia_owner TO CURRENT_USER;
GRANT USAGE, CREATE ON SCHEMA public TO mneia_owner;
GRANT USAGE ON SCHEMA public TO mneia_app;

-- btree_gin, a contrib extension the embedded server and Debian's both ship:
-- its operator classes let a text index lead with the tenant's project
-- (items_search, tables.sql). It is trusted, so a database's owner may create
-- it without being a superuser, on hosted servers too; its functions are
-- index support (internal arguments), which no SQL statement can call.
CREATE EXTENSION IF NOT EXISTS btree_gin SCHEMA public;

-- Full-text search under row-level security (R11.9). PostgreSQL applies a
-- query's condition before a policy's only when the condition's function is
-- LEAKPROOF; otherwise it cannot use an index for it, so `search @@ query` on
-- items (whose policies everyone is under) would never use items_search and
-- a task's rare words would scan a whole project. ts_match_vq, behind `@@`
-- for a tsvector and a tsquery, raises no error and has no side effect that
-- depends on the row, so it leaks nothing; only a superuser may say so. A
-- database migrated by an administrator who is not one keeps the flag off:
-- rehydration answers the same, slower (its candidates are then found by
-- walking each kind's items newest first). The flag lives in this database's
-- catalogue: pg_dump does not carry it, so after a restore run this block
-- again as a superuser (README, "Rehydration").
DO $$
BEGIN
  IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
    ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF;
  ELSE
    RAISE NOTICE 'not a superuser: ts_match_vq stays not LEAKPROOF (full-text candidates are found without items_search)';
  END IF;
END
$$;
-- What mneia_app does not need of PostgreSQL's own (issue 21): every role of a
-- database may, by default, create large objects, take advisory locks, notify
-- any channel, and read every table's row counts (pg_stat_*), which here are
-- all tenants' together. Revoked from PUBLIC in this database; the owner keeps
-- pg_notify, which its announcement trigger sends. Only a superuser may change
-- these grants; an administrator who is not one leaves them as they are (a
-- NOTICE says so). What cannot be revoked: LISTEN and NOTIFY as statements (a
-- channel's name is a keyed hash, R15), pg_class.reltuples (every client's
-- catalogue needs pg_class), and pg_stat_activity's own-session rows.
DO $$
DECLARE
  granted regprocedure;
  shown text;
BEGIN
  IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
    RAISE NOTICE 'not a superuser: large objects, advisory locks, pg_notify and table statistics stay open to every role';
    RETURN;
  END IF;
  FOR granted IN
    SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
    WHERE p.pronamespace = 'pg_catalog'::regnamespace
      AND (p.proname IN ('lo_create', 'lo_creat', 'lo_from_bytea', 'lo_open', 'lo_put', 'lo_get',
                         'lo_unlink', 'lo_import', 'lo_export', 'lo_truncate', 'lo_truncate64',
                         'lowrite', 'loread', 'pg_notify')
           OR p.proname LIKE 'pg\_advisory\_%' OR p.proname LIKE 'pg\_try\_advisory\_%'
           OR (p.proname LIKE 'pg\_stat\_get\_%' AND p.pronargs = 1
               AND p.proargtypes[0] = 'pg_catalog.oid'::pg_catalog.regtype))
  LOOP
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', granted);
  END LOOP;
  FOREACH shown IN ARRAY ARRAY['pg_stat_all_tables', 'pg_stat_user_tables', 'pg_stat_sys_tables',
                                'pg_stat_xact_all_tables', 'pg_stat_xact_user_tables',
                                'pg_stat_xact_sys_tables', 'pg_statio_all_tables',
                                'pg_statio_user_tables', 'pg_statio_sys_tables', 'pg_stat_all_indexes',
                                'pg_stat_user_indexes', 'pg_stat_sys_indexes', 'pg_statio_all_indexes',
                                'pg_statio_user_indexes', 'pg_statio_sys_indexes']
  LOOP
    EXECUTE format('REVOKE SELECT ON pg_catalog.%I FROM PUBLIC', shown);
  END LOOP;
  GRANT EXECUTE ON FUNCTION pg_catalog.pg_notify(text, text) TO mneia_owner;
END
$$;
