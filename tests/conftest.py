import json

import pytest
from hypothesis import settings

from kvcalc.cli.app import main

# No per-example deadline: CI machines vary in speed, and speed is measured in bench/, not in tests.
settings.register_profile("kvcalc", deadline=None)
settings.load_profile("kvcalc")


class Run:
    def __init__(self, code, out, err):
        self.code, self.out, self.err = code, out, err

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run kvcalc in-process: cli('size', '--model', ...) -> Run(code, out, err)."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("KVCALC_MODEL", raising=False)
    monkeypatch.delenv("KVCALC_GPU", raising=False)

    def run(*args):
        code = main([str(a) for a in args])
        cap = capsys.readouterr()
        return Run(code, cap.out, cap.err)

    return run


@pytest.fixture
def monkeypatch_env(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("KVCALC_MODEL", raising=False)
    monkeypatch.delenv("KVCALC_GPU", raising=False)
    return monkeypatch
