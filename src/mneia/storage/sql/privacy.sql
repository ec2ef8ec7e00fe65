-- Privacy by controls (issue 23): retention as redaction (R16), legal holds (R17), erasure (R18).
--
-- Nothing is deleted (R6): an item past its retention keeps its row, chain,
-- status, authority, times and events; its text goes. Only mneia_redact blanks
-- text, as the owner: the sweep (`mneia admin sweep`) calls it, and so does
-- mneia_erase_actor for a human's eraseActor; mneia_app cannot call it. The
-- trigger items_redacted refuses, for every role (the owner and a superuser
-- too), writing text back into a redacted item or redacting a held one.

CREATE TABLE retention_policies (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL,
  project_id uuid,
  kinds text[] NOT NULL DEFAULT '{}'
    CHECK (kinds <@ ARRAY['CONSTRAINT', 'DECISION', 'FACT', 'PREFERENCE', 'QUESTION', 'TASK']),
  statuses text[] NOT NULL
    CHECK (cardinality(statuses) > 0 AND statuses <@ ARRAY['SUPERSEDED', 'RETIRED']),
  -- At least 30 days, so that R11's recent supersessions always have their text.
  after interval NOT NULL CHECK (after >= interval '30 days'),
  created_by uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  removed_by uuid,
  removed_at timestamptz,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, project_id) REFERENCES projects (workspace_id, id),
  FOREIGN KEY (workspace_id, created_by) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, removed_by) REFERENCES actors (workspace_id, id),
  CHECK ((removed_by IS NULL) = (removed_at IS NULL))
);

CREATE TABLE legal_holds (
  workspace_id uuid NOT NULL,
  id uuid NOT NULL,
  project_id uuid NOT NULL,
  item_id uuid,  -- null: the whole project
  reason text NOT NULL CHECK (length(btrim(reason)) > 0),
  placed_by uuid NOT NULL,
  placed_at timestamptz NOT NULL DEFAULT now(),
  released_by uuid,
  released_at timestamptz,
  PRIMARY KEY (workspace_id, id),
  FOREIGN KEY (workspace_id, project_id) REFERENCES projects (workspace_id, id),
  FOREIGN KEY (workspace_id, item_id) REFERENCES items (workspace_id, id),
  FOREIGN KEY (workspace_id, placed_by) REFERENCES actors (workspace_id, id),
  FOREIGN KEY (workspace_id, released_by) REFERENCES actors (workspace_id, id),
  CHECK ((released_by IS NULL) = (released_at IS NULL))
);
CREATE INDEX legal_holds_open ON legal_holds (workspace_id, project_id, item_id) WHERE released_at IS NULL;

ALTER TABLE retention_policies ENABLE ROW LEVEL SECURITY;
ALTER TABLE retention_policies FORCE ROW LEVEL SECURITY;
ALTER TABLE legal_holds ENABLE ROW LEVEL SECURITY;
ALTER TABLE legal_holds FORCE ROW LEVEL SECURITY;

-- Policies and holds are the workspace's: every actor of it reads them; humans write them (R3).
CREATE POLICY retention_read ON retention_policies FOR SELECT
  USING (workspace_id = (SELECT mneia_workspace()));
CREATE POLICY retention_set ON retention_policies FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace()) AND created_by = (SELECT mneia_actor())
  AND (SELECT mneia_actor_is_human()) AND created_at = now());
CREATE POLICY retention_remove ON retention_policies FOR UPDATE
  USING (workspace_id = (SELECT mneia_workspace()) AND (SELECT mneia_actor_is_human()))
  WITH CHECK (workspace_id = (SELECT mneia_workspace()) AND removed_by = (SELECT mneia_actor()));
CREATE POLICY hold_read ON legal_holds FOR SELECT USING (workspace_id = (SELECT mneia_workspace()));
CREATE POLICY hold_place ON legal_holds FOR INSERT WITH CHECK (
  workspace_id = (SELECT mneia_workspace()) AND placed_by = (SELECT mneia_actor())
  AND (SELECT mneia_actor_is_human()) AND placed_at = now());
CREATE POLICY hold_release ON legal_holds FOR UPDATE
  USING (workspace_id = (SELECT mneia_workspace()) AND (SELECT mneia_actor_is_human()))
  WITH CHECK (workspace_id = (SELECT mneia_workspace()) AND released_by = (SELECT mneia_actor()));
-- The owner's redaction rewrites every stored copy of an item's text, whoever may see it.
CREATE POLICY item_redact ON items FOR UPDATE TO mneia_owner
  USING (workspace_id = (SELECT mneia_workspace())) WITH CHECK (workspace_id = (SELECT mneia_workspace()));
CREATE POLICY item_event_redact ON item_events FOR UPDATE TO mneia_owner
  USING (workspace_id = (SELECT mneia_workspace())) WITH CHECK (workspace_id = (SELECT mneia_workspace()));
