-- 0029 downgrade: workspaces without a region (every workspace of a server is in MNEIA_REGION again).
-- The result equals storage/sql (tests/test_declared.py).
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
DROP TRIGGER workspaces_region_fixed ON workspaces;
DROP FUNCTION mneia_region_fixed();
DROP FUNCTION mneia_bootstrap(new_workspace uuid, workspace_name text, human_name text, token_digest text, workspace_region text);
ALTER TABLE workspaces DROP COLUMN region;
CREATE OR REPLACE FUNCTION public.mneia_bootstrap(new_workspace uuid, workspace_name text, human_name text, token_digest text)
 RETURNS TABLE(workspace_id uuid, actor_id uuid)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    new_actor uuid := public.mneia_uuid7();
    new_identity uuid := public.mneia_uuid7();
  BEGIN
    PERFORM public.mneia_bind(new_workspace, new_actor);
    INSERT INTO public.workspaces (id, name) VALUES (new_workspace, workspace_name);
    INSERT INTO public.identities (id, display_name) VALUES (new_identity, human_name);
    INSERT INTO public.actors (workspace_id, id, kind, name, identity_id)
      VALUES (new_workspace, new_actor, 'HUMAN', human_name, new_identity);
    INSERT INTO public.api_tokens (workspace_id, id, actor_id, token_hash)
      VALUES (new_workspace, public.mneia_uuid7(), new_actor, token_digest);
    PERFORM public.mneia_unbind();
    RETURN QUERY SELECT new_workspace, new_actor;
  END
  $function$;
REVOKE ALL ON FUNCTION mneia_bootstrap(new_workspace uuid, workspace_name text, human_name text, token_digest text) FROM PUBLIC;
RESET ROLE;
