"""The data-enable crossing family (``dataen``): a word held stable while a qualifier crosses.

``FAMILY`` implements the protocol of cdc_env/families/__init__.py; the generator is
``generator.py``. The committed training variants are ``VARIANTS`` (``tasks/<id>/`` is exactly
``generate(p)``; ``write_all`` rewrites them, tests/test_dataen.py checks they match).

Regions (disjoint): training words are 8, 12 or 16 bits wide with module names from ``TRAIN_NAMES``;
held-out words are 10, 20 or 24 bits wide with names from ``HELDOUT_NAMES``, and a held-out ``lead``
or ``split`` runs its source up to 6:1 faster (excursions to 12:1) where training stops at 4:1.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from .. import Draw, Region, write_files
from .generator import CAPTURES, GAP_SLOW, SHAPES, DeParams, from_dict, generate

TRAIN_WIDTHS = (8, 12, 16)
HELDOUT_WIDTHS = (10, 20, 24)
TRAIN_NAMES = ("word_xfer", "cfg_bridge", "sample_port", "status_mirror", "coef_loader", "tag_relay")
HELDOUT_NAMES = ("gain_handoff", "pixel_hop", "mode_latch", "trim_pass")
# Ranges of words sent per run that calibration may try (task.toml [stimulus] sends).
SENDS_STEPS = ((1, 3), (1, 4), (2, 5), (2, 6), (3, 8), (4, 10), (4, 12), (6, 16), (8, 24))

# Visible seeds: chosen by `cdc-env gate-tasks --suggest-visible` (Icarus, late settling on).
VARIANTS: tuple[DeParams, ...] = (
    DeParams("de_01", "word_xfer", 8, "lead", sends=(2, 6),
             visible=(1, 2, 3, 4, 5, 6, 10, 14)),
    DeParams("de_02", "cfg_bridge", 16, "split", sends=(2, 6),
             visible=(1, 2, 3, 4, 5, 7, 9, 11)),
    DeParams("de_03", "sample_port", 12, "short", ratio_max=2.0, excursion_max=4.0,
             visible=(1, 2, 3, 4, 5, 6, 7, 11)),
    DeParams("de_04", "status_mirror", 16, "lead", capture="mux", sends=(1, 4),
             visible=(1, 2, 3, 4, 5, 6, 11, 13)),
    DeParams("de_05", "coef_loader", 12, "split", capture="mux", sends=(2, 6),
             visible=(1, 2, 3, 4, 5, 6, 7, 9)),
    DeParams("de_06", "tag_relay", 8, "short", capture="mux", ratio_max=2.0, excursion_max=4.0,
             visible=(1, 2, 3, 4, 5, 6, 7, 9)),
)


class _DataEn:
    name = "dataen"
    title = "data-enable crossing: a word held stable while its qualifier crosses"

    def training(self) -> tuple[DeParams, ...]:
        return VARIANTS

    def generate(self, p: DeParams) -> dict[str, str]:
        return generate(p)

    def to_dict(self, p: DeParams) -> dict:
        return p.to_dict()

    def from_dict(self, d: dict) -> DeParams:
        return from_dict(d)

    def draw(self, d: Draw, region: Region, vid: str) -> DeParams:
        held = region == "heldout"
        shape = d.choice(SHAPES)
        # (ratio_max, excursion_max): held-out words from a source up to 6:1 faster (training: 4:1)
        ratio = (2.0, 4.0) if shape == "short" else (6.0, 12.0) if held else (4.0, 8.0)
        module = d.choice(HELDOUT_NAMES if held else TRAIN_NAMES)
        width = d.choice(HELDOUT_WIDTHS if held else TRAIN_WIDTHS)
        return DeParams(
            vid,
            module,
            width,
            shape,
            capture=d.choice(CAPTURES),
            # where the committed variants' gates hold: fewer words for a wider word (more bits to mix)
            sends=(4, 12) if shape == "short" else (2, 6) if width < 16 else (1, 4),
            ratio_max=ratio[0],
            excursion_max=ratio[1],
            heldout=held,
        )

    def region_of(self, p: DeParams) -> Region | None:
        if p.width in TRAIN_WIDTHS and p.module in TRAIN_NAMES and not p.heldout:
            return "train"
        if p.width in HELDOUT_WIDTHS and p.module in HELDOUT_NAMES and p.heldout:
            return "heldout"
        return None

    def search(self, p: DeParams) -> Iterator[DeParams]:
        """The sends range (the stimulus knob that sets the detection band: more words per run, more
        chances to catch the defect), p's first, then the others by distance from it (the
        smaller first on a tie); the run is lengthened where the range needs it."""
        yield p
        mid = sum(p.sends) / 2
        steps = sorted((r for r in SENDS_STEPS if r != p.sends), key=lambda r: (abs(sum(r) / 2 - mid), r))
        for lo, hi in steps:
            yield replace(p, sends=(lo, hi), run_slow_cycles=max(p.run_slow_cycles, GAP_SLOW * (hi + 2)))


FAMILY = _DataEn()


def write_task(p: DeParams, out: Path, *, force: bool = False) -> Path:
    return write_files(generate(p), out, force=force)


def write_all(root: Path | None = None) -> list[Path]:
    """Rewrite every committed variant's folder (``tasks/<id>/`` by default)."""
    from ... import paths  # noqa: PLC0415

    base = Path(root) if root is not None else paths.tasks_dir()
    return [write_task(p, base / p.id, force=True) for p in VARIANTS]
