"""The INSERT of each table an entry writes, as an append (storage.py), a bulk load (bulk.py) and
a streamed import (stream_import.py) all write them; the values are sql/rows.py's."""

INSERT_ENTRY = (
    "INSERT INTO session_entries (entry_seq, session_id, id, parent_id, type, role,"
    " timestamp, preview, target_id, payload, status) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
)
INSERT_BRANCH = "INSERT INTO branches (branch_id, session_id, parent_branch_id, fork_depth) VALUES (?,?,?,?)"
INSERT_BRANCH_ENTRY = "INSERT INTO branch_entries (branch_id, depth, entry_seq) VALUES (?,?,?)"
INSERT_MATERIALIZED = (
    "INSERT INTO entry_materialized (entry_seq, branch_id, depth, ctx_start_depth, message_count,"
    " input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_total, context_tokens,"
    " model, thinking_level, active_tool_names) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
INSERT_SEARCH = "INSERT INTO entry_search (rowid, text) VALUES (?,?)"

