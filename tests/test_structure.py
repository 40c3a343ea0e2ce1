"""The shape the code keeps (issue 13): one import name, no import cycles (imports inside
functions count; those under `if TYPE_CHECKING:` do not) and layers that point one way. A module's
length is its job's: a long one is named for review, never split to pass a count."""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"app": "treechat", "storage": "treechat.storage", "widgets": "treechat.widgets"}
REVIEW_LINES = 800  # a module past this is worth a reviewer's look: one job, or two?


def modules() -> dict[str, Path]:
    """Every source module by its import name."""
    out: dict[str, Path] = {}
    for folder, name in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            dotted = ".".join([name, *parts])
            if folder == "app" and parts and parts[0] in ("storage", "widgets"):
                continue  # (there are none: app/ holds no such folders)
            out[dotted] = path
    return out


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The treechat modules `name` imports at run time, anywhere in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    skip: set[int] = set()
    for node in ast.walk(tree):
        if _type_checking_block(node):
            skip |= {id(n) for n in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base]) if base else ".".join(anchor)
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("treechat"):
                found.add(target)
    return found


def test_nothing_imports_the_folder_names() -> None:
    for path in modules().values():
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            for folder in PACKAGES:
                assert not stripped.startswith((f"from {folder}.", f"from {folder} import", f"import {folder}")), (
                    f"{path}: {stripped!r} (import treechat…, the folders are not import names)")


def test_no_import_cycles() -> None:
    mods = modules()
    known = set(mods)
    graph = {name: imports_of(name, path, known) for name, path in mods.items()}
    # a package's __init__ importing its own modules is not a cycle worth the name
    for name in graph:
        graph[name] = {t for t in graph[name] if not t.startswith(name + ".")}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(" → ".join(c) for c in cycles)


def test_layers_point_one_way() -> None:
    mods = modules()
    known = set(mods)
    for name, path in mods.items():
        deps = imports_of(name, path, known)
        if name.startswith("treechat.storage"):
            assert all(d.startswith("treechat.storage") for d in deps), (name, deps)
        elif name.startswith("treechat.widgets"):
            assert all(d.startswith(("treechat.widgets", "treechat.storage", "treechat.text")) for d in deps), (
                name, deps)
        elif name.startswith("treechat.text"):
            # the sanitiser is every front end's (CLI, print mode, export, the widgets): below them all
            assert all(d.startswith(("treechat.text", "treechat.storage")) for d in deps), (name, deps)
        elif name.startswith(("treechat.session", "treechat.agent", "treechat.llm")):
            # below the controller: nothing of it, nor of a front end
            assert not any(_under(d, CONTROLLER + FRONT_ENDS) for d in deps), (name, deps)
        elif _under(name, CONTROLLER):
            assert not any(_under(d, FRONT_ENDS) for d in deps), (name, deps)  # front ends → chat, never back


# storage/ (issue 38): a folder per backend, and what several backends share in a folder of its own
STORAGE_BACKENDS = ("memory", "jsonl", "sqlite", "postgres")
STORAGE_SHARED = {"sql": ("sqlite", "postgres"), "indexed": ("memory", "jsonl")}


def test_no_backend_imports_another() -> None:
    """A backend imports the vocabulary, the protocol and what it shares with others, never another
    backend's modules (PostgreSQL once imported SQLite's rows and search); the vocabulary imports no
    backend at all (only `open_catalog`, in the package's own `__init__`, chooses one)."""
    mods = modules()
    known = set(mods)
    folders = {n.split(".")[2] for n, p in mods.items() if p.name == "__init__.py" and n.count(".") == 2
               and n.startswith("treechat.storage.")}

    def folder(name: str) -> str | None:
        parts = name.split(".")
        return parts[2] if len(parts) > 2 and parts[:2] == ["treechat", "storage"] and parts[2] in folders else None

    for name, path in mods.items():
        if not name.startswith("treechat.storage."):
            continue  # (treechat.storage itself: open_catalog)
        mine = folder(name)
        for dep in imports_of(name, path, known):
            theirs = folder(dep)
            if theirs is None or theirs == mine:
                continue
            assert theirs not in STORAGE_BACKENDS, f"{name} imports {dep}: another backend's module"
            if theirs in STORAGE_SHARED:
                assert mine in STORAGE_SHARED[theirs], f"{name} imports {dep}: {theirs}/ is for {STORAGE_SHARED[theirs]}"


CONTROLLER = ("treechat.chat",)
FRONT_ENDS = ("treechat.tui", "treechat.cli", "treechat.acp", "treechat.protocols")  # (print mode: treechat.cli.print_mode)


