"""The asynchronous FIFO family (``FAMILY``, registry name ``fifo``).

generator.py writes one complete task folder from a ``FifoParams``; variants.py holds the 13
committed training variants and the extra defect-shape variants (``fifo_x_rdbin``,
``fifo_x_early``); this module holds the parameter regions (``draw``, ``region_of``) and the
calibration search. Held-out minting and catalogues are generic (``cdc_env.families.heldout``,
``cdc_env.families.catalogue``).

Regions. Training: naming styles ``TRAIN_STYLES``, depth 8 or 16, widths ``TRAIN_WIDTHS``, module
names ``TRAIN_MODULES``, every defect shape. Held out (disjoint): depth 32, widths
``HELDOUT_WIDTHS``, module names ``HELDOUT_MODULES``, any naming style including ``camel`` (which
no training variant uses), the three pointer shapes and ``early_publish`` (fifo_x_early's shape).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from .. import DataclassFamily, Draw, Region
from .generator import EXTRAS, SHAPES, STYLES, FifoParams, generate
from .variants import EXTRA, TRAIN_AWS, TRAIN_MODULES, TRAIN_STYLES, TRAIN_WIDTHS, TRAINING

HELDOUT_AW = 5
HELDOUT_WIDTHS = (9, 11, 13, 20, 28)
HELDOUT_BURSTS = (5, 7, 9, 11, 13, 19, 21, 25)
HELDOUT_MODULES = ("frame_fifo", "cross_queue", "edge_buffer", "clk_bridge", "sensor_fifo", "dma_fifo",
                   "line_buffer", "event_queue", "tlm_fifo", "relay_fifo")
HELDOUT_SHAPES = (*SHAPES, "early_publish")
# The training draw's shapes: the three pointer shapes twice as often as each extra shape.
TRAIN_SHAPES = (*SHAPES, *SHAPES, "rd_binary", "early_publish")
# The extra shapes' clocking, traffic and burst (variants.py says why each needs them).
SHAPE_KNOBS: dict[str, dict[str, Any]] = {
    "rd_binary": {"wr_block": 5, "fast": "a", "wr_pct": (20, 80), "aw": 4},
    "early_publish": {"fast": "b", "ratio_max": 4.0, "low_band": 0.35, "burst": 3},
}
# The search: traffic ranges (push probability, percent), each with the run lengths (slow cycles),
# tried in order after the drawn value until the gate holds.
WR_PCT_TRIES = ((30, 90), (20, 90), (10, 70), (40, 95), (15, 80), (50, 100))
RUN_SLOW_TRIES = (300, 450)


class FifoFamily(DataclassFamily):
    name = "fifo"
    params = FifoParams
    title = "asynchronous FIFO: a pointer crosses without Gray coding (or is published early)"

    def training(self) -> tuple[FifoParams, ...]:
        return TRAINING + EXTRA

    def generate(self, p: FifoParams) -> dict[str, str]:
        return generate(p)

    def draw(self, d: Draw, region: Region, vid: str) -> FifoParams:
        held = region == "heldout"
        shape = d.choice(HELDOUT_SHAPES if held else TRAIN_SHAPES)
        knobs = dict(SHAPE_KNOBS.get(shape, {}))
        aw = HELDOUT_AW if held else knobs.pop("aw", None) or d.choice(TRAIN_AWS)
        knobs.pop("aw", None)
        burst = knobs.pop("burst", None) or (d.choice(HELDOUT_BURSTS) if held else 2 + d.below((1 << aw) - 2))
        p = FifoParams(
            id=vid, module=d.choice(HELDOUT_MODULES if held else TRAIN_MODULES),
            style=d.choice(sorted(STYLES) if held else TRAIN_STYLES),
            width=d.choice(HELDOUT_WIDTHS if held else TRAIN_WIDTHS), aw=aw, burst=burst, shape=shape,
            extras=tuple(e for e in EXTRAS if d.chance(1, 2)), heldout=held)
        return replace(p, **knobs)

    def region_of(self, p: FifoParams) -> Region | None:
        if p.heldout:
            ok = p.aw == HELDOUT_AW and p.width in HELDOUT_WIDTHS and p.module in HELDOUT_MODULES
            return "heldout" if ok else None
        ok = (p.style in TRAIN_STYLES and p.width in TRAIN_WIDTHS and p.aw in TRAIN_AWS
              and p.module in TRAIN_MODULES)
        return "train" if ok else None

    def search(self, p: FifoParams) -> Iterator[FifoParams]:
        yield p
        seen = {(p.run_slow_cycles, p.wr_pct)}
        for wr in WR_PCT_TRIES:  # a longer run first: a drawn defect is caught too rarely more often
            for run in reversed(RUN_SLOW_TRIES):
                if (run, wr) not in seen:
                    seen.add((run, wr))
                    yield replace(p, run_slow_cycles=run, wr_pct=wr)


FAMILY = FifoFamily()
