"""Seeds: one integer fixes a run.

From ``(task id, seed)`` Python derives, with the integer PRNG below, the clock periods and
phases, the stimulus key and parameters, and the settling key; they reach the simulator as
plusargs. The choices made during simulation (which bits settle late, the stimulus pattern) come
from PRNGs written in Verilog keyed by those values, so every simulator makes the same choices.

PRNG: SplitMix64 (Steele, Lea, Flood 2014), seeded with 64-bit FNV-1a of the key parts joined
by '|'. Every derived value is an integer; no floating point reaches the simulator.

Clock corners (hidden seeds only): ratios and phases are otherwise drawn from continuous ranges,
which almost never hit an exact ratio with aligned edges, where designs that depend on aliasing
fail. So every CORNER_SHARE-th seed of the task's fixed hidden-seed list (the 10th, 20th, ...:
exactly 10%, and 3 of the first 32) is a corner, fixed by the seed; the corner is drawn from a
stream of its own, keyed by task and seed, so the other seeds' plans do not move. Its clocks are
replaced by one of five kinds, equally likely -- exactly 1:1, exactly 2:1, exactly 3:2, another
exact integer ratio within the task's range, or one of the range's two extremes -- and, on half
of the corners, a phase near zero (the two clocks' first edges 2 ps apart, the least that keeps
edges apart, so at an exact ratio every edge of the slow clock falls 2 ps from one of the fast
clock's). Corners keep the task's fast side and range; the stimulus and settling keys are the
seed's own.

Ratio excursions (hidden seeds only): a correct crossing does not rest on how fast the other
clock runs (tasks/common/CONTRACT.md, "Delay-insensitive crossings"), so tasks whose manifest
sets ``excursion_max`` / ``excursion_other`` run every EXCURSION_SHARE-th hidden seed (the 5th,
25th, ...: exactly 5%, and 2 of the first 32; never a corner) outside the stated steady range:
the task's fast side faster than ``ratio_max``, log-uniform up to ``excursion_max``, or (fast "a"
or "b" only) the other side the faster one, log-uniform from 1:1 to ``excursion_other``; when a
task allows both, a coin decides. The excursion is drawn from a stream of its own (keyed by task
and seed), so no other seed's plan moves. An excursion seed faster than ``ratio_max`` runs
``run_slow_cycles * ratio_max / ratio`` slow cycles (at least half of ``run_slow_cycles``), so it
costs about what a seed at ``ratio_max`` costs; it gets ``+run_pct=<its share of the full run, in
percent>``, so that a count a testbench requires per run (the handshake's ``min_done``) asks for
the same rate as on a full run. Each task's BUG.md says that these seeds exist
and why they are fair (its bounds are stated in cycles of each clock, which hold at any ratio).

Timing rules (no coincident clock edges, so event order never depends on the simulator):
all times are integer picoseconds; half periods are multiples of 4; every clk_a edge falls at a
time = 1 (mod 4) and every clk_b edge at 3 (mod 4); resets assert (at 2 ps, before the first
edge of either clock: ofs_a >= 5, ofs_b >= 3) and release, and the run stops, at even times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..task import Task

MASK64 = (1 << 64) - 1
FAST_HALF_MIN = 2000  # ps: the fast clock runs at 167-250 MHz
FAST_HALF_STEPS = 250  # half period = FAST_HALF_MIN + 4 * k, k < FAST_HALF_STEPS


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & MASK64
    return h


class Prng:
    """SplitMix64. ``Prng("handshake", 17)`` is a stream keyed by its parts."""

    def __init__(self, *parts: object) -> None:
        self.state = fnv1a64("|".join(str(p) for p in parts).encode())

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """Uniform integer in [0, n) (n < 2**32; modulo bias < 2**-32)."""
        return self.next() % n

    def unit(self) -> float:
        """Uniform in [0, 1), from 53 bits."""
        return (self.next() >> 11) / float(1 << 53)


@dataclass(frozen=True)
class SeedPlan:
    seed: int
    fast: str  # "a" or "b"
    ratio: float  # slow period / fast period, as realised in integer ps
    half_a: int
    half_b: int
    ofs_a: int
    ofs_b: int
    t_end: int
    stim_key: int
    settle_key: int
    stimulus: dict[str, int]
    gray_check: bool = False  # hidden seeds: +cdc_gray_check=1 (trusted/hdl/cdc_tb.vh, every family)

    def plusargs(self, *, settle: bool, nonce: int) -> list[str]:
        args = [
            f"+cdc_nonce={nonce:016x}",
            f"+half_a={self.half_a}",
            f"+half_b={self.half_b}",
            f"+ofs_a={self.ofs_a}",
            f"+ofs_b={self.ofs_b}",
            f"+t_end={self.t_end}",
            f"+stim_key={self.stim_key}",
            f"+cdc_settle={1 if settle else 0}",
            f"+cdc_settle_key={self.settle_key}",
        ]
        args += [f"+{k}={v}" for k, v in sorted(self.stimulus.items())]
        if self.gray_check:
            args.append("+cdc_gray_check=1")
        return args


def _ratio(cfg, rng: Prng) -> float:
    lo, hi = cfg.ratio_min, cfg.ratio_max
    if cfg.low_band > 0 and lo < 2.0 < hi and rng.unit() < cfg.low_band:
        return lo + (2.0 - lo) * rng.unit()
    if cfg.low_band > 0 and lo < 2.0 < hi:
        lo = 2.0
    return math.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * rng.unit())


HIDDEN_BASE = 1000  # every hidden seed is >= HIDDEN_BASE; visible seeds are chosen below it
CORNER_SHARE = 10  # every CORNER_SHARE-th hidden seed (10%) runs at a clock corner


def _corner(cfg, rng: Prng) -> tuple[int, int, bool]:
    """A clock corner's (slow half period, fast half period, phase near zero), in ps."""
    lo, hi = cfg.ratio_min, cfg.ratio_max
    ints = [r for r in range(3, int(hi) + 1) if r >= lo]
    kind = rng.below(5)
    if kind == 0 and lo <= 1.0:
        p, q = 1, 1
    elif kind == 1 and lo <= 2.0 <= hi:
        p, q = 2, 1
    elif kind == 2 and lo <= 1.5 <= hi:
        p, q = 3, 2
    elif kind == 3 and ints:
        p, q = ints[rng.below(len(ints))], 1
    else:  # an extreme of the range (also when the kind drawn is outside it)
        p, q = (None, 1)
    h_fast = FAST_HALF_MIN + 4 * q * rng.below(FAST_HALF_STEPS // q)  # a multiple of 4q
    if p is None:
        ratio = lo if rng.below(2) == 0 else hi
        h_slow = max(h_fast, 4 * round(h_fast * ratio / 4))
    else:
        h_slow = h_fast * p // q
    return h_slow, h_fast, rng.below(2) == 0


EXCURSION_SHARE = 20  # every EXCURSION_SHARE-th hidden seed (5%), offset from the corners


def _excursion(task: Task, rng: Prng) -> tuple[str, float]:
    """An excursion seed's (fast side, ratio): beyond ratio_max on the task's fast side, or the
    other side the faster one (see the module docstring)."""
    cfg = task.seeds
    kinds = ((["same"] if cfg.excursion_max > cfg.ratio_max else [])
             + (["other"] if cfg.excursion_other > 1.0 else []))
    kind = kinds[rng.below(len(kinds))] if len(kinds) > 1 else kinds[0]
    if kind == "same":
        lo, hi = cfg.ratio_max, cfg.excursion_max
        fast = cfg.fast if cfg.fast != "either" else ("a" if rng.below(2) == 0 else "b")
    else:
        lo, hi = 1.0, cfg.excursion_other
        fast = "b" if cfg.fast == "a" else "a"
    return fast, math.exp(math.log(lo) + (math.log(hi) - math.log(lo)) * rng.unit())


_CORNERS: dict[tuple, frozenset[int]] = {}
_EXCURSIONS: dict[tuple, frozenset[int]] = {}


def is_corner(task: Task, seed: int) -> bool:
    """A hidden seed that runs at a clock corner: every CORNER_SHARE-th seed of the task's hidden
    list (see the module docstring)."""
    key = (task.id, task.seeds.hidden_count, tuple(task.seeds.visible))
    if key not in _CORNERS:
        hs = hidden_seeds(task)
        _CORNERS[key] = frozenset(hs[CORNER_SHARE - 1::CORNER_SHARE])
    return seed in _CORNERS[key]


def is_excursion(task: Task, seed: int) -> bool:
    """A hidden seed that runs outside the task's stated steady clock range (a ratio excursion;
    see the module docstring): every EXCURSION_SHARE-th seed of the hidden list, starting with the
    5th, for tasks whose manifest allows excursions."""
    cfg = task.seeds
    if cfg.excursion_max <= cfg.ratio_max and cfg.excursion_other <= 1.0:
        return False
    key = (task.id, cfg.hidden_count, tuple(cfg.visible))
    if key not in _EXCURSIONS:
        hs = hidden_seeds(task)
        _EXCURSIONS[key] = frozenset(hs[4::EXCURSION_SHARE])
    return seed in _EXCURSIONS[key]


def is_hidden(task: Task, seed: int) -> bool:
    """A seed that runs the hidden-seed checks: at or above HIDDEN_BASE and not a visible seed."""
    return seed >= HIDDEN_BASE and seed not in task.seeds.visible


def plan_seed(task: Task, seed: int, *, hidden_checks: bool | None = None) -> SeedPlan:
    """Everything a run needs, from the task and one integer.

    hidden_checks: run the checks reserved for hidden seeds (``+cdc_gray_check=1``: the
    one-bit-per-source-edge rule for every ``cdc_sync_bus`` wider than one bit, in every family,
    and the FIFO family's sum over all synchronizers); by default on exactly for hidden seeds
    (``is_hidden``), so every path that plans a hidden seed -- one by one, batched, parity runs
    -- gets them alike.
    """
    cfg = task.seeds
    rng = Prng("cdc-seed-v1", task.id, seed)
    ratio = _ratio(cfg, rng)
    fast = cfg.fast if cfg.fast != "either" else ("a" if rng.below(2) == 0 else "b")
    h_fast = FAST_HALF_MIN + 4 * rng.below(FAST_HALF_STEPS)
    h_slow = max(h_fast, 4 * round(h_fast * ratio / 4))
    near_zero = False
    if is_corner(task, seed):
        crng = Prng("cdc-corner-v1", task.id, seed)
        h_slow, h_fast, near_zero = _corner(cfg, crng)
    run_slow = cfg.run_slow_cycles
    if is_excursion(task, seed):
        xrng = Prng("cdc-excursion-v1", task.id, seed)
        fast, x_ratio = _excursion(task, xrng)
        h_fast = FAST_HALF_MIN + 4 * xrng.below(FAST_HALF_STEPS)
        h_slow = max(h_fast, 4 * round(h_fast * x_ratio / 4))
        if x_ratio > cfg.ratio_max:  # as many fast cycles as a seed at ratio_max
            run_slow = max(cfg.run_slow_cycles // 2, math.ceil(cfg.run_slow_cycles * cfg.ratio_max / x_ratio))
    half_a, half_b = (h_fast, h_slow) if fast == "a" else (h_slow, h_fast)
    # = 1 (mod 4), within the first period, and after the testbench's reset assertion at 2 ps
    ofs_a = 5 + 4 * rng.below(half_a // 2 - 1)
    ofs_b = 3 + 4 * rng.below(half_b // 2)  # = 3 (mod 4)
    if near_zero:  # first edges 2 ps apart (either order)
        ofs_b = ofs_a + 2 if ofs_b % 8 == 3 else ofs_a - 2
    run = max(ofs_a, ofs_b) + run_slow * 2 * h_slow
    t_end = run + (-run % 4)  # = 0 (mod 4): no edge at the end
    stim_key = rng.next() & 0xFFFFFFFF
    settle_key = rng.next() & 0xFFFFFFFF
    stimulus = {k: lo + rng.below(hi - lo + 1) for k, (lo, hi) in sorted(task.stimulus.items())}
    if run_slow != cfg.run_slow_cycles:  # a shortened excursion: a per-run count scales with it
        stimulus["run_pct"] = 100 * run_slow // cfg.run_slow_cycles
    return SeedPlan(
        seed=seed,
        fast=fast,
        ratio=h_slow / h_fast,
        half_a=half_a,
        half_b=half_b,
        ofs_a=ofs_a,
        ofs_b=ofs_b,
        t_end=t_end,
        stim_key=stim_key,
        settle_key=settle_key,
        stimulus=stimulus,
        gray_check=is_hidden(task, seed) if hidden_checks is None else hidden_checks,
    )


def visible_seeds(task: Task) -> list[int]:
    return list(task.seeds.visible)


def hidden_seeds(task: Task, count: int | None = None) -> list[int]:
    """The task's fixed hidden seeds (disjoint from the visible ones); the first ``count``."""
    n = task.seeds.hidden_count if count is None else min(count, task.seeds.hidden_count)
    rng = Prng("cdc-hidden-v1", task.id)
    seen = set(task.seeds.visible)
    out: list[int] = []
    while len(out) < task.seeds.hidden_count:
        s = HIDDEN_BASE + rng.below(1 << 30)
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out[:n]


def hidden_for(task: Task, hidden: int | str | None) -> list[int]:
    """The hidden seeds a grade runs for ``hidden``: every one for ``"all"``, the first N for a
    number N, none for 0 or None. The one place ``hidden`` is checked against the task: anything
    but "all" or 0..the task's hidden count is a ``ValueError`` (``parse_hidden``'s message), the
    same for ``grade()``, grade-batch, ``CdcRepairEnv``, the server and the CLI."""
    if hidden is None:
        return []
    n = parse_hidden(hidden, at_most=task.seeds.hidden_count, task_id=task.id)
    if not n:
        return []
    return hidden_seeds(task, None if n == "all" else int(n))


def parse_hidden(value: object, *, at_most: int | None = None, task_id: str | None = None) -> int | str:
    """How many hidden seeds to grade, decoded once at the edge (CLI, server, batch reader).

    ``value`` is ``"all"``, a whole number >= 0, or the decimal text of one (as a command line
    gives it). Returns ``"all"`` or the number (``grade(hidden=...)`` takes either). ``at_most``:
    the task's hidden-seed count (``task_id`` names it in the message). Anything else is a
    ``ValueError`` with a one-line message that starts with "hidden".
    """
    if value == "all":
        return "all"
    n = value
    if isinstance(value, str):
        try:
            n = int(value)
        except ValueError:
            n = None
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"hidden must be a number of 0 or more or 'all', not {value!r}")
    if at_most is not None and n > at_most:
        where = f" for task '{task_id}'" if task_id else ""
        raise ValueError(f"hidden must be at most {at_most}{where}, or 'all'")
    return n
