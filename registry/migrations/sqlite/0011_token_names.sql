-- Version 11: a token's name (`token create --name`), so `token list` tells three
-- publisher tokens apart. Names are unique among tokens that have one (revoking and
-- re-creating `ci` needs a new name, or the old token's name is still taken, which
-- keeps `token list` unambiguous); tokens from before have none.
ALTER TABLE tokens ADD COLUMN name TEXT;
CREATE UNIQUE INDEX tokens_name ON tokens(name) WHERE name IS NOT NULL;
