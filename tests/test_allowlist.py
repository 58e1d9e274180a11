"""The allowlist stage: a submission becomes exactly the new text of the task's editable file,
or is refused with a reason. Diffs that touch other files, create, delete, rename, re-mode or
symlink files, name any file but the editable one, climb with .., or name files like simulator
options never get through."""

from __future__ import annotations

import difflib

import pytest

from cdc_env.submission import MAX_BYTES, allowlist
from cdc_env.task import load_task

TASK = load_task("handshake")
ORIG = TASK.defective_text
FIXED = TASK.reference_text


def make_diff(old_name: str = "a/hs_top.v", new_name: str = "b/hs_top.v", new: str = FIXED,
              git: bool = False, extra: str = "") -> str:
    body = "".join(difflib.unified_diff(ORIG.splitlines(True), new.splitlines(True), old_name, new_name))
    head = f"diff --git {old_name} {new_name}\n{extra}" if git else extra
    return head + body


def test_full_file_is_accepted_as_is():
    res = allowlist(TASK, FIXED)
    assert res.ok and res.form == "file" and res.text == FIXED


def test_unified_diff_applies_to_the_defective_file():
    res = allowlist(TASK, make_diff())
    assert res.ok and res.form == "diff" and res.text == FIXED


def test_git_diff_with_index_line_applies():
    res = allowlist(TASK, make_diff(git=True, extra="index 1234567..89abcde 100644\n"))
    assert res.ok and res.text == FIXED


def test_crlf_diff_applies():
    res = allowlist(TASK, make_diff().replace("\n", "\r\n"))
    assert res.ok and res.text == FIXED


def test_bytes_submission_is_decoded():
    res = allowlist(TASK, FIXED.encode())
    assert res.ok and res.text == FIXED


@pytest.mark.parametrize("old,new,why", [
    ("a/tb.v", "b/tb.v", "only 'hs_top.v'"),
    ("a/hs_top.v", "b/tb.v", "only 'hs_top.v'"),
    ("a/../hs_top.v", "b/../hs_top.v", "climbs"),
    ("/etc/passwd", "/etc/passwd", "only 'hs_top.v'"),
    ("/work/hs_top.v", "/work/tb.v", "only 'hs_top.v'"),
    ("/work/../hs_top.v", "/work/hs_top.v", "climbs"),
    ("hs_top.v.orig", "tb.v", "only 'hs_top.v'"),
    ("tb.v.orig", "hs_top.v", "only 'hs_top.v'"),
    ("/dev/null", "b/hs_top.v", "create or delete"),
    ("a/hs_top.v", "/dev/null", "create or delete"),
    ("+define+FOO=1", "+define+FOO=1", "simulator option"),
    ("-Wall", "-Wall", "simulator option"),
    ("a/+incdir+/etc", "b/+incdir+/etc", "simulator option"),
    ("a/-y.", "b/-y.", "simulator option"),
    ("a/common/cdc_sync.v", "b/common/cdc_sync.v", "only 'hs_top.v'"),
])
def test_diff_paths_are_refused(old, new, why):
    res = allowlist(TASK, make_diff(old, new))
    assert not res.ok and why in res.reason


@pytest.mark.parametrize("extra", [
    "new file mode 100644\n", "deleted file mode 100644\n",
    "new file mode 120000\n",  # a symlink
    "old mode 100644\nnew mode 120000\n",  # turned into a symlink
    "similarity index 90%\nrename from hs_top.v\nrename to hs_top2.v\n",
    "copy from hs_top.v\ncopy to tb.v\n", "GIT binary patch\n",
])
def test_git_extended_headers_are_refused(extra):
    res = allowlist(TASK, make_diff(git=True, extra=extra))
    assert not res.ok and "renames, copies, re-modes or binary-patches" in res.reason


def test_git_header_naming_another_file_is_refused():
    d = make_diff().replace("--- a/hs_top.v", "diff --git a/tb.v b/tb.v\n--- a/hs_top.v", 1)
    res = allowlist(TASK, d)
    assert not res.ok and "tb.v" in res.reason


