"""The user guide says what the code accepts: its tables are the code's one subset table."""
from __future__ import annotations

import pathlib
import re

import hpu
from hpu._subset import EXPR_RULES, RULES, STMT_RULES, accepted_table, refused_table

ROOT = pathlib.Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide.md"


def _block(text: str, tag: str) -> str:
    m = re.search(rf"<!-- {tag}:[^\n]*-->\n(.*?)<!-- end {tag} -->", text, re.S)
    assert m, f"docs/guide.md has no {tag} block"
    return m.group(1).strip()


def test_the_guides_tables_are_the_codes_tables():
    text = GUIDE.read_text()
    assert _block(text, "refused-table") == refused_table()
    assert _block(text, "accepted-table") == accepted_table()


def test_every_rule_is_used_by_a_checker():
    """A rule no checker raises would document a refusal that does not happen."""
    used = set(STMT_RULES.values()) | set(EXPR_RULES.values())
    code = "".join(p.read_text() for p in (ROOT / "hpu").rglob("*.py")
                   if p.name != "_subset.py")
    used |= {k for k in RULES if f'"{k}"' in code}
    assert used == set(RULES), sorted(set(RULES) - used)


def test_the_readme_links_the_guide_on_its_first_screen():
    first = "\n".join((ROOT / "README.md").read_text().splitlines()[:25])
    assert "(docs/guide.md)" in first


def test_a_refusal_reads_as_the_table_says():
    rule = RULES["loop-range"]
    try:
        hpu.divide_and_conquer(_loop_over_parameter)
    except hpu.TranslationError as err:
        assert rule.construct in str(err) and rule.reason in str(err)
        assert err.hint.rstrip(".").lower() == rule.rewrite.lower()
    else:  # pragma: no cover
        raise AssertionError("a loop over range(k) must be refused")


def _loop_over_parameter(a, lo, hi, k):
    if hi - lo <= 1:
        return 0
    s = 0
    for i in range(k):
        s += _loop_over_parameter(a, lo + i, hi, k)
    return s
