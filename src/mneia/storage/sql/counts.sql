-- Counts that do not scan (issue 24): how many items a reader sees in a project,
-- by status, kind, load-bearing and confirmation, kept by a trigger as the
-- items change, so that items(...) { totalCount } reads a few dozen rows
-- instead of counting a million (docs/counting.md).
--
-- A count may never tell a reader about items it cannot see (R2). So a
-- counter row counts the items of one audience, and the counters' policy is
-- the items' policy (visibility.sql, item_read) restated over audiences: the
-- sum of the rows a reader may see is the number of items it may see.
-- Each item counts once in the row of its asserter (via_grant false: seen by
-- the asserter, and by everyone its scope lets in); an item shared by GRANTS
-- counts again once for each listed actor but its asserter (via_grant true:
-- seen by that actor only). No reader sees both rows of one item.
--
-- Each connection writes its own rows (slot, its backend's pid), so
-- concurrent writers never wait on each other's counters or deadlock over
-- them; mneia_fold_item_counts, run by the sweep, folds the connections' rows
-- into slot 0 so that a project's rows stay few.

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

-- item_read (visibility.sql), over audiences: keep the two alike.
CREATE POLICY item_count_read ON item_counts FOR SELECT USING (
  workspace_id = (SELECT mneia_workspace()) AND (
    CASE WHEN via_grant THEN actor_id = (SELECT mneia_actor())
    ELSE actor_id = (SELECT mneia_actor())
         OR scope = 'WORKSPACE'
         OR (scope = 'PROJECT' AND project_id = ANY ((SELECT mneia_member_projects())::uuid[]))
         OR (scope = 'TEAM' AND project_id = ANY ((SELECT mneia_team_projects())::uuid[]))
    END));
-- Written only by the owner's trigger and fold below, for any workspace: a counter
-- carries no text, and mneia_app has no privilege to write one.
CREATE POLICY item_count_keep ON item_counts FOR ALL TO mneia_owner USING (true) WITH CHECK (true);

-- One statement's changes, summed by counter row (an UPDATE that changes no counted
-- column writes nothing), added to this connection's rows in key order. Each transition
-- table is read alone and summed as it is read, into an array of counter rows: on Citus a
-- statement that also writes a distributed table cannot see a transition table, and the
-- array then holds a few dozen counters, not a copy of every item the statement wrote.
-- An item counts in its asserter's row, and a GRANTS item again for each grantee but its
-- asserter (via_grant).
CREATE FUNCTION public.mneia_items_count() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  SET plan_cache_mode = auto  -- keyed lookups: a generic plan serves every tenant (storage.database)
  AS $$
  DECLARE
    added public.item_counts[];
    removed public.item_counts[];
    counter public.item_counts;
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
    -- One INSERT … VALUES a counter row, in key order: on Citus an INSERT … VALUES goes
    -- straight to its shard with a plan kept for the connection, where an INSERT … SELECT
    -- is planned again at every statement and its rows gathered before they are sent.
    FOR counter IN
      SELECT d.workspace_id, d.project_id, d.scope, d.actor_id, d.via_grant, d.status, d.kind,
             d.load_bearing, d.confirmed, pg_backend_pid(), sum(d.n)
      FROM (SELECT * FROM unnest(coalesce(added, '{}'))
            UNION ALL
            SELECT * FROM unnest(coalesce(removed, '{}'))) d
      GROUP BY d.workspace_id, d.project_id, d.scope, d.actor_id, d.via_grant, d.status, d.kind,
               d.load_bearing, d.confirmed
      HAVING sum(d.n) <> 0
      ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9
    LOOP
      INSERT INTO public.item_counts AS c (workspace_id, project_id, scope, actor_id, via_grant, status,
                                           kind, load_bearing, confirmed, slot, n)
        VALUES (counter.workspace_id, counter.project_id, counter.scope, counter.actor_id, counter.via_grant,
                counter.status, counter.kind, counter.load_bearing, counter.confirmed, counter.slot, counter.n)
        ON CONFLICT (workspace_id, project_id, scope, actor_id, via_grant, status, kind, load_bearing,
                     confirmed, slot)
          DO UPDATE SET n = c.n + EXCLUDED.n;
    END LOOP;
    RETURN NULL;
  END
  $$;

CREATE TRIGGER items_counted_insert AFTER INSERT ON items
  REFERENCING NEW TABLE AS fresh
  FOR EACH STATEMENT EXECUTE FUNCTION public.mneia_items_count();
CREATE TRIGGER items_counted_update AFTER UPDATE ON items
  REFERENCING OLD TABLE AS stale NEW TABLE AS fresh
  FOR EACH STATEMENT EXECUTE FUNCTION public.mneia_items_count();
CREATE TRIGGER items_counted_delete AFTER DELETE ON items
  REFERENCING OLD TABLE AS stale
  FOR EACH STATEMENT EXECUTE FUNCTION public.mneia_items_count();

-- Folds one workspace's rows of every connection into slot 0 and drops the rows that count
-- nothing. Rows a writer holds are skipped (folded next time): the fold never waits on a writer,
-- and a writer waits at most for the fold's own short transaction. The administrator's (the
-- sweep, workspace by workspace: on Citus each statement then runs on the workspace's shard,
-- and a statement that locks rows must).
CREATE FUNCTION public.mneia_fold_item_counts(workspace uuid) RETURNS bigint
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
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
  $$;
