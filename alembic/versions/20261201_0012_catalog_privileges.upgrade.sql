-- 0012 upgrade: revoke from PUBLIC what mneia_app does not need of PostgreSQL's own (the block at
-- the end of storage/sql/roles.sql, the administrator's: it runs as the migrating role).
SET LOCAL search_path = public, pg_catalog, pg_temp;
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
