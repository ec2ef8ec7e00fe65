-- 0034 downgrade: the item counters written by one INSERT … SELECT again.
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
CREATE OR REPLACE FUNCTION public.mneia_items_count()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET plan_cache_mode TO 'auto'
AS $function$
  DECLARE
    added public.item_counts[];
    removed public.item_counts[];
  BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
      SELECT array_agg(ROW(d.workspace_id, d.project_id, d.scope, d.actor_id, d.via_grant, d.status, d.kind,
                           d.load_bearing, d.confirmed, 0, d.n)::public.item_counts)
        INTO added
        FROM (SELECT r.workspace_id, r.project_id, r.scope, a.actor_id, a.via_grant, r.status, r.kind,
                     r.load_bearing, r.confirmed_by IS NOT NULL AS confirmed, count(*) AS n
              FROM fresh r
              CROSS JOIN LATERAL (SELECT r.asserted_by AS actor_id, false AS via_grant
                                  UNION ALL
                                  SELECT g, true FROM unnest(r.grant_actor_ids) g
                                  WHERE r.scope = 'GRANTS' AND g <> r.asserted_by) a
              GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9) d;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
      SELECT array_agg(ROW(d.workspace_id, d.project_id, d.scope, d.actor_id, d.via_grant, d.status, d.kind,
                           d.load_bearing, d.confirmed, 0, -d.n)::public.item_counts)
        INTO removed
        FROM (SELECT r.workspace_id, r.project_id, r.scope, a.actor_id, a.via_grant, r.status, r.kind,
                     r.load_bearing, r.confirmed_by IS NOT NULL AS confirmed, count(*) AS n
              FROM stale r
              CROSS JOIN LATERAL (SELECT r.asserted_by AS actor_id, false AS via_grant
                                  UNION ALL
                                  SELECT g, true FROM unnest(r.grant_actor_ids) g
                                  WHERE r.scope = 'GRANTS' AND g <> r.asserted_by) a
              GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9) d;
    END IF;
    INSERT INTO public.item_counts AS c (workspace_id, project_id, scope, actor_id, via_grant, status,
                                         kind, load_bearing, confirmed, slot, n)
    SELECT d.workspace_id, d.project_id, d.scope, d.actor_id, d.via_grant, d.status, d.kind,
           d.load_bearing, d.confirmed, pg_backend_pid(), sum(d.n)
    FROM (SELECT * FROM unnest(coalesce(added, '{}'))
          UNION ALL
          SELECT * FROM unnest(coalesce(removed, '{}'))) d
    GROUP BY d.workspace_id, d.project_id, d.scope, d.actor_id, d.via_grant, d.status, d.kind,
             d.load_bearing, d.confirmed
    HAVING sum(d.n) <> 0
    ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9
    ON CONFLICT (workspace_id, project_id, scope, actor_id, via_grant, status, kind, load_bearing,
                 confirmed, slot)
      DO UPDATE SET n = c.n + EXCLUDED.n;
    RETURN NULL;
  END
  $function$;
RESET ROLE;
