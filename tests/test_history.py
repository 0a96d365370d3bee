"""Tests of hpu._history (the rate store) and ``hpu history list|show|plot|reset``."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpu import cli
from hpu._errors import HistoryError, HpuError
from hpu._history import KEEP, RUN_FIELDS, VERSION, History, history_dir, key_of


def _row(**over):
    row = {f: 1.0 for f in RUN_FIELDS if f != "when"}
    row.update(n=1000, y=3, cpu_tasks=4, device_tasks=4)
    row.update(over)
    return row


META = {"function": "f", "signature": "a: int32[1d]", "device": "dev", "bucket": 10}


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("HPU_HISTORY_DIR", str(tmp_path / "hist"))
    return History()


def test_the_folder_comes_from_the_environment(store, tmp_path):
    assert history_dir() == tmp_path / "hist"
    assert store.path == tmp_path / "hist" / "history.json"


@settings(max_examples=20, deadline=None)
@given(rates=st.lists(st.tuples(st.floats(0.01, 1e6), st.floats(0.01, 1e6)), min_size=1,
                      max_size=30))
def test_runs_round_trip_and_only_the_last_KEEP_stay(tmp_path_factory, rates):
    store = History(tmp_path_factory.mktemp("h") / "history.json")
    key = key_of("f", "a: int32[1d]", "dev", 10)
    for c, g in rates:
        store.record(key, META, _row(cpu_rate=c, device_rate=g))
    runs = store.runs(key)
    assert [(r["cpu_rate"], r["device_rate"]) for r in runs] == rates[-KEEP:]
    assert all("when" in r for r in runs)
    assert json.loads(store.path.read_text())["version"] == VERSION


@pytest.mark.parametrize("text, says", [
    ("{not json", "is not JSON"),
    (json.dumps({"version": 99, "entries": {}}), "version 99"),
    (json.dumps([1, 2]), "version 'list'"),
    (json.dumps({"version": VERSION}), "no 'entries'"),
    (json.dumps({"version": VERSION, "entries": {"k": {"runs": [{"alpha": 1}]}}}),
     "malformed entry 'k'"),
])
def test_a_damaged_file_is_refused_with_its_path_and_the_fix(store, text, says):
    store.path.parent.mkdir(parents=True)
    store.path.write_text(text)
    with pytest.raises(HistoryError) as err:
        store.runs("k")
    msg = str(err.value)
    assert says in msg and str(store.path) in msg and "hpu history reset" in msg
    assert isinstance(err.value, HpuError)
    assert store.path.read_text() == text  # never overwritten silently
    with pytest.raises(HistoryError):
        store.record("k", META, _row())


def test_reset_forgets_matching_keys_or_everything(store):
    a, b = key_of("f", "s", "dev", 10), key_of("g", "s", "dev", 10)
    store.record(a, META, _row())
    store.record(b, META, _row())
    assert store.reset("f |") == 1
    assert list(store.entries()) == [b]
    assert store.reset() == 1
    assert not store.path.exists()


def test_reset_removes_a_damaged_file(store):
    store.path.parent.mkdir(parents=True)
    store.path.write_text("garbage")
    store.reset()
    assert store.entries() == {}


def test_a_run_lacking_a_field_is_refused(store):
    row = _row()
    del row["cpu_rate"]
    with pytest.raises(ValueError, match="cpu_rate"):
        store.record("k", META, row)


# ------------------------------------------------------------------ the command

def test_cli_list_show_plot_reset(store, tmp_path, capsys):
    key = key_of("mergesort", "a: int32[1d]", "dev", 10)
    for c, g in [(3.0, 1.0), (3.0, 1.0), (0.001, 1.0)]:
        store.record(key, {**META, "function": "mergesort"}, _row(cpu_rate=c, device_rate=g))
    assert cli.main(["history", "list", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["key"] == key and row["runs"] == 3
    assert row["cpu_rate"] == 3.0 and row["next_alpha"] == pytest.approx(0.75)
    assert cli.main(["history", "list"]) == 0
    assert "next alpha 0.750" in capsys.readouterr().out
    assert cli.main(["history", "show", "mergesort", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)[key]["runs"]) == 3
    assert cli.main(["history", "show", "mergesort"]) == 0
    assert key in capsys.readouterr().out
    pytest.importorskip("matplotlib")
    out = tmp_path / "h.png"
    assert cli.main(["history", "plot", "merge", "--out", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    # a folder (it wrote FOLDER.png, saying FOLDER), another format, a missing folder:
    # one line each, exit 2, nothing written
    for bad in (tmp_path, tmp_path / "h.txt", tmp_path / "no" / "such" / "h.png"):
        capsys.readouterr()
        assert cli.main(["history", "plot", "merge", "--out", str(bad)]) == 2
        assert capsys.readouterr().err.startswith("hpu history: error: --out")
    assert not (tmp_path.parent / (tmp_path.name + ".png")).exists()
    assert cli.main(["history", "show", "nothing-like-this"]) == 2
    assert "hpu history list" in capsys.readouterr().err
    assert cli.main(["history", "reset", "mergesort"]) == 0
    assert "forgot 1" in capsys.readouterr().out
    assert cli.main(["history", "list"]) == 0
    assert "no history yet" in capsys.readouterr().out


def test_cli_reports_a_damaged_file_and_exits_3(store, capsys):
    store.path.parent.mkdir(parents=True)
    store.path.write_text("[")
    assert cli.main(["history", "list"]) == 3
    err = capsys.readouterr().err
    assert str(store.path) in err and "hpu history reset" in err
    assert cli.main(["history", "reset"]) == 0
    assert cli.main(["history", "list"]) == 0


def test_cli_without_an_action_exits_2(capsys):
    assert cli.main(["history"]) == 2
    assert "hpu history list" in capsys.readouterr().err


def test_a_history_folder_that_is_a_file_names_the_folder_not_a_reset(tmp_path):
    """HPU_HISTORY_DIR naming a file: the advice was `hpu history reset`, which cannot
    mend a path; it names the folder to make."""
    blocker = tmp_path / "afile"
    blocker.write_text("")
    with pytest.raises(HistoryError, match="make that a folder") as err:
        History(blocker / "history.json").load()
    assert "history reset" not in str(err.value) and str(blocker) in str(err.value)
