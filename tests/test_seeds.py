"""Seeds: determinism, disjoint fixed sets, and the no-coincident-edges rule."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_env.sim.seeds import Prng, hidden_seeds, plan_seed, visible_seeds
from cdc_env.task import list_tasks, load_task

TASKS = [t.id for t in list_tasks()]


def test_prng_is_splitmix64_reference():
    # SplitMix64 from state 0 (reference values from the published algorithm).
    p = Prng()
    p.state = 0
    assert p.next() == 0xE220A8397B1DCDAF
    assert p.next() == 0x6E789E6AA1B965F4


def test_seed_sets_fixed_and_disjoint():
    for tid in TASKS:
        t = load_task(tid)
        hid, vis = hidden_seeds(t), visible_seeds(t)
        assert len(vis) == 8 and len(set(vis)) == 8
        assert len(hid) == t.seeds.hidden_count == len(set(hid))
        assert not set(hid) & set(vis)
        assert hid == hidden_seeds(t)
        assert hidden_seeds(t, 32) == hid[:32]


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**40), task=st.sampled_from(TASKS))
def test_plan_rules(seed, task):
    t = load_task(task)
    p = plan_seed(t, seed)
    assert p == plan_seed(t, seed)
    assert p.half_a % 4 == 0 and p.half_b % 4 == 0
    assert p.ofs_a % 4 == 1 and p.ofs_b % 4 == 3  # so every clk_a edge = 1, clk_b edge = 3 (mod 4)
    assert p.ofs_a < 2 * p.half_a and p.ofs_b < 2 * p.half_b
    assert p.t_end % 4 == 0
    fast, slow = sorted((p.half_a, p.half_b))
    assert t.seeds.ratio_min - 0.01 <= slow / fast <= t.seeds.ratio_max + 0.01
    if t.seeds.fast in ("a", "b"):
        assert p.fast == t.seeds.fast
    for k, (lo, hi) in t.stimulus.items():
        assert lo <= p.stimulus[k] <= hi
    args = p.plusargs(settle=True, nonce=5)
    assert "+cdc_settle=1" in args and "+cdc_nonce=0000000000000005" in args


def test_edges_never_coincide_exhaustively():
    """Walk every edge of both clocks for a sample of real plans: no shared instant."""
    t = load_task(TASKS[0])
    for seed in range(40):
        p = plan_seed(t, seed)
        horizon = min(p.t_end, 400 * max(p.half_a, p.half_b))
        a = set(range(p.ofs_a, horizon, p.half_a))
        b = set(range(p.ofs_b, horizon, p.half_b))
        assert not a & b


def test_clock_corners_are_a_fixed_share_of_hidden_seeds():
    """Every CORNER_SHARE-th hidden seed runs at a clock corner: an exact ratio (1:1, 2:1, 3:2,
    another integer) or an extreme of the range, half of them with first edges 2 ps apart;
    visible seeds never do, and no two edges ever coincide."""
    from cdc_env.sim.seeds import CORNER_SHARE, is_corner

    for tid in ("handshake", "event", "fifo_01"):
        t = load_task(tid)
        hs = hidden_seeds(t)
        corners = [s for s in hs if is_corner(t, s)]
        assert len(corners) == len(hs) // CORNER_SHARE
        assert sum(is_corner(t, s) for s in hs[:32]) == 32 // CORNER_SHARE
        assert not any(is_corner(t, s) for s in t.seeds.visible)
        plans = [plan_seed(t, s) for s in corners]
        exact = [p for p in plans if max(p.half_a, p.half_b) * 2 % min(p.half_a, p.half_b) == 0]
        assert len(exact) >= len(plans) // 2
        assert any(p.half_a == p.half_b for p in plans)
        assert any(abs(p.ofs_a - p.ofs_b) == 2 for p in plans)
        for p in plans:
            assert p.ofs_a % 4 == 1 and p.ofs_b % 4 == 3 and p.half_a % 4 == 0 and p.half_b % 4 == 0
            assert t.seeds.ratio_min - 0.01 <= p.ratio <= t.seeds.ratio_max + 0.01
        # the corner replaces the clocks only: stimulus and settling keys are the seed's own
        others = [s for s in hs if not is_corner(t, s)]
        assert len({plan_seed(t, s).ratio for s in others}) > len(others) // 2


def test_a_design_that_misbehaves_only_at_an_exact_ratio_is_caught_by_the_corners():
    """Fixture sim-t23-hs-ratio-trojan-1to1 (issue 23, class 6): the reference handshake plus a
    detector that sends a spurious acknowledgement when the clocks run exactly 1:1. No continuous
    draw of this task's hidden seeds comes within 2.6 % of 1:1, so only the corners can catch it:
    it must fail on some hidden seeds, and every one of them must be a 1:1 corner -- or a ratio
    excursion with the acknowledger the faster clock (issue 35), which its detector also takes for
    1:1."""
    from cdc_env import paths
    from cdc_env.grade import grade
    from cdc_env.sim.seeds import is_corner, is_excursion

    t = load_task("handshake")
    text = (paths.fixtures_dir() / "sim-t23-hs-ratio-trojan-1to1" / "submission.v").read_text()
    report = grade(t, text, hidden="all")
    failed = [r["seed"] for r in report["seeds"]["hidden"]["results"] if r["status"] != "pass"]
    assert failed, "the corners did not catch a design that misbehaves only at 1:1"
    assert any(is_corner(t, s) for s in failed), failed
    assert all((is_corner(t, s) and plan_seed(t, s).half_a == plan_seed(t, s).half_b)
               or (is_excursion(t, s) and plan_seed(t, s).fast == "b") for s in failed), failed
    assert all(abs(plan_seed(t, s).ratio - 1.0) > 0.02 for s in hidden_seeds(t) if not is_corner(t, s))


def test_ratio_excursions_are_a_fixed_share_outside_the_stated_range():
    """Issue 35, class A: tasks whose manifest allows it run every EXCURSION_SHARE-th hidden seed
    outside the stated steady range -- the fast side beyond ratio_max, or the other side the
    faster one -- never a visible seed or a corner, and no other seed's plan moves."""
    import dataclasses

    from cdc_env.sim.seeds import EXCURSION_SHARE, is_corner, is_excursion

    for tid in ("handshake", "event", "fifo_01", "fifo_x_early"):
        t = load_task(tid)
        cfg = t.seeds
        hs = hidden_seeds(t)
        xs = [s for s in hs if is_excursion(t, s)]
        assert len(xs) == len(hs) // EXCURSION_SHARE and sum(is_excursion(t, s) for s in hs[:32]) == 2
        assert not any(is_excursion(t, s) or is_corner(t, s) for s in t.seeds.visible)
        assert not any(is_corner(t, s) for s in xs)
        plans = [plan_seed(t, s) for s in xs]
        for p in plans:
            same = cfg.fast in ("either", p.fast)
            assert (p.ratio > cfg.ratio_max - 0.01) if same else (p.ratio <= cfg.excursion_other + 0.01)
            assert p.ratio <= max(cfg.excursion_max, cfg.excursion_other) + 0.01
            assert p.ofs_a % 4 == 1 and p.ofs_b % 4 == 3 and p.half_a % 4 == 0 and p.half_b % 4 == 0
        # without excursions in the manifest, every other seed plans exactly as before
        plain = dataclasses.replace(t, seeds=dataclasses.replace(cfg, excursion_max=0.0, excursion_other=0.0))
        assert not any(is_excursion(plain, s) for s in hs)
        assert all(plan_seed(plain, s) == plan_seed(t, s) for s in hs if s not in xs)
        assert any(plan_seed(plain, s) != plan_seed(t, s) for s in xs)
    x = load_task("fifo_x_rdbin")  # writer fast 1-16: both kinds of excursion occur
    plans = [plan_seed(x, s) for s in hidden_seeds(x) if is_excursion(x, s)]
    assert {p.fast for p in plans} == {"a", "b"} and all(p.ratio > 16 for p in plans if p.fast == "a")
    # fifo_x_early (early_publish): the reader beyond 4:1 too, although it then reads the planted
    # early pointer's slot without late settling (the variant gate counts that column over the
    # in-range seeds, cdc_env/taskgate.py), and the writer faster
    e = load_task("fifo_x_early")
    xe = [plan_seed(e, s) for s in hidden_seeds(e) if is_excursion(e, s)]
    assert {p.fast for p in xe} == {"a", "b"} and all(p.ratio > 4 for p in xe if p.fast == "b")


