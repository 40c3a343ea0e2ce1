"""The workspace: what the agent's edits did to files, recorded on the session tree, and putting
files back as they were at any entry (issue 23).

- `diff_text`: the unified diff of a change, bounded (tools, restore, exports);
- `blobs`, `history`: checkpoints as `custom` entries carrying content-addressed, compressed
  blobs; the state of every tracked file at any entry;
- `recorder`: appends a checkpoint when edit, write or bash changes a file;
- `disk`, `journal`, `restore`: what is on disk, what treechat last wrote there, restoring and
  undoing a restore.

Nothing is imported here: `treechat.agent.tools` uses `diff_text` and must not pull in the rest.
"""
