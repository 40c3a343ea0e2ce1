"""The app against a local server whose probe endpoints trickle (issue 27): a message typed as
soon as the composer shows is on screen and answered while the window is still being asked."""

from __future__ import annotations

from tests.fake_local_server import LocalServer

from .conftest import screen_text, type_text, wait_for


async def test_a_message_typed_at_once_is_shown_and_answered_while_the_probes_trickle(make_app, fake, monkeypatch):
    monkeypatch.setattr("treechat.local_models.PROBE_TIMEOUT", 60.0)  # a probe that would hold it for a minute
    LocalServer.llama_cpp(fake, trickle_probes=True, reply="answered at once")
    async with make_app() as (app, pilot):
        await type_text(pilot, "first words")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "first words" in screen_text(app), what="the message on screen")
        await wait_for(pilot, lambda: "answered at once" in screen_text(app), what="the reply")
        # the message went out while the window probe was still trickling: it did not wait for it
        # (by order, not by time: on a loaded machine the probe may give up any time after)
        await wait_for(pilot, lambda: bool(fake.probes), what="the window probe")
        sent = fake.requests[0].arrived_at
        # (other lookups may give up earlier on a loaded machine: the list of the server's models)
        assert all(ended > sent for ended, path in fake.disconnected_at if path == "/props"), (sent, fake.disconnected_at)