def _under(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def test_the_controller_imports_no_textual() -> None:
    """The TUI and print mode share every rule of the controller: it runs without Textual."""
    for name, path in modules().items():
        if _under(name, CONTROLLER):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom | ast.Import):
                    names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                    assert not any(n.split(".")[0] in ("textual", "rich") for n in names), (name, names)


def test_every_package_folder_is_installed() -> None:
    """pyproject.toml lists the packages (the folder mapping rules out discovery): a new folder
    left out of the list would be missing from the wheel."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {name for name, path in modules().items() if path.name == "__init__.py"}
    assert found == listed, f"missing from pyproject: {found - listed}; listed but absent: {listed - found}"


def test_long_modules_are_named_for_review() -> None:
    long = {str(p.relative_to(ROOT)): n for p in modules().values()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > REVIEW_LINES}
    if long:
        warnings.warn(f"long modules (one job each?): {long}", stacklevel=1)


def test_the_controller_roles_use_each_other_publicly() -> None:
    """The roles share `ChatState` and call each other's public members only (issue 22): a role
    reaching into another's `_x` (as `Compactor` once did into its owner's `_emit`) is a hidden seam."""
    found = []
    for name, path in modules().items():
        if not _under(name, CONTROLLER):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))):
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    assert not found, found


# ---------------------------------------------------------------- Textual's private names (issue 38)

INTERNALS = ROOT / "widgets" / "textual_internals.py"
_DEFINED = (re.compile(r"\bself\.(_[a-z]\w*)\s*(?::[^=\n]+)?="),  # an instance attribute
            re.compile(r"^\s*(?:async\s+)?def\s+(_[a-z]\w*)", re.M),  # a method or function
            re.compile(r"^\s+(_[a-z]\w*)\s*(?::[^=\n]+)?=", re.M))  # a class attribute


def _private_names(paths: list[Path]) -> set[str]:
    found: set[str] = set()
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for pattern in _DEFINED:
            found.update(pattern.findall(text))
    return found


def _our_files() -> list[Path]:
    return sorted(p for folder in ("app", "storage", "widgets", "tests", "bench") for p in (ROOT / folder).rglob("*.py"))


def test_textual_s_private_names_are_in_one_module() -> None:
    """Every override or patch of Textual's private API, and every read of a private attribute of
    a Textual object, is in widgets/textual_internals.py (tests and benches included): a Textual
    upgrade is checked there, against its list (tests/widgets/test_textual_internals.py). A name
    both Textual and treechat define privately (`_run`, `_lines`) cannot be told apart here; the
    class check below covers overrides of them."""
    import textual

    theirs = _private_names(list(Path(textual.__file__).parent.rglob("*.py")))
    ours = [p for p in _our_files() if p != INTERNALS]
    only_theirs = theirs - _private_names(ours)
    found = []
    for path in ours:
        text = path.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            if re.search(r"\btextual\._[a-z]|\bfrom textual import _[a-z]", line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
            found += [f"{path.relative_to(ROOT)}:{number}: {owner}.{name}"
                      for owner, name in re.findall(r"(\w*)\.(_[a-z]\w*)\b", line)
                      if name in only_theirs and owner not in ("os", "sys")]  # (the standard library's own)
    assert not found, "Textual's private names outside widgets/textual_internals.py:\n" + "\n".join(found)


def test_no_widget_overrides_a_private_method_of_textual() -> None:
    """A class of ours deriving from Textual's defines none of the private names of its Textual
    bases (an override of `_on_key`, `_size_updated`…), except in widgets/textual_internals.py."""
    import importlib
    import inspect

    found = []
    for name in sorted(modules()):
        if not name.startswith(("treechat.widgets", "treechat.tui")) or name == "treechat.widgets.textual_internals":
            continue
        module = importlib.import_module(name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != name:
                continue
            textual_bases = [b for b in cls.__mro__ if b.__module__.split(".")[0] == "textual"]
            if not textual_bases:
                continue
            made = set(vars(type("Probe", (textual_bases[0],), {})))  # what Textual puts on every subclass
            for attr in vars(cls):
                if (attr.startswith("_") and not attr.startswith("__") and attr not in made
                        and any(attr in vars(b) for b in textual_bases)):
                    found.append(f"{name}.{cls.__name__}.{attr}")
    assert not found, found



def test_the_app_is_one_class_not_a_stack_of_mixins() -> None:
    """The App composes the widgets and routes to its features, which are objects it owns (issue
    38: at most three treechat classes in its method resolution order)."""
    from treechat.tui import TreechatApp

    ours = [c.__name__ for c in TreechatApp.__mro__ if c.__module__.startswith("treechat")]
    assert len(ours) <= 3, ours
