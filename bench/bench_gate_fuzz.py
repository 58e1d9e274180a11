"""Benchmark: the gate on mutated designs never raises, never reports tool_error.

Takes every task's files (defective, clean, reference and read-only sources), every fixture whose
submission gets past the allowlist, and every design of tests/gate_cases/, and makes mutants of
them: token deletions, duplications and swaps, byte insertions (ASCII punctuation and non-ASCII
characters), keywords spliced in at a token boundary (with or without a space, so ``input wire``
becomes ``input wirelocalparam``), a keyword in place of an identifier, lines copied and deleted.
Every mutant is deterministic from ``--seed``. Each one goes through the gate exactly as
``cdc-env check`` runs it (``run_gate``: policy, synthesis and rules in the bounded child), or,
with ``--front``, through the gate's Python front end only (parse, policy, the source rewrites
before synthesis), in process: a few milliseconds a mutant, the place where a Python exception
would come from. Acceptance: 0 ``tool_error``, 0 exceptions or tracebacks and 0 GATE-INTERNAL
findings; the counts per status are printed (``--json`` for the rows of every failure,
``--save DIR`` writes each failing mutant).

    python bench/bench_gate_fuzz.py [--count 10000] [--seed 1] [--front] [--json] [--task T ...]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What must never happen: the gate's own failure (tool_error), an exception or traceback out of
# it, a refusal without a rule and message, or a GATE-INTERNAL finding (a gate bug it caught).
BAD = ("tool_error", "exception", "traceback", "bad_finding", "internal")
CASES = ROOT / "tests" / "gate_cases"

_TOKEN = re.compile(r"\s+|//[^\n]*|/\*.*?\*/|`?[A-Za-z_$][A-Za-z0-9_$]*|\d*'[sS]?[bodhBODH][0-9a-fA-FxXzZ_?]+"
                    r"|'[01xzXZ]|\d+|<=|>=|==|!=|&&|\|\||<<|>>|\+:|-:|::|.", re.S)
KEYWORDS = ["module", "endmodule", "input", "output", "inout", "wire", "reg", "logic", "localparam",
            "parameter", "assign", "always", "always_ff", "always_comb", "initial", "begin", "end", "if",
            "else", "case", "endcase", "default", "for", "generate", "endgenerate", "genvar", "function",
            "endfunction", "task", "endtask", "posedge", "negedge", "or", "and", "not", "typedef", "enum",
            "struct", "packed", "interface", "endinterface", "modport", "let", "assert", "property",
            "unique", "priority", "automatic", "static", "signed", "integer", "int", "bit", "repeat",
            "while", "do", "forever", "fork", "join", "`define", "`ifdef", "`ifndef", "`else", "`endif",
            "`undef", "$clog2", "$bits", "$display", "#1", "@*", "1'b0", "'0", "'x", "4'hz", "{", "}",
            "(", ")", "[", "]", ";", ",", ".", "=", "<=", "?", ":", "::", "'"]
INSERTS = ["é", "ü", "\u00a0", "\u2013", "\u200b", "λ", "中", "\U0001F600", "\t", "\r", "\\", "`", "$",
           "#", "@", "'", "\"", "/*", "*/", "//", "\n", ";", "(", ")", "{", "}", "[", "]", ",", "0", "x"]


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _words(toks: list[str]) -> list[int]:
    return [i for i, t in enumerate(toks) if not t.isspace()]


def mutate(text: str, rng: random.Random) -> str:
    """One mutant of ``text``: one to three edits, chosen by ``rng``."""
    for _ in range(rng.randint(1, 3)):
        toks = _tokens(text)
        words = _words(toks)
        if not words:
            return text + rng.choice(KEYWORDS)
        i = rng.choice(words)
        op = rng.randrange(8)
        if op == 0:  # delete a token
            toks[i] = ""
        elif op == 1:  # duplicate a token
            toks[i] = toks[i] + rng.choice(["", " "]) + toks[i]
        elif op == 2:  # swap with the next non-space token
            k = words.index(i)
            if k + 1 < len(words):
                j = words[k + 1]
                toks[i], toks[j] = toks[j], toks[i]
        elif op == 3:  # a byte or character after the token (non-ASCII included)
            toks[i] = toks[i] + rng.choice(INSERTS)
        elif op == 4:  # a keyword spliced at the token's end, with or without a space
            toks[i] = toks[i] + rng.choice(["", " "]) + rng.choice(KEYWORDS)
        elif op == 5:  # an identifier replaced by a keyword
            ids = [w for w in words if re.fullmatch(r"[A-Za-z_]\w*", toks[w])]
            if ids:
                toks[rng.choice(ids)] = rng.choice(KEYWORDS)
        else:
            lines = "".join(toks).split("\n")
            a = rng.randrange(len(lines))
            if op == 6:  # copy a line elsewhere
                lines.insert(rng.randrange(len(lines) + 1), lines[a])
            else:  # delete a line
                del lines[a]
            text = "\n".join(lines)
            continue
        text = "".join(toks)
    return text


def _case_task(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines()[:5]:
        if line.startswith("// task:"):
            return line.split(":", 1)[1].strip()
    return "handshake"


def corpus(tasks: list[str] | None = None) -> list[tuple[str, str, str]]:
    """(task id, label, text of the editable file) for every design the mutants start from."""
    from cdc_env.fixtures import load_fixtures
    from cdc_env.submission import allowlist
    from cdc_env.task import load_task, task_ids

    ids = tasks or task_ids()
    out: list[tuple[str, str, str]] = []
    for tid in ids:
        task = load_task(tid)
        for label, text in (("defective", task.defective_text), ("clean", task.clean_text),
                            ("reference", task.reference_text)):
            out.append((tid, f"{tid}:{label}", text))
    for fx in load_fixtures():
        if fx.task not in ids:
            continue
        try:
            allowed = allowlist(load_task(fx.task), fx.submission())
        except Exception:  # noqa: BLE001 -- a fixture the allowlist cannot read is not a seed
            continue
        if allowed.ok:
            out.append((fx.task, f"fixture:{fx.name}", allowed.text))
    for p in sorted(CASES.glob("*.v")):
        tid = _case_task(p)
        if tid in ids and not p.name.startswith("gate_limit.trips"):
            out.append((tid, f"case:{p.stem}", p.read_text(encoding="utf-8")))
    return out


def mutants(count: int, seed: int, tasks: list[str] | None = None) -> Iterator[tuple[str, str, str]]:
    """``count`` mutants (task id, label, text), round robin over the corpus, deterministic."""
    base = corpus(tasks)
    rng = random.Random(seed)
    for k in range(count):
        tid, label, text = base[k % len(base)]
        yield tid, f"{label}#{k}", mutate(text, rng)


def front_end(task, text: str) -> str:
    """The gate's Python front end on one design, in process: input bounds, the parse and the
    policy (analysis.analyse's first half), and the source rewrites synthesis applies
    (plain_async_ifs, automatic_lifetime, held_registers for every declared name). Returns
    'refused' (an input bound), 'findings' or 'clean'; raises what the code raises."""
    from cdc_env.gate import frontend, policy, synth

    design = task.files(text)
    if any(frontend.input_problem(n, t) for n, t in design.items()):
        return "refused"
    try:
        fe = frontend.parse_all(design)
    except frontend.InputRejected:
        return "refused"
    found = []
    for name in design:
        found.extend(policy.check_file(fe, name))
    found.extend(policy.check_names(fe, task.editable, {}))
    for t in design.values():
        names = set(re.findall(r"[A-Za-z_]\w*", t))
        synth.automatic_lifetime(synth.plain_async_ifs(synth.held_registers(t, names)))
    return "findings" if found else "clean"


def run(count: int, seed: int, front: bool, tasks: list[str] | None = None,
        progress: bool = False) -> dict:
    """Run the mutants; return counts per status and every failure (tool_error, exception)."""
    from cdc_env.gate import run_gate
    from cdc_env.task import load_task

    loaded: dict[str, object] = {}
    counts: Counter = Counter()
    failures: list[dict] = []
    t0 = time.monotonic()
    for k, (tid, label, text) in enumerate(mutants(count, seed, tasks)):
        task = loaded.setdefault(tid, load_task(tid))
        try:
            if front:
                status, detail = front_end(task, text), ""
            else:
                g = run_gate(task, task.files(text))
                status, detail = g.status, g.detail
                if status == "refused" and not all(f.get("message") and f.get("rule") for f in g.findings):
                    status, detail = "bad_finding", json.dumps(g.findings)[:300]
                elif any(f["rule"] == "GATE-INTERNAL" for f in g.findings):
                    status = "internal"  # a gate bug: refused, never passed, but a bug all the same
        except Exception as exc:  # noqa: BLE001 -- what the benchmark counts
            status = "exception"
            detail = f"{type(exc).__name__}: {exc} {traceback.format_exc(limit=-2).splitlines()[-3:]}"
        if "Traceback" in detail:
            status = "traceback"
        counts[status] += 1
        if status in BAD:
            failures.append({"label": label, "task": tid, "status": status, "detail": detail[:500],
                             "text": text})
        if progress and (k + 1) % 500 == 0:
            print(f"  {k + 1}/{count} {dict(counts)} {time.monotonic() - t0:.0f} s", file=sys.stderr,
                  flush=True)
    return {"count": count, "seed": seed, "mode": "front" if front else "gate", "counts": dict(counts),
            "failures": failures, "wall_s": round(time.monotonic() - t0, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--front", action="store_true", help="the Python front end only, in process")
    ap.add_argument("--task", action="append", dest="tasks")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--save", type=Path, help="write each failing mutant's text to this folder")
    args = ap.parse_args(argv)
    res = run(args.count, args.seed, args.front, args.tasks, progress=not args.json)
    if args.save and res["failures"]:
        args.save.mkdir(parents=True, exist_ok=True)
        for f in res["failures"]:
            (args.save / (re.sub(r"[^\w.-]", "_", f["label"]) + ".v")).write_text(f["text"], encoding="utf-8")
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(f"{res['count']} mutants (seed {res['seed']}, {res['mode']}), {res['wall_s']} s: "
              + ", ".join(f"{k} {v}" for k, v in sorted(res["counts"].items())))
        for f in res["failures"][:20]:
            print(f"  {f['status']}: {f['label']}: {f['detail'][:200]}")
    bad = sum(res["counts"].get(k, 0) for k in BAD)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
