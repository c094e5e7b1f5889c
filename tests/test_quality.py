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
