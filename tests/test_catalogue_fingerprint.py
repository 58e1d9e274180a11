"""A catalogue entry's code fingerprint covers the trusted models its family's builds elaborate:
a model no design of the family names (another family's primitive) leaves it as it is, a change
to a model the family uses changes it."""

from __future__ import annotations

from pathlib import Path

from cdc_env import paths
from cdc_env.families import mint


def test_a_model_no_design_names_leaves_the_fingerprint(tmp_path, monkeypatch):
    before = mint.code_fingerprint("fifo")
    extra = tmp_path / "cdc_unused.v"
    extra.write_text("module cdc_unused_model (input wire a_i, output wire q_o);\n"
                     "  assign q_o = a_i;\nendmodule\n")
    files = paths.primitive_files()
    monkeypatch.setattr(paths, "primitive_files", lambda: [*files, extra])
    assert extra not in mint.elaborated_models("fifo")
    assert mint.code_fingerprint("fifo") == before


def test_a_change_to_a_model_the_family_uses_changes_it(tmp_path, monkeypatch):
    before = mint.code_fingerprint("fifo")
    files = paths.primitive_files()
    sync = next(f for f in files if f.name == "cdc_sync.v")
    changed = tmp_path / "cdc_sync.v"
    changed.write_text(Path(sync).read_text() + "\n// changed\n")
    monkeypatch.setattr(paths, "primitive_files", lambda: [changed if f == sync else f for f in files])
    assert changed in mint.elaborated_models("fifo")
    assert mint.code_fingerprint("fifo") != before


def test_every_shipped_entry_is_current():
    for row in mint.summary():
        assert row["stale"] == 0, row
