CREATE TABLE IF NOT EXISTS receipts (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    stack TEXT NOT NULL,
    version TEXT NOT NULL,
    kind TEXT NOT NULL,
    outcome TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    document TEXT NOT NULL,
    reported_at TEXT
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    stack TEXT NOT NULL,
    version TEXT NOT NULL,
    kind TEXT NOT NULL,
    started_at TEXT NOT NULL,
    pid INTEGER NOT NULL,
    work TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS deployments (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    stack TEXT NOT NULL,
    version TEXT NOT NULL,
    digest TEXT NOT NULL,
    receipt_id TEXT NOT NULL,
    inputs_file TEXT NOT NULL,
    applied_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS notes (
    receipt_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    rule TEXT NOT NULL,
    address TEXT,
    message TEXT NOT NULL
);
