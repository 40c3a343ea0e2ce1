-- treechat schema v7 (issue 26): a big import commits in batches (bounded memory, a small WAL)
-- and stays all-or-nothing: until its last batch commits, its session row names the importing
-- process here and it has no session_materialized row, so no listing, search or open sees it;
-- a catalog that finds one whose process is gone deletes it. NULL: a complete session.
ALTER TABLE sessions ADD COLUMN import_pid INTEGER;
