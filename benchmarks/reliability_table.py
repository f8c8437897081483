"""Before/after figures of docs/experiments/reliability_inputs.md: run the malformed-input and bad-option
tables through a checkout's CLI.

    python benchmarks/reliability_table.py CHECKOUT [--timeout S] [--json OUT]

Each case of ``tests/reliability/test_malformed_cli.py`` (CASES, BAD_OPTIONS)
runs as ``python -m induce ...`` in a subprocess with ``PYTHONPATH=CHECKOUT``
and is classified: ``clean`` (status 2, the error as one last line ``induce: error: ...``),
``traceback``, ``signal`` (killed by a signal: segfault, abort), ``accepted``
(status 0: the bad value was used), ``timeout`` (still running after S
seconds, i.e. training on a bad value), ``other``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.reliability.test_malformed_cli import BAD_OPTIONS, CASES  # noqa: E402


def classify(proc: subprocess.CompletedProcess | None) -> str:
    if proc is None:
        return "timeout"
    lines = proc.stderr.strip().splitlines()
    if proc.returncode < 0:
        return "signal"
    if "Traceback" in proc.stderr:
        return "traceback"
    if proc.returncode == 2 and lines[-1].startswith("induce: error:") and \
            sum(line.startswith("induce: error:") for line in lines) == 1:
        return "clean"
    return "accepted" if proc.returncode == 0 else "other"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("checkout")
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--json")
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(Path(args.checkout).resolve()))
    rows = []
    table = [(f"input: {name}", files, argv) for name, (files, argv, _) in CASES.items()]
    table += [(f"option: {argv}", {"s": b"a b\n"}, argv) for argv in BAD_OPTIONS]
    for name, files, argv in table:
        with tempfile.TemporaryDirectory() as tmp:
            for file, content in files.items():
                Path(tmp, file).write_bytes(content)
            cmd = [sys.executable, "-m", "induce", *argv.format(tmp=tmp).split(), "--quiet"]
            if cmd[3] == "corpus" or cmd[3] == "eval":
                cmd = cmd[:-1]
            try:
                proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout, cwd=tmp)
            except subprocess.TimeoutExpired:
                proc = None
        kind = classify(proc)
        rows.append({"case": name, "result": kind,
                     "stderr": (proc.stderr.strip().splitlines() or [""])[-1][:200] if proc else ""})
        print(f"{kind:9}  {name}", flush=True)
    counts = collections.Counter(r["result"] for r in rows)
    print(dict(counts))
    if args.json:
        Path(args.json).write_text(json.dumps({"checkout": args.checkout, "counts": counts, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
