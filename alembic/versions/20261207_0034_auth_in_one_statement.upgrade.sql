-- 0034 upgrade: mneia_authenticate reads a token, its actor and the binding's lookups in one
-- statement (see the .py beside). The result equals storage/sql (tests/test_declared.py).
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
    held record;
  BEGIN
    PERFORM public.mneia_unbind();
    PERFORM set_config('mneia.token_hash', coalesce(presented, ''), true);
    IF named IS NULL THEN
      SELECT t.workspace_id, t.actor_id, t.expires_at INTO found_workspace, found_actor, found_expiry
        FROM public.api_tokens t
        WHERE t.token_hash = presented AND t.revoked_at IS NULL
          AND (t.expires_at IS NULL OR t.expires_at > now());
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
      RETURN;
    END IF;

    PERFORM set_config('mneia.workspace_id', named::text, true);
    PERFORM set_config('mneia.seal', public.mneia_context_seal(), true);
    SELECT t.actor_id, t.expires_at, a.kind, a.name, a.created_at, m.ids AS projects, tm.ids AS teams,
           (SELECT coalesce(array_agg(p.id ORDER BY p.id), '{}') FROM public.projects p
             WHERE p.workspace_id = named AND (p.id = ANY (m.ids) OR p.team_id = ANY (tm.ids))) AS works_in
      INTO held
      FROM public.api_tokens t
      JOIN public.actors a ON a.workspace_id = t.workspace_id AND a.id = t.actor_id
      CROSS JOIN LATERAL (SELECT coalesce(array_agg(pm.project_id ORDER BY pm.project_id), '{}') AS ids
                            FROM public.project_members pm
                            WHERE pm.workspace_id = named AND pm.actor_id = t.actor_id) m
      CROSS JOIN LATERAL (SELECT coalesce(array_agg(x.team_id ORDER BY x.team_id), '{}') AS ids
                            FROM public.team_members x
                            WHERE x.workspace_id = named AND x.actor_id = t.actor_id) tm
      WHERE t.workspace_id = named AND t.token_hash = presented AND t.revoked_at IS NULL
        AND (t.expires_at IS NULL OR t.expires_at > now());
    PERFORM set_config('mneia.token_hash', '', true);
    IF held.actor_id IS NULL THEN
      PERFORM public.mneia_unbind();
      RETURN;
    END IF;
    PERFORM set_config('mneia.actor_id', held.actor_id::text, true),
            set_config('mneia.actor_kind', held.kind, true),
            set_config('mneia.projects', held.projects::text, true),
            set_config('mneia.teams', held.teams::text, true),
            set_config('mneia.team_projects', held.works_in::text, true),
            -- sealed with the rest: what this token mints is bounded by it
            set_config('mneia.token_expires', coalesce(held.expires_at::text, ''), true);
    PERFORM set_config('mneia.seal', public.mneia_context_seal(), true);
    RETURN QUERY SELECT named, held.actor_id, held.kind, held.name, held.created_at;
  END
  $function$;
RESET ROLE;
