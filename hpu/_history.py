"""The history of measured rates that ``strategy="adaptive"`` splits by.

Why a history
=============

HyCOMP (seed 001) balances the next run by each processor's measured speed in
the previous one (its "power factor"); StarPU keeps such a history per codelet
and size, and its users' main complaints are that learning takes many runs and
that one timing spike throws it off.  hpu's history is therefore

* keyed finely enough to be right: per *function specialisation* (the
  function's name and its arguments' types), *device configuration* (the
  OpenCL device and the CPU's thread count) and *size bucket* (``⌊log2 n⌋``),
  so a rate learned on 1000 keys never splits 10^8;
* useful from the second run (rates are normalised to "problems per second",
  so any split, any level, teaches both sides' speeds at once);
* robust: the split uses the median of the last :data:`WINDOW` runs, so one
  slow run moves nothing (see :mod:`hpu._strategies`).

Where and how
=============

One JSON file, ``platformdirs.user_data_dir("hpu")/history/history.json``
(``HPU_HISTORY_DIR`` replaces the folder), versioned (:data:`VERSION`),
written atomically (a temporary file, then a rename).  A file that is not this
format is refused with :class:`~hpu.HistoryError`, naming the path and the fix
(``hpu history reset``), never silently overwritten: it is what the user's
machine learned.  Each key keeps its last :data:`KEEP` runs.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from hpu._errors import HistoryError

__all__ = ["History", "history_dir", "ENV_HISTORY", "VERSION", "KEEP", "WINDOW", "key_of",
           "RUN_FIELDS"]

ENV_HISTORY = "HPU_HISTORY_DIR"
VERSION = 1
#: runs kept per key
KEEP = 20
#: runs the adaptive split takes the median of
WINDOW = 5
#: the fields of one remembered run
RUN_FIELDS = ("when", "n", "alpha", "y", "cpu_tasks", "device_tasks", "cpu_seconds",
              "device_seconds", "cpu_rate", "device_rate", "seconds")


def history_dir() -> Path:
    """``HPU_HISTORY_DIR``, else ``platformdirs.user_data_dir("hpu")/history`` (not created)."""
    raw = os.environ.get(ENV_HISTORY, "").strip()
    if raw:
        return Path(raw)
    import platformdirs

    return Path(platformdirs.user_data_dir("hpu")) / "history"


def key_of(function: str, signature: str, device: str, bucket: int) -> str:
    """The text key of one (function specialisation, device configuration, size bucket)."""
    return f"{function} | {signature} | {device} | 2^{bucket}"


class History:
    """The history file (see the module docstring); ``path`` replaces the default file."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path is not None else history_dir() / "history.json"

    # -- reading ---------------------------------------------------------------
    def _refuse(self, what: str) -> HistoryError:
        return HistoryError(
            f"the rate history {self.path} {what}; it was not written by this hpu "
            f"(history format {VERSION}) or was damaged: delete it or run `hpu history "
            "reset` (strategy='adaptive' then learns again from the next runs)")

    def load(self) -> dict[str, Any]:
        """``{"version": VERSION, "entries": {key: {...}}}``; an empty history if no file."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return {"version": VERSION, "entries": {}}
        except OSError as err:
            # a path problem (a file where its folder should be, no permission), not a
            # damaged history: `hpu history reset` could not mend it
            raise HistoryError(
                f"the rate history {self.path} cannot be read ({err.strerror or err}): its "
                f"folder is {str(self.path.parent)!r} (HPU_HISTORY_DIR, or the user's data "
                "folder); make that a folder you can read and write") from None
        try:
            data = json.loads(text)
        except ValueError as err:
            raise self._refuse(f"is not JSON ({err})") from None
        if not isinstance(data, dict) or data.get("version") != VERSION:
            found = data.get("version") if isinstance(data, dict) else type(data).__name__
            raise self._refuse(f"has version {found!r}, expected {VERSION}")
        entries = data.get("entries")
        if not isinstance(entries, dict):
            raise self._refuse("has no 'entries' object")
        for key, e in entries.items():
            if not (isinstance(e, dict) and isinstance(e.get("runs"), list)
                    and all(isinstance(r, dict) and set(RUN_FIELDS) <= set(r)
                            for r in e["runs"])):
                raise self._refuse(f"has a malformed entry {key!r}")
        return data

    def entries(self) -> dict[str, dict]:
        return self.load()["entries"]

    def runs(self, key: str) -> list[dict]:
        """The remembered runs of ``key``, oldest first."""
        e = self.entries().get(key)
        return list(e["runs"]) if e else []

    # -- writing ---------------------------------------------------------------
    def _save(self, data: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, self.path)

    def record(self, key: str, meta: dict, run: dict) -> None:
        """Append ``run`` (the :data:`RUN_FIELDS`; ``when`` filled in) to ``key``."""
        data = self.load()
        entry = data["entries"].setdefault(key, {**meta, "runs": []})
        row = {"when": time.time(), **run}
        missing = [f for f in RUN_FIELDS if f not in row]
        if missing:
            raise ValueError(f"a history run lacks {', '.join(missing)}: expected every one of "
                             f"{', '.join(RUN_FIELDS)}")
        entry["runs"] = (entry["runs"] + [row])[-KEEP:]
        self._save(data)

    def reset(self, match: str | None = None) -> int:
        """Forget the keys containing ``match`` (every key, and a damaged file, when None);
        return how many keys were forgotten."""
        if match is None:
            try:
                count = len(self.entries())
            except HistoryError:
                count = 0
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
            return count
        data = self.load()
        gone = [k for k in data["entries"] if match in k]
        for k in gone:
            del data["entries"][k]
        if gone:
            self._save(data)
        return len(gone)
