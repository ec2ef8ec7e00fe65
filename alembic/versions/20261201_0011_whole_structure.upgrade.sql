SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
CREATE OR REPLACE FUNCTION public.mneia_disputes_whole()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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
  $function$;
CREATE OR REPLACE FUNCTION public.mneia_items_whole()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
AS $function$
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
  $function$;
CREATE CONSTRAINT TRIGGER disputes_whole AFTER UPDATE OF status ON public.disputes DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION mneia_disputes_whole();
CREATE CONSTRAINT TRIGGER items_whole AFTER INSERT OR UPDATE OF status ON public.items DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION mneia_items_whole();
REVOKE ALL ON FUNCTION mneia_disputes_whole() FROM PUBLIC;
REVOKE ALL ON FUNCTION mneia_items_whole() FROM PUBLIC;

RESET ROLE;
