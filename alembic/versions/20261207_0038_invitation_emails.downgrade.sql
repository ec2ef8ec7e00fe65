-- 0038 downgrade: invitations written by mneia_app again, a sign-in reading them in every workspace.
SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
DROP POLICY invitation_email_person ON invitation_emails;
DROP FUNCTION mneia_invite(invited_email text, lifetime interval);
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
DROP TABLE invitation_emails;
GRANT INSERT ON invitations TO mneia_app;
RESET ROLE;
