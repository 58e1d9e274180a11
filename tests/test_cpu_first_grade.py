"""The first grade of a task in a process counts all the CPU it caused (issue 39: its cpu_s was
0.014-0.045 CPU-s under the cgroup's figure; bench/bench_accounting.py measures it against
cgroups). Two things were missed: the child that learns the task's gate profile (once per task
and process) and the one-time tool probes (iverilog -V, g++ -dumpfullversion, the bubblewrap
user-namespace check). Each test compares what the code counts with the kernel's own figure for
this process's waited-for children (RUSAGE_CHILDREN), in a single thread so that no other child
can end in between.
"""

from __future__ import annotations

import resource
import time

import cdc_env.gate as gate
from cdc_env.sim import icarus, proc, verilator
from cdc_env.task import load_task


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def test_the_gate_counts_the_child_that_learns_the_task_profile():
    task = load_task("handshake")
    gate._PROFILES.clear()  # the first grade of the task in this process
    own0, kids0 = time.thread_time(), _children_cpu()
    g = gate.run_gate(task, task.files(task.reference_text))
    own, kids = time.thread_time() - own0, _children_cpu() - kids0
    assert g.status == "pass"
    counted_children = g.cpu_s - own
    assert kids > 0 and abs(counted_children - kids) < 0.002, (counted_children, kids)
    # and a later grade learns nothing: the profile is cached
    assert gate._profile(task)[1] == 0.0


def test_one_time_tool_probes_are_charged_to_the_grade_that_runs_them():
    for cached in (icarus._icarus_version, verilator.compiler_version, proc.userns_ok):
        cached.cache_clear()
        with proc.cpu_meter() as meter:
            own0, kids0 = time.thread_time(), _children_cpu()
            cached()
            own, kids = time.thread_time() - own0, _children_cpu() - kids0
            counted_children = meter.total() - own
        assert kids > 0 and abs(counted_children - kids) < 0.002, (cached.__name__, counted_children, kids)
