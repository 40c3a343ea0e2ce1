-- treechat schema v3 (from the storage benchmark): the tree skeleton reads every row of a
-- session (100k); a covering index keeps that read off the payload pages.
CREATE INDEX session_entries_skeleton
    ON session_entries(session_id, entry_seq, id, parent_id, type, role, timestamp, preview, target_id);
