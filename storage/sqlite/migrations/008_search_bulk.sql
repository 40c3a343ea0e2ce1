-- treechat schema v8 (issue 26): the search text of a big import goes to an index of its own,
-- which appends never write, so its segments are never merged (fts.py's module doc): merging
-- them into entry_search was a third of a 100k import's CPU. Searches read both indexes.
-- crisismerge 1999 is FTS5's maximum; hashsize 16 MiB holds what an import writes in one
-- transaction (stream_import.SEARCH_BATCHES), so that is one segment.
CREATE VIRTUAL TABLE entry_search_bulk USING fts5(text, tokenize = 'trigram');
INSERT INTO entry_search_bulk (entry_search_bulk, rank) VALUES ('automerge', 0);
INSERT INTO entry_search_bulk (entry_search_bulk, rank) VALUES ('crisismerge', 1999);
INSERT INTO entry_search_bulk (entry_search_bulk, rank) VALUES ('hashsize', 16777216);
