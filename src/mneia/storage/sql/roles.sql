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
