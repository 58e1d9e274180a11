"""``cdc-env family ...``, ``cdc-env fifo ...``, ``cdc-env heldout ...``: the task families' commands.

  cdc-env family list                             the registered families
  cdc-env family show NAME                        a family's committed variants and their parameters
  cdc-env family generate NAME --all              rewrite tasks/<id>/ for every committed variant
  cdc-env family generate NAME ID... [--out D]    write the named variants (into D/<id>/ or tasks/<id>/)
  cdc-env family generate NAME --spec JSON --out D   write a variant from explicit parameters
  cdc-env family generate NAME --check            exit 1 if a committed folder differs from the generator
  cdc-env fifo list | generate ...                the same for the FIFO family (``family ... fifo``)
  cdc-env heldout mint [--family NAME] --key-file K --out D [--no-gate]
  cdc-env heldout verify --dir D [--key-file K]
  cdc-env catalogue list                          each family's catalogue: entries, rejected, stale
  cdc-env catalogue mint --family F --count N [--backend pool|ray] [--jobs J] [--key-file K] [--out D]
  cdc-env catalogue show ID                       one entry (``fifo@3``) and its materialised folder

Every command takes ``--json``. The gate itself is ``cdc-env gate-tasks``; held-out folders are
gated at mint time and are never listed by ``cdc-env tasks``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import families, paths
from ..errors import CdcError


def cmd_families(args) -> int:
    rows = [{"name": n, "title": families.get(n).title, "committed": len(families.get(n).training())}
            for n in families.names()]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(f"{r['name']:10} {r['committed']:3} committed  {r['title']}")
        print("(handshake and event are handwritten single tasks, not generator families)")
    return 0


def cmd_list(args) -> int:
    fam = families.get(args.family)
    rows = [fam.to_dict(p) for p in fam.training()]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(f"{r['id']:14} " + " ".join(f"{k}={v}" for k, v in r.items() if k not in ("id", "visible")))
    return 0


def _selected(fam, args) -> list:
    if args.spec:
        try:
            text = args.spec if args.spec.lstrip().startswith("{") else Path(args.spec).read_text()
            d = json.loads(text)
        except OSError as exc:
            raise CdcError(f"cannot read --spec file {args.spec}: {exc.strerror}") from None
        except ValueError as exc:
            raise CdcError(f"--spec is not a valid parameter set: {exc}") from None
        if not isinstance(d, dict):
            raise CdcError("--spec is not a valid parameter set: not a JSON object")
        return [fam.from_dict(d)]
    if args.all or args.check:
        return list(fam.training())
    if not args.ids:
        raise CdcError("name variants to generate, or use --all, --check or --spec")
    by_id = {p.id: p for p in fam.training()}
    out = []
    for vid in args.ids:
        if vid not in by_id:
            raise CdcError(f"unknown {fam.name} variant '{vid[:60]}' (see: cdc-env family show {fam.name})")
        out.append(by_id[vid])
    return out


def cmd_generate(args) -> int:
    fam = families.get(args.family)
    params = _selected(fam, args)
    if args.spec and not args.out:
        raise CdcError("--spec needs --out")
    root = Path(args.out) if args.out else paths.tasks_dir()
    rows = []
    if args.check:
        for p in params:
            bad = families.differs(fam.generate(p), root / p.id)
            rows.append({"id": p.id, "ok": not bad, "differs": bad})
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            for r in rows:
                print(f"{r['id']:14} {'ok' if r['ok'] else 'DIFFERS: ' + ', '.join(r['differs'])}")
        return 0 if all(r["ok"] for r in rows) else 1
    for p in params:
        dest = families.write_files(fam.generate(p), root / p.id, force=args.force or not args.out)
        rows.append({"id": p.id, "dir": str(dest)})
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(f"wrote {r['dir']}")
    return 0


def progress_to_stderr(enabled: bool):
    if not enabled:
        return None

    def show(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    return show


def cmd_mint(args) -> int:
    from ..families.heldout import MANIFEST, mint

    manifest = mint(Path(args.key_file), Path(args.out), [args.family] if args.family else None,
                    gate=not args.no_gate, force=args.force, progress=progress_to_stderr(not args.json))
    if args.json:
        print(json.dumps(manifest, indent=2))
    else:
        for v in manifest["variants"]:
            g = v.get("gate")
            verdict = ("not gated" if g is None else "gate ok" if g["ok"]
                       else "GATE FAILED: " + "; ".join(g["problems"]))
            print(f"{v['id']}  {v['fingerprint'][:16]}  {verdict}")
        print(f"manifest: {Path(args.out) / MANIFEST}")
    ok = all(v.get("gate") is None or v["gate"]["ok"] for v in manifest["variants"])
    return 0 if ok else 1


def cmd_verify(args) -> int:
    from ..families.heldout import verify

    res = verify(Path(args.dir), Path(args.key_file) if args.key_file else None)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        for v in res["variants"]:
            print(f"{v['id']}  {'ok' if v['ok'] else 'MISMATCH: ' + ', '.join(v['problems'])}")
        if res.get("key_checked"):
            print("key: " + ("the folder is what this key mints" if res["key_ok"]
                             else "MISMATCH with this key"))
    return 0 if res["ok"] else 1


def cmd_catalogue_list(args) -> int:
    from ..families.mint import summary

    rows = summary(Path(args.dir) if args.dir else None)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(f"{r['family']:10} {r['entries']:4} entries  {r['rejected']:3} rejected  "
                  f"{r['stale']:4} stale  {r['file']}")
    return 0


def cmd_catalogue_mint(args) -> int:
    from ..families.catalogue import DEFAULT_KEY, catalogue_file
    from ..families.heldout import read_key
    from ..families.mint import mint

    key = read_key(Path(args.key_file)) if args.key_file else DEFAULT_KEY
    tally = mint(args.family, args.count, key=key, root=Path(args.out) if args.out else None,
                 backend=args.backend, jobs=args.jobs, gate=not args.no_gate, sim=args.sim,
                 progress=not args.json, ray_address=args.ray_address)
    tally["file"] = str(catalogue_file(args.family, Path(args.out) if args.out else None))
    print(json.dumps(tally) if args.json else
          f"{args.family}: {tally['entries']} new entries, {tally['rejected']} rejected, "
          f"{tally['skipped']} already done -> {tally['file']}")
    return 0


def cmd_catalogue_show(args) -> int:
    from ..families.catalogue import lookup, resolve

    entry = lookup(args.id)
    out = {**entry, "dir": str(resolve(args.id))}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        g = entry.get("gate") or {}
        print(f"{entry['id']}  task {entry['task_id']}  step {entry['step']}  gate "
              f"{'ok' if g.get('ok') else 'not run'}  defect {g.get('defect_hidden_fail_settle')}/200  "
              f"code {entry['code']}\n{out['dir']}")
    return 0


def _generate_args(s: argparse.ArgumentParser) -> None:
    s.add_argument("ids", nargs="*", help="committed variant ids (see: cdc-env family show NAME)")
    s.add_argument("--all", action="store_true", help="every committed variant")
    s.add_argument("--spec", help="a parameter set (JSON text or file) instead of a committed variant")
    s.add_argument("--out", help="parent folder (default: the repository's tasks/)")
    s.add_argument("--force", action="store_true", help="overwrite a non-empty folder under --out")
    s.add_argument("--check", action="store_true", help="compare committed folders with the generator")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_generate)


def register(sub: argparse._SubParsersAction) -> None:
    f = sub.add_parser("family", help="the task families: list, show and generate variants")
    fsub = f.add_subparsers(dest="family_command", required=True, parser_class=type(f))
    s = fsub.add_parser("list", help="the registered families")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_families)
    s = fsub.add_parser("show", help="a family's committed variants")
    s.add_argument("family", choices=families.names())
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_list)
    s = fsub.add_parser("generate", help="write task folders from a family's generator")
    s.add_argument("family", choices=families.names())
    _generate_args(s)

    f = sub.add_parser("fifo", help="the asynchronous FIFO family: list and generate variants")
    fsub = f.add_subparsers(dest="fifo_command", required=True, parser_class=type(f))
    s = fsub.add_parser("list", help="the committed variants")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_list, family="fifo")
    s = fsub.add_parser("generate", help="write task folders from the generator")
    _generate_args(s)
    s.set_defaults(family="fifo")

    c = sub.add_parser("catalogue", help="the catalogues of gated training variants: list, mint, show")
    csub = c.add_subparsers(dest="catalogue_command", required=True, parser_class=type(c))
    s = csub.add_parser("list", help="each family's catalogue and its size")
    s.add_argument("--dir", help="a catalogue folder (default: the repository's catalogues/)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_catalogue_list)
    s = csub.add_parser("mint", help="mint (or resume) a family's catalogue: indices 0..N-1")
    s.add_argument("--family", required=True, choices=families.names())
    s.add_argument("--count", type=int, required=True)
    s.add_argument("--backend", choices=("pool", "ray"), default="pool")
    s.add_argument("--jobs", type=int, default=1, help="variants in flight (pool processes or Ray tasks)")
    s.add_argument("--ray-address", default="local",
                   help="with --backend ray: local (default), auto or host:port")
    s.add_argument("--key-file", help="a key (default: the public training key, for the shipped catalogues)")
    s.add_argument("--out", help="catalogue folder (default: the repository's catalogues/)")
    s.add_argument("--sim", default="icarus", choices=("icarus", "verilator"))
    s.add_argument("--no-gate", action="store_true", help="band and visible seeds only (tests)")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_catalogue_mint)
    s = csub.add_parser("show", help="one entry and the folder it is served from")
    s.add_argument("id", help="<family>@<index>, e.g. fifo@3")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_catalogue_show)

    h = sub.add_parser("heldout", help="mint and verify held-out variants of every family (never committed)")
    hsub = h.add_subparsers(dest="heldout_command", required=True, parser_class=type(h))
    s = hsub.add_parser("mint", help="mint 4 held-out variants per family from a secret key file")
    s.add_argument("--family", choices=families.names(), help="one family (default: every registered family)")
    s.add_argument("--key-file", required=True)
    s.add_argument("--out", required=True, help="folder for the minted tasks and their manifest")
    s.add_argument("--no-gate", action="store_true",
                   help="skip the full gate (visible seeds and the band are still measured)")
    s.add_argument("--force", action="store_true", help="replace an existing minted set in --out")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_mint)
    s = hsub.add_parser("verify", help="check a minted folder against its fingerprint manifest")
    s.add_argument("--dir", required=True)
    s.add_argument("--key-file", help="also re-mint with this key and compare")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_verify)
