-- An outside agent's hook waits on its item; its lease says it still does.

ALTER TABLE pending ADD COLUMN waiter TEXT;
ALTER TABLE pending ADD COLUMN waiter_until INTEGER;
