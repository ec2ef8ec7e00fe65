-- 0037 downgrade: the links dropped, memberships read from every workspace's actors again.
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
DROP FUNCTION mneia_linked_actors(person uuid);
DROP POLICY identity_link_person ON identity_links;
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
CREATE OR REPLACE FUNCTION public.mneia_memberships_of(person uuid)
 RETURNS TABLE(workspace_id uuid, workspace_name text, actor_id uuid, actor_name text)
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
  DECLARE
    actor_ids uuid[];
    actor_places uuid[];
    actor_names text[];
    places uuid[];
    place_names text[];
  BEGIN
    PERFORM public.mneia_name_person(NULL, NULL, NULL, person);
    -- The actors first, then their workspaces by id, each table read alone into arrays of
    -- plain values: on Citus each read reaches every node, and neither a join of the two over
    -- several workspaces nor an array of a Citus table's rows plans there.
    SELECT coalesce(array_agg(a.id), '{}'), coalesce(array_agg(a.workspace_id), '{}'),
           coalesce(array_agg(a.name), '{}')
      INTO actor_ids, actor_places, actor_names
      FROM public.actors a
      WHERE a.identity_id = person AND a.kind = 'HUMAN' AND a.erased_at IS NULL;
    PERFORM public.mneia_name_ids('workspaces', actor_places);
    SELECT coalesce(array_agg(w.id), '{}'), coalesce(array_agg(w.name), '{}') INTO places, place_names
      FROM public.workspaces w WHERE w.id = ANY (actor_places);
    RETURN QUERY SELECT h.workspace_id, w.name, h.id, h.name
      FROM unnest(actor_ids, actor_places, actor_names) AS h (id, workspace_id, name)
      JOIN unnest(places, place_names) AS w (id, name) ON w.id = h.workspace_id
      ORDER BY w.name, h.workspace_id;
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
      SELECT coalesce(array_agg(a.workspace_id), '{}') INTO member_of FROM public.actors a
        WHERE a.identity_id = person;
    END IF;
    RETURN QUERY SELECT DISTINCT ON (v.workspace_id) v.workspace_id, v.id
      FROM public.invitations v
      WHERE v.email = wanted AND v.accepted_at IS NULL AND v.expires_at > now()
        AND v.workspace_id <> ALL (member_of)
      ORDER BY v.workspace_id, v.created_at DESC, v.id DESC;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
  END
  $function$;
DROP TABLE identity_links;
RESET ROLE;
