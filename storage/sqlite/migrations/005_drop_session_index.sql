-- treechat schema v5 (from the storage benchmark): session_entries_by_session(session_id) is
-- redundant since v3's skeleton index starts with (session_id, entry_seq) — the same rows in
-- the same order. Dropping it saves an index insert and a page written on every append.
DROP INDEX session_entries_by_session;