def test_a_chmod_of_the_editable_file_is_applied_for_its_text():
    """``git diff`` after ``chmod +x``: patch applies it; the text is what is graded (red2 W5)."""
    for modes in ("old mode 100644\nnew mode 100755\n", "old mode 100755\nnew mode 100644\n"):
        res = allowlist(TASK, make_diff(git=True, extra=modes))
        assert res.ok and res.text == FIXED, res.reason


def test_two_sections_for_the_editable_file_apply_in_order():
    """As GNU patch applies them: the second to the text the first made (red2 W5)."""
    second = "".join(difflib.unified_diff(FIXED.splitlines(True), ("// note\n" + FIXED).splitlines(True),
                                          "a/hs_top.v", "b/hs_top.v"))
    res = allowlist(TASK, make_diff() + second)
    assert res.ok and res.text == "// note\n" + FIXED and "2 sections" in res.form, res.reason
    # the same diff twice: the second does not apply to what the first made
    res = allowlist(TASK, make_diff() + make_diff())
    assert not res.ok and "section 2" in res.reason, res.reason
    # a whole-file section from /dev/null is taken only alone
    whole = f"--- /dev/null\n+++ b/hs_top.v\n@@ -0,0 +1,{len(FIXED.splitlines())} @@\n" + "".join(
        "+" + ln for ln in FIXED.splitlines(True))
    assert not allowlist(TASK, make_diff() + whole).ok


def test_diff_that_does_not_apply_is_refused():
    d = make_diff().replace("-  reg  ack_q;", "-  reg  ack_qq;", 1)
    if d == make_diff():  # the line is not in the hunk: break a context line instead
        d = make_diff().replace("\n ", "\n x", 1)
    res = allowlist(TASK, d)
    assert not res.ok and ("does not apply" in res.reason or "malformed" in res.reason)


def test_malformed_diffs_are_refused():
    assert not allowlist(TASK, "--- a/hs_top.v\n@@ -1 +1 @@\n-x\n+y\n+++ b/hs_top.v\n").ok
    hunk_only = "--- a/hs_top.v\n+++ b/hs_top.v\n@@ -1,1 +1,1 @@\n?garbage\n"
    assert not allowlist(TASK, hunk_only).ok


@pytest.mark.parametrize("bad,why", [
    (b"\x00" * 10, "binary"), ("module hs_top; \x00 endmodule", "binary"), (b"\xff\xfe\xfa", "UTF-8"),
    ("   \n\t", "empty"), (b"x" * (MAX_BYTES + 1), "limit"), ("x" * (MAX_BYTES + 1), "limit"),
    ("module evt_top; endmodule", "does not define module 'hs_top'"), (42, "text"),
])
def test_bad_submissions_are_refused(bad, why):
    res = allowlist(TASK, bad)
    assert not res.ok and why in res.reason


def test_the_result_is_always_the_editable_file_only():
    # Whatever a submission says about names, the allowlist returns one text; grade() writes it
    # under task.editable. A full-file submission that mentions other files is just text.
    text = FIXED + "// +define+X -Wall ../../etc/passwd /dev/null\n"
    res = allowlist(TASK, text)
    assert res.ok and res.text == text


@pytest.mark.parametrize("old,new", [
    ("hs_top.v.orig", "hs_top.v"),      # plain `diff -u hs_top.v.orig hs_top.v`
    ("hs_top.v", "hs_top.v"),
    ("old/hs_top.v", "new/hs_top.v"),
    ("/tmp/w/hs_top.v", "/tmp/w/hs_top.v"),  # absolute paths of the editable file
    ("a//tmp/w/hs_top.v", "b//tmp/w/hs_top.v"),
])
def test_plain_and_absolute_diffs_of_the_editable_file_apply(old, new):
    res = allowlist(TASK, make_diff(old, new))
    assert res.ok and res.form == "diff" and res.text == FIXED, res.reason


