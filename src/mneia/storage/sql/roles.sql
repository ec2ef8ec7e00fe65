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
