-- Version 17: facts about the registry itself (`registry_settings`): where its
-- blobs live (`blobs`: `data-folder` or `s3://bucket/prefix`), so that a replica or
-- `gc` started with another `--blobs` than the one the database's rows point into
-- is refused instead of answering "blob unknown" for everything, or collecting
-- nothing.
CREATE TABLE registry_settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
