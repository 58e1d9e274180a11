"""docs/gate.md opens with a table of every gate rule: each rule of cdc_env/gate/rules.py has one
row, its "refuses" text is the rule's own line, and its proof exists and trips that rule."""

from __future__ import annotations

from pathlib import Path

from cdc_env.gate.rules import RULES

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "gate.md"


def _rows() -> dict[str, list[str]]:
    text = DOC.read_text()
    table = text[text.index("## Rules"):].split("\n## ", 1)[0]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] not in ("ID", "") and not set(cells[0]) <= {"-"}:
            assert cells[0] not in rows, f"two rows for {cells[0]}"
            rows[cells[0]] = cells
    return rows


def _expect(case: Path) -> str:
    for line in case.read_text().splitlines()[:5]:
        if line.startswith("// expect:"):
            return line.split(":", 1)[1].strip()
    return ""


def test_the_rule_table_has_one_row_per_rule_in_order():
    rows = _rows()
    assert list(rows) == list(RULES), "docs/gate.md's rule table and rules.py differ"
    for rule, cells in rows.items():
        assert len(cells) == 5, (rule, cells)
        assert cells[1] == RULES[rule], f"{rule}: the table's 'refuses' is not rules.py's line"
        assert cells[2] and cells[3], f"{rule}: hazard and example must be filled in"


def test_every_rows_proof_exists_and_trips_its_rule():
    for rule, cells in _rows().items():
        proof = cells[4].split("`")[1]
        path = ROOT / proof
        assert path.is_file(), f"{rule}: proof {proof} does not exist"
        if proof.startswith("tests/gate_cases/"):
            assert ".trips" in path.name and _expect(path) == rule, f"{rule}: {proof} does not trip it"
        else:
            assert rule == "GATE-INTERNAL", f"{rule}: only GATE-INTERNAL is proved by fault injection"
