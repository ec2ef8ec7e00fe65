-- Authority (R3, R5, R6, R7, R8): what may change, and who may change it,
-- refused by the database itself whatever the statement.
--
-- The resolvers check the same rules first, so that a client gets a clear
-- error; these triggers are what an application bug, or a session of
-- mneia_app writing SQL by hand, meets. In short:
-- - an item is asserted by the actor making the request, at the server's
--   time; the one exception is a human accepting an agent's proposal, which
--   writes exactly what the agent proposed, when it proposed it;
-- - an item a human confirmed or made load-bearing changes status only by a
--   human's hand, and only a human replaces it;
-- - DISPUTED becomes ACTIVE only when a human resolves the item's disputes;
-- - SUPERSEDED and RETIRED are final; SUPERSEDED needs the replacement;
-- - confirmations, load-bearing settings, decisions and resolutions are by
--   the human making the request (R3);
-- - every time the server records is now(), never a client's value.
--
-- Refusals are insufficient_privilege (42501), with HUMAN_REQUIRED in the
-- message when only a human could have done it; a transition the data does
-- not allow is check_violation (23514) naming the rule as its constraint.
--
-- A session that can act as mneia_owner (migrations, `mneia admin`, a
-- superuser loading data) is trusted: it could drop these triggers anyway.

CREATE FUNCTION public.mneia_trusted_session() RETURNS boolean
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$ BEGIN RETURN pg_has_role(session_user, 'mneia_owner', 'MEMBER'); END $$;

CREATE FUNCTION public.mneia_refuse(what text) RETURNS void
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    RAISE EXCEPTION 'REFUSED: %', what USING ERRCODE = 'insufficient_privilege';
  END
  $$;

CREATE FUNCTION public.mneia_disallow(what text, rule text) RETURNS void
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    RAISE EXCEPTION 'DISALLOWED: %', what USING ERRCODE = 'check_violation', CONSTRAINT = rule;
  END
  $$;

CREATE FUNCTION public.mneia_require_human(who uuid, what text) RETURNS void
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    IF who IS NULL OR who IS DISTINCT FROM public.mneia_actor() OR NOT public.mneia_actor_is_human() THEN
      RAISE EXCEPTION 'HUMAN_REQUIRED: % must be by the human making the request', what
        USING ERRCODE = 'insufficient_privilege';
    END IF;
  END
  $$;

CREATE FUNCTION public.mneia_require_now(value timestamptz, what text) RETURNS void
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    IF value IS DISTINCT FROM now() THEN
      PERFORM public.mneia_refuse(what || ' is the server''s time of the write, not a given value');
    END IF;
  END
  $$;

-- Whether an item has been replaced (by any item of the workspace, seen or not).
CREATE FUNCTION public.mneia_has_successor(workspace uuid, item uuid) RETURNS boolean
  LANGUAGE plpgsql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    RETURN EXISTS (SELECT 1 FROM public.items i WHERE i.workspace_id = workspace AND i.supersedes_id = item);
  END
  $$;

-- Whether an item still contradicts something: an open dispute it raised,
-- whether or not the caller can see the other side. R8.
CREATE FUNCTION public.mneia_open_disputes(workspace uuid, item uuid) RETURNS boolean
  LANGUAGE plpgsql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    RETURN EXISTS (SELECT 1 FROM public.disputes d
                   WHERE d.workspace_id = workspace AND d.item_id = item AND d.status = 'OPEN');
  END
  $$;

-- Whether the requesting human has just kept the item by resolving a dispute,
-- and nothing it contradicts is still open.
CREATE FUNCTION public.mneia_kept_by_resolution(workspace uuid, item uuid) RETURNS boolean
  LANGUAGE plpgsql STABLE SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    RETURN EXISTS (SELECT 1 FROM public.disputes d
                   WHERE d.workspace_id = workspace AND d.kept_item_id = item AND d.status = 'RESOLVED'
                     AND d.resolved_by = public.mneia_actor() AND d.resolved_at = now())
       AND NOT public.mneia_open_disputes(workspace, item);
  END
  $$;

