"""The gate of a question (who a key belongs to), on its own: by design, no sequence of printable
keys, Enter, Backspace or ↑/↓, at any rhythm, answers a question "yes" — except the one-key answer
of a person who had not been typing when it appeared."""

from __future__ import annotations

import random
import string

from treechat.widgets.question.gate import Answer, Attend, Gate, Move, Press, Scroll, Typing

TYPING_KEYS = [*string.ascii_letters, *string.digits, *",.;:'!?-", "space", "enter", "backspace", "up", "down"]
SHOWN = 100.0


def rhythms(rng: random.Random, n: int) -> list[float]:
    """Times of n keys: bursts, pauses for thought (0.45-2 s, and far longer), and everything between."""
    at, out = SHOWN + rng.choice([-0.3, 0.0, 0.2, 0.6, 3.0]), []
    for _ in range(n):
        at += rng.choice([0.02, 0.08, 0.2, 0.45, 0.6, 1.0, 2.0, 30.0])
        out.append(at)
    return out


def says_yes(route: object) -> bool:
    return isinstance(route, Answer) and route.choice in ("yes", "session")


def test_a_busy_person_typing_anything_at_any_rhythm_never_answers() -> None:
    rng = random.Random(36)
    for _ in range(3000):
        gate = Gate(busy=True)
        gate.shown(SHOWN)
        keys = [rng.choice(TYPING_KEYS) for _ in range(rng.randint(1, 40))]
        for key, at in zip(keys, rhythms(rng, len(keys))):
            route = gate.route(key, at)
            assert isinstance(route, Typing), (keys, key, route)


def test_a_person_who_was_not_typing_answers_only_with_a_first_y_or_a() -> None:
    """From the ready state, a yes needs y or a as the first key after its moment on screen (↑/↓
    before it only read the question); any other first key hands everything after it to typing."""
    rng = random.Random(21)
    for _ in range(3000):
        gate = Gate(busy=False)
        gate.shown(SHOWN)
        keys = [rng.choice(TYPING_KEYS) for _ in range(rng.randint(1, 30))]
        times = rhythms(rng, len(keys))
        routes = [gate.route(key, at) for key, at in zip(keys, times)]
        yes = [i for i, r in enumerate(routes) if says_yes(r)]
        if not yes:
            continue
        first = yes[0]
        assert keys[first] in ("y", "a") and times[first] >= SHOWN + gate.arm_delay, (keys, routes)
        assert all(isinstance(r, Scroll) for r in routes[:first]), (keys, routes)


def test_enter_presses_the_focused_button_which_starts_on_refuse() -> None:
    gate = Gate(busy=False)
    gate.shown(SHOWN)
    assert isinstance(gate.route("enter", SHOWN + 1), Press)  # the panel's focus: the refusing button
    assert gate.route("tab", SHOWN + 1) == Move(1) and gate.route("shift+tab", SHOWN + 1) == Move(-1)


def test_keys_in_its_first_moment_are_typing() -> None:
    gate = Gate(busy=False)
    gate.shown(SHOWN)
    assert isinstance(gate.route("y", SHOWN + gate.arm_delay / 2), Typing)
    assert gate.state == "typing"
    assert isinstance(gate.route("y", SHOWN + 10), Typing)  # still typing: a pause does not change that


def test_keys_before_it_was_drawn_are_typing() -> None:
    gate = Gate(busy=False)
    assert isinstance(gate.route("a", SHOWN), Typing)  # not drawn yet: nobody saw it


def test_esc_while_typing_moves_to_the_question_and_then_one_key_answers() -> None:
    gate = Gate(busy=True)
    gate.shown(SHOWN)
    assert isinstance(gate.route("escape", SHOWN + 5), Attend)
    gate.attend(SHOWN + 5)
    assert gate.state == "ready"
    assert isinstance(gate.route("y", SHOWN + 5.1), Typing)  # at once after Esc: still typing (a reflex)
    assert isinstance(gate.route("escape", SHOWN + 6), Attend)
    gate.attend(SHOWN + 6)
    assert gate.route("y", SHOWN + 7) == Answer("yes")


def test_esc_when_ready_answers_as_the_question_says() -> None:
    assert Gate(busy=False).route("escape", SHOWN) == Answer("no")  # refusing needs no pause
    assert Gate(busy=False, escape="later").route("escape", SHOWN) == Answer("later")


def test_a_without_a_session_choice_is_typing() -> None:
    gate = Gate(busy=False, offers_session=False)
    gate.shown(SHOWN)
    assert isinstance(gate.route("a", SHOWN + 1), Typing)


def test_scroll_keys_read_it_in_the_ready_state_and_type_in_the_typing_state() -> None:
    ready = Gate(busy=False)
    ready.shown(SHOWN)
    assert ready.route("pagedown", SHOWN) == Scroll("page_down") and ready.state == "ready"
    busy = Gate(busy=True)
    busy.shown(SHOWN)
    assert isinstance(busy.route("down", SHOWN + 1), Typing)


def test_clicks_press_when_ready_and_move_to_it_when_typing() -> None:
    gate = Gate(busy=True)
    gate.shown(SHOWN)
    assert isinstance(gate.click(SHOWN + 1), Attend) and gate.state == "ready"
    assert gate.click(SHOWN + 1.1) is None  # too soon after: nothing
    assert isinstance(gate.click(SHOWN + 3), Press)


def test_a_paste_is_typing() -> None:
    gate = Gate(busy=False)
    gate.shown(SHOWN)
    assert isinstance(gate.paste(), Typing) and gate.state == "typing"
