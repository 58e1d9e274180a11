"""The reset-domain family (``FAMILY``, registry name ``reset``: task.toml's ``family``).

generator.py writes one task folder from an ``RstParams`` (its docstring describes the design,
the defect shapes and the testbench); this module holds the parameter regions and the
calibration search.

Regions. Training: the 4-bit machines ``TRAIN_MACHINES`` (ring, count, lfsr) in both domains,
module names ``TRAIN_MODULES``, every shape in either domain. Held out (disjoint): the wider
machines ``HELDOUT_MACHINES`` (a 6-bit ring, a 5-bit counter from 7, a 5-bit LFSR) in both
domains and module names ``HELDOUT_MODULES``, every shape in either domain.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from .. import DataclassFamily, Draw, Region
from .generator import HELDOUT_MACHINES, SHAPES, TRAIN_MACHINES, VARIANTS, RstParams, generate

TRAIN_MODULES = ("ring_pair", "dual_sequencer", "scan_timer", "frame_counter", "phase_gen", "tick_pair",
                 "beat_sequencer", "dual_counter", "strobe_gen", "pattern_pair", "cycle_tracker",
                 "slot_timer", "step_pair", "dual_lfsr", "wake_sequencer")
HELDOUT_MODULES = ("boot_sequencer", "power_fsm", "clock_monitor", "duo_stepper", "mode_ring",
                   "lane_counter", "init_tracker", "sweep_gen")
# The search: reset pulses per run (the knob that sets the detection band), tried in order after
# the drawn value until the gate holds.
PULSES_TRIES = ((6, 14), (4, 10), (8, 18), (3, 8), (10, 22), (2, 6))


class ResetFamily(DataclassFamily):
    name = "reset"
    params = RstParams
    title = "reset-domain crossing: a domain's flops leave reset on another clock's timing"

    def training(self) -> tuple[RstParams, ...]:
        return VARIANTS

    def generate(self, p: RstParams) -> dict[str, str]:
        return generate(p)

    def draw(self, d: Draw, region: Region, vid: str) -> RstParams:
        held = region == "heldout"
        machines = HELDOUT_MACHINES if held else TRAIN_MACHINES
        a = d.choice(machines)
        b = d.choice([m for m in machines if m != a])
        return RstParams(id=vid, module=d.choice(HELDOUT_MODULES if held else TRAIN_MODULES),
                         machine_a=a, machine_b=b, shape=d.choice(SHAPES), dom=d.choice(("a", "b")),
                         heldout=held)

    def region_of(self, p: RstParams) -> Region | None:
        if p.heldout:
            ok = {p.machine_a, p.machine_b} <= set(HELDOUT_MACHINES) and p.module in HELDOUT_MODULES
            return "heldout" if ok else None
        ok = {p.machine_a, p.machine_b} <= set(TRAIN_MACHINES) and p.module in TRAIN_MODULES
        return "train" if ok else None

    def search(self, p: RstParams) -> Iterator[RstParams]:
        yield p
        for pulses in PULSES_TRIES:
            if pulses != p.pulses:
                yield replace(p, pulses=pulses)


FAMILY = ResetFamily()
