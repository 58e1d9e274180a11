"""The allowlist reads a diff as GNU patch does: for each diff, the editable file the allowlist
returns is the file `patch --fuzz=0` makes of a copy of the task, and a diff patch would apply to
any other file (or use to create, delete, rename or re-mode one) is refused.

Each case runs the real `patch` (GNU patch 2.7, no -p: the base name of each header, as the
allowlist takes any directory for the editable file) on a fresh copy of the task folder and
compares every file of the copy before and after. A whole-file diff from /dev/null is compared on
a copy without the editable file (the allowlist takes it as the file's new text; patch on the
shipped copy would refuse to create a file that exists). The allowlist refuses a few diffs that
patch applies, each listed in DELIBERATE with its reason; the sweep asserts that every refusal of
a diff patch applies falls in one of them.
"""

from __future__ import annotations

import difflib
import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cdc_env.fixtures import load_fixtures
from cdc_env.submission import MAX_OFFSET, allowlist
from cdc_env.task import load_task

pytestmark = pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch is not installed")

TASK = load_task("handshake")
ORIG = TASK.defective_text
FIXED = TASK.reference_text
TB_FIRST = TASK.text(TASK.testbench).splitlines(True)[0]


def udiff(old: str = ORIG, new: str = FIXED, a: str = "a/hs_top.v", b: str = "b/hs_top.v") -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), a, b))


BASE = udiff()
TB_DIFF = f"--- a/tb.v\n+++ b/tb.v\n@@ -1 +1 @@\n-{TB_FIRST}+// relaxed\n"
ONE = udiff(new=ORIG.replace("reg  busy_q;", "reg  busy_q;  // set while a request is open", 1))
WHOLE = "".join("+" + ln for ln in FIXED.splitlines(True))
DEVNULL = f"--- /dev/null\n+++ b/hs_top.v\n@@ -0,0 +1,{len(FIXED.splitlines())} @@\n" + WHOLE


def _snapshot(root: Path) -> dict:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_symlink():
            out[str(p.relative_to(root))] = ("link", os.readlink(p))
        elif p.is_file():
            out[str(p.relative_to(root))] = ("file", p.read_bytes(), p.stat().st_mode)
    return out


