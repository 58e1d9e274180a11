"""The results store: results.jsonl, one row per (task, rung, sample), append-only; ``--resume``
keeps what finished and runs the rest (endpoint errors included) again."""

from __future__ import annotations

import json
import threading
from pathlib import Path

ROW_FIELDS = ("task", "family", "rung", "control", "mode", "model", "sample", "reward", "label", "overfit",
              "failed_stage", "findings", "tool_calls", "sim_runs", "tokens_in", "tokens_out", "wall_s",
              "grade_cpu_s", "trajectory")
NOT_RESULTS = ("endpoint_error", "tool_error")  # rows that say nothing about the model: reward null


def row_key(row: dict) -> tuple:
    """A rollout's identity: (task, rung, sample); rows from before rungs were at ``full``."""
    return row["task"], row.get("rung", "full"), row["sample"]


class Results:
    """results.jsonl: append-only, one row per (task, rung, sample); ``--resume`` keeps what finished."""

    def __init__(self, out_dir: Path) -> None:
        self.path = out_dir / "results.jsonl"
        self._lock = threading.Lock()

    def load(self) -> list[dict]:
        if not self.path.is_file():
            return []
        rows = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a line cut short by an interrupted run
            if isinstance(row, dict) and "task" in row and "sample" in row:
                rows.append(row)
        return rows

    def keep_finished(self) -> list[dict]:
        """Rewrite the file with one row per rollout, dropping endpoint errors (they run again)."""
        kept: dict[tuple, dict] = {}
        for row in self.load():
            if row["label"] != "endpoint_error":
                kept.setdefault(row_key(row), row)
        rows = list(kept.values())
        self.path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return rows

    def append(self, row: dict) -> None:
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
            f.flush()
