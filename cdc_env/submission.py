"""The allowlist stage: turn a submission into the new text of the task's editable file.

A submission is either the full text of the editable file or a unified diff against it. The
result is always exactly one file, named by the task -- never by the submission -- so nothing a
submission says can add a file, reach another path, or become a simulator option. Anything else
is refused with a reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .task import Task

MAX_BYTES = 256 * 1024

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_FORBIDDEN_DIFF_LINES = ("rename from", "rename to", "new file mode", "deleted file mode",
                         "old mode", "new mode", "similarity index", "copy from", "copy to",
                         "GIT binary patch", "Binary files")


@dataclass
class Allowlisted:
    ok: bool
    text: str = ""
    reason: str = ""
    form: str = ""  # "file" or "diff"


def refuse(reason: str) -> Allowlisted:
    return Allowlisted(False, reason=reason)


def _is_diff(text: str) -> bool:
    head = text.lstrip()[:4000]
    return bool(re.search(r"^--- \S", head, re.M) and re.search(r"^\+\+\+ \S", head, re.M)
                and re.search(r"^@@ ", text, re.M)) or head.startswith("diff --git ")


def _diff_path(raw: str) -> str:
    name = raw.split("\t", 1)[0].strip()
    return name[2:] if name[:2] in ("a/", "b/") else name


def _check_name(name: str, task: Task) -> str | None:
    if name == "/dev/null":
        return "a diff may not create or delete files"
    if name.startswith("/") or ".." in name.split("/"):
        return f"path '{name}' is absolute or climbs out of the task"
    if name.startswith(("+", "-")):
        return f"file name '{name}' looks like a simulator option"
    if name != task.editable:
        return f"the diff touches '{name}'; only '{task.editable}' may be changed"
    return None


def apply_diff(original: str, diff: str, task: Task) -> Allowlisted:
    lines = diff.replace("\r\n", "\n").splitlines()
    src = original.splitlines()
    out: list[str] = []
    pos = 0  # index into src of the next unconsumed line
    files_seen = 0
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith(_FORBIDDEN_DIFF_LINES):
            return refuse(f"the diff renames, copies, re-modes or binary-patches a file ('{ln[:40]}')")
        if ln.startswith("diff --git "):
            for part in ln.split()[2:]:
                bad = _check_name(_diff_path(part), task)
                if bad:
                    return refuse(bad)
            i += 1
            continue
        if ln.startswith("--- "):
            if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
                return refuse("malformed diff: '---' header without '+++'")
            for raw in (ln[4:], lines[i + 1][4:]):
                bad = _check_name(_diff_path(raw), task)
                if bad:
                    return refuse(bad)
            files_seen += 1
            if files_seen > 1:
                return refuse("the diff has more than one file section")
            i += 2
            continue
        m = _HUNK.match(ln)
        if m:
            start = int(m.group(1)) - (0 if m.group(2) == "0" else 1)
            if start < pos:
                return refuse("malformed diff: hunks overlap or are out of order")
            out.extend(src[pos:start])
            pos = start
            i += 1
            while i < len(lines) and not lines[i].startswith(("@@", "--- ", "diff --git ")):
                h = lines[i]
                if h.startswith("\\"):
                    i += 1
                    continue
                tag, body = (h[:1], h[1:]) if h else (" ", "")
                if tag in (" ", "-"):
                    if pos >= len(src) or src[pos] != body:
                        return refuse(f"the diff does not apply: line {pos + 1} of {task.editable} differs")
                    if tag == " ":
                        out.append(body)
                    pos += 1
                elif tag == "+":
                    out.append(body)
                else:
                    return refuse(f"malformed diff line: '{h[:40]}'")
                i += 1
            continue
        i += 1  # preamble text around a diff is ignored
    if files_seen == 0:
        return refuse("malformed diff: no file header")
    out.extend(src[pos:])
    return Allowlisted(True, "\n".join(out) + "\n", form="diff")


def allowlist(task: Task, submission: str | bytes) -> Allowlisted:
    """The allowlist stage. Never raises for bad input: returns ``ok=False`` with a reason."""
    if isinstance(submission, bytes):
        if len(submission) > MAX_BYTES:
            return refuse(f"submission is {len(submission)} bytes; the limit is {MAX_BYTES}")
        if b"\x00" in submission:
            return refuse("submission is binary (contains NUL bytes), not Verilog text")
        try:
            submission = submission.decode("utf-8")
        except UnicodeDecodeError:
            return refuse("submission is not UTF-8 text")
    if not isinstance(submission, str):
        return refuse("submission must be text")
    if len(submission.encode("utf-8", errors="replace")) > MAX_BYTES:
        return refuse(f"submission is larger than the limit of {MAX_BYTES} bytes")
    if "\x00" in submission:
        return refuse("submission is binary (contains NUL bytes), not Verilog text")
    if not submission.strip():
        return refuse("submission is empty")
    if _is_diff(submission):
        res = apply_diff(task.defective_text, submission, task)
    else:
        res = Allowlisted(True, submission if submission.endswith("\n") else submission + "\n", form="file")
    if res.ok and not re.search(rf"\bmodule\s+{re.escape(task.top)}\b", res.text):
        return refuse(f"the submission does not define module '{task.top}' -- is it for another task?"
                      f" (task '{task.id}' edits {task.editable})")
    return res
