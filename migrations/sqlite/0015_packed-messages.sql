-- A message of some size is kept compressed against the messages before it
-- (`store::conversation`), its text then empty; earlier messages keep their text.

ALTER TABLE messages ADD COLUMN packed BLOB;
