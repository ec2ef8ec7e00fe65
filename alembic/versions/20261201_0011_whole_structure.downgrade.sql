SET LOCAL check_function_bodies = off;
SET LOCAL ROLE mneia_owner;
DROP TRIGGER disputes_whole ON disputes;
DROP TRIGGER items_whole ON items;
DROP FUNCTION mneia_disputes_whole();
DROP FUNCTION mneia_items_whole();
RESET ROLE;
