"""``hpu history``: what ``strategy="adaptive"`` has learned, shown, plotted or forgotten.

StarPU users inspect their performance models with ``starpu_perfmodel_display``
and ``_plot``; hpu's equivalent reads the rate history (:mod:`hpu._history`):

``hpu history list``
    one line per key (function specialisation, device configuration, size
    bucket): runs remembered, the median rates and the split they give now;
``hpu history show MATCH``
    every remembered run of the keys containing MATCH;
``hpu history plot MATCH --out FILE``
    each side's rate per run and the split it led to (matplotlib, a PNG);
``hpu history reset [MATCH]``
    forget the keys containing MATCH, or the whole file (also a damaged one).

``--json`` prints what ``list`` and ``show`` print as JSON.  A damaged file is an
environment problem (exit 3) whose message names the file and the fix.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["NAME", "HELP", "add_arguments", "main"]

NAME = "history"
HELP = "show, plot or reset the rates strategy='adaptive' learned (per function, device, size)"


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    p = sub.add_parser("list", help="one line per function, device and size bucket")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = sub.add_parser("show", help="every remembered run of the keys containing MATCH")
    p.add_argument("match", metavar="MATCH", help="part of a key (e.g. the function's name)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = sub.add_parser("plot", help="rates and splits per run of the keys containing MATCH")
    p.add_argument("match", metavar="MATCH", help="part of a key (e.g. the function's name)")
    p.add_argument("--out", required=True, metavar="FILE", help="where to write the PNG")
    p = sub.add_parser("reset", help="forget the keys containing MATCH (all when omitted)")
    p.add_argument("match", metavar="MATCH", nargs="?", default=None,
                   help="part of a key (default: forget everything)")


def _summary(key: str, entry: dict) -> dict:
    from hpu._strategies import adaptive_alpha

    alpha, pc, pg, used = adaptive_alpha(entry["runs"])
    return {"key": key, "function": entry.get("function"), "signature": entry.get("signature"),
            "device": entry.get("device"), "bucket": entry.get("bucket"),
            "runs": len(entry["runs"]), "cpu_rate": pc, "device_rate": pg,
            "next_alpha": alpha}


def _fmt(v, spec=".4g") -> str:
    return "-" if v is None else format(v, spec)


def _select(entries: dict, match: str) -> dict:
    return {k: e for k, e in entries.items() if match in k}


def main(args) -> int:
    from hpu._history import History

    action = getattr(args, "action", None)
    if action is None:
        print("hpu history: error: expected an action: list, show MATCH, plot MATCH --out "
              "FILE or reset [MATCH]; pass e.g. `hpu history list`", file=sys.stderr)
        return 2
    store = History()
    if action == "reset":
        n = store.reset(args.match)
        what = "every key" if args.match is None else f"keys containing {args.match!r}"
        print(f"forgot {n} key(s) ({what}) in {store.path}")
        return 0
    entries = store.entries()  # raises HistoryError (exit 3) on a damaged file
    if action == "list":
        rows = [_summary(k, e) for k, e in sorted(entries.items())]
        if args.json:
            print(json.dumps(rows, indent=1))
            return 0
        if not rows:
            print(f"no history yet in {store.path} (runs with strategy='adaptive' fill it)")
            return 0
        for r in rows:
            print(f"{r['key']}\n    {r['runs']} run(s); median rates: CPU "
                  f"{_fmt(r['cpu_rate'])}, device {_fmt(r['device_rate'])} problems/s; "
                  f"next alpha {_fmt(r['next_alpha'], '.3f')}")
        print(f"({store.path})")
        return 0
    chosen = _select(entries, args.match)
    if not chosen:
        print(f"hpu history: error: no key contains {args.match!r}; `hpu history list` shows "
              f"the keys in {store.path}", file=sys.stderr)
        return 2
    if action == "show":
        if args.json:
            print(json.dumps({k: e for k, e in chosen.items()}, indent=1))
            return 0
        for k, e in chosen.items():
            print(k)
            print(f"  {'run':>3} {'n':>10} {'y':>2} {'alpha':>6} {'cpu tasks':>9} "
                  f"{'dev tasks':>9} {'cpu s':>10} {'dev s':>10} {'cpu rate':>10} "
                  f"{'dev rate':>10}")
            for i, r in enumerate(e["runs"]):
                print(f"  {i:>3} {r['n']:>10} {r['y']:>2} {r['alpha']:>6.3f} "
                      f"{r['cpu_tasks']:>9} {r['device_tasks']:>9} {r['cpu_seconds']:>10.4g} "
                      f"{r['device_seconds']:>10.4g} {_fmt(r['cpu_rate']):>10} "
                      f"{_fmt(r['device_rate']):>10}")
        return 0
    # plot
    try:
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - matplotlib is in the test extra
        print("hpu history: error: plotting needs matplotlib: `pip install matplotlib`",
              file=sys.stderr)
        return 3
    fig = Figure(figsize=(9, 3 + 2 * len(chosen)), layout="constrained")
    axes = fig.subplots(len(chosen), 2, squeeze=False)
    for (k, e), (left, right) in zip(chosen.items(), axes):
        runs = e["runs"]
        x = range(len(runs))
        left.plot(x, [r["cpu_rate"] or float("nan") for r in runs], "o-", label="CPU")
        left.plot(x, [r["device_rate"] or float("nan") for r in runs], "s-", label="device")
        left.set_ylabel("problems / s")
        left.set_xlabel("run")
        left.legend(loc="best")
        left.set_title(k, fontsize=7)
        right.plot(x, [r["alpha"] for r in runs], "o-", color="C2")
        right.set_ylim(-0.05, 1.05)
        right.set_ylabel("alpha (CPU share)")
        right.set_xlabel("run")
    out = Path(args.out)
    if out.is_dir() or out.suffix.lower() not in (".png", ".pdf", ".svg"):
        print(f"hpu history: error: --out {args.out!r} is not a .png, .pdf or .svg file's "
              "name; pass e.g. --out history.png", file=sys.stderr)
        return 2
    try:
        fig.savefig(out)
    except OSError as err:
        print(f"hpu history: error: --out {args.out!r}: cannot write it "
              f"({err.strerror or err}); pass a path in a folder you can write",
              file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0
