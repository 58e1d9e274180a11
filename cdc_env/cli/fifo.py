"""``cdc-env fifo ...`` and ``cdc-env heldout ...``: the FIFO family's commands.

  cdc-env fifo list                       the committed variants and their parameters
  cdc-env fifo generate --all             rewrite tasks/<id>/ for every committed variant
  cdc-env fifo generate ID... [--out D]   write the named variants (into D/<id>/ or tasks/<id>/)
  cdc-env fifo generate --spec JSON --out D   write a variant from explicit parameters
  cdc-env fifo generate --check           exit 1 if a committed folder differs from the generator
  cdc-env heldout mint --key-file K --out D [--no-gate]
  cdc-env heldout verify --dir D [--key-file K]

Every command takes ``--json``. The gate itself is ``cdc-env gate-tasks``; held-out folders are
gated at mint time and are never listed by ``cdc-env tasks``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import paths
from ..errors import CdcError
from ..fifo.generator import FifoParams, generate, write_task
from ..fifo.variants import EXTRA, TRAINING, by_id


def _committed() -> tuple[FifoParams, ...]:
    return TRAINING + EXTRA


def cmd_list(args) -> int:
    rows = [json.loads(p.to_json()) for p in _committed()]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for p in _committed():
            print(f"{p.id:14} {p.module:18} {p.style:9} w{p.width:<3} depth {p.depth:<3} burst {p.burst:<3} "
                  f"{p.shape:13} extras {','.join(p.extras) or '-'}")
    return 0


def _selected(args) -> list[FifoParams]:
    if args.spec:
        try:
            text = args.spec if args.spec.lstrip().startswith("{") else Path(args.spec).read_text()
            p = FifoParams.from_dict(json.loads(text))
        except OSError as exc:
            raise CdcError(f"cannot read --spec file {args.spec}: {exc.strerror}") from None
        except (ValueError, TypeError) as exc:
            raise CdcError(f"--spec is not a valid parameter set: {exc}") from None
        p.check()
        return [p]
    if args.all or args.check:
        return list(_committed())
    if not args.ids:
        raise CdcError("name variants to generate, or use --all, --check or --spec")
    out = []
    for vid in args.ids:
        p = by_id(vid)
        if p is None:
            raise CdcError(f"unknown FIFO variant '{vid}' (see: cdc-env fifo list)")
        out.append(p)
    return out


def differs(p: FifoParams, folder: Path) -> list[str]:
    """Files of ``folder`` that differ from what the generator writes for ``p`` (or are extra)."""
    want = generate(p)
    files = folder.rglob("*") if folder.is_dir() else []
    have = {str(f.relative_to(folder)): f for f in files if f.is_file()}
    bad = [rel for rel, text in want.items() if rel not in have or have[rel].read_text() != text]
    bad += [rel for rel in have if rel not in want]
    return sorted(bad)


def cmd_generate(args) -> int:
    params = _selected(args)
    if args.spec and not args.out:
        raise CdcError("--spec needs --out")
    root = Path(args.out) if args.out else paths.tasks_dir()
    rows = []
    if args.check:
        for p in params:
            bad = differs(p, root / p.id)
            rows.append({"id": p.id, "ok": not bad, "differs": bad})
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            for r in rows:
                print(f"{r['id']:14} {'ok' if r['ok'] else 'DIFFERS: ' + ', '.join(r['differs'])}")
        return 0 if all(r["ok"] for r in rows) else 1
    for p in params:
        dest = write_task(p, root / p.id, force=args.force or not args.out)
        rows.append({"id": p.id, "dir": str(dest)})
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print(f"wrote {r['dir']}")
    return 0


def _progress(enabled: bool):
    if not enabled:
        return None

    def show(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    return show


def cmd_mint(args) -> int:
    from ..fifo.heldout import mint

    manifest = mint(Path(args.key_file), Path(args.out), gate=not args.no_gate, force=args.force,
                    progress=_progress(not args.json))
    if args.json:
        print(json.dumps(manifest, indent=2))
    else:
        for v in manifest["variants"]:
            g = v.get("gate")
            verdict = ("not gated" if g is None else "gate ok" if g["ok"]
                       else "GATE FAILED: " + "; ".join(g["problems"]))
            print(f"{v['id']}  {v['fingerprint'][:16]}  {verdict}")
        print(f"manifest: {Path(args.out) / 'heldout_manifest.json'}")
    ok = all(v.get("gate") is None or v["gate"]["ok"] for v in manifest["variants"])
    return 0 if ok else 1


def cmd_verify(args) -> int:
    from ..fifo.heldout import verify

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


def register(sub: argparse._SubParsersAction) -> None:
    f = sub.add_parser("fifo", help="the asynchronous FIFO family: list and generate variants")
    fsub = f.add_subparsers(dest="fifo_command", required=True, parser_class=type(f))
    s = fsub.add_parser("list", help="the committed variants")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_list)
    s = fsub.add_parser("generate", help="write task folders from the generator")
    s.add_argument("ids", nargs="*", help="committed variant ids (see: cdc-env fifo list)")
    s.add_argument("--all", action="store_true", help="every committed variant")
    s.add_argument("--spec", help="a parameter set (JSON text or file) instead of a committed variant")
    s.add_argument("--out", help="parent folder (default: the repository's tasks/)")
    s.add_argument("--force", action="store_true", help="overwrite a non-empty folder under --out")
    s.add_argument("--check", action="store_true", help="compare committed folders with the generator")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_generate)

    h = sub.add_parser("heldout", help="mint and verify held-out FIFO variants (never committed)")
    hsub = h.add_subparsers(dest="heldout_command", required=True, parser_class=type(h))
    s = hsub.add_parser("mint", help="mint the held-out variants from a secret key file")
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
