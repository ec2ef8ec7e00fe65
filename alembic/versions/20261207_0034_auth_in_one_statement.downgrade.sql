-- 0034 downgrade: mneia_authenticate as 0033 left it.
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
CREATE OR REPLACE FUNCTION public.mneia_authenticate(presented text, named uuid)
 RETURNS TABLE(workspace_id uuid, id uuid, kind text, name text, created_at timestamp with time zone)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET plan_cache_mode TO 'auto'
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
RESET ROLE;