CREATE POLICY proposal_redact ON proposals FOR UPDATE TO mneia_owner
  USING (workspace_id = (SELECT mneia_workspace())) WITH CHECK (workspace_id = (SELECT mneia_workspace()));
CREATE POLICY dispute_redact ON disputes FOR UPDATE TO mneia_owner
  USING (workspace_id = (SELECT mneia_workspace())) WITH CHECK (workspace_id = (SELECT mneia_workspace()));
-- The sweep (`mneia admin sweep`, as the owner) finds the workspaces that have a policy.
CREATE POLICY retention_sweep_read ON retention_policies FOR SELECT TO mneia_owner USING (true);
CREATE POLICY hold_guard_read ON legal_holds FOR SELECT TO mneia_owner
  USING (workspace_id = (SELECT mneia_workspace()));
-- Erasure (mneia_erase_actor, as the owner): the actor's name and every token of it.
CREATE POLICY actor_erase ON actors FOR UPDATE TO mneia_owner
  USING (workspace_id = (SELECT mneia_workspace())) WITH CHECK (workspace_id = (SELECT mneia_workspace()));
CREATE POLICY token_erase ON api_tokens FOR UPDATE TO mneia_owner
  USING (workspace_id = (SELECT mneia_workspace())) WITH CHECK (workspace_id = (SELECT mneia_workspace()));