def test_full_file_quoting_a_diff_in_its_header_is_a_full_file():
    quoted = ("// Changes, as a diff:\n// --- a/hs_top.v\n// +++ b/hs_top.v\n// @@ -1 +1 @@\n"
              "--- hs_top.v\n+++ hs_top.v\n@@ -1,2 +1,2 @@\n*/\n")
    text = "/*\n" + quoted + FIXED
    res = allowlist(TASK, text)
    assert res.ok and res.form == "file" and res.text == text


def test_leading_bom_is_stripped():
    for sub in ("\ufeff" + FIXED, ("\ufeff" + FIXED).encode()):
        res = allowlist(TASK, sub)
        assert res.ok and res.text == FIXED
    res = allowlist(TASK, "\ufeff" + make_diff())
    assert res.ok and res.text == FIXED


def test_bom_elsewhere_is_refused_with_its_line():
    res = allowlist(TASK, FIXED.replace("module hs_top", "\ufeffmodule hs_top"))
    assert not res.ok and "byte-order mark" in res.reason and "line" in res.reason


def _shifted_diff(shift: int) -> str:
    """A diff made against a copy of the file with ``shift`` extra lines at the top (a model's
    memory of the file that drifted), applied to the file as shipped."""
    pad = "".join(f"// pad {k}\n" for k in range(shift))
    body = difflib.unified_diff((pad + ORIG).splitlines(True), (pad + FIXED).splitlines(True),
                                "a/hs_top.v", "b/hs_top.v")
    return "".join(body)


@pytest.mark.parametrize("shift", [1, 3, 12])
def test_hunks_off_by_a_few_lines_apply_and_the_offset_is_recorded(shift):
    res = allowlist(TASK, _shifted_diff(shift))
    assert res.ok and res.text == FIXED
    assert res.form.startswith("diff, applied with offsets: hunk 1 at -") and f"-{shift}" in res.form


def test_a_hunk_further_off_than_the_bound_is_refused():
    from cdc_env.submission import MAX_OFFSET

    res = allowlist(TASK, _shifted_diff(MAX_OFFSET + 5))
    assert not res.ok and "does not apply" in res.reason and f"at most {MAX_OFFSET} lines" in res.reason


def test_no_fuzz_a_context_line_that_differs_is_refused():
    diff = make_diff()
    ctx = next(ln for ln in diff.splitlines() if ln.startswith(" ") and ln.strip())
    res = allowlist(TASK, diff.replace(ctx + "\n", ctx + " // edited\n", 1))
    assert not res.ok and "does not apply" in res.reason


def test_exact_diffs_report_no_offset():
    assert allowlist(TASK, make_diff()).form == "diff"


# Issue 36, class 7: diffs read as GNU patch reads them (tests/test_allowlist_patch.py compares
# with the real patch; these need no patch binary).
TB_DIFF = ("--- a/tb.v\n+++ b/tb.v\n@@ -1 +1 @@\n"
           "-// Testbench of the handshake task (hidden from the agent).\n+// x\n")
WHOLE = f"--- /dev/null\n+++ b/hs_top.v\n@@ -0,0 +1,{len(FIXED.splitlines())} @@\n" + "".join(
    "+" + ln for ln in FIXED.splitlines(True))


@pytest.mark.parametrize("before,after", [
    ("Here is the fix:\n\n```diff\n", "```\n\nThe ack is now a level.\n"),  # a Markdown fence
    ("From 3f2c Mon Sep 17 00:00:00 2001\nSubject: [PATCH] fix\n---\n hs_top.v | 17 +++---\n\n",
     "-- \n2.39.5\n\n"),  # git format-patch: mail headers, diffstat, signature
    ("", "\n- a Markdown list item\n+ and another\n"),  # lines past the counts, starting with - or +
], ids=["markdown", "format-patch", "list"])
def test_text_around_the_diff_is_ignored(before, after):
    res = allowlist(TASK, before + make_diff() + after)
    assert res.ok and res.text == FIXED, res.reason


