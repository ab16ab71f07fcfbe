-- Release receipts (signed, as JSON), newest last.
CREATE TABLE release_receipts (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    release TEXT NOT NULL,
    version TEXT NOT NULL,
    kind TEXT NOT NULL,
    outcome TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    document TEXT NOT NULL
);
