-- 0033 downgrade: mneia_bind's four statements, as at 0032.
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
CREATE OR REPLACE FUNCTION public.mneia_bind(workspace uuid, actor uuid)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET plan_cache_mode TO 'auto'
AS $function$
  DECLARE
    actor_kind text;
    member_of uuid[];
    teams_of uuid[];
    works_in uuid[];
  BEGIN
    -- A bare seal first: the owner, too, is bound by the policies, and they
    -- need the workspace to show the records read below.
    PERFORM set_config('mneia.workspace_id', workspace::text, true),
            set_config('mneia.actor_id', actor::text, true),
            set_config('mneia.token_expires', '', true),
            set_config('mneia.actor_kind', '', true),
            set_config('mneia.projects', '{}', true),
            set_config('mneia.teams', '{}', true),
            set_config('mneia.team_projects', '{}', true);
    PERFORM set_config('mneia.seal', public.mneia_context_seal(), true);

    SELECT a.kind INTO actor_kind FROM public.actors a
      WHERE a.workspace_id = workspace AND a.id = actor;
    SELECT coalesce(array_agg(m.project_id ORDER BY m.project_id), '{}') INTO member_of
      FROM public.project_members m
      WHERE m.workspace_id = workspace AND m.actor_id = actor;
    SELECT coalesce(array_agg(t.team_id ORDER BY t.team_id), '{}') INTO teams_of
      FROM public.team_members t
      WHERE t.workspace_id = workspace AND t.actor_id = actor;
    SELECT coalesce(array_agg(p.id ORDER BY p.id), '{}') INTO works_in
      FROM public.projects p
      WHERE p.workspace_id = workspace AND (p.id = ANY (member_of) OR p.team_id = ANY (teams_of));

    PERFORM set_config('mneia.actor_kind', coalesce(actor_kind, ''), true),
            set_config('mneia.projects', member_of::text, true),
            set_config('mneia.teams', teams_of::text, true),
            set_config('mneia.team_projects', works_in::text, true);
    PERFORM set_config('mneia.seal', public.mneia_context_seal(), true);
  END
  $function$;
RESET ROLE;
