-- treechat schema v2: full-text search over every entry's searchable text (entry_text):
-- message text, thinking, tool names and arguments, tool results, summaries, labels, names.
-- The trigram tokenizer matches any substring of 3+ characters (code, paths, partial words);
-- rowid = session_entries.entry_seq. Ranked with bm25().
CREATE VIRTUAL TABLE entry_search USING fts5(text, tokenize = 'trigram');

-- Backfill entries written under v1; treechat_entry_text() is registered by the connection.
INSERT INTO entry_search(rowid, text)
SELECT entry_seq, treechat_entry_text(payload) FROM session_entries
WHERE treechat_entry_text(payload) <> '';
