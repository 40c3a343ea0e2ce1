"""`@path` and `-a` attachments: what becomes a file block, an image block, or stays text; the
limits and their one-line messages; image facts from headers; Tab completion after `@`; pasted
image paths."""

from __future__ import annotations

import base64
import os

import pytest

from tests.images import gif_bytes, jpeg_bytes, png_bytes, webp_bytes, write
from treechat.prompts.attachments import (
    MAX_IMAGE_BYTES,
    MAX_TEXT_BYTES,
    AttachmentError,
    complete_at_path,
    expand_prompt,
    pasted_image_token,
)
from treechat.text.attached import split_file_blocks
from treechat.text.images import image_block_info, image_info


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print('hi')\n")
    (tmp_path / "src" / "mod.py").write_text("x = 1\n")
    (tmp_path / "my notes").mkdir()
    (tmp_path / "my notes" / "plan a.txt").write_text("step one\n")
    (tmp_path / "notes.txt").write_text("remember the milk")
    (tmp_path / ".hidden").write_text("secret")
    write(tmp_path / "shot.png", png_bytes(3, 2))
    return tmp_path


def test_a_text_file_goes_into_the_message_under_its_path(folder) -> None:
    p = expand_prompt("summarise @notes.txt please", folder)
    assert p.text == 'summarise notes.txt please\n\n<file path="notes.txt">\nremember the milk\n</file>'
    assert p.images == [] and [(a.kind, a.shown, a.size) for a in p.attachments] == [("text", "notes.txt", 17)]
    assert split_file_blocks(p.text) == ("summarise notes.txt please", [("notes.txt", "remember the milk\n")])


def test_quoted_paths_trailing_punctuation_and_repeats(folder) -> None:
    p = expand_prompt('compare @"my notes/plan a.txt" with @src/main.py, then @notes.txt. Again @notes.txt', folder)
    assert p.text.startswith("compare my notes/plan a.txt with src/main.py, then notes.txt. Again notes.txt\n\n")
    assert [a.shown for a in p.attachments] == ["my notes/plan a.txt", "src/main.py", "notes.txt"]
    assert p.text.count("<file path=") == 3


@pytest.mark.parametrize("text", ["mail me at bob@example.com", "thanks @user", "see @src/", "(@nothing.txt)",
                                  'quoted @"no such file.txt"', "@"])
def test_an_at_that_is_not_a_readable_file_stays_text(folder, text) -> None:
    p = expand_prompt(text, folder)
    assert (p.text, p.images, p.attachments) == (text, [], [])


def test_unreadable_files_stay_text(folder) -> None:
    locked = folder / "locked.txt"
    locked.write_text("no")
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):
            pytest.skip("running as root: permissions are not enforced")
        assert expand_prompt("read @locked.txt", folder).text == "read @locked.txt"
    finally:
        locked.chmod(0o600)


def test_too_big_and_binary_files_are_one_clear_sentence(folder) -> None:
    (folder / "big.log").write_text("x" * (MAX_TEXT_BYTES + 1))
    with pytest.raises(AttachmentError) as err:
        expand_prompt("look at @big.log", folder)
    assert str(err.value) == "big.log is 97.7 KB; text files over 97.7 KB cannot be attached (ask the model to read parts of it instead)."
    (folder / "tool.bin").write_bytes(b"\x7fELF\x00\x00\x01")
    with pytest.raises(AttachmentError, match=r"^tool\.bin is a binary file; only text files and PNG, JPEG, GIF or WebP"):
        expand_prompt("run @tool.bin", folder)
    write(folder / "huge.png", png_bytes() + b"\x00" * MAX_IMAGE_BYTES)
    with pytest.raises(AttachmentError, match=r"^huge\.png is 5\.0 MB; PNG images over 5\.0 MB cannot be attached\.$"):
        expand_prompt("@huge.png", folder)


