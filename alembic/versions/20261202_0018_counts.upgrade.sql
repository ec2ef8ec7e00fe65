SET LOCAL ROLE mneia_owner;
SET LOCAL check_function_bodies = off;
CREATE TABLE item_counts (
  workspace_id uuid NOT NULL,
  project_id uuid NOT NULL,
  scope text NOT NULL,
  actor_id uuid NOT NULL,
  via_grant boolean NOT NULL,
  status text NOT NULL,
  kind text NOT NULL,
  load_bearing boolean NOT NULL,
  confirmed boolean NOT NULL,
  slot integer NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (workspace_id, project_id, scope, actor_id, via_grant, status, kind, load_bearing,
               confirmed, slot),
  FOREIGN KEY (workspace_id, project_id) REFERENCES projects (workspace_id, id)
);

ALTER TABLE item_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE item_counts FORCE ROW LEVEL SECURITY;
CREATE OR REPLACE FUNCTION public.mneia_fold_item_counts()
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
      WHERE c.ctid IN (SELECT l.ctid FROM public.item_counts l WHERE l.slot <> 0
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
    DELETE FROM public.item_counts c WHERE c.slot = 0 AND c.n = 0;
    RETURN folded;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_item_count_deltas(rows items[], sign integer)
 RETURNS TABLE(workspace_id uuid, project_id uuid, scope text, actor_id uuid, via_grant boolean, status text, kind text, load_bearing boolean, confirmed boolean, n bigint)
 LANGUAGE plpgsql
 IMMUTABLE
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  BEGIN
    RETURN QUERY
      SELECT r.workspace_id, r.project_id, r.scope, r.asserted_by, false, r.status, r.kind,
             r.load_bearing, r.confirmed_by IS NOT NULL, sign::bigint
      FROM unnest(rows) r
      UNION ALL
      SELECT r.workspace_id, r.project_id, r.scope, g, true, r.status, r.kind, r.load_bearing,
             r.confirmed_by IS NOT NULL, sign::bigint
      FROM unnest(rows) r, unnest(r.grant_actor_ids) g
      WHERE r.scope = 'GRANTS' AND g <> r.asserted_by;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_items_count()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    added public.items[];
    removed public.items[];
  BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
      SELECT array_agg(n) INTO added FROM fresh n;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
      SELECT array_agg(o) INTO removed FROM stale o;
    END IF;
    INSERT INTO public.item_counts AS c (workspace_id, project_id, scope, actor_id, via_grant, status,
                                         kind, load_bearing, confirmed, slot, n)
    SELECT d.workspace_id, d.project_id, d.scope, d.actor_id, d.via_grant, d.status, d.kind,
           d.load_bearing, d.confirmed, pg_backend_pid(), sum(d.n)
    FROM (SELECT * FROM public.mneia_item_count_deltas(coalesce(added, '{}'), 1)
          UNION ALL
          SELECT * FROM public.mneia_item_count_deltas(coalesce(removed, '{}'), -1)) d
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
CREATE POLICY item_count_keep ON item_counts AS PERMISSIVE FOR ALL TO mneia_owner USING (true) WITH CHECK (true);
CREATE POLICY item_count_read ON item_counts AS PERMISSIVE FOR SELECT TO public USING (((workspace_id = ( SELECT mneia_workspace() AS mneia_workspace)) AND
CASE
    WHEN via_grant THEN (actor_id = ( SELECT mneia_actor() AS mneia_actor))
    ELSE ((actor_id = ( SELECT mneia_actor() AS mneia_actor)) OR (scope = 'WORKSPACE'::text) OR ((scope = 'PROJECT'::text) AND (project_id = ANY (( SELECT mneia_member_projects() AS mneia_member_projects)::uuid[]))) OR ((scope = 'TEAM'::text) AND (project_id = ANY (( SELECT mneia_team_projects() AS mneia_team_projects)::uuid[]))))
END));
CREATE TRIGGER items_counted_delete AFTER DELETE ON public.items REFERENCING OLD TABLE AS stale FOR EACH STATEMENT EXECUTE FUNCTION mneia_items_count();
CREATE TRIGGER items_counted_insert AFTER INSERT ON public.items REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION mneia_items_count();
CREATE TRIGGER items_counted_update AFTER UPDATE ON public.items REFERENCING OLD TABLE AS stale NEW TABLE AS fresh FOR EACH STATEMENT EXECUTE FUNCTION mneia_items_count();
REVOKE ALL ON FUNCTION mneia_fold_item_counts() FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_item_count_deltas(rows items[], sign integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_items_count() FROM PUBLIC;
GRANT SELECT ON item_counts TO mneia_app;

-- The items already there, counted as the owner past the policies (no request context
-- here), with writers held off until the triggers above count theirs.
LOCK TABLE items IN SHARE MODE;
ALTER TABLE items NO FORCE ROW LEVEL SECURITY;
INSERT INTO item_counts (workspace_id, project_id, scope, actor_id, via_grant, status, kind,
                         load_bearing, confirmed, slot, n)
SELECT workspace_id, project_id, scope, asserted_by, false, status, kind, load_bearing,
       confirmed_by IS NOT NULL, 0, count(*)
FROM items GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
UNION ALL
SELECT i.workspace_id, i.project_id, i.scope, g, true, i.status, i.kind, i.load_bearing,
       i.confirmed_by IS NOT NULL, 0, count(*)
FROM items i, unnest(i.grant_actor_ids) g
WHERE i.scope = 'GRANTS' AND g <> i.asserted_by
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9;
ALTER TABLE items FORCE ROW LEVEL SECURITY;
-- Counting a project's visible items was this index's only use.
DROP INDEX items_selection;
RESET ROLE;