-- R17: whether an item is under a legal hold (its own, or its project's), seen or not.
-- PL/pgSQL, not SQL: a SQL function with a SET clause is planned anew by every call.
CREATE FUNCTION public.mneia_held(workspace uuid, project uuid, item uuid) RETURNS boolean
  LANGUAGE plpgsql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    RETURN EXISTS (SELECT 1 FROM public.legal_holds h
                   WHERE h.workspace_id = workspace AND h.project_id = project AND h.released_at IS NULL
                     AND (h.item_id IS NULL OR h.item_id = item));
  END
  $$;

CREATE FUNCTION public.mneia_items_redacted() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    -- No trusted-session exception: this holds for the owner and a superuser too.
    IF OLD.redacted_at IS NOT NULL THEN
      IF (NEW.redacted_at, NEW.redaction_reason, NEW.statement, NEW.details, NEW.basis, NEW.status_reason,
          NEW.supersession_reason)
         IS DISTINCT FROM (OLD.redacted_at, OLD.redaction_reason, OLD.statement, OLD.details, OLD.basis,
                           OLD.status_reason, OLD.supersession_reason) THEN
        PERFORM public.mneia_disallow('a redacted item''s text is never written back', 'items_redacted_for_good');
      END IF;
    ELSIF NEW.redacted_at IS NOT NULL THEN
      IF public.mneia_held(NEW.workspace_id, NEW.project_id, NEW.id) THEN
        PERFORM public.mneia_disallow('an item under a legal hold is never redacted', 'items_held');
      END IF;
      IF NEW.statement <> '' OR NEW.details IS NOT NULL OR NEW.basis IS NOT NULL
         OR NEW.status_reason IS NOT NULL OR coalesce(NEW.supersession_reason, '') <> '' THEN
        PERFORM public.mneia_disallow('a redaction blanks all of an item''s text', 'items_redaction_blanks');
      END IF;
    END IF;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER items_redacted BEFORE UPDATE ON items
  FOR EACH ROW EXECUTE FUNCTION public.mneia_items_redacted();

-- Blank the text of the visible workspace's items among ``ids`` that are not held nor redacted, and
-- every copy of it: their past states' and events' reasons, the proposals that carry it (a pending
-- replacement of it, or the replacement it was), the reason of the disputes it raised. The search
-- vector follows the statement (a generated column). Answers the items redacted.
CREATE FUNCTION public.mneia_redact(ids uuid[], why text) RETURNS SETOF uuid
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    ws uuid := public.mneia_workspace();
    held uuid[];
    done uuid[];
  BEGIN
    IF ws IS NULL OR why NOT IN ('retention', 'erasure') THEN
      PERFORM public.mneia_refuse('a redaction names its workspace and its reason');
    END IF;
    -- The held among them first, in a statement of its own: mneia_held's rule written out, since
    -- on Citus a function that reads a table, called from a statement that runs on a shard, is
    -- refused, and so is a sub-select in a statement that locks its rows (FOR UPDATE). The
    -- trigger items_redacted refuses a held item's redaction all the same.
    SELECT coalesce(array_agg(i.id), '{}') INTO held FROM public.items i
      WHERE i.workspace_id = ws AND i.id = ANY (ids)
        AND EXISTS (SELECT 1 FROM public.legal_holds h
                    WHERE h.workspace_id = ws AND h.project_id = i.project_id AND h.released_at IS NULL
                      AND (h.item_id IS NULL OR h.item_id = i.id));
    WITH due AS (
      SELECT i.id FROM public.items i
      WHERE i.workspace_id = ws AND i.id = ANY (ids) AND i.redacted_at IS NULL AND i.id <> ALL (held)
      ORDER BY i.id FOR UPDATE
    ), blanked AS (
      UPDATE public.items i
        SET statement = '', details = NULL, basis = NULL, status_reason = NULL,
            supersession_reason = CASE WHEN i.supersedes_id IS NULL THEN NULL ELSE '' END,
            redacted_at = now(), redaction_reason = why
        FROM due WHERE i.workspace_id = ws AND i.id = due.id
        RETURNING i.id
    )
    SELECT coalesce(array_agg(blanked.id), '{}') INTO done FROM blanked;
    IF cardinality(done) = 0 THEN
      RETURN;
    END IF;
    UPDATE public.item_states s SET status_reason = NULL
      WHERE s.workspace_id = ws AND s.item_id = ANY (done) AND s.status_reason IS NOT NULL;
    UPDATE public.item_events e SET reason = NULL
      WHERE e.workspace_id = ws AND e.item_id = ANY (done) AND e.event <> 'REDACTED' AND e.reason IS NOT NULL;
    UPDATE public.proposals p
      SET reason = NULL,
          replacement = CASE WHEN p.replacement IS NULL THEN NULL
                             ELSE jsonb_set(jsonb_set(jsonb_set(p.replacement, '{item,statement}', '""'),
                                                      '{item,details}', 'null'), '{item,basis}', 'null') END
      WHERE p.workspace_id = ws AND (p.target_id = ANY (done) OR p.result_id = ANY (done));
    UPDATE public.disputes d SET reason = NULL
      WHERE d.workspace_id = ws AND d.item_id = ANY (done) AND d.reason IS NOT NULL;
    RETURN QUERY SELECT unnest(done);
  END
  $$;

-- R18: a human erases an actor of the workspace: every token revoked, its name a pseudonym, its
-- PRIVATE items redacted (not those under a hold), its sessions' free text blanked; its other
-- assertions stay, the project's memory, under the pseudonym. Answers the items redacted.
CREATE FUNCTION public.mneia_erase_actor(target uuid) RETURNS SETOF uuid
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    ws uuid := public.mneia_workspace();
    me uuid := public.mneia_actor();
    private uuid[];
    linked uuid;
  BEGIN
    IF NOT public.mneia_actor_is_human() THEN
      PERFORM public.mneia_require_human(me, 'erasing an actor');
    END IF;
    IF NOT EXISTS (SELECT 1 FROM public.actors a WHERE a.workspace_id = ws AND a.id = target) THEN
      PERFORM public.mneia_refuse('an actor of the workspace is erased');
    END IF;
    UPDATE public.api_tokens t SET revoked_at = now(), revoked_by = me
      WHERE t.workspace_id = ws AND t.actor_id = target AND t.revoked_at IS NULL;
    SELECT a.identity_id INTO linked FROM public.actors a WHERE a.workspace_id = ws AND a.id = target;
    IF linked IS NOT NULL THEN  -- R19: the person's link to the workspace goes with it
      PERFORM public.mneia_name_person(NULL, NULL, NULL, linked);
      DELETE FROM public.identity_links l WHERE l.identity_id = linked AND l.workspace_id = ws;
      PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
    END IF;
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
  $$;

-- R18: an erased actor never authenticates again: no token is ever written for it.
CREATE FUNCTION public.mneia_token_of_erased() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    IF EXISTS (SELECT 1 FROM public.actors a WHERE a.workspace_id = NEW.workspace_id AND a.id = NEW.actor_id
                 AND a.erased_at IS NOT NULL) THEN
      PERFORM public.mneia_disallow('an erased actor has no token', 'api_tokens_not_erased');
    END IF;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER api_tokens_not_erased BEFORE INSERT OR UPDATE ON api_tokens
  FOR EACH ROW EXECUTE FUNCTION public.mneia_token_of_erased();

-- R17: an item's hold and its release are events of the item.
CREATE FUNCTION public.mneia_holds_log() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    held public.items;
  BEGIN
    IF NEW.item_id IS NULL OR (TG_OP = 'UPDATE' AND NEW.released_at IS NOT DISTINCT FROM OLD.released_at) THEN
      RETURN NEW;
    END IF;
    SELECT i.* INTO held FROM public.items i WHERE i.workspace_id = NEW.workspace_id AND i.id = NEW.item_id;
    PERFORM public.mneia_item_history(held);
    PERFORM public.mneia_item_event(held, coalesce(NEW.released_by, NEW.placed_by), now(),
      CASE WHEN TG_OP = 'INSERT' THEN 'HELD' ELSE 'RELEASED' END, held.status, held.load_bearing,
      held.confirmed_by IS NOT NULL, NEW.reason, jsonb_build_object('hold', NEW.id));
    RETURN NEW;
  END
  $$;

CREATE TRIGGER legal_holds_log AFTER INSERT OR UPDATE ON legal_holds
  FOR EACH ROW EXECUTE FUNCTION public.mneia_holds_log();
