-- treechat schema v4 (from the storage benchmark): FTS5 merge work in small steps.
-- FTS5's automerge merges 64 x (levels) pages at once every 64 pages written: bursts of
-- 20-140 ms inside single appends on a 100k-entry index. It is switched off; every 4th append
-- instead merges at most 16 pages in its own transaction, and bulk loads tidy level 0 (fts.py).
-- crisismerge stays FTS5's default (16 segments on level 0) as a safety net; the small steps
-- keep level 0 well below it. usermerge 4 is FTS5's default, written here so it is explicit.
INSERT INTO entry_search (entry_search, rank) VALUES ('automerge', 0);
INSERT INTO entry_search (entry_search, rank) VALUES ('usermerge', 4);
INSERT INTO entry_search (entry_search, rank) VALUES ('crisismerge', 16);
