from collections import Counter

from textual.binding import Binding

from treechat.widgets.keymap import CONTEXTS, KEYMAP, bindings_for, display_key, readme_section


def test_no_key_is_bound_twice_in_one_context():
    seen = Counter((k.context, one) for k in KEYMAP for one in k.key.split(","))
    assert [pair for pair, n in seen.items() if n > 1] == []
    assert {k.context for k in KEYMAP} <= set(CONTEXTS)


def test_bindings_and_display():
    tree = bindings_for("tree")
    assert any(isinstance(b, Binding) and b.key == "enter" and b.action == "choose" for b in tree)
    assert display_key("ctrl+b,f2") == "Ctrl+B / F2"
    assert display_key("left_square_bracket") == "["
    assert readme_section().startswith("## Keys")
