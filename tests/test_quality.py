"""The project's habits, run with the tests: ruff (lint and format), mypy (strict on engine, specs
and units) and the import contracts of pyproject.toml. Each must be installed (the test extra
brings them): a missing tool fails here rather than passing unseen."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def run(*cmd):
    exe = shutil.which(cmd[0], path=str(Path(sys.executable).parent)) or shutil.which(cmd[0])
    assert exe, f"{cmd[0]} is not installed: pip install '.[test]'"
    return subprocess.run([exe, *cmd[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_lint():
    r = run("ruff", "check", "kvcalc", "tests", "bench")
    assert r.returncode == 0, r.stdout + r.stderr


def test_ruff_format():
    r = run("ruff", "format", "--check", "kvcalc", "tests", "bench")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy():
    r = run("mypy")
    assert r.returncode == 0, r.stdout + r.stderr


def test_import_contracts():
    r = run("lint-imports")
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_public_api_has_real_types():
    # tests/typed_api.py uses kvcalc's exports without annotations; under --strict an export typed Any
    # fails it (the lazy module __getattr__ alone types every name Any).
    r = run("mypy", "--strict", "tests/typed_api.py")
    assert r.returncode == 0, r.stdout + r.stderr


def test_all_names_every_lazy_export():
    import kvcalc

    assert kvcalc.__all__ == sorted(kvcalc._LAZY) + ["__version__"]


def test_no_import_circles_even_through_lazy_imports():
    """Issue 20: no module of kvcalc reaches itself through its imports, counting the ones inside
    functions (lazy) too; the package's TYPE_CHECKING block is type-only and left out."""
    import ast
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "kvcalc"
    deps: dict[str, set[str]] = {}
    for p in root.rglob("*.py"):
        mod = ".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
        found: set[str] = set()
        if mod != "kvcalc":
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kvcalc"):
                    if node.module == "kvcalc":
                        found |= {f"kvcalc.{a.name}" for a in node.names}
                    else:
                        found.add(node.module)
        deps[mod] = found
    # Tarjan's strongly connected components: any of more than one module is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in deps[v]:
            if w not in deps:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in deps:
        if v not in index:
            visit(v)
    assert not circles, circles
