-- 0024 upgrade: a token names its workspace, and is found in it.
-- The result equals storage/sql (tests/test_declared.py).
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
DROP FUNCTION mneia_authenticate(presented text);
DROP FUNCTION mneia_bootstrap(workspace_name text, human_name text, token_digest text);
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_token_hash_key;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_workspace_id_token_hash_key UNIQUE (workspace_id, token_hash);
CREATE INDEX api_tokens_digest ON public.api_tokens USING btree (token_hash);
CREATE OR REPLACE FUNCTION public.mneia_authenticate(presented text, named uuid)
 RETURNS TABLE(workspace_id uuid, id uuid, kind text, name text, created_at timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    found_workspace uuid;
    found_actor uuid;
    found_expiry timestamptz;
  BEGIN
    PERFORM public.mneia_unbind();
    PERFORM set_config('mneia.token_hash', coalesce(presented, ''), true);
    IF named IS NOT NULL THEN
      SELECT t.workspace_id, t.actor_id, t.expires_at INTO found_workspace, found_actor, found_expiry
        FROM public.api_tokens t
        WHERE t.workspace_id = named AND t.token_hash = presented AND t.revoked_at IS NULL
          AND (t.expires_at IS NULL OR t.expires_at > now());
    ELSE
      SELECT t.workspace_id, t.actor_id, t.expires_at INTO found_workspace, found_actor, found_expiry
        FROM public.api_tokens t
        WHERE t.token_hash = presented AND t.revoked_at IS NULL
          AND (t.expires_at IS NULL OR t.expires_at > now());
    END IF;
    PERFORM set_config('mneia.token_hash', '', true);
    IF found_actor IS NULL THEN
      RETURN;
    END IF;
    PERFORM public.mneia_bind(found_workspace, found_actor);
    IF found_expiry IS NOT NULL THEN  -- sealed with the rest: what this token mints is bounded by it
      PERFORM set_config('mneia.token_expires', found_expiry::text, true);
      PERFORM set_config('mneia.seal', public.mneia_context_seal(), true);
    END IF;
    RETURN QUERY SELECT a.workspace_id, a.id, a.kind, a.name, a.created_at FROM public.actors a
      WHERE a.workspace_id = found_workspace AND a.id = found_actor;
  END
  $function$;
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
REVOKE ALL ON FUNCTION mneia_authenticate(presented text, named uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_bootstrap(new_workspace uuid, workspace_name text, human_name text, token_digest text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mneia_authenticate(presented text, named uuid) TO mneia_app;
RESET ROLE;
