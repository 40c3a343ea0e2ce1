"""Light, read-only views of entry JSON, decoded with msgspec instead of validated with pydantic.

Opening a 100k-entry session must not validate 100k message bodies, and a bulk import must not
build 100k pydantic models just to compute previews and aggregates. So the storage reads two
views of a line:

* `Skeleton`: what the tree needs (id, parent, type, timestamp, role, label/leaf target, name,
  compaction fields). msgspec skips every other byte of the line without building objects:
  about 0.4 µs per entry.
* `EntryView`: the skeleton plus what previews, search text and aggregates need (message text
  blocks, usage, model, settings). Used by bulk import, tree previews and summaries.

Full pydantic validation (`model.parse_entry`) still happens whenever an entry is handed out or
imported; a line whose view cannot be decoded but that pydantic accepts (a lax number such as
"5" for an int) falls back to `view_of_entry`, built from the validated model, so a view exists
for every valid entry. Lines nested deeper than the parsers allow raise `RecursionError` there;
every caller treats that as a corrupt line.
"""

from __future__ import annotations

import msgspec

DecodeErrors = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError)


class _Role(msgspec.Struct, gc=False):
    role: object = None


class Skeleton(msgspec.Struct, rename="camel", gc=False):
    """The tree-shaping fields of one entry; everything else in the line is skipped."""

    type: str
    id: str
    parent_id: str | None
    timestamp: str = ""
    target_id: object = None
    label: object = None
    name: object = None
    first_kept_entry_id: object = None
    retained_tail: object = None
    message: _Role | None = None

    @property
    def role(self) -> str | None:
        m = self.message
        return m.role if m is not None and isinstance(m.role, str) else None


class Cost(msgspec.Struct, gc=False):
    total: float = 0.0


class Usage(msgspec.Struct, rename="camel", gc=False):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost | None = None


class Block(msgspec.Struct, gc=False):
    type: object = None
    text: object = None
    thinking: object = None
    name: object = None
    arguments: object = None


class MessageView(msgspec.Struct, rename="camel", gc=False):
    role: object = None
    content: str | list[Block] | None = None
    usage: Usage | None = None
    stop_reason: object = None
    provider: object = None
    model: object = None
    error_message: object = None
    tool_name: object = None
    timestamp: int | float | None = None
    summary: object = None
    command: object = None
    output: object = None


class EntryView(msgspec.Struct, rename="camel", gc=False):
    """Everything previews, search text and aggregates read from an entry."""

    type: str
    id: str
    parent_id: str | None
    timestamp: str = ""
    target_id: object = None
    label: object = None
    name: object = None
    first_kept_entry_id: object = None
    retained_tail: object = None
    message: MessageView | None = None
    thinking_level: object = None
    provider: object = None
    model_id: object = None
    active_tool_names: list[str] | None = None
    summary: object = None
    content: str | list[Block] | None = None

    @property
    def role(self) -> str | None:
        m = self.message
        return m.role if m is not None and isinstance(m.role, str) else None


_skeleton = msgspec.json.Decoder(Skeleton)
_view = msgspec.json.Decoder(EntryView)
decode_skeleton = _skeleton.decode
decode_view = _view.decode
decode_views = msgspec.json.Decoder(list[EntryView]).decode  # a JSON array of entries at once


def skeleton_of(view: EntryView) -> Skeleton:
    """The skeleton of a view (for an index fed from views)."""
    return Skeleton(
        type=view.type,
        id=view.id,
        parent_id=view.parent_id,
        timestamp=view.timestamp,
        target_id=view.target_id,
        label=view.label,
        name=view.name,
        first_kept_entry_id=view.first_kept_entry_id,
        retained_tail=view.retained_tail,
        message=_Role(view.message.role) if view.message is not None else None,
    )
