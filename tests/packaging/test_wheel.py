"""The built wheel is a working install (issue 9): one `treechat` package with its stylesheet and
data files, `treechat --version`, `python -m treechat`, and the app starting from another folder.

The wheel goes into a fresh virtualenv without its dependencies; they are borrowed from the
test's own environment by a plain path entry (so the editable install's import hook is *not*
loaded, and `import treechat` can only find the wheel's copy)."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(work / "dist"), str(ROOT)], check=True, timeout=300)
    wheel = next((work / "dist").glob("treechat-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "treechat/styles.tcss" in names and "treechat/storage/sqlite/migrations/001_initial.sql" in names
    assert {n.split("/")[0] for n in names if not n.startswith("treechat-")} == {"treechat"}  # nothing else on top
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  check=True, capture_output=True, text=True).stdout.strip())
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(purelib),
                    str(wheel)], check=True, timeout=300)
    # the console script: what pip writes for [project.scripts] when it installs into the venv itself
    script = venv / "bin" / "treechat"
    script.write_text(f"#!{venv / 'bin' / 'python'}\nimport sys\nfrom treechat.cli.main import main\nsys.exit(main())\n")
    script.chmod(0o755)
    deps = [p for p in site.getsitepackages() if Path(p).exists()]
    (purelib / "zz_borrowed_deps.pth").write_text("\n".join(deps) + "\n")  # plain paths: no .pth of theirs runs
    return venv


def run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "TREECHAT"))}
    env["TREECHAT_HOME"] = str(cwd / "home")
    return subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_version_and_python_m_from_another_folder(installed: Path, tmp_path: Path) -> None:
    out = run(installed, str(installed / "bin" / "treechat"), "--version", cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.startswith("treechat "), out.stderr
    out = run(installed, str(installed / "bin" / "python"), "-m", "treechat", "--version", cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.startswith("treechat "), out.stderr
    where = run(installed, str(installed / "bin" / "python"), "-c", "import treechat; print(treechat.__file__)",
                cwd=tmp_path)
    assert where.stdout.strip().startswith(str(installed)), where.stdout  # the wheel's copy, not the checkout


def test_the_app_starts_headless_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    program = """
import asyncio
from treechat.bootstrap import load_environment, open_store
from treechat.chat import Chat
from treechat.tui import TreechatApp

async def main():
    env = load_environment()
    catalog = await open_store("sqlite", env.settings.home)
    chat = Chat(catalog=catalog, settings=env.settings, registry=env.registry)
    app = TreechatApp(chat, await catalog.create(), detect_servers=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        print("FOOTER" if app.query("FittedFooter") and app.composer.has_focus else "NO")
    await chat.close()
    await catalog.close()

asyncio.run(main())
"""
    out = run(installed, str(installed / "bin" / "python"), "-c", program, cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "FOOTER", out.stderr[-2000:]
