"""``induce corpora list|fetch``: the registry of public corpora (see :mod:`induce.corpus.registry`)."""

from __future__ import annotations

import argparse
import sys

from .common import add_json_flag, emit


#: the one-line description ``induce --help`` shows (without building this command's parser)
HELP = "list or download public corpora"


CORPORA_DIR_HELP = "a local collection laid out as shared/corpora (default: $INDUCE_CORPORA, if set)"


def register(subparsers) -> None:
    parser = subparsers.add_parser("corpora", help=HELP)
    sub = parser.add_subparsers(dest="corpora_command", metavar="ACTION")
    sub.required = True

    p_list = sub.add_parser("list", help="list the registered corpora, which are downloaded and which are present "
                            "in $INDUCE_CORPORA")
    p_list.add_argument("--data-dir", help="data directory (default: $INDUCE_DATA or ~/.cache/induce)")
    p_list.add_argument("--corpora-dir", help=CORPORA_DIR_HELP)
    add_json_flag(p_list)
    p_list.set_defaults(handler=_list)

    p_fetch = sub.add_parser("fetch", help="download a corpus and verify its checksums; prints its path")
    p_fetch.add_argument("name", help="corpus name (see `induce corpora list`)")
    p_fetch.add_argument("--data-dir", help="data directory (default: $INDUCE_DATA or ~/.cache/induce)")
    p_fetch.add_argument("--corpora-dir", help=CORPORA_DIR_HELP + "; a corpus present there is not downloaded")
    p_fetch.add_argument("--mirror", help="base URL replacing the official scheme://host (e.g. file:///srv/mirror)")
    p_fetch.add_argument("--no-verify", action="store_true",
                         help="accept files whose checksum is unknown or differs")
    p_fetch.add_argument("--quiet", action="store_true", help="no progress bar")
    p_fetch.set_defaults(handler=_fetch)


def _list(args: argparse.Namespace) -> int:
    from ..corpus import registry

    data_dir = args.data_dir if args.data_dir else registry.default_data_dir()
    corpora_dir = args.corpora_dir if args.corpora_dir else registry.default_corpora_dir()
    corpora = registry.list_corpora()
    for item in corpora:
        path = registry.fetched_path(item["name"], data_dir)
        item["fetched"] = str(path) if path is not None else None
        local = registry.local_path(item["name"], corpora_dir) if corpora_dir is not None else None
        item["local"] = str(local) if local is not None else None
    if args.json:
        emit({"data_dir": str(data_dir), "corpora_dir": None if corpora_dir is None else str(corpora_dir),
              "corpora": corpora}, args.json)
        return 0
    width = max(len(c["name"]) for c in corpora)
    print(f"data directory: {data_dir}")
    print(f"local corpora:  {corpora_dir if corpora_dir is not None else '(none: $INDUCE_CORPORA is not set)'}")
    for c in corpora:
        check = "sha256" if c["verified"] else "no-sha"
        here = "fetched" if c["fetched"] else "local" if c["local"] else "-"
        print(f"{c['name'].ljust(width)}  {check}  {here:7}  {len(c['files'])} file(s)  "
              f"{c['description']}  [{c['license']}]")
    return 0


def _fetch(args: argparse.Namespace) -> int:
    from ..corpus import registry

    path = registry.fetch(
        args.name,
        data_dir=args.data_dir,
        mirror=args.mirror,
        progress=not args.quiet and sys.stderr.isatty(),
        no_verify=args.no_verify,
        corpora_dir=args.corpora_dir,
    )
    print(path)
    return 0
