-- 0035 downgrade: the binding in one statement again (0033).
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

    -- One statement, not four: on Citus each is planned before it runs (docs/scale-out.md).
    SELECT (SELECT a.kind FROM public.actors a WHERE a.workspace_id = workspace AND a.id = actor),
           m.ids, t.ids,
           (SELECT coalesce(array_agg(p.id ORDER BY p.id), '{}') FROM public.projects p
             WHERE p.workspace_id = workspace AND (p.id = ANY (m.ids) OR p.team_id = ANY (t.ids)))
      INTO actor_kind, member_of, teams_of, works_in
      FROM (SELECT coalesce(array_agg(pm.project_id ORDER BY pm.project_id), '{}') AS ids
              FROM public.project_members pm
              WHERE pm.workspace_id = workspace AND pm.actor_id = actor) m,
           (SELECT coalesce(array_agg(tm.team_id ORDER BY tm.team_id), '{}') AS ids
              FROM public.team_members tm
              WHERE tm.workspace_id = workspace AND tm.actor_id = actor) t;

    PERFORM set_config('mneia.actor_kind', coalesce(actor_kind, ''), true),
            set_config('mneia.projects', member_of::text, true),
            set_config('mneia.teams', teams_of::text, true),
            set_config('mneia.team_projects', works_in::text, true);
    PERFORM set_config('mneia.seal', public.mneia_context_seal(), true);
  END
  $function$;
RESET ROLE;
