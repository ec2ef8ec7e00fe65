SET LOCAL check_function_bodies = off;
DROP INDEX items_search_constraint;
DROP INDEX items_search_decision;
DROP INDEX items_search_fact;
DROP INDEX items_search_preference;
DROP INDEX items_search_question;
DROP INDEX items_search_task;
