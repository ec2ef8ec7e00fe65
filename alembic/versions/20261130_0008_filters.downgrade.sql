SET LOCAL check_function_bodies = off;
DROP INDEX item_events_kind;
DROP INDEX items_decaying;
DROP INDEX items_unconfirmed;
