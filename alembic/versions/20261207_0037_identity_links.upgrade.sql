-- 0037 upgrade: each person's links to their actors, so that their memberships are read
-- without reading every workspace's actors (see the .py beside). The result equals storage/sql
-- (tests/test_declared.py).
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
CREATE TABLE identity_links (
  identity_id uuid NOT NULL REFERENCES identities (id),
  workspace_id uuid NOT NULL,
  actor_id uuid NOT NULL,
  PRIMARY KEY (identity_id, workspace_id)
);
-- Every person linked to an actor now, as the functions will keep them: read past the actors'
-- policies by their owner (FORCE lifted for this statement, in this transaction alone), before
-- the links' own are on.
ALTER TABLE actors NO FORCE ROW LEVEL SECURITY;
INSERT INTO identity_links (identity_id, workspace_id, actor_id)
  SELECT a.identity_id, a.workspace_id, a.id FROM actors a
  WHERE a.identity_id IS NOT NULL AND a.kind = 'HUMAN' AND a.erased_at IS NULL;
ALTER TABLE actors FORCE ROW LEVEL SECURITY;
ALTER TABLE identity_links ENABLE ROW LEVEL SECURITY;
ALTER TABLE identity_links FORCE ROW LEVEL SECURITY;
CREATE OR REPLACE FUNCTION public.mneia_bootstrap(new_workspace uuid, workspace_name text, human_name text, token_digest text, workspace_region text)
 RETURNS TABLE(workspace_id uuid, actor_id uuid, identity_id uuid)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    new_actor uuid := public.mneia_uuid7();
    new_identity uuid := public.mneia_uuid7();
  BEGIN
    PERFORM public.mneia_bind(new_workspace, new_actor);
    INSERT INTO public.workspaces (id, name, region) VALUES (new_workspace, workspace_name, workspace_region);
    INSERT INTO public.identities (id, display_name) VALUES (new_identity, human_name);
    INSERT INTO public.actors (workspace_id, id, kind, name, identity_id)
      VALUES (new_workspace, new_actor, 'HUMAN', human_name, new_identity);
    PERFORM public.mneia_name_person(NULL, NULL, NULL, new_identity);
    INSERT INTO public.identity_links (identity_id, workspace_id, actor_id)
      VALUES (new_identity, new_workspace, new_actor);
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
    INSERT INTO public.api_tokens (workspace_id, id, actor_id, token_hash)
      VALUES (new_workspace, public.mneia_uuid7(), new_actor, token_digest);
    PERFORM public.mneia_unbind();
    RETURN QUERY SELECT new_workspace, new_actor, new_identity;
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
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_linked_actors(person uuid)
 RETURNS TABLE(workspace_id uuid, actor_id uuid, actor_name text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    linked record;
    held text;
  BEGIN
    PERFORM public.mneia_name_person(NULL, NULL, NULL, person);
    FOR linked IN SELECT l.workspace_id, l.actor_id FROM public.identity_links l WHERE l.identity_id = person
    LOOP
      SELECT a.name INTO held FROM public.actors a
        WHERE a.workspace_id = linked.workspace_id AND a.id = linked.actor_id
          AND a.identity_id = person AND a.kind = 'HUMAN' AND a.erased_at IS NULL;
      IF FOUND THEN
        workspace_id := linked.workspace_id;
        actor_id := linked.actor_id;
        actor_name := held;
        RETURN NEXT;
      END IF;
    END LOOP;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_memberships_of(person uuid)
 RETURNS TABLE(workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    held record;
    place text;
    places uuid[] := '{}';
    place_names text[] := '{}';
    actor_ids uuid[] := '{}';
    actor_names text[] := '{}';
  BEGIN
    -- The person's actors, then each workspace by its id, into arrays of plain values.
    FOR held IN SELECT h.workspace_id, h.actor_id, h.actor_name FROM public.mneia_linked_actors(person) h
    LOOP
      places := places || held.workspace_id;
      actor_ids := actor_ids || held.actor_id;
      actor_names := actor_names || held.actor_name;
    END LOOP;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, person);
    PERFORM public.mneia_name_ids('workspaces', places);
    FOR i IN 1 .. coalesce(array_length(places, 1), 0) LOOP
      SELECT w.name INTO place FROM public.workspaces w WHERE w.id = places[i];
      place_names := place_names || place;
    END LOOP;
    RETURN QUERY SELECT h.place, h.place_name, h.held, h.held_name
      FROM unnest(places, place_names, actor_ids, actor_names) AS h (place, place_name, held, held_name)
      WHERE h.place_name IS NOT NULL
      ORDER BY h.place_name, h.place;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_sign_in_accept(signing_issuer text, signing_subject text, verified_email text, given_name text, workspace uuid, invitation uuid)
 RETURNS uuid
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    wanted text := lower(btrim(verified_email));
    person uuid;
    invited record;
    joined uuid := public.mneia_uuid7();
  BEGIN
    person := public.mneia_signing_person(signing_issuer, signing_subject, wanted);
    SELECT v.invited_by INTO invited FROM public.invitations v
      WHERE v.workspace_id = workspace AND v.id = invitation AND v.email = wanted
        AND v.accepted_at IS NULL AND v.expires_at > now();
    IF NOT FOUND OR (person IS NOT NULL AND EXISTS (
         SELECT 1 FROM public.actors a WHERE a.workspace_id = workspace AND a.identity_id = person)) THEN
      PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
      RETURN NULL;
    END IF;
    IF person IS NULL THEN
      person := public.mneia_uuid7();
      INSERT INTO public.identities (id, display_name, issuer, subject)
        VALUES (person, given_name, signing_issuer, signing_subject);
      PERFORM public.mneia_name_person(signing_issuer, signing_subject, wanted, person);
    END IF;
    PERFORM public.mneia_bind(workspace, joined);
    INSERT INTO public.actors (workspace_id, id, kind, name, identity_id, created_by)
      VALUES (workspace, joined, 'HUMAN', given_name, person, invited.invited_by);
    -- A link left behind (by hand: erasure removes its own) gives way to the new actor's.
    INSERT INTO public.identity_links (identity_id, workspace_id, actor_id) VALUES (person, workspace, joined)
      ON CONFLICT (identity_id, workspace_id) DO UPDATE SET actor_id = excluded.actor_id;
    UPDATE public.invitations v SET accepted_at = now(), accepted_actor_id = joined
      WHERE v.workspace_id = workspace AND v.id = invitation AND v.accepted_at IS NULL;
    PERFORM public.mneia_unbind();
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
    RETURN joined;
  END
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_sign_in_invitations(signing_issuer text, signing_subject text, verified_email text)
 RETURNS TABLE(workspace_id uuid, invitation_id uuid)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    wanted text := lower(btrim(verified_email));
    person uuid;
    member_of uuid[] := '{}';
  BEGIN
    person := public.mneia_signing_person(signing_issuer, signing_subject, wanted);
    IF person IS NOT NULL THEN
      SELECT coalesce(array_agg(h.workspace_id), '{}') INTO member_of FROM public.mneia_linked_actors(person) h;
      PERFORM public.mneia_name_person(signing_issuer, signing_subject, wanted, person);
    END IF;
    RETURN QUERY SELECT DISTINCT ON (v.workspace_id) v.workspace_id, v.id
      FROM public.invitations v
      WHERE v.email = wanted AND v.accepted_at IS NULL AND v.expires_at > now()
        AND v.workspace_id <> ALL (member_of)
      ORDER BY v.workspace_id, v.created_at DESC, v.id DESC;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
  END
  $function$;
CREATE POLICY identity_link_person ON identity_links AS PERMISSIVE FOR ALL TO mneia_owner USING ((identity_id = (( SELECT mneia_person('identity'::text) AS mneia_person))::uuid)) WITH CHECK ((identity_id = (( SELECT mneia_person('identity'::text) AS mneia_person))::uuid));
REVOKE ALL ON FUNCTION mneia_linked_actors(person uuid) FROM PUBLIC;
RESET ROLE;
