-- 0029 upgrade: a workspace has a region, fixed when it is created (see the .py beside).
-- The result equals storage/sql (tests/test_declared.py).
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
-- The existing rows take the migrated server's region (the .py sets it); new ones state theirs.
ALTER TABLE workspaces ADD COLUMN region text NOT NULL
  DEFAULT nullif(current_setting('mneia.migrating_region', true), '');
ALTER TABLE workspaces ALTER COLUMN region DROP DEFAULT;
ALTER TABLE workspaces ADD CONSTRAINT workspaces_region_name
  CHECK (length(region) <= 32 AND region ~ '^[a-z0-9]+(-[a-z0-9]+)*$');
DROP FUNCTION mneia_bootstrap(new_workspace uuid, workspace_name text, human_name text, token_digest text);
CREATE OR REPLACE FUNCTION public.mneia_bootstrap(new_workspace uuid, workspace_name text, human_name text, token_digest text, workspace_region text)
 RETURNS TABLE(workspace_id uuid, actor_id uuid, identity_id uuid)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    new_actor uuid := public.mneia_uuid7();
    new_identity uuid := public.mneia_uuid7();
  BEGIN
    PERFORM public.mneia_bind(new_workspace, new_actor);
    INSERT INTO public.workspaces (id, name, region) VALUES (new_workspace, workspace_name, workspace_region);
    INSERT INTO public.identities (id, display_name) VALUES (new_identity, human_name);
    INSERT INTO public.actors (workspace_id, id, kind, name, identity_id)
      VALUES (new_workspace, new_actor, 'HUMAN', human_name, new_identity);
    INSERT INTO public.api_tokens (workspace_id, id, actor_id, token_hash)
      VALUES (new_workspace, public.mneia_uuid7(), new_actor, token_digest);
    PERFORM public.mneia_unbind();
    RETURN QUERY SELECT new_workspace, new_actor, new_identity;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_region_fixed()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    RAISE EXCEPTION 'REFUSED: a workspace''s region is fixed when it is created (% stays in %)',
      OLD.id, OLD.region USING ERRCODE = 'insufficient_privilege';
  END
  $function$;
CREATE TRIGGER workspaces_region_fixed BEFORE UPDATE OF region ON public.workspaces FOR EACH ROW WHEN ((new.region IS DISTINCT FROM old.region)) EXECUTE FUNCTION mneia_region_fixed();
REVOKE ALL ON FUNCTION mneia_bootstrap(new_workspace uuid, workspace_name text, human_name text, token_digest text, workspace_region text) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_region_fixed() FROM PUBLIC;
RESET ROLE;