-- Whether an item is exactly the replacement a SUPERSESSION proposal carries
-- (codec version 1: {"v": 1, "item": {column: value}}, see storage/proposal.py).
CREATE FUNCTION public.mneia_replacement_matches(proposal public.proposals, candidate public.items)
  RETURNS boolean
  LANGUAGE plpgsql STABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    RETURN (SELECT coalesce(proposal.replacement ->> 'v' = '1', false)
       AND candidate.project_id = proposal.project_id
       AND candidate.supersedes_id = proposal.target_id
       AND candidate.supersession_reason IS NOT DISTINCT FROM proposal.reason
       AND (r.kind, r.statement, r.details, r.basis, r.confidence, r.scope, r.grant_actor_ids,
            r.session_id, r.valid_from, r.valid_to, r.decay_after)
           IS NOT DISTINCT FROM
           (candidate.kind, candidate.statement, candidate.details, candidate.basis,
            candidate.confidence, candidate.scope, candidate.grant_actor_ids, candidate.session_id,
            candidate.valid_from, candidate.valid_to, candidate.decay_after)
    FROM jsonb_populate_record(NULL::public.items, proposal.replacement -> 'item') r);
  END
  $$;

-- Whether everyone who sees ``replaced`` sees ``replacement`` too (scopes nest
-- PROJECT < TEAM < WORKSPACE; a PRIVATE item is seen by its asserter only;
-- GRANTS by the asserter and the listed actors). mneia/authority.py asks
-- the same before a proposal is stored.
CREATE FUNCTION public.mneia_keeps_audience(replaced public.items, replacement public.items)
  RETURNS boolean
  LANGUAGE plpgsql IMMUTABLE
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    RETURN coalesce(CASE
      WHEN replaced.scope = 'PRIVATE' THEN true
      WHEN replaced.scope = 'GRANTS' THEN
        replacement.scope = 'WORKSPACE'
        OR (replacement.scope = 'GRANTS'
            AND (replaced.grant_actor_ids || replaced.asserted_by)
                <@ (replacement.grant_actor_ids || replacement.asserted_by))
      ELSE array_position(ARRAY['PROJECT', 'TEAM', 'WORKSPACE'], replacement.scope)
           >= array_position(ARRAY['PROJECT', 'TEAM', 'WORKSPACE'], replaced.scope)
    END, false);
  END
  $$;

