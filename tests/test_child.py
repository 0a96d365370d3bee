"""hpu._child: children import the parent's hpu, whatever folder they start in."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import hpu
from hpu import _child


def test_the_command_leaves_the_current_folder_off_the_path():
    cmd = _child.command("-c", "pass")
    assert cmd[1] == "-P" and cmd[2:] == ["-c", "pass"]


def test_the_environment_leads_with_the_folder_this_hpu_came_from(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/elsewhere", "/other"]))
    env = _child.environment(EXTRA="1")
    parts = env["PYTHONPATH"].split(os.pathsep)
    assert parts[0] == str(Path(hpu.__file__).resolve().parent.parent)
    assert parts[-2:] == ["/elsewhere", "/other"] and env["EXTRA"] == "1"


def test_a_child_started_in_a_checkout_imports_the_parents_hpu(tmp_path):
    """The README's commands run in a checkout: a child must not import its ``hpu/``."""
    decoy = tmp_path / "hpu"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise ImportError('the decoy hpu was imported')\n")
    code = "import hpu, sys; sys.stdout.write(hpu.__file__)"
    plain = subprocess.run([_child.command()[0], "-c", code],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert plain.returncode != 0 and "decoy" in plain.stderr      # what went wrong before
    done = subprocess.run(_child.command("-c", code), cwd=tmp_path, env=_child.environment(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout).resolve() == Path(hpu.__file__).resolve()
