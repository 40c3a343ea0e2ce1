"""Print mode never writes a model's or a server's control sequences to the terminal (issue 15):
they are shown as placeholders on stdout and stderr; `--raw` keeps the reply byte for byte."""

from __future__ import annotations

import io

import pytest

from tests.agent.test_print_mode import Place, registry_for
from tests.fake_provider import FakeProvider
from treechat.chat import Chat
from treechat.cli.main import build_parser, cmd_print
from treechat.cli.print_mode import run_print
from treechat.config.settings import load_settings

# A clipboard write (OSC 52), a window title (OSC 0), a clear screen, an 8-bit CSI, a bell and a
# right-to-left override, split over deltas the way a stream splits them (mid-sequence, "\r|\n").
DELTAS = ["ok \x1b]52;c;ZXZpbCBjbGlw", "Ym9hcmQ=\x07 \x1b]0;pwned\x07 \x1b[", "2J\x9b6n \x07 \u202egnp.exe\r", "\nnext\rover"]
HOSTILE = "".join(DELTAS)
# What must never reach the terminal: ESC, BEL, CR, other C0 but \n and \t, DEL, C1, bidi controls.
FORBIDDEN = set(map(chr, [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0),
                          *range(0x202A, 0x202F), *range(0x2066, 0x206A)]))


@pytest.fixture
async def fake():
    async with FakeProvider() as fp:
        yield fp


async def run(fp: FakeProvider, place: Place, *, raw: bool = False) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    chat = Chat(catalog=place.catalog, settings=load_settings(place.home, env={}), registry=registry_for(fp),
                model_ref="openai/fake-model")
    await chat.open(await place.catalog.open((await place.session()).session_id))
    code = await run_print(chat, "hi", out=out, err=err, **({"raw": True} if raw else {}))
    return code, out.getvalue(), err.getvalue()


def assert_terminal_safe(text: str) -> None:
    assert not (set(text) & FORBIDDEN), sorted({repr(c) for c in set(text) & FORBIDDEN})


async def test_a_hostile_reply_is_shown_with_placeholders(fake, tmp_path) -> None:
    fake.script_openai(DELTAS)
    place = Place(tmp_path)
    code, out, err = await run(fake, place)
    assert code == 0 and err == ""
    assert_terminal_safe(out)
    assert out == ("ok ␛]52;c;ZXZpbCBjbGlwYm9hcmQ=␇ ␛]0;pwned␇ ␛[2J<U+009B>6n ␇ <U+202E>gnp.exe\n"
                   "next\nover\n")
    # what is stored is what the model said
    stored = (await (await place.session()).build_session_context()).messages[-1].content[0].text
    assert stored == HOSTILE


async def test_raw_keeps_the_reply_byte_for_byte(fake, tmp_path) -> None:
    fake.script_openai(DELTAS)
    code, out, _ = await run(fake, Place(tmp_path), raw=True)
    assert code == 0 and out == HOSTILE + "\n"


async def test_a_provider_error_message_is_one_safe_line(fake, tmp_path) -> None:
    fake.script_status(400, {"error": {"message": "bad request \x1b]52;c;QUFBQQ==\x07\x1b[2J\n\x9b31m\u202e done"}})
    code, out, err = await run(fake, Place(tmp_path))
    assert code == 1 and out == ""
    assert_terminal_safe(err)
    assert err.count("\n") == 1 and err.startswith("treechat: ")
    assert "␛]52;c;QUFBQQ==␇␛[2J <U+009B>31m<U+202E> done" in err


async def test_a_reply_that_ends_in_a_carriage_return_still_ends_its_line(fake, tmp_path) -> None:
    fake.script_openai(["a\r"])
    code, out, _ = await run(fake, Place(tmp_path))
    assert (code, out) == (0, "a\n")


async def test_the_command_line_takes_raw_before_or_after_the_subcommand(fake, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    base = ["--home", str(tmp_path), "--storage", "memory", "--model", "openai/fake-model", "-p", "hi"]
    fake.script_openai(DELTAS)
    assert await cmd_print(build_parser().parse_args(base)) == 0
    out, err = capsys.readouterr()
    assert_terminal_safe(out + err)
    assert "␛]0;pwned␇" in out
    fake.script_openai(DELTAS)
    assert await cmd_print(build_parser().parse_args([*base, "--raw"])) == 0
    assert capsys.readouterr().out == HOSTILE + "\n"
    assert build_parser().parse_args(["sessions", "--raw"]).raw is True
    assert build_parser().parse_args(["--raw", "search", "x"]).raw is True
    assert build_parser().parse_args(["search", "x"]).raw is False


async def test_surrogates_from_the_wire_are_joined_or_replaced_and_the_reply_is_kept(fake, tmp_path) -> None:
    """A server may split an emoji's UTF-16 pair over two deltas ("\\ud83d" then "\\ude00") or send
    half a pair: UTF-8 cannot hold either as they are, and the reply must still be stored."""
    fake.script_openai(["smile \ud83d", "\ude00 and half \udc00 end"])
    place = Place(tmp_path)
    code, out, err = await run(fake, place)
    assert code == 0 and err == "", err
    assert out == "smile \U0001f600 and half <U+DC00> end\n"
    stored = (await (await place.session()).build_session_context()).messages[-1].content[0].text
    assert stored == "smile \U0001f600 and half \ufffd end"
    fake.script_openai(["smile \ud83d", "\ude00 and half \udc00 end"])
    code, out, err = await run(fake, place, raw=True)
    assert (code, out, err) == (0, "smile \U0001f600 and half \ufffd end\n", "")
    out.encode("utf-8")