CREATE FUNCTION public.mneia_items_guard() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    me uuid;
    accepted public.proposals;
    replaced public.items;
    session public.sessions;
    -- NEW as an item, for the functions that take one: on Citus a trigger's row is of its
    -- shard's type (items_102008), which no function of public.items accepts.
    written public.items;
    matched boolean;
  BEGIN
    IF public.mneia_trusted_session() THEN
      RETURN NEW;
    END IF;
    -- Read after the trust test: a trusted bulk load does not open the sealed context per row.
    me := public.mneia_actor();

    IF TG_OP = 'INSERT' THEN
      IF NEW.status NOT IN ('ACTIVE', 'DISPUTED') THEN
        PERFORM public.mneia_disallow('an item is asserted ACTIVE or DISPUTED', 'items_asserted_active');
      END IF;
      IF NEW.asserted_by IS DISTINCT FROM me THEN
        -- The one exception: a human accepting an agent's proposal writes the
        -- agent's replacement, as proposed and when proposed. The agent may have
        -- proposed several replacements of one item: the row must be one of them.
        -- Each candidate is judged once read into a variable: on Citus a query's rows are of
        -- its shards' types, which mneia_replacement_matches does not accept.
        written := NEW;
        matched := false;
        FOR accepted IN SELECT p.* FROM public.proposals p
            WHERE p.workspace_id = NEW.workspace_id AND p.kind = 'SUPERSESSION' AND p.status = 'PENDING'
              AND p.target_id = NEW.supersedes_id AND p.proposed_by = NEW.asserted_by
              AND p.proposed_at = NEW.asserted_at
        LOOP
          matched := public.mneia_replacement_matches(accepted, written);
          EXIT WHEN matched;
        END LOOP;
        IF NOT matched OR NOT public.mneia_actor_is_human() OR NEW.confirmed_by IS DISTINCT FROM me THEN
          PERFORM public.mneia_refuse('an item is asserted by the actor making the request, unless '
                                      'a human accepts exactly what another actor proposed');
        END IF;
      ELSE
        PERFORM public.mneia_require_now(NEW.asserted_at, 'asserted_at');
        IF NEW.session_id IS NOT NULL THEN
          SELECT s.* INTO session FROM public.sessions s
            WHERE s.workspace_id = NEW.workspace_id AND s.id = NEW.session_id;
          IF session.actor_id IS DISTINCT FROM me OR session.project_id IS DISTINCT FROM NEW.project_id
             OR session.ended_at IS NOT NULL THEN
            PERFORM public.mneia_refuse('an item names an open session of its asserter in its project');
          END IF;
        END IF;
      END IF;
      IF NEW.confirmed_by IS NOT NULL OR NEW.confirmed_at IS NOT NULL THEN
        PERFORM public.mneia_require_human(NEW.confirmed_by, 'a confirmation');
        PERFORM public.mneia_require_now(NEW.confirmed_at, 'confirmed_at');
      END IF;
      IF NEW.load_bearing OR NEW.load_bearing_set_by IS NOT NULL OR NEW.load_bearing_set_at IS NOT NULL THEN
        PERFORM public.mneia_require_human(NEW.load_bearing_set_by, 'a load-bearing setting');
        PERFORM public.mneia_require_now(NEW.load_bearing_set_at, 'load_bearing_set_at');
      END IF;
      IF NEW.last_verified_at IS NOT NULL THEN
        PERFORM public.mneia_require_now(NEW.last_verified_at, 'last_verified_at');
      END IF;
      IF NEW.supersedes_id IS NOT NULL THEN
        -- Read as the caller: nobody replaces what they cannot see.
        SELECT i.* INTO replaced FROM public.items i
          WHERE i.workspace_id = NEW.workspace_id AND i.id = NEW.supersedes_id;
        IF NOT FOUND THEN
          PERFORM public.mneia_refuse('a replacement replaces an item its writer can see');
        END IF;
        IF replaced.status <> 'ACTIVE' THEN
          PERFORM public.mneia_disallow('only an ACTIVE item is replaced', 'items_replaces_active');
        END IF;
        written := NEW;
        IF replaced.project_id <> NEW.project_id OR NOT public.mneia_keeps_audience(replaced, written) THEN
          PERFORM public.mneia_disallow('a replacement stays in its project, visible to everyone who saw '
                                        'what it replaces', 'items_replacement_keeps_audience');
        END IF;
        IF replaced.confirmed_by IS NOT NULL OR replaced.load_bearing THEN
          PERFORM public.mneia_require_human(me, 'replacing an item a human confirmed or made load-bearing');
        END IF;
      END IF;
      RETURN NEW;
    END IF;

    IF NEW.status IS DISTINCT FROM OLD.status THEN
      IF OLD.status IN ('SUPERSEDED', 'RETIRED') THEN
        PERFORM public.mneia_disallow('a SUPERSEDED or RETIRED item keeps its status', 'items_final_status');
      END IF;
      IF OLD.confirmed_by IS NOT NULL OR OLD.load_bearing THEN
        PERFORM public.mneia_require_human(me, 'a status change of an item a human confirmed or made load-bearing');
      END IF;
      IF NEW.status = 'SUPERSEDED' AND NOT public.mneia_has_successor(NEW.workspace_id, NEW.id) THEN
        PERFORM public.mneia_disallow('an item is SUPERSEDED by its replacement', 'items_superseded_by_replacement');
      END IF;
      IF OLD.status = 'DISPUTED' AND NEW.status = 'ACTIVE' THEN
        PERFORM public.mneia_require_human(me, 'settling a dispute');
        IF NOT public.mneia_kept_by_resolution(NEW.workspace_id, NEW.id) THEN
          PERFORM public.mneia_refuse('a DISPUTED item becomes ACTIVE only when a human resolves its disputes');
        END IF;
      END IF;
      IF NEW.status = 'DISPUTED' AND OLD.status <> 'ACTIVE' THEN
        PERFORM public.mneia_disallow('only an ACTIVE item becomes DISPUTED', 'items_disputed_from_active');
      END IF;
    ELSIF NEW.status_reason IS DISTINCT FROM OLD.status_reason THEN
      PERFORM public.mneia_require_human(me, 'a note on an item');
    END IF;

    IF NEW.confirmed_by IS DISTINCT FROM OLD.confirmed_by OR NEW.confirmed_at IS DISTINCT FROM OLD.confirmed_at THEN
      PERFORM public.mneia_require_human(NEW.confirmed_by, 'a confirmation');
      PERFORM public.mneia_require_now(NEW.confirmed_at, 'confirmed_at');
      IF NEW.status <> 'ACTIVE' THEN
        PERFORM public.mneia_disallow('only an ACTIVE item is confirmed', 'items_confirmed_active');
      END IF;
    END IF;
    IF NEW.load_bearing IS DISTINCT FROM OLD.load_bearing
       OR NEW.load_bearing_set_by IS DISTINCT FROM OLD.load_bearing_set_by
       OR NEW.load_bearing_set_at IS DISTINCT FROM OLD.load_bearing_set_at THEN
      PERFORM public.mneia_require_human(NEW.load_bearing_set_by, 'a load-bearing setting');
      PERFORM public.mneia_require_now(NEW.load_bearing_set_at, 'load_bearing_set_at');
    END IF;
    IF NEW.load_bearing_suggested IS DISTINCT FROM OLD.load_bearing_suggested THEN
      IF NOT NEW.load_bearing_suggested THEN
        PERFORM public.mneia_require_human(me, 'settling a load-bearing suggestion');
      ELSIF NEW.load_bearing THEN
        PERFORM public.mneia_disallow('a load-bearing item needs no suggestion', 'items_suggested_not_load_bearing');
      END IF;
    END IF;
    IF NEW.last_verified_at IS DISTINCT FROM OLD.last_verified_at THEN
      PERFORM public.mneia_require_now(NEW.last_verified_at, 'last_verified_at');
    END IF;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER items_guard BEFORE INSERT OR UPDATE ON items
  FOR EACH ROW EXECUTE FUNCTION public.mneia_items_guard();