def gnu_patch(diff: str, tmp: Path, without_editable: bool = False) -> tuple[str, object]:
    """What GNU patch does to a copy of the task: ("applied", the editable file's text),
    ("other", the other paths it changed) or ("failed", its output)."""
    root = tmp / "task"
    shutil.copytree(TASK.dir, root, symlinks=True)
    if without_editable:
        (root / TASK.editable).unlink()
    before = _snapshot(root)
    patch_file = tmp / "in.patch"  # the allowlist reads a last line without newline as if it had one
    patch_file.write_bytes((diff if diff.endswith("\n") else diff + "\n").encode("utf-8"))
    run = subprocess.run(["patch", "--batch", "--forward", "--fuzz=0", "--reject-file=-",
                          "--no-backup-if-mismatch", "-i", str(patch_file)],
                         cwd=root, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    after = _snapshot(root)
    shutil.rmtree(root)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    other = [c for c in changed if c != TASK.editable]
    if other:
        return "other", other
    if run.returncode:
        return "failed", run.stdout + run.stderr
    text = after[TASK.editable][1].decode("utf-8")
    text = text if text.endswith("\n") else text + "\n"  # the allowlist ends the file with a newline
    return "applied", text[1:] if text.startswith("\ufeff") else text


# Diffs GNU patch applies that the allowlist refuses, by the start of the reason it gives.
DELIBERATE = {
    "line ": "a hunk patch would skip (after a blank line or text between hunks, or BOM-prefixed): "
             "refused rather than graded without it",
    "the diff does not apply": f"a hunk patch places more than {MAX_OFFSET} lines from its header",
    "the diff touches": "a 'diff --git' line naming another file, whose ---/+++ lines name the editable one",
}


def check(diff: str, tmp: Path, without_editable: bool = False) -> tuple[str, str]:
    """Compare the allowlist with GNU patch on ``diff``; return (patch's outcome, allowlist's reason)."""
    ours = allowlist(TASK, diff)
    kind, got = gnu_patch(diff, tmp, without_editable)
    if ours.ok:
        assert kind == "applied", f"accepted, but patch {kind}: {got}"
        assert ours.text == got, "accepted, but the text differs from what patch makes"
    elif kind == "applied":
        assert any(ours.reason.startswith(k) for k in DELIBERATE), f"refused; patch applies it: {ours.reason}"
    return kind, ours.reason


def _shift(n: int) -> str:
    pad = "".join(f"// pad {k}\n" for k in range(n))
    return udiff(pad + ORIG, pad + FIXED)


def _hunks(diff: str) -> list[str]:
    return re.split(r"(?m)^(?=@@ )", diff)


CASES = {
    # accepted, as patch applies them
    "plain": (BASE, "applied"),
    "markdown fence and prose": ("Fix:\n\n```diff\n" + BASE + "```\n\nDone.\n", "applied"),
    "format-patch signature": ("Subject: [PATCH] fix\n---\n hs_top.v | 2 +-\n\n"
                               "diff --git a/hs_top.v b/hs_top.v\nindex 1234567..89abcde 100644\n"
                               + BASE + "-- \n2.39.5\n\n", "applied"),
    "bom at the start": ("\ufeff" + BASE, "applied"),
    "bom before diff --git": ("intro\n\ufeffdiff --git a/hs_top.v b/hs_top.v\n" + BASE, "applied"),
    "bom before +++": (BASE.replace("+++ ", "\ufeff+++ ", 1), "applied"),
    "indented diff": ("".join("    " + ln for ln in BASE.splitlines(True)), "applied"),
    "crlf diff": (BASE.replace("\n", "\r\n"), "applied"),
    "no final newline": (BASE.rstrip("\n"), "applied"),
    "comment lines": (BASE.replace("\n@@ -19", "\n# a note\n@@ -19", 1), "applied"),
    "index line ignored beside ---/+++": ("Index: tb.v\n" + BASE, "applied"),
    "added lines past the count are text": (ONE + "+  // not counted: text after the diff\n", "applied"),
    "short count anchors the hunk at the end": (BASE.replace("@@ -53,11 +52,10 @@", "@@ -53,9 +52,8 @@"),
                                                 "failed"),
    "offset within the bound": (_shift(7), "applied"),
    # red2 W5: a chmod of the editable file (patch sets the mode; the text is what is graded), and
    # two sections for it, applied in order
    "git mode change": ("diff --git a/hs_top.v b/hs_top.v\nold mode 100644\nnew mode 100755\n" + BASE,
                        "applied"),
    "two sections": (BASE + udiff(FIXED, "// note\n" + FIXED), "applied"),
    "two sections, the second not applying": (BASE + BASE, "failed"),
    # a creation of the editable file (compared on a copy without it)
    "whole file from /dev/null": (DEVNULL, "applied"),
    "git whole file": ("diff --git a/hs_top.v b/hs_top.v\nnew file mode 100644\nindex 0000000..1234567\n"
                       + DEVNULL, "applied"),
    # refused: patch would touch another file, or stop
    "trailing diff of tb.v": (BASE + "\nAlso:\n" + TB_DIFF, "other"),
    "/dev/null naming tb.v": ("--- /dev/null\n+++ b/tb.v\n@@ -0,0 +1 @@\n+module hs_tb; endmodule\n",
                              "failed"),
    "trailing git delete": (BASE + "diff --git a/tb.v b/tb.v\ndeleted file mode 100644\n", "failed"),
    "bom hides ---": (f"\ufeff--- a/hs_top.v\n+++ b/tb.v\n@@ -1 +1 @@\n-{TB_FIRST}+// relaxed\n", "other"),
    "*** names tb.v": (BASE.replace("\n@@", "\n*** tb.v\n@@", 1), "failed"),
    "long count swallows the next hunk": (BASE.replace("@@ -5,7 +5,9 @@", "@@ -5,9 +5,11 @@"), "failed"),
    "context that differs": (BASE.replace(" module hs_top (", " module  hs_top (", 1), "failed"),
    # refused although patch applies them (DELIBERATE)
    "blank line between hunks": (BASE.replace("\n@@ -19", "\n\n@@ -19", 1), "applied"),
    "bom before @@": (BASE.replace("\n@@ -19", "\n\ufeff@@ -19", 1), "applied"),
    "offset beyond the bound": (_shift(MAX_OFFSET + 5), "applied"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_allowlist_agrees_with_gnu_patch(name, tmp_path):
    diff, expected = CASES[name]
    kind, _reason = check(diff, tmp_path, without_editable="/dev/null\n+++ b/hs_top.v" in diff)
    assert kind == expected, f"the case no longer shows what it names: patch {kind}"


def test_the_fixture_diffs_agree_with_gnu_patch(tmp_path):
    """Every diff fixture (all are the handshake task's): accepted exactly when patch applies it
    to the editable file only, with patch's text."""
    diffs = [fx for fx in load_fixtures() if (fx.folder / "submission.diff").is_file()]
    assert len(diffs) >= 15 and {fx.task for fx in diffs} == {TASK.id}
    for fx in diffs:
        diff = fx.submission().decode("utf-8")
        work = tmp_path / fx.name
        work.mkdir()
        check(diff, work, without_editable=diff.startswith("--- /dev/null\n+++ b/hs_top.v"))


POOL = ["\n", "Some prose.\n", "```\n", "-- \n", "2.39.5\n", "\ufeff--- a/hs_top.v\n", "# note\n",
        "@@ -1 +1 @@\n", "--- a/tb.v\n", "+++ b/tb.v\n", "Index: tb.v\n", "diff --git a/tb.v b/tb.v\n",
        "new file mode 100644\n", "\\ No newline at end of file\n", "+extra\n", " \n", "d\n", ".\n",
        "*** tb.v\n", "********\n", "rename from hs_top.v\n", "=  reg  busy_q;\n", TB_DIFF, BASE]


def _mutate(rng: random.Random, diff: str) -> str:
    lines = diff.splitlines(True)
    for _ in range(rng.randint(1, 2)):
        op, at = rng.randrange(6), rng.randrange(len(lines) + 1)
        if op <= 1:
            lines.insert(at, rng.choice(POOL))
        elif op == 2:
            heads = [k for k, ln in enumerate(lines) if ln.startswith("@@ -")]
            k = rng.choice(heads)
            nums = re.split(r"(\d+)", lines[k])
            j = 2 * rng.randrange((len(nums) - 1) // 2) + 1
            nums[j] = str(max(0, int(nums[j]) + rng.choice((-2, -1, 1, 2))))
            lines[k] = "".join(nums)
        elif op == 3 and at < len(lines):
            lines[at] = "\ufeff" + lines[at]
        elif op == 4 and at < len(lines):
            del lines[at]
        elif op == 5:  # another file's diff after the last hunk
            lines.append(rng.choice(("", "\n", "Also:\n", "-- \n2.39.5\n")) + TB_DIFF)
    return "".join(lines)


def test_a_sweep_of_mutated_diffs_agrees_with_gnu_patch(tmp_path):
    """200 diffs made from the reference diff by inserting prose, headers and hunk-like lines,
    changing hunk counts, prefixing BOMs, dropping lines and appending a tb.v diff (seeded): each
    accepted one is what patch makes; each refused one patch also refuses, or is DELIBERATE."""
    rng = random.Random(36)
    seen = {"applied": 0, "other": 0, "failed": 0}
    for k in range(200):
        work = tmp_path / str(k)
        work.mkdir()
        kind, _ = check(_mutate(rng, BASE), work)
        seen[kind] += 1
    assert seen["applied"] >= 10 and seen["other"] >= 10, seen  # the sweep reaches each outcome
