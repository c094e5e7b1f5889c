"""The docs say what is true: their Python examples run, and the commands they show exist."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


@pytest.mark.parametrize("path", [p for p in DOCS if python_blocks(p)], ids=lambda p: p.name)
def test_python_examples_run(path):
    for block in python_blocks(path):
        exec(compile(block, str(path), "exec"), {})


def test_every_command_named_in_the_docs_exists():
    from kvcalc.cli.app import COMMANDS

    for path in DOCS:
        for cmd in re.findall(r"`kvcalc ([a-z][a-z-]+)", path.read_text()):
            assert cmd in COMMANDS, f"{path.name} names kvcalc {cmd}"


def test_the_check_file_example_passes(cli, tmp_path):
    text = (ROOT / "docs" / "checks.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    p = tmp_path / "plan.yaml"
    p.write_text(block)
    r = cli("check", p)
    assert r.code == 0, r.out + r.err
