"""The README's two commands and CI stay in step.

CI must run the README's test command, nothing cleverer; this test fails when
one of them changes without the other.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```(?:bash|sh|console)?\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 2, "README must open with two command blocks"
    return [b.strip() for b in blocks[:2]]


def test_readme_opens_with_install_and_run_and_test_commands():
    main_job, tests = _readme_commands()
    assert "pip install" in main_job and "hpu " in main_job
    assert "pip install" in tests and "pytest" in tests


def test_ci_runs_the_readme_test_command_verbatim():
    _, tests = _readme_commands()
    ci = (ROOT / ".ci" / "run").read_text()
    assert tests in ci, f"`.ci/run` must run the README's test command exactly: {tests!r}"
