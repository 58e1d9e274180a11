"""The package's layers: no import cycles, grade.py above only the allowed layers, and a simulator
backend added by registering it in cdc_env.sim, with nothing outside that package changed.

The import graph is built statically with ``ast`` from every module of cdc_env: ``import x``,
``from x import y`` and relative imports, at any depth (function-level imports included), with
``from pkg import sub`` (``sub`` a submodule) an edge to the submodule.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import cdc_env
from cdc_env import sim
from cdc_env.errors import CdcError
from cdc_env.grade import grade
from cdc_env.report import validate_report
from cdc_env.sim.base import Build, Simulator, seed_plusargs, stage_sources
from cdc_env.sim.proc import bwrap_path
from cdc_env.sim.seeds import SeedPlan, hidden_seeds, visible_seeds
from cdc_env.task import load_task

from .conftest import needs_icarus

ROOT = Path(cdc_env.__file__).parent


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every module and package of ``root``."""
    out = {}
    for p in sorted(root.rglob("*.py")):
        name = ".".join(p.relative_to(root.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = p
    return out


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the modules of the package it imports (statically, anywhere in its text)."""
    mods = module_files(root)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                graph[name] |= {a.name for a in node.names if a.name in mods}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                subs = {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in mods}
                graph[name] |= subs
                if len(subs) < len(node.names) and target in mods:
                    graph[name].add(target)  # a name defined in the module (or package) itself
        graph[name].discard(name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for w in sorted(graph.get(v, ())):
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state:
                found = visit(w)
                if found:
                    return found
        path.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state:
            found = visit(v)
            if found:
                return found
    return None


def test_the_graph_builder_sees_relative_absolute_and_function_level_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from .sub import c  # noqa\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("import pkg.a\nfrom .. import b\n")
    g = import_graph(pkg)
    assert g["pkg.a"] == {"pkg.b"} and g["pkg.b"] == {"pkg.sub.c"} and g["pkg.sub.c"] == {"pkg.a", "pkg.b"}
    assert find_cycle(g) is not None  # a -> b -> sub.c -> a
    (pkg / "sub" / "c.py").write_text("X = 1\n")
    assert find_cycle(import_graph(pkg)) is None


def test_cdc_env_has_no_import_cycles():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


# grade.py: the pipeline over the seed-running layer, the gate and the allowlist.
GRADE_MAY_IMPORT = ("cdc_env.sim", "cdc_env.gate", "cdc_env.submission", "cdc_env.task", "cdc_env.report",
                    "cdc_env.paths", "cdc_env.errors", "cdc_env._version")


def test_grade_imports_only_the_layers_below_it():
    bad = [m for m in import_graph()["cdc_env.grade"]
           if not any(m == ok or m.startswith(ok + ".") for ok in GRADE_MAY_IMPORT)]
    assert not bad, f"grade.py imports {bad}"


def test_sim_imports_nothing_above_it():
    below = ("cdc_env.sim", "cdc_env.task", "cdc_env.paths", "cdc_env.errors", "cdc_env.submission")
    g = import_graph()
    bad = {m: sorted(t for t in ts if not any(t == ok or t.startswith(ok + ".") for ok in below))
           for m, ts in g.items() if m == "cdc_env.sim" or m.startswith("cdc_env.sim.")}
    assert not any(bad.values()), bad


def test_no_submodule_imports_the_package_root():
    g = import_graph()
    assert not [m for m, ts in g.items() if "cdc_env" in ts and m != "cdc_env"]


def test_measuring_tools_sit_above_grade():
    g = import_graph()
    below = [m for m in g if m == "cdc_env.grade" or m == "cdc_env.sim" or m.startswith("cdc_env.sim.")]
    tools = {"cdc_env.parity", "cdc_env.cost", "cdc_env.taskgate"}
    assert not {m: g[m] & tools for m in below if g[m] & tools}


# --- a third backend, registered by a test ---------------------------------------------------

SEED_SCRIPT = """import os
nonce = os.read(int(os.environ["CDC_VERDICT_FD"]), 4096).decode().split("\\n")[0]
print(f"CDCV {nonce} @VERDICT@ checks=1 hash={0:016x} t=0 msg=noop says so", flush=True)
"""


class NoopSim(Simulator):
    """A backend that stages the real sources and "simulates" with a tiny Python script that passes
    every seed through the real verdict channel (nonce pipe, parse_verdict, the stage runner)."""

    name = "noop"
    title = "No-op (test)"
    batching = False
    four_state = False
    verdict = "PASS"

    def available(self) -> bool:
        return Path("/usr/bin/python3").is_file()

    def version(self) -> str:
        return "0"

    def build(self, task, design, workdir, *, sandbox=True) -> Build:
        stage_sources(task, design, workdir)
        (workdir / "noop_seed.py").write_text(SEED_SCRIPT.replace("@VERDICT@", self.verdict))
        return Build("pass", "", workdir)

    def seed_argv(self, build: Build, plan: SeedPlan, settle: bool) -> list[str]:
        return ["/usr/bin/python3", "-I", "noop_seed.py", *seed_plusargs(plan, settle)]


@pytest.fixture
def noop():
    sim.register(NoopSim)
    try:
        yield NoopSim
    finally:
        sim.unregister("noop")


def test_registry_names_flags_and_errors():
    assert sim.names()[:2] == ("icarus", "verilator")
    assert sim.capable("batching") == ("verilator",) and sim.capable("four_state") == ("icarus",)
    with pytest.raises(CdcError, match="unknown simulator 'nope' .choose icarus or verilator"):
        sim.get_simulator("nope")
    with pytest.raises(ValueError, match="already registered"):
        sim.register(type("Other", (NoopSim,), {"name": "icarus"}))
    with pytest.raises(ValueError, match="a name of its own"):
        sim.register(type("Auto", (NoopSim,), {"name": "auto"}))
    with pytest.raises(TypeError):
        sim.register(object)  # type: ignore[arg-type]


@needs_icarus  # the gate's front end and the sandbox are shared with the real backends
@pytest.mark.parametrize("sandbox", [True, False])
def test_a_registered_backend_runs_the_whole_pipeline(noop, sandbox):
    if sandbox and bwrap_path() is None:
        pytest.skip("bubblewrap is not installed")
    t = load_task("handshake")
    assert "noop" in sim.names()
    # Every backend builds the gate's netlist: nothing outside sim/ is per backend (issue 22).
    r = grade(t, t.reference_text, sim="noop", hidden=5, sandbox=sandbox)
    validate_report(r)
    assert r["simulator"]["name"] == "noop" and r["verdict"] == "pass", r["reason"]
    assert [(s["name"], s["status"]) for s in r["stages"]] == [
        ("allowlist", "pass"), ("gate", "pass"), ("build", "pass"), ("visible", "pass"), ("hidden", "pass")]
    assert r["seeds"]["visible"]["passed"] == len(visible_seeds(t))
    assert [x["seed"] for x in r["seeds"]["hidden"]["results"]] == hidden_seeds(t, 5)
    assert r["seeds"]["hidden"]["mode"] == "one-at-a-time"  # no batching capability
    # The verdict still comes from the backend's runs: one that fails every seed fails the grade.
    NoopSim.verdict = "FAIL"
    try:
        bad = grade(t, t.reference_text, sim="noop", hidden=5, sandbox=sandbox)
    finally:
        NoopSim.verdict = "PASS"
    assert (bad["verdict"], bad["failed_stage"]) == ("fail", "visible")
    assert bad["reason"] == f"visible seed {visible_seeds(t)[0]}: noop says so"


def test_unregistering_leaves_nothing_behind(noop):
    assert "noop" in sim.names()
    sim.unregister("noop")
    assert "noop" not in sim.names() and sim.names() == ("icarus", "verilator")
    with pytest.raises(CdcError):
        sim.get_simulator("noop")
    sim.register(NoopSim)  # the fixture unregisters it again


def test_the_cli_offers_every_registered_backend(noop):
    from cdc_env.cli.common import sim_choices

    assert sim_choices() == ["icarus", "verilator", "noop"]
    assert sim_choices("auto", "both") == ["icarus", "verilator", "noop", "auto", "both"]
