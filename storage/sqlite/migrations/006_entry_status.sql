-- treechat schema v6: a reply that failed or was stopped carries its stop reason on its row
-- ("error" | "aborted"; NULL otherwise), so the tree can mark it without reading payloads.
ALTER TABLE session_entries ADD COLUMN status TEXT;
UPDATE session_entries
   SET status = json_extract(payload, '$.message.stopReason')
 WHERE type = 'message' AND role = 'assistant'
   AND json_extract(payload, '$.message.stopReason') IN ('error', 'aborted');
-- The tree read stays on the covering skeleton index (v3), now with the status.
DROP INDEX session_entries_skeleton;
CREATE INDEX session_entries_skeleton
    ON session_entries(session_id, entry_seq, id, parent_id, type, role, timestamp, preview, target_id, status);
