"""docs/contract-checks.md keeps step with the texts it maps (issue 35: every stated rule has a check).

Every Requires sentence of tasks/common/CONTRACT.md and every sentence of each family's bug report
(the invariant, status-output, clocking and what-you-may-change sections) must contain the key of a row of
its source; every key must occur in its source; every fixture a row names must exist with the
kind its column says (on a task of the row's family); every gate rule named must exist. Sentences
are compared normalized (whitespace collapsed, backticks and asterisks dropped, lower case, each
number written #), so a small edit elsewhere in a sentence keeps its row.
"""

from __future__ import annotations

import json
import re
import tomllib

import pytest

from cdc_env import paths
from cdc_env.gate.rules import RULES

TABLE = paths.data_root() / "docs" / "contract-checks.md"
SECTIONS = ("Invariant the fix must keep.", "Status outputs", "Clocking.", "What you may change.")
COLUMNS = ("id", "source", "key", "check", "hack", "correct")


def norm(text: str) -> str:
    text = re.sub(r"[`*]", "", text).lower()
    text = re.sub(r"\d+", "#", text)
    return re.sub(r"\s+", " ", text).strip()


def sentences(text: str) -> list[str]:
    text = re.sub(r"\s+", " ", text).strip()
    return [norm(s) for s in re.split(r"(?<=[.!?])\s+(?=[A-Z`(])", text) if s.strip()]


def contract_text() -> str:
    return (paths.common_dir() / "CONTRACT.md").read_text()


def requires_sentences() -> list[str]:
    """The sentences of every ``- Requires:`` bullet (with its indented continuation lines)."""
    out: list[str] = []
    lines = contract_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("- Requires:"):
            buf = [line[len("- Requires:"):]]
            for more in lines[i + 1:]:
                if not more.startswith("  "):
                    break
                buf.append(more)
            out += sentences(" ".join(buf))
    return out


def bug_sentences(text: str) -> list[str]:
    out: list[str] = []
    for m in re.finditer(r"\*\*([^*]+)\*\*(.*?)(?=\n\*\*|\Z)", text, re.S):
        if m.group(1).startswith(SECTIONS):
            out += sentences(re.sub(r"^\s*\(checked on every seed\)\.", "", m.group(2)))
    return out


def family_tasks() -> dict[str, list[str]]:
    """family -> the task folders of it (controls are their family's first task: not separate)."""
    out: dict[str, list[str]] = {}
    for d in sorted(paths.tasks_dir().iterdir()):
        if (d / "task.toml").is_file():
            fam = tomllib.loads((d / "task.toml").read_text())["family"]
            out.setdefault(fam, []).append(d.name)
    return out


def source_sentences() -> dict[str, list[str]]:
    srcs = {"contract": requires_sentences()}
    for fam, tasks in family_tasks().items():
        seen: list[str] = []
        for t in tasks:
            for s in bug_sentences((paths.tasks_dir() / t / "BUG.md").read_text()):
                if s not in seen:
                    seen.append(s)
        srcs[fam] = seen
    return srcs


def rows() -> list[dict[str, str]]:
    out = []
    for line in TABLE.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != len(COLUMNS) or cells[0] in ("id", "---") or not line.startswith("|"):
            continue
        out.append(dict(zip(COLUMNS, cells, strict=True)))
    return out


def key_of(row: dict[str, str]) -> str:
    m = re.fullmatch(r'"(.+)"', row["key"])
    assert m, f"row {row['id']}: the key must be one quoted phrase, got {row['key']!r}"
    return norm(m.group(1)) if not m.group(1).startswith("^") else "^" + norm(m.group(1)[1:])


def matches(key: str, sentence: str) -> bool:
    return sentence.startswith(key[1:]) if key.startswith("^") else key in sentence


def test_the_table_parses_and_ids_are_unique() -> None:
    rs = rows()
    assert len(rs) > 40
    ids = [r["id"] for r in rs]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    srcs = set(source_sentences()) | {"contract-rule"}
    for r in rs:
        assert r["source"] in srcs, f"row {r['id']}: unknown source {r['source']!r}"
        key_of(r)


@pytest.mark.parametrize("source", sorted(source_sentences()))
def test_every_stated_sentence_has_a_row(source: str) -> None:
    keys = [key_of(r) for r in rows() if r["source"] == source]
    missing = [s for s in source_sentences()[source] if not any(matches(k, s) for k in keys)]
    assert not missing, (f"{source}: sentences with no row in docs/contract-checks.md (add a row "
                         f"whose key is a phrase of each): {missing}")


def test_every_row_still_matches_its_text() -> None:
    srcs = source_sentences()
    contract = norm(contract_text())
    stale = []
    for r in rows():
        k = key_of(r)
        if r["source"] == "contract-rule":
            ok = k in contract
        else:
            ok = any(matches(k, s) for s in srcs[r["source"]])
        if not ok:
            stale.append((r["id"], k))
    assert not stale, f"rows whose key no sentence of their source contains any more: {stale}"


def test_every_fixture_and_rule_named_exists() -> None:
    index = {e["name"]: e for e in json.loads((paths.fixtures_dir() / "index.json").read_text())["fixtures"]}
    fam_of = {t: fam for fam, ts in family_tasks().items() for t in ts}
    bad = []
    for r in rows():
        for col, kind in (("hack", "hack"), ("correct", "correct")):
            for name in re.findall(r"`([^`]+)`", r[col]):
                e = index.get(name)
                if e is None or e["kind"] != kind:
                    bad.append((r["id"], col, name, "missing" if e is None else e["kind"]))
                elif r["source"] in fam_of.values() and fam_of.get(e["task"]) != r["source"]:
                    bad.append((r["id"], col, name, f"a fixture of {e['task']}"))
            if r[col] != "--" and not re.findall(r"`([^`]+)`", r[col]):
                bad.append((r["id"], col, r[col], "neither fixtures nor --"))
        for rule in re.findall(r"`([A-Z]+-[A-Z-]+)`", r["check"]):
            if rule not in RULES:
                bad.append((r["id"], "check", rule, "no such gate rule"))
    assert not bad, bad


def test_the_keys_catch_a_reworded_sentence() -> None:
    """The test can fail: a sentence no key covers is reported, and a small edit away from the key
    is not."""
    keys = [key_of(r) for r in rows() if r["source"] == "reset"]
    new = norm("No output ever glitches between two clock edges.")
    assert not any(matches(k, new) for k in keys)
    edited = norm("After `arst_ni` rises it says that domain b has left reset: it never rises before "
                  "`clk_b_i` has had 3 rising edges.")
    assert any(matches(k, edited) for k in keys)
