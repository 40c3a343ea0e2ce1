-- treechat PostgreSQL schema v1: the same ideas as SQLite's (storage/sqlite/migrations), for a
-- server that several machines share. Sessions, entries with a per-session sequence, branch
-- membership as chain segments, materialized per-entry and per-session state (opening a
-- session replays nothing), current labels, and a trigram index over everything said.
--
-- entry_seq is one counter for the whole database, taken *after* the session's row is locked
-- (every write to a session locks it first), so within one session entry_seq order is commit
-- order: a reader that has seen up to N never later finds a committed entry below N.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE SEQUENCE treechat_entry_seq AS bigint;
CREATE SEQUENCE treechat_branch_seq AS bigint;

CREATE TABLE sessions (
    id                TEXT PRIMARY KEY,
    created_at        TEXT NOT NULL,
    cwd               TEXT NOT NULL DEFAULT '',
    active_leaf_id    TEXT,            -- the leaf pointer: the last move or append wins
    parent_session_id TEXT,            -- set by fork
    parent_entry_id   TEXT
);

-- One row per entry, leaf markers included. payload is exactly dump(entry) (TEXT, not JSONB:
-- key order and unknown fields survive byte for byte); the other columns are extracted on write
-- so the tree, labels and filters never parse payloads.
CREATE TABLE session_entries (
    entry_seq  BIGINT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    id         TEXT NOT NULL,
    parent_id  TEXT,
    type       TEXT NOT NULL,
    role       TEXT,
    timestamp  TEXT NOT NULL,
    preview    TEXT NOT NULL DEFAULT '',
    target_id  TEXT,
    payload    TEXT NOT NULL,
    status     TEXT,
    UNIQUE (session_id, id)
);
-- The tree skeleton and "what is new since N" read a session's rows in entry_seq order.
CREATE INDEX session_entries_skeleton ON session_entries (session_id, entry_seq)
    INCLUDE (id, parent_id, type, role, timestamp, preview, target_id, status);
CREATE INDEX session_entries_by_type ON session_entries (session_id, type);
CREATE INDEX session_entries_by_parent ON session_entries (session_id, parent_id);

-- Branch membership as chain segments (see SQLite's v1): a path is a few range reads.
CREATE TABLE branches (
    branch_id        BIGINT PRIMARY KEY,
    session_id       TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    parent_branch_id BIGINT,
    fork_depth       INTEGER NOT NULL
);
CREATE INDEX branches_by_session ON branches (session_id);

CREATE TABLE branch_entries (
    branch_id BIGINT NOT NULL REFERENCES branches(branch_id) ON DELETE CASCADE,
    depth     INTEGER NOT NULL,
    entry_seq BIGINT NOT NULL,
    PRIMARY KEY (branch_id, depth)
);

CREATE TABLE entry_materialized (
    entry_seq          BIGINT PRIMARY KEY REFERENCES session_entries(entry_seq) ON DELETE CASCADE,
    branch_id          BIGINT NOT NULL,
    depth              INTEGER NOT NULL,
    ctx_start_depth    INTEGER NOT NULL,
    message_count      INTEGER NOT NULL,
    input_tokens       BIGINT NOT NULL,
    output_tokens      BIGINT NOT NULL,
    cache_read_tokens  BIGINT NOT NULL,
    cache_write_tokens BIGINT NOT NULL,
    cost_total         DOUBLE PRECISION NOT NULL,
    context_tokens     BIGINT NOT NULL,
    model              TEXT,
    thinking_level     TEXT NOT NULL,
    active_tool_names  TEXT
);

CREATE TABLE session_materialized (
    session_id         TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    entry_count        INTEGER NOT NULL DEFAULT 0,
    message_count      INTEGER NOT NULL DEFAULT 0,
    user_messages      INTEGER NOT NULL DEFAULT 0,
    assistant_messages INTEGER NOT NULL DEFAULT 0,
    tool_results       INTEGER NOT NULL DEFAULT 0,
    input_tokens       BIGINT NOT NULL DEFAULT 0,
    output_tokens      BIGINT NOT NULL DEFAULT 0,
    cache_read_tokens  BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens BIGINT NOT NULL DEFAULT 0,
    total_tokens       BIGINT NOT NULL DEFAULT 0,
    cost_total         DOUBLE PRECISION NOT NULL DEFAULT 0,
    name               TEXT,
    first_message      TEXT NOT NULL DEFAULT '',
    modified_at        TEXT NOT NULL,
    message_ms         DOUBLE PRECISION,
    modified_ms        DOUBLE PRECISION NOT NULL
);
CREATE INDEX session_materialized_recent ON session_materialized (modified_ms);

CREATE TABLE labels (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    target_id  TEXT NOT NULL,
    label      TEXT NOT NULL,
    entry_seq  BIGINT NOT NULL,
    position   BIGINT NOT NULL,
    PRIMARY KEY (session_id, target_id)
);

-- Search: the first 32k characters of each entry's text (rows.search_text) in lower case,
-- matched as substrings through a trigram GIN index (LIKE '%term%' with the term in lower case:
-- the same matching as SQLite's FTS5 trigram index, any case). GIN's pending list keeps an
-- append cheap.
CREATE TABLE entry_search (
    entry_seq  BIGINT PRIMARY KEY REFERENCES session_entries(entry_seq) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    text       TEXT NOT NULL
);
CREATE INDEX entry_search_trgm ON entry_search USING gin (text gin_trgm_ops);
