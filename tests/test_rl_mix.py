"""The committed RL-like mix (bench/rl_mix/mix.jsonl) is what its generator writes, every line a
distinct patch of a task both 45be8e2 and this tree have, in grade-batch's input format."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

from cdc_env.batch import parse_line
from cdc_env.task import list_tasks

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _rl_mix():
    spec = importlib.util.spec_from_file_location("rl_mix", BENCH / "rl_mix.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_committed_mix_is_the_generators_output_and_every_line_is_new():
    """Regenerating with the documented seed gives the committed bytes (so old and new trees grade
    the same file, and a change to the generator must re-commit the file); lines are distinct
    patches, graded by grade-batch's own parser, in the documented proportions."""
    mod = _rl_mix()
    committed = (BENCH / "rl_mix" / "mix.jsonl").read_text().splitlines()
    rows = mod.make(120, 26)
    assert [json.dumps(r) for r in rows] == committed
    subs = [r["submission"] for r in rows]
    assert len(set(subs)) == len(subs)
    known = {t.id for t in list_tasks()}
    assert set(mod.TASKS) <= known
    for i, raw in enumerate(committed):
        job = parse_line(raw, i + 1, sim="icarus", hidden=32, known_tasks=known)
        assert job.task in mod.TASKS
    kinds = Counter(r["meta"]["kind"] for r in rows)
    assert {k: round(v / len(rows), 2) for k, v in kinds.items()} == mod.MIX
