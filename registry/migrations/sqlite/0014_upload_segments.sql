-- Version 14: the pieces an upload session's bytes are stored in when blobs live
-- in object storage (`--blobs s3://…`): each a whole object
-- (`uploads/<id>/<start>`), recorded once written, so that any replica sharing
-- the database and the bucket can tell the session's size and go on with it.
-- Filesystem uploads keep one file and record none.
CREATE TABLE upload_segments (
    upload TEXT NOT NULL REFERENCES uploads(id) ON DELETE CASCADE,
    start INTEGER NOT NULL,
    size INTEGER NOT NULL,
    PRIMARY KEY (upload, start)
) WITHOUT ROWID;