-- No half-written structure survives a transaction (issue 21): checked at commit,
-- on the rows as they stand then. A successor's item is SUPERSEDED by the end of
-- the transaction that writes the successor (else every reader of the chain meets
-- a replacement of an item still ACTIVE); a DISPUTED item has an open dispute
-- naming it, whoever can see it (else nobody can confirm or resolve it). The
-- administrator's bulk tools are trusted, as by every guard.
CREATE FUNCTION public.mneia_items_whole() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    now_item public.items;
  BEGIN
    IF public.mneia_trusted_session() THEN
      RETURN NULL;
    END IF;
    SELECT i.* INTO now_item FROM public.items i WHERE i.workspace_id = NEW.workspace_id AND i.id = NEW.id;
    IF NOT FOUND THEN
      RETURN NULL;
    END IF;
    IF now_item.supersedes_id IS NOT NULL AND NOT EXISTS (
         SELECT 1 FROM public.items t
         WHERE t.workspace_id = now_item.workspace_id AND t.id = now_item.supersedes_id
           AND t.status = 'SUPERSEDED') THEN
      PERFORM public.mneia_disallow('the item a successor replaces is SUPERSEDED in the same transaction',
                                    'items_successor_supersedes');
    END IF;
    IF now_item.status = 'DISPUTED'
       AND NOT public.mneia_open_disputes(now_item.workspace_id, now_item.id) THEN
      PERFORM public.mneia_disallow('a DISPUTED item has an open dispute naming it', 'items_disputed_by_dispute');
    END IF;
    RETURN NULL;
  END
  $$;

