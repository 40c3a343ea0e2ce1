-- treechat schema v3 (from the storage benchmark).
-- 1. The tree skeleton reads 100k rows: a covering index keeps it off the payload pages.
CREATE INDEX session_entries_skeleton
    ON session_entries(session_id, entry_seq, id, parent_id, type, role, timestamp, preview, target_id);
-- 2. FTS5's automatic merging runs in bursts (tens to hundreds of ms every 64 appends on a big
--    index). It is switched off here; every append instead does a small, fixed amount of merge
--    work ('merge', 8) in its own transaction, which keeps append p99 in single milliseconds.
INSERT INTO entry_search(entry_search, rank) VALUES ('automerge', 0);