def test_a_shortened_excursion_seed_asks_a_per_run_count_for_the_same_rate():
    """A seed beyond ratio_max runs fewer slow cycles and passes +run_pct (its share of the full
    run), so the handshake's per-run minimum (min_done) asks for the rate the bug report states,
    not more; every other seed passes none (red team, session 10: a correct 8-stage pipeline
    failed 7 shortened excursion seeds on the unscaled 20-request minimum)."""
    from cdc_env.sim.seeds import is_excursion

    t = load_task("handshake")
    cfg = t.seeds
    for s in hidden_seeds(t):
        p = plan_seed(t, s)
        slow = 2 * max(p.half_a, p.half_b)
        if is_excursion(t, s) and p.ratio > cfg.ratio_max:
            pct = p.stimulus["run_pct"]
            assert 50 <= pct < 100
            assert 0 <= 100 * p.t_end / slow / cfg.run_slow_cycles - pct < 2  # pct is rounded down
            assert f"+run_pct={pct}" in p.plusargs(settle=True, nonce=1)
        else:
            assert "run_pct" not in p.stimulus
    assert any(plan_seed(t, s).stimulus.get("run_pct") for s in hidden_seeds(t))


def test_a_manifest_with_bad_excursions_is_refused(tmp_path):
    import shutil

    import pytest

    from cdc_env.errors import CdcError

    src = load_task("handshake").dir
    for bad in ("excursion_max = 4.0", "excursion_other = 0.5"):
        d = tmp_path / bad.split()[0]
        shutil.copytree(src, d)
        text = (d / "task.toml").read_text()
        text = "\n".join(line for line in text.splitlines() if not line.startswith("excursion_"))
        (d / "task.toml").write_text(text.replace("hidden_count = 200", "hidden_count = 200\n" + bad) + "\n")
        with pytest.raises(CdcError, match="excursions"):
            load_task(d)