-- Only rows that could break either rule are queued (a batch of plain assertions
-- queues none): a row's replacement link never changes after its INSERT, and a row
-- DISPUTED at commit was DISPUTED after its INSERT or its last change of status.
CREATE CONSTRAINT TRIGGER items_whole AFTER INSERT OR UPDATE OF status ON items
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (NEW.supersedes_id IS NOT NULL OR NEW.status = 'DISPUTED')
  EXECUTE FUNCTION public.mneia_items_whole();

-- The same, from the dispute's side: a dispute resolved leaves its item DISPUTED only
-- while another open dispute names it.
CREATE FUNCTION public.mneia_disputes_whole() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    IF public.mneia_trusted_session() THEN
      RETURN NULL;
    END IF;
    IF EXISTS (SELECT 1 FROM public.items i
               WHERE i.workspace_id = NEW.workspace_id AND i.id = NEW.item_id AND i.status = 'DISPUTED')
       AND NOT public.mneia_open_disputes(NEW.workspace_id, NEW.item_id) THEN
      PERFORM public.mneia_disallow('a DISPUTED item has an open dispute naming it', 'items_disputed_by_dispute');
    END IF;
    RETURN NULL;
  END
  $$;

CREATE CONSTRAINT TRIGGER disputes_whole AFTER UPDATE OF status ON disputes
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION public.mneia_disputes_whole();

CREATE FUNCTION public.mneia_proposals_guard() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    target public.items;
  BEGIN
    IF public.mneia_trusted_session() THEN
      RETURN NEW;
    END IF;

    IF TG_OP = 'INSERT' THEN
      PERFORM public.mneia_require_now(NEW.proposed_at, 'proposed_at');
      IF NEW.status <> 'PENDING' OR NEW.result_id IS NOT NULL THEN
        PERFORM public.mneia_disallow('a proposal is raised PENDING', 'proposals_raised_pending');
      END IF;
      SELECT i.* INTO target FROM public.items i WHERE i.workspace_id = NEW.workspace_id AND i.id = NEW.target_id;
      IF NOT FOUND OR target.project_id IS DISTINCT FROM NEW.project_id THEN
        PERFORM public.mneia_refuse('a proposal is about an item of its project that its author can see');
      END IF;
      IF NEW.kind = 'SUPERSESSION' AND (NEW.replacement ->> 'v') IS DISTINCT FROM '1' THEN
        PERFORM public.mneia_disallow('a replacement is stored by codec version 1', 'proposals_replacement_v1');
      END IF;
      RETURN NEW;
    END IF;

    IF (NEW.status, NEW.decided_by, NEW.decided_at, NEW.result_id, NEW.decision_note)
       IS DISTINCT FROM (OLD.status, OLD.decided_by, OLD.decided_at, OLD.result_id, OLD.decision_note) THEN
      IF OLD.status <> 'PENDING' THEN
        PERFORM public.mneia_disallow('a decided proposal stays decided', 'proposals_decided_once');
      END IF;
      PERFORM public.mneia_require_human(NEW.decided_by, 'a proposal decision');
      PERFORM public.mneia_require_now(NEW.decided_at, 'decided_at');
      IF NEW.status = 'ACCEPTED' AND NOT EXISTS (
           SELECT 1 FROM public.items i
           WHERE i.workspace_id = NEW.workspace_id AND i.id = NEW.result_id
             AND CASE NEW.kind WHEN 'SUPERSESSION' THEN i.supersedes_id = NEW.target_id
                               ELSE i.id = NEW.target_id AND i.load_bearing END) THEN
        PERFORM public.mneia_disallow('an accepted proposal names the item it produced', 'proposals_accepted_result');
      END IF;
      IF NEW.status = 'REJECTED' AND NEW.result_id IS NOT NULL THEN
        PERFORM public.mneia_disallow('a rejected proposal produced nothing', 'proposals_rejected_result');
      END IF;
    END IF;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER proposals_guard BEFORE INSERT OR UPDATE ON proposals
  FOR EACH ROW EXECUTE FUNCTION public.mneia_proposals_guard();

