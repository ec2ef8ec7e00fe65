-- 0030 upgrade: the counters folded a workspace at a time, an erasure's time by least (see the .py beside).
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
DROP FUNCTION mneia_fold_item_counts();
CREATE OR REPLACE FUNCTION public.mneia_fold_item_counts(workspace uuid)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    folded bigint;
  BEGIN
    WITH moved AS (
      DELETE FROM public.item_counts c
      WHERE c.workspace_id = workspace
        AND c.ctid IN (SELECT l.ctid FROM public.item_counts l WHERE l.workspace_id = workspace AND l.slot <> 0
                       FOR UPDATE SKIP LOCKED)
      RETURNING c.*
    ), summed AS (
      INSERT INTO public.item_counts AS c (workspace_id, project_id, scope, actor_id, via_grant, status,
                                           kind, load_bearing, confirmed, slot, n)
      SELECT m.workspace_id, m.project_id, m.scope, m.actor_id, m.via_grant, m.status, m.kind,
             m.load_bearing, m.confirmed, 0, sum(m.n)
      FROM moved m
      GROUP BY m.workspace_id, m.project_id, m.scope, m.actor_id, m.via_grant, m.status, m.kind,
               m.load_bearing, m.confirmed
      ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9
      ON CONFLICT (workspace_id, project_id, scope, actor_id, via_grant, status, kind, load_bearing,
                   confirmed, slot)
        DO UPDATE SET n = c.n + EXCLUDED.n
      RETURNING 1
    )
    SELECT count(*) INTO folded FROM moved;
    DELETE FROM public.item_counts c WHERE c.workspace_id = workspace AND c.slot = 0 AND c.n = 0;
    RETURN folded;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_erase_actor(target uuid)
 RETURNS SETOF uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    ws uuid := public.mneia_workspace();
    me uuid := public.mneia_actor();
    private uuid[];
  BEGIN
    IF NOT public.mneia_actor_is_human() THEN
      PERFORM public.mneia_require_human(me, 'erasing an actor');
    END IF;
    IF NOT EXISTS (SELECT 1 FROM public.actors a WHERE a.workspace_id = ws AND a.id = target) THEN
      PERFORM public.mneia_refuse('an actor of the workspace is erased');
    END IF;
    UPDATE public.api_tokens t SET revoked_at = now(), revoked_by = me
      WHERE t.workspace_id = ws AND t.actor_id = target AND t.revoked_at IS NULL;
    UPDATE public.actors a
      -- least, not coalesce: it too keeps an earlier erasure, and Citus refuses a function that
      -- is not immutable inside COALESCE or CASE in an UPDATE of a distributed table.
      SET name = 'erased actor ' || left(md5(a.id::text), 8), erased_at = least(a.erased_at, now()),
          identity_id = NULL  -- R19: the person is no longer linked to it
      WHERE a.workspace_id = ws AND a.id = target;
    UPDATE public.sessions s SET task = NULL, deep_link = NULL
      WHERE s.workspace_id = ws AND s.actor_id = target AND (s.task IS NOT NULL OR s.deep_link IS NOT NULL);
    SELECT coalesce(array_agg(i.id), '{}') INTO private FROM public.items i
      WHERE i.workspace_id = ws AND i.asserted_by = target AND i.scope = 'PRIVATE';
    RETURN QUERY SELECT public.mneia_redact(private, 'erasure');
  END
  $function$;
REVOKE ALL ON FUNCTION mneia_fold_item_counts(workspace uuid) FROM PUBLIC;
RESET ROLE;
