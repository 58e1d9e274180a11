"""Task.design and Task.files: the one way to get a design's text and the design-files dict."""

from __future__ import annotations

import shutil

import pytest

from cdc_env.errors import CdcError
from cdc_env.task import DESIGN_KINDS, list_tasks, load_task


@pytest.mark.parametrize("task", list_tasks(), ids=lambda t: t.id)
def test_design_kinds_are_the_task_files(task):
    assert task.design("defective") == task.path(task.editable).read_text()
    assert task.design("reference") == task.path(task.reference).read_text()
    assert task.design("clean") == task.path(task.clean).read_text()
    assert len({task.design(k) for k in DESIGN_KINDS}) == 3  # three different designs


@pytest.mark.parametrize("task", list_tasks(), ids=lambda t: t.id)
def test_files_are_the_submission_plus_the_read_only_sources(task):
    files = task.files("module m; endmodule\n")
    assert list(files) == [task.editable, *task.sources]
    assert files[task.editable] == "module m; endmodule\n"
    assert all(files[rel] == task.path(rel).read_text() for rel in task.sources)


def test_files_of_a_task_with_read_only_sources(tmp_path):
    folder = tmp_path / "with_sources"
    shutil.copytree(load_task("handshake").dir, folder)
    (folder / "helper.v").write_text("module helper; endmodule\n")
    toml = (folder / "task.toml").read_text().replace('clean = "clean/hs_top.v"',
                                                      'clean = "clean/hs_top.v"\nsources = ["helper.v"]')
    (folder / "task.toml").write_text(toml)
    task = load_task(folder)
    assert task.files("x") == {"hs_top.v": "x", "helper.v": "module helper; endmodule\n"}


def test_an_unknown_design_kind_is_a_one_line_error():
    with pytest.raises(CdcError, match="unknown design kind 'fixed'"):
        load_task("handshake").design("fixed")