def test_a_hunk_ends_where_its_counts_say():
    one = make_diff(new=ORIG.replace("reg  busy_q;", "reg  busy_q;  // open request", 1))
    res = allowlist(TASK, one + "+  // past the hunk's counts: not a line of it\n")
    assert res.ok and "past the hunk" not in res.text and "// open request" in res.text


def test_a_count_longer_than_the_hunk_is_refused():
    d = make_diff().replace("@@ -5,7 +5,9 @@", "@@ -5,9 +5,11 @@")
    res = allowlist(TASK, d)
    assert not res.ok and "malformed" in res.reason


def test_a_hunk_patch_would_skip_is_refused_not_dropped():
    res = allowlist(TASK, make_diff().replace("\n@@ -19", "\n\n@@ -19", 1))
    assert not res.ok and "GNU patch would skip it" in res.reason


@pytest.mark.parametrize("where", ["start", "diff --git", "+++"])
def test_a_bom_before_a_header_line_is_read_as_patch_reads_it(where):
    d = make_diff(git=where == "diff --git")
    d = {"start": "Patch:\n\ufeff" + d, "diff --git": "\ufeff" + d,
         "+++": d.replace("+++ ", "\ufeff+++ ", 1)}[where]
    res = allowlist(TASK, d)
    assert res.ok and res.text == FIXED, res.reason


def test_a_bom_inside_the_file_a_diff_makes_is_refused():
    res = allowlist(TASK, make_diff(new=FIXED.replace("module hs_top", "\ufeffmodule hs_top", 1)))
    assert not res.ok and "byte-order mark" in res.reason and "the file the diff makes" in res.reason


def test_a_whole_file_diff_from_dev_null_replaces_the_editable_file():
    git = "diff --git a/hs_top.v b/hs_top.v\nnew file mode 100644\nindex 0000000..1234567\n"
    for d in (WHOLE, git + WHOLE):
        res = allowlist(TASK, d)
        assert res.ok and res.text == FIXED and "from /dev/null" in res.form, res.reason


@pytest.mark.parametrize("d,why", [
    (WHOLE.replace("+++ b/hs_top.v", "+++ b/tb.v"), "touches 'tb.v'"),
    ("diff --git a/hs_top.v b/hs_top.v\nnew file mode 100755\n" + WHOLE, "re-modes"),
    ("diff --git a/hs_top.v b/hs_top.v\nnew file mode 120000\n" + WHOLE, "re-modes"),
    (make_diff(old_name="/dev/null"), "create or delete"),  # hunks with context: not a whole file
    (make_diff() + "\nAlso:\n" + TB_DIFF, "touches 'tb.v'"),  # another file's diff after the last hunk
    (make_diff() + "-- \n2.39.5\ndiff --git a/tb.v b/tb.v\ndeleted file mode 100644\n", "deleted file mode"),
    (make_diff().replace("\n@@", "\n*** tb.v\n@@", 1), "touches 'tb.v'"),  # patch's other header slot
], ids=["devnull-tb", "devnull-755", "devnull-symlink", "devnull-context", "trailing-tb", "trailing-delete",
        "stars-tb"])
def test_what_patch_would_do_to_another_file_is_refused(d, why):
    res = allowlist(TASK, d)
    assert not res.ok and why in res.reason, res.reason


def test_a_hunk_with_less_context_after_than_before_must_end_the_file():
    # patch at fuzz 0: such a hunk can only match at the end of the file
    d = make_diff().replace("@@ -53,11 +52,10 @@", "@@ -53,9 +52,8 @@")
    res = allowlist(TASK, d)
    assert not res.ok and "does not apply" in res.reason


def test_a_huge_line_number_in_a_hunk_header_is_refused_at_once():
    # GNU patch 2.7.6 searches ~1e11 offsets for this one (it did not finish in 60 s); the reader
    # tries only the lines of the file, in patch's order.
    d = make_diff().replace("@@ -5,7 +5,9 @@", "@@ -99999999999,7 +99999999999,9 @@", 1)
    res = allowlist(TASK, d)
    assert not res.ok and "does not apply" in res.reason
