-- 0005 downgrade: drop the rehydration indexes and give ts_match_vq back its stock flag.
SET LOCAL search_path = public, pg_catalog, pg_temp;
DO $$
BEGIN
  IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
    ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) NOT LEAKPROOF;
  END IF;
END
$$;
SET LOCAL ROLE mneia_owner;
SET LOCAL check_function_bodies = off;
DROP INDEX items_guaranteed;
DROP INDEX items_live;
DROP INDEX items_replacements;
RESET ROLE;