CREATE FUNCTION public.mneia_disputes_guard() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    IF public.mneia_trusted_session() THEN
      RETURN NEW;
    END IF;

    IF TG_OP = 'INSERT' THEN
      PERFORM public.mneia_require_now(NEW.raised_at, 'raised_at');
      IF NEW.status <> 'OPEN' THEN
        PERFORM public.mneia_disallow('a dispute is raised OPEN', 'disputes_raised_open');
      END IF;
      -- Both sides seen by whoever raises it, in its project; the newcomer is DISPUTED.
      IF NOT EXISTS (SELECT 1 FROM public.items i WHERE i.workspace_id = NEW.workspace_id
                       AND i.id = NEW.item_id AND i.project_id = NEW.project_id AND i.status = 'DISPUTED')
         OR NOT EXISTS (SELECT 1 FROM public.items i WHERE i.workspace_id = NEW.workspace_id
                          AND i.id = NEW.contested_id AND i.project_id = NEW.project_id) THEN
        PERFORM public.mneia_refuse('a dispute is between a DISPUTED item and another item of its '
                                    'project, both seen by whoever raises it');
      END IF;
      RETURN NEW;
    END IF;

    IF (NEW.status, NEW.resolved_by, NEW.resolved_at, NEW.kept_item_id, NEW.resolution_note)
       IS DISTINCT FROM (OLD.status, OLD.resolved_by, OLD.resolved_at, OLD.kept_item_id, OLD.resolution_note) THEN
      IF OLD.status <> 'OPEN' THEN
        PERFORM public.mneia_disallow('a resolved dispute stays resolved', 'disputes_resolved_once');
      END IF;
      PERFORM public.mneia_require_human(NEW.resolved_by, 'a dispute resolution');
      PERFORM public.mneia_require_now(NEW.resolved_at, 'resolved_at');
    END IF;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER disputes_guard BEFORE INSERT OR UPDATE ON disputes
  FOR EACH ROW EXECUTE FUNCTION public.mneia_disputes_guard();

-- The times the server records on the other tables (the trigger's arguments
-- name the columns): written as now() or left NULL, and never changed once set.
CREATE FUNCTION public.mneia_recorded_times() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    written jsonb := to_jsonb(NEW);
    previous jsonb := CASE WHEN TG_OP = 'UPDATE' THEN to_jsonb(OLD) ELSE '{}' END;
    recorded text;
  BEGIN
    IF public.mneia_trusted_session() THEN
      RETURN NEW;
    END IF;
    FOREACH recorded IN ARRAY TG_ARGV LOOP
      CONTINUE WHEN written -> recorded IS NOT DISTINCT FROM coalesce(previous -> recorded, 'null');
      IF coalesce(previous -> recorded, 'null') <> 'null' OR written -> recorded = 'null'
         OR (written ->> recorded)::timestamptz <> now() THEN
        PERFORM public.mneia_refuse(format('%s.%s is the server''s time of the write, set once',
                                           TG_TABLE_NAME, recorded));
      END IF;
    END LOOP;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER actors_times BEFORE INSERT OR UPDATE ON actors
  FOR EACH ROW EXECUTE FUNCTION public.mneia_recorded_times('created_at');
CREATE TRIGGER api_tokens_times BEFORE INSERT OR UPDATE ON api_tokens
  FOR EACH ROW EXECUTE FUNCTION public.mneia_recorded_times('created_at', 'revoked_at');
