-- 0012 downgrade: PostgreSQL's default grants back to PUBLIC.
SET LOCAL search_path = public, pg_catalog, pg_temp;
DO $$
DECLARE
  granted regprocedure;
  shown text;
BEGIN
  IF NOT (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
    RETURN;
  END IF;
  FOR granted IN
    SELECT p.oid::regprocedure FROM pg_catalog.pg_proc p
    WHERE p.pronamespace = 'pg_catalog'::regnamespace
      AND (p.proname IN ('lo_create', 'lo_creat', 'lo_from_bytea', 'lo_open', 'lo_put', 'lo_get',
                         'lo_unlink', 'lowrite', 'loread', 'lo_truncate', 'lo_truncate64', 'pg_notify')
           OR p.proname LIKE 'pg\_advisory\_%' OR p.proname LIKE 'pg\_try\_advisory\_%'
           OR (p.proname LIKE 'pg\_stat\_get\_%' AND p.pronargs = 1
               AND p.proargtypes[0] = 'pg_catalog.oid'::pg_catalog.regtype))
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', granted);
  END LOOP;
  FOREACH shown IN ARRAY ARRAY['pg_stat_all_tables', 'pg_stat_user_tables', 'pg_stat_sys_tables',
                                'pg_stat_xact_all_tables', 'pg_stat_xact_user_tables',
                                'pg_stat_xact_sys_tables', 'pg_statio_all_tables',
                                'pg_statio_user_tables', 'pg_statio_sys_tables', 'pg_stat_all_indexes',
                                'pg_stat_user_indexes', 'pg_stat_sys_indexes', 'pg_statio_all_indexes',
                                'pg_statio_user_indexes', 'pg_statio_sys_indexes']
  LOOP
    EXECUTE format('GRANT SELECT ON pg_catalog.%I TO PUBLIC', shown);
  END LOOP;
  REVOKE EXECUTE ON FUNCTION pg_catalog.pg_notify(text, text) FROM mneia_owner;
END
$$;