def test_explicit_attachments_must_exist(folder) -> None:
    with pytest.raises(AttachmentError, match=r"^missing\.png: no such file\.$"):
        expand_prompt("hi", folder, attach=["missing.png"])
    with pytest.raises(AttachmentError, match="is a folder"):
        expand_prompt("hi", folder, attach=["src"])
    p = expand_prompt("describe", folder, attach=["shot.png", "notes.txt"])
    assert len(p.images) == 1 and "<file path=\"notes.txt\">" in p.text


def test_images_become_blocks_with_their_facts(folder) -> None:
    p = expand_prompt("what is in @shot.png?", folder)
    assert p.text == "what is in shot.png?"
    (image,) = p.images
    assert image.mime_type == "image/png" and base64.b64decode(image.data) == png_bytes(3, 2)
    info = p.attachments[0].image
    assert info is not None
    assert (info.kind, info.width, info.height) == ("PNG", 3, 2)
    assert info.chip() == f"PNG · {len(png_bytes(3, 2))} B · 3×2"


@pytest.mark.parametrize("data,mime,size", [
    (png_bytes(300, 200), "image/png", (300, 200)),
    (jpeg_bytes(640, 480), "image/jpeg", (640, 480)),
    (gif_bytes(10, 7), "image/gif", (10, 7)),
    (webp_bytes(1024, 768), "image/webp", (1024, 768)),
])
def test_image_types_and_dimensions_from_headers(data, mime, size) -> None:
    info = image_info(data)
    assert info is not None
    assert (info.mime_type, (info.width, info.height)) == (mime, size)
    stored = image_block_info(base64.b64encode(data).decode(), mime)
    assert (stored.mime_type, stored.width, stored.height, stored.size) == (mime, *size, len(data))


def test_a_stored_block_that_is_not_an_image_still_gets_a_chip() -> None:
    info = image_block_info(base64.b64encode(b"not an image at all").decode(), "image/png")
    assert info.chip() == "PNG · 19 B"
    assert image_info(b"BM\x00\x00") is None


def test_tab_completes_paths_after_an_at(folder) -> None:
    def complete(text):
        found = complete_at_path(text, len(text), folder)
        return None if found is None else (found.replacement, found.candidates, text[:found.start])

    assert complete("look at @sr") == ("@src/", ["src/"], "look at ")
    assert complete("@src/m") == ("@src/m", ["src/main.py", "src/mod.py"], "")
    assert complete("@src/ma") == ("@src/main.py ", ["src/main.py"], "")
    assert complete("@my") == ('@"my notes/', ["my notes/"], "")
    assert complete('@"my notes/pl') == ('@"my notes/plan a.txt" ', ["my notes/plan a.txt"], "")
    assert complete("@no") == ("@notes.txt ", ["notes.txt"], "")
    assert complete("@.hi") == ("@.hidden ", [".hidden"], "")
    assert complete("@") is not None and ".hidden" not in complete("@")[1]
    assert complete("bob@exa") is None and complete("no at here") is None and complete("@zzz") is None
    text = "see @no and more"  # the cursor in the middle of the text
    found = complete_at_path(text, len("see @no"), folder)
    assert found is not None
    assert (found.start, found.end, found.replacement) == (4, 7, "@notes.txt ")


def test_a_pasted_image_path_becomes_an_attachment_token(folder) -> None:
    write(folder / "my shots" / "a b.png", png_bytes())
    assert pasted_image_token(str(folder / "shot.png"), folder) == f"@{folder / 'shot.png'}"
    assert pasted_image_token("'" + str(folder / "my shots" / "a b.png") + "'", folder) == f'@"{folder}/my shots/a b.png"'
    assert pasted_image_token(str(folder / "my shots" / "a b.png").replace(" ", "\\ "), folder) == f'@"{folder}/my shots/a b.png"'
    assert pasted_image_token("file://" + str(folder / "my shots" / "a%20b.png"), folder) == f'@"{folder}/my shots/a b.png"'
    assert pasted_image_token("shot.png", folder) == "@shot.png"
    assert pasted_image_token("notes.txt", folder) is None  # a text path pasted is just text
    assert pasted_image_token("some words", folder) is None