CREATE TRIGGER teams_times BEFORE INSERT OR UPDATE ON teams
  FOR EACH ROW EXECUTE FUNCTION public.mneia_recorded_times('created_at');
CREATE TRIGGER team_members_times BEFORE INSERT OR UPDATE ON team_members
  FOR EACH ROW EXECUTE FUNCTION public.mneia_recorded_times('added_at');
CREATE TRIGGER projects_times BEFORE INSERT OR UPDATE ON projects
  FOR EACH ROW EXECUTE FUNCTION public.mneia_recorded_times('created_at');
CREATE TRIGGER project_members_times BEFORE INSERT OR UPDATE ON project_members
  FOR EACH ROW EXECUTE FUNCTION public.mneia_recorded_times('added_at');
CREATE TRIGGER sessions_times BEFORE INSERT OR UPDATE ON sessions
  FOR EACH ROW EXECUTE FUNCTION public.mneia_recorded_times('started_at', 'ended_at');

-- A revocation (F14) is by the actor making the request, once: revoked_by is
-- that actor (filled in when the statement leaves it out) and never changes
-- afterwards, and revoked_at (api_tokens_times) is now(), set once. Which
-- tokens an actor may revoke is the policy token_revoke (visibility.sql);
-- nothing else of a token is writable by the server's role (grants.sql).
CREATE FUNCTION public.mneia_token_guard() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    IF public.mneia_trusted_session() THEN
      RETURN NEW;
    END IF;
    IF NEW.revoked_at IS NOT NULL AND OLD.revoked_at IS NULL AND NEW.revoked_by IS NULL THEN
      NEW.revoked_by := public.mneia_actor();
    END IF;
    IF NEW.revoked_by IS DISTINCT FROM OLD.revoked_by
       AND (OLD.revoked_by IS NOT NULL OR NEW.revoked_by IS DISTINCT FROM public.mneia_actor()) THEN
      PERFORM public.mneia_refuse('api_tokens.revoked_by is the actor revoking the token, set once');
    END IF;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER api_tokens_guard BEFORE UPDATE ON api_tokens
  FOR EACH ROW EXECUTE FUNCTION public.mneia_token_guard();

-- A token mints nothing that outlives it (issue 21): the expiry of the token the
-- transaction was authenticated with (sealed in its context) bounds every token
-- written in it, and so every actor created with one.
CREATE FUNCTION public.mneia_token_minted() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  DECLARE
    bound timestamptz;
  BEGIN
    IF public.mneia_trusted_session() THEN
      RETURN NEW;
    END IF;
    bound := public.mneia_token_expires();
    IF bound IS NOT NULL AND (NEW.expires_at IS NULL OR NEW.expires_at > bound) THEN
      PERFORM public.mneia_refuse('a token expires no later than the token that mints it');
    END IF;
    RETURN NEW;
  END
  $$;

CREATE TRIGGER api_tokens_minted BEFORE INSERT ON api_tokens
  FOR EACH ROW EXECUTE FUNCTION public.mneia_token_minted();

-- A workspace's region is fixed when it is created (docs/scale-out.md, Regions):
-- its rows live in that region's database, and its tokens name it. Moving a
-- workspace is a copy into another region's database, never an UPDATE, so this
-- refuses everyone, the owner's sessions too.
CREATE FUNCTION public.mneia_region_fixed() RETURNS trigger
  LANGUAGE plpgsql
  SET search_path = pg_catalog, public, pg_temp
  AS $$
  BEGIN
    RAISE EXCEPTION 'REFUSED: a workspace''s region is fixed when it is created (% stays in %)',
      OLD.id, OLD.region USING ERRCODE = 'insufficient_privilege';
  END
  $$;

CREATE TRIGGER workspaces_region_fixed BEFORE UPDATE OF region ON workspaces
  FOR EACH ROW WHEN (NEW.region IS DISTINCT FROM OLD.region)
  EXECUTE FUNCTION public.mneia_region_fixed();
