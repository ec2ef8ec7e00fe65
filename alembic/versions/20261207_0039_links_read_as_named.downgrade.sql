-- 0039 downgrade: mneia_linked_actors names the person itself again, its callers after it.
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
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
    RETURN QUERY SELECT DISTINCT ON (e.workspace_id) e.workspace_id, e.invitation_id
      FROM public.invitation_emails e
      WHERE e.email = wanted AND e.expires_at > now() AND e.workspace_id <> ALL (member_of)
      ORDER BY e.workspace_id, e.created_at DESC, e.invitation_id DESC;
    PERFORM public.mneia_name_person(NULL, NULL, NULL, NULL);
  END
  $function$;
RESET ROLE;
