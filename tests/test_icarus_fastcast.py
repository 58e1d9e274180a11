"""The cast memo preloaded into vvp (trusted/icarus/cdc_fastcast.c): every dynamic_cast answers
as the C++ runtime does, with and without it, and the sandboxed seeds really load it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cdc_env.sim.icarus import PRELOAD_ENV, PRELOAD_NAME, Icarus, preload_module
from cdc_env.sim.proc import Limits, run_bounded

from .conftest import needs_bwrap, needs_icarus

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")

# Casts the runtime must answer: down, up, cross (multiple inheritance), through virtual bases,
# failing ones, and many dynamic types behind one static type (more keys than the memo has
# slots, so slots are overwritten and keys collide). Each answer is printed as the offset of the
# result from the source object (or "null"), in a fixed order, twice (the second pass hits the
# memo).
_PROGRAM = r"""
#include <cstdio>
#include <cstddef>
struct Base { virtual ~Base() {} int b = 1; };
struct Iface { virtual ~Iface() {} int i = 2; };
struct Mid : Base { int m = 3; };
struct Leaf : Mid, Iface { int l = 4; };
struct VA : virtual Base { int va = 5; };
struct VB : virtual Base { int vb = 6; };
struct Diamond : VA, VB, Iface { int d = 7; };
template <int N> struct T : Base, Iface { int t = N; };
template <int N> struct U : T<N> { int u = N; };

static long off(const void* r, const void* s) {
  return r ? (long)((const char*)r - (const char*)s) : -999999;
}

template <int N> static void many(Base** out) { out[2 * N] = new T<N>(); out[2 * N + 1] = new U<N>(); }
template <int N> struct Fill { static void go(Base** out) { many<N>(out); Fill<N - 1>::go(out); } };
template <> struct Fill<-1> { static void go(Base**) {} };
template <int N> static void probe(Base* p) {
  std::printf("T%d %ld U%d %ld ", N, off(dynamic_cast<T<N>*>(p), p), N, off(dynamic_cast<U<N>*>(p), p));
}
template <int N> struct Probe { static void go(Base* p) { probe<N>(p); Probe<N - 1>::go(p); } };
template <> struct Probe<-1> { static void go(Base*) {} };

int main() {
  const int K = 300;
  static Base* objs[2 * K];
  Fill<K - 1>::go(objs);
  Leaf leaf; Diamond dia; Mid mid; Base base;
  Base* bs[] = {&leaf, &mid, &base, static_cast<VA*>(&dia)};
  for (int pass = 0; pass < 2; ++pass) {
    for (Base* p : bs) {
      std::printf("%ld %ld %ld %ld %ld\n", off(dynamic_cast<Mid*>(p), p), off(dynamic_cast<Leaf*>(p), p),
                  off(dynamic_cast<Iface*>(p), p), off(dynamic_cast<Diamond*>(p), p),
                  off(dynamic_cast<VB*>(p), p));
    }
    Iface* ip = &leaf;
    std::printf("x %ld %ld\n", off(dynamic_cast<Leaf*>(ip), ip), off(dynamic_cast<Base*>(ip), ip));
    ip = &dia;
    std::printf("y %ld %ld %ld\n", off(dynamic_cast<Diamond*>(ip), ip), off(dynamic_cast<VA*>(ip), ip),
                off(dynamic_cast<Mid*>(ip), ip));
    for (int k = 0; k < 2 * K; ++k) {
      Base* p = objs[k];
      std::printf("%d %ld ", k, off(dynamic_cast<Iface*>(p), p));
      if (k % 37 == 0) Probe<K - 1>::go(p);
    }
    std::printf("\n");
  }
  return 0;
}
"""


@needs_gxx
def test_the_memo_answers_every_cast_as_the_runtime_does(tmp_path: Path) -> None:
    so = preload_module(sandbox=False) / f"{PRELOAD_NAME}.so"
    (tmp_path / "casts.cc").write_text(_PROGRAM)
    subprocess.run(["g++", "-O1", "-ftemplate-depth=2000", "-o", "casts", "casts.cc"], cwd=tmp_path,
                   check=True, timeout=300)
    plain = subprocess.run(["./casts"], cwd=tmp_path, capture_output=True, text=True, check=True, timeout=60)
    memo = subprocess.run(["./casts"], cwd=tmp_path, capture_output=True, text=True, check=True, timeout=60,
                          env={**os.environ, "LD_PRELOAD": str(so)})
    assert memo.stderr == ""  # loaded (ld.so reports a preload it cannot load on stderr)
    assert "-999999" in plain.stdout and plain.stdout.count("\n") > 10  # failing casts are covered
    assert memo.stdout == plain.stdout


@needs_icarus
@needs_bwrap
def test_sandboxed_vvp_loads_the_memo(tmp_path: Path) -> None:
    """The argv a seed runs with preloads the memo from a path the sandbox can read; a path it
    cannot read is reported by ld.so (so this test can fail)."""
    pre = preload_module()
    so = pre / f"{PRELOAD_NAME}.so"
    limits = Limits(wall_s=60.0, cpu_s=30, mem_bytes=1 << 30, out_bytes=1 << 16)
    argv = ["env", f"LD_PRELOAD={so}", "vvp", "-V"]
    ok = run_bounded(argv, tmp_path, limits, sandbox=True, ro_paths=(pre,))
    assert ok.returncode == 0 and "cannot be preloaded" not in ok.stderr, ok.stderr
    bad = run_bounded(argv, tmp_path, limits, sandbox=True, ro_paths=())
    assert "cannot be preloaded" in bad.stderr


def test_seed_argv_carries_the_memo_unless_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from cdc_env.sim.base import Build
    from cdc_env.sim.icarus import _preload_dir

    pre = _preload_dir(True)
    assert pre and Path(pre, f"{PRELOAD_NAME}.so").is_file()
    b = Build("pass", "", Path("."), extra={"vpi": "/v", "tb_top": "t", "preload": pre})
    argv, n = Icarus().zygote_argv(b)
    assert argv[:n] == ["env", f"LD_PRELOAD={pre}/{PRELOAD_NAME}.so", "vvp", "-n", "sim.vvp"]
    assert Path(pre) in Icarus().seed_ro_paths(b)
    monkeypatch.setenv(PRELOAD_ENV, "0")
    assert _preload_dir(True) == ""
    b.extra["preload"] = ""
    assert Icarus().zygote_argv(b)[0][:3] == ["vvp", "-n", "sim.vvp"]
