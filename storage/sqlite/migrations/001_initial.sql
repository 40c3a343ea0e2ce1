-- treechat schema v1: sessions, entries, branch membership and materialized aggregates.
-- Conventions: `entry_seq` is a global, monotonically increasing integer (the rowid of
-- session_entries), so "append order" within a session is `ORDER BY entry_seq`.

CREATE TABLE sessions (
    id                TEXT PRIMARY KEY,
    created_at        TEXT NOT NULL,
    cwd               TEXT NOT NULL DEFAULT '',
    active_leaf_id    TEXT,            -- the leaf pointer (NULL: before the first entry)
    parent_session_id TEXT,            -- set by fork
    parent_entry_id   TEXT
);

-- One row per entry, `leaf` navigation markers included (they are not counted, drawn or
-- anyone's child; a leaf marker only moves sessions.active_leaf_id). (session_id, id) is the logical key; entry_seq is the rowid so payload
-- lookups from the branch tables are direct. `payload` is exactly dump(entry) as JSON, so
-- unknown fields survive. role/preview/target_id are extracted on write so the tree skeleton,
-- labels and filters never parse payloads.
CREATE TABLE session_entries (
    entry_seq      INTEGER PRIMARY KEY,
    session_id     TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    id             TEXT NOT NULL,
    parent_id      TEXT,               -- as written (may name a missing entry)
    type           TEXT NOT NULL,
    role           TEXT,
    timestamp      TEXT NOT NULL,
    preview        TEXT NOT NULL DEFAULT '',
    target_id      TEXT,               -- label / leaf target
    payload        TEXT NOT NULL,
    UNIQUE (session_id, id)
);
CREATE INDEX session_entries_by_session ON session_entries(session_id);  -- + rowid = seq order
CREATE INDEX session_entries_by_type ON session_entries(session_id, type);
CREATE INDEX session_entries_by_parent ON session_entries(session_id, parent_id);

-- Branch membership as chain segments. Every entry belongs to exactly one branch at its depth
-- (root = 1). Appending under the tail of a branch extends it; appending under any other entry
-- (a fork) or a `leaf` marker starts a new branch whose parent branch is cut at fork_depth.
-- The path to an entry is then a few range reads, one per fork on the path:
--     (branch, depth <= d), (parent branch, depth <= fork_depth), ...
-- so a path read is O(path + forks on it) and an append is one PK probe plus one insert.
-- (Power-of-two ancestor skips also give O(log) jumps, but reading a whole path with them is
-- still a walk of point reads; segments turn it into contiguous index ranges.)
CREATE TABLE branches (
    branch_id        INTEGER PRIMARY KEY,
    session_id       TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    parent_branch_id INTEGER,          -- NULL for a branch that starts at a root
    fork_depth       INTEGER NOT NULL  -- the parent branch contributes depths <= fork_depth
);
CREATE INDEX branches_by_session ON branches(session_id);

CREATE TABLE branch_entries (
    branch_id INTEGER NOT NULL REFERENCES branches(branch_id) ON DELETE CASCADE,
    depth     INTEGER NOT NULL,
    entry_seq INTEGER NOT NULL,
    PRIMARY KEY (branch_id, depth)
) WITHOUT ROWID;

-- The PathState at every entry, computed from the parent's row on append (advance_path_state),
-- so get_path_state(leaf) is one row and opening a session replays nothing. ctx_start_depth is
-- where get_path_to_root_or_compaction starts (1, or the kept range of the last compaction).
-- Entries on or under a parent cycle (possible only through import) have no row here.
CREATE TABLE entry_materialized (
    entry_seq          INTEGER PRIMARY KEY REFERENCES session_entries(entry_seq) ON DELETE CASCADE,
    branch_id          INTEGER NOT NULL,
    depth              INTEGER NOT NULL,
    ctx_start_depth    INTEGER NOT NULL,
    message_count      INTEGER NOT NULL,
    input_tokens       INTEGER NOT NULL,
    output_tokens      INTEGER NOT NULL,
    cache_read_tokens  INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    cost_total         REAL NOT NULL,
    context_tokens     INTEGER NOT NULL,
    model              TEXT,           -- JSON {"provider", "modelId"} or NULL
    thinking_level     TEXT NOT NULL,
    active_tool_names  TEXT            -- JSON list or NULL
);

-- Whole-session aggregates (every branch): what `sessions`/`list` show without touching entries.
-- modified_at is Pi's `modified`: the newest user/assistant message, else the creation time;
-- message_ms is that newest message time (NULL: none yet); modified_ms = modified_at as a
-- number, the sort key of list/latest.
CREATE TABLE session_materialized (
    session_id         TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    entry_count        INTEGER NOT NULL DEFAULT 0,
    message_count      INTEGER NOT NULL DEFAULT 0,
    user_messages      INTEGER NOT NULL DEFAULT 0,
    assistant_messages INTEGER NOT NULL DEFAULT 0,
    tool_results       INTEGER NOT NULL DEFAULT 0,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens       INTEGER NOT NULL DEFAULT 0,
    cost_total         REAL NOT NULL DEFAULT 0,
    name               TEXT,           -- from the last session_info entry (trimmed; '' → NULL)
    first_message      TEXT NOT NULL DEFAULT '',
    modified_at        TEXT NOT NULL,
    message_ms         REAL,
    modified_ms        REAL NOT NULL
);
CREATE INDEX session_materialized_recent ON session_materialized(modified_ms);

-- Current label per target: the last label entry wins, an empty one deletes the row.
-- `position` is when the target was first labelled (re-labelling keeps it, like Pi's label
-- map), the order in which fork re-creates labels.
CREATE TABLE labels (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    target_id  TEXT NOT NULL,
    label      TEXT NOT NULL,
    entry_seq  INTEGER NOT NULL,       -- the label entry that set it (its timestamp is kept by fork)
    position   INTEGER NOT NULL,
    PRIMARY KEY (session_id, target_id)
) WITHOUT ROWID;
