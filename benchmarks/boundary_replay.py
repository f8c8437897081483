"""Replay every reproducer of issue 39 and count what is left: tracebacks, hangs, silent wrong answers.

    PYTHONPATH=$PWD python benchmarks/boundary_replay.py [--timeout 90] [--only NAME] [-v]

Each case runs ``induce ...`` (or a Python snippet) in a subprocess on small generated inputs and expects
either a one-line ``induce: error: ...`` with status 2 (``ERROR``) or success whose output passes a check
(``OK``).  A Python traceback counts as a traceback, a run past the timeout as a hang, and anything else
that differs from the expectation (status 0 where an error was due, a failed check) as a silent wrong
answer.  Prints one line per case that failed and the three counts; exit status 1 unless all are 0.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

ERROR = "error"
OK = "ok"


@dataclass
class Case:
    name: str
    command: str                     # a shell command line ({d}: the work directory, {py}, {induce})
    expect: str                      # ERROR or OK
    check: Callable[[str, str], bool] = lambda out, err: True  # OK: on (stdout, stderr)
    timeout: float | None = None


def _inputs(d: Path) -> None:
    """The small files the reproducers read."""
    rng = np.random.default_rng(0)
    run = lambda *a: subprocess.run([sys.executable, "-m", "induce", *a], check=True, capture_output=True)
    run("corpus", "demo", "-o", str(d / "c.conllu"), "--sentences", "60")
    (d / "bi.txt").write_text("".join(f"a{i % 3} b c ||| x{i % 3} y z\n" for i in range(12)))
    (d / "src.txt").write_text("".join(f"a{i % 3} b c\n" for i in range(12)))
    (d / "tgt.txt").write_text("".join(f"x{i % 3} y z\n" for i in range(12)))
    (d / "gold13.align").write_text("0-0 1-1\n" * 13)
    x = np.concatenate([rng.normal(m, 1.0, 34) for m in (0, 8, 3, 12, 0, 8, 3, 12)])  # 272 rows
    rows = "value\n" + "".join(f"{v:.4f}\n" for v in x)
    (d / "s.csv").write_text(rows)
    with gzip.open(d / "s.csv.gz", "wt") as f:
        f.write(rows)
    (d / "latin.csv").write_bytes("a\n1\n\u00e9\n".encode("latin-1"))
    (d / "bin.csv").write_bytes(bytes(range(256)) * 4)
    (d / "long.csv").write_text("a\n" + "1" * 200_000 + "\n")
    (d / "big.csv").write_text("a\n" + "".join(f"{v}\n" for v in [1.0, 2.0, 1e200, 3.0] * 10))
    (d / "const.csv").write_text("a\n" + "5\n" * 40)
    (d / "dup.csv").write_text("a,a\n" + "".join(f"{i % 7},{i % 3}\n" for i in range(40)))
    (d / "bom.csv").write_bytes(("\ufeffa,b\n" + "".join(f"{i % 7},{i % 3}\n" for i in range(40))).encode())
    np.save(d / "good.npy", rng.normal(size=(50, 2)))
    raw = (d / "good.npy").read_bytes()
    (d / "header.npy").write_bytes(raw[:10] + b"garbage{{{" + raw[20:])
    np.savez(d / "empty.npz")
    np.savez(d / "two.npz", a=np.ones(9), b=np.zeros(9))
    (d / "cut.npz").write_bytes((d / "two.npz").read_bytes()[:100])
    (d / "bin.txt").write_bytes(bytes(range(256)))
    (d / "empty.json").write_text("{}")
    (d / "trace_str.json").write_text('{"command": "tag", "trace": "abc"}')
    (d / "trace_null.json").write_text('{"command": "tag", "trace": [null, {"iteration": 1}]}')
    (d / "wrong.json").write_text('{"command": "tag", "m1": "abc", "states": "x"}')
    (d / "bin.json").write_bytes(bytes(range(128, 256)))
    (d / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    run("segment", str(d / "s.csv"), "--iterations", "5", "--json", str(d / "seg.json"))
    run("segment", str(d / "s.csv"), "--model", "hsmm", "--iterations", "3", "--save-model", str(d / "hsmm.npz"),
        "-o", str(d / "hsmm_train.csv"))
    run("parse", str(d / "c.conllu"), "--iterations", "3", "-o", str(d / "dmv_train.conllu"), "--save-model",
        str(d / "dmv.npz"))
    run("tag", str(d / "c.conllu"), "--iterations", "3", "--states", "4", "--save-model", str(d / "tagger.npz"))
    # a point-estimate aligner: its training links are the saved parameters' links (a Gibbs run's are its samples')
    run("align", str(d / "bi.txt"), "-o", str(d / "a_train.txt"), "--model", "hmm", "--infer", "cvi", "--iterations",
        "2", "--ibm1-iterations", "1", "--save-model", str(d / "aligner.npz"))
    arrays = dict(np.load(d / "hsmm.npz"))
    arrays["stats"] = arrays["stats"].copy()
    arrays["stats"][0, 0] = -5.0
    np.savez(d / "negative.npz", **arrays)
    for name, code in API.items():
        (d / f"api_{name}.py").write_text(code + "\n")


def _json_from(text: str) -> dict:
    return json.loads(text[text.index("{"):])


def _python(name: str) -> str:
    """The command running the :data:`API` snippet ``name`` (written to the work directory by :func:`_inputs`)."""
    return f"{{py}} {{d}}/api_{name}.py"


API = {
    "fit_y": "from induce import HMMTagger; from induce.corpus.demo import demo_corpus; c = demo_corpus(40); "
             "y = [c.tag_strings('xpos', i) for i in range(len(c))]; m = HMMTagger(n_states=4, infer='em', "
             "n_iter=2).fit(c, y); print(m.score(c, y))",
    "grid": "from sklearn.model_selection import GridSearchCV; from induce import HMMTagger; "
            "from induce.corpus.demo import demo_corpus; from induce.eval import tagging_scorer; c = demo_corpus(60); "
            "y = [c.tag_strings('xpos', i) for i in range(len(c))]; s = GridSearchCV(HMMTagger(infer='em', n_iter=2), "
            "{'n_states': [3, 6]}, scoring=tagging_scorer('vm'), cv=3).fit(c, y=y); print(s.best_score_)",
    "unfitted": "from sklearn.exceptions import NotFittedError; from induce import HMMTagger, DMVParser; "
                "from induce.series import HMMSegmenter\nfor m in (HMMTagger(), DMVParser()):\n  try:\n"
                "    m.predict([['a']])\n  except NotFittedError:\n    print('ok')",
    "score_mean": "from induce import DMVParser; from induce.corpus.demo import demo_corpus; c = demo_corpus(40); "
                  "m = DMVParser(n_iter=2).fit(c); print(m.score(c) > -20)",
    "lengths": "import numpy as np; from induce.series import HMMSegmenter; x = np.r_[np.zeros(20), np.full(20, 5.0)]"
               "[:, None] + np.random.default_rng(0).normal(0, .1, (40, 1)); a = HMMSegmenter(2, n_iter=5)."
               "fit(x, [20, 20]); b = HMMSegmenter(2, n_iter=5).fit([x[:20], x[20:]]); "
               "print(np.allclose(a.trans_counts_, b.trans_counts_), a.predict(x, [20, 20]).shape, "
               "a.transmat_.shape, a.means_.shape, a.covars_.shape, a.sample(5)[0].shape, a.decode(x)[1].shape, "
               "a.score_samples(x)[1].shape, a.aic(x) < a.bic(x))",
    "nltk": "from induce import HMMTagger; from induce.nltk_adapter import NLTKTagger; "
            "from induce.corpus.demo import demo_corpus; c = demo_corpus(40); m = HMMTagger(n_states=4, infer='em', "
            "n_iter=2).fit(c); g = [list(zip(c.words(i), c.tag_strings('xpos', i))) for i in range(len(c))]\n"
            "try:\n  NLTKTagger(m).accuracy(g); print('silent')\nexcept Exception as e:\n  print('refused', "
            "NLTKTagger(m).many_to_one(g).accuracy(g) > 0)",
}


def _cases() -> list[Case]:
    i, d = "{induce}", "{d}"
    stats = f"| {i} corpus stats - --json"
    sentences = lambda n: (lambda out, err: _json_from(out)["sentences"] == n)
    return [
        # pipelines and reuse
        Case("tag -o - | tail: data only", f"{i} tag {d}/c.conllu -o - --quiet --iterations 2 2>/dev/null | tail -2",
             OK, lambda out, err: "induced=" in out and "output" not in out),
        Case("tag -o - | corpus stats -", f"{i} tag {d}/c.conllu -o - --quiet --iterations 2 {stats}", OK, sentences(60)),
        Case("parse -o - | corpus stats -", f"{i} parse {d}/c.conllu -o - --quiet --iterations 2 {stats}", OK,
             sentences(60)),
        Case("corpus convert -o - | corpus stats -", f"{i} corpus convert {d}/c.conllu -o - --to conllx {stats}", OK,
             sentences(60)),
        Case("align -o - | corpus stats -", f"{i} align {d}/bi.txt -o - --quiet --gibbs-passes 1 1 2 | {i} corpus stats - "
             "--alignments pharaoh --json", OK, lambda out, err: _json_from(out)["pairs"] == 12),
        Case("segment -o - | segment -", f"{i} segment {d}/s.csv.gz -o - --quiet --iterations 3 | {i} segment - "
             "--columns value --iterations 3 --json", OK, lambda out, err: _json_from(out)["steps"] == 272),
        Case("tag --load", f"{i} tag {d}/c.conllu --load {d}/tagger.npz --json", OK,
             lambda out, err: _json_from(out)["model_file"].endswith("tagger.npz")),
        Case("align --load", f"{i} align {d}/bi.txt -o {d}/a_load.txt --load {d}/aligner.npz && cmp {d}/a_train.txt "
             f"{d}/a_load.txt", OK),
        Case("parse --load dmv does not retrain", f"{i} parse {d}/c.conllu -o {d}/dmv_load.conllu --load {d}/dmv.npz "
             f"--json && cmp {d}/dmv_train.conllu {d}/dmv_load.conllu", OK, lambda out, err: "train_seconds" not in out),
        Case("segment --load hsmm without --model", f"{i} segment {d}/s.csv --load {d}/hsmm.npz -o {d}/hsmm_load.csv "
             f"&& cmp {d}/hsmm_train.csv {d}/hsmm_load.csv", OK),
        Case("--block-size with --infer em", f"{i} tag {d}/c.conllu --infer em --block-size 4", ERROR),
        Case("--truncation with the finite HMM", f"{i} tag {d}/c.conllu --truncation 10", ERROR),
        Case("--load with training options", f"{i} parse {d}/c.conllu -o {d}/x --load {d}/dmv.npz --iterations 3",
             ERROR),
        Case("--load of another model kind", f"{i} parse {d}/c.conllu -o {d}/x --load {d}/tagger.npz", ERROR),
        Case("segment --model hdp-hmm learns beyond 3", f"{i} segment {d}/s.csv --model hdp-hmm --iterations 30 --json",
             OK, lambda out, err: _json_from(out)["states"] > 3),
        Case("tag nile.csv", f"{i} tag {d}/s.csv", ERROR),
        Case("no progress bar into a log", f"{i} tag {d}/c.conllu --iterations 3 --states 4 -o {d}/t.conllu", OK,
             lambda out, err: "\r" not in err),
        Case("compare warm-up warnings", f"{i} compare {d}/c.conllu --infer em,cvi2 --seeds 1 --states 16 --quiet", OK,
             lambda out, err: "1 passes" not in out + err),
        # the Python API
        Case("HMMTagger fit(X, y) / score(X, y)", _python("fit_y"), OK, lambda out, err: float(out) < 0),
        Case("GridSearchCV over a Corpus", _python("grid"), OK, lambda out, err: 0 < float(out) <= 1),
        Case("unfitted estimators raise NotFittedError", _python("unfitted"), OK,
             lambda out, err: out.split() == ["ok", "ok"]),
        Case("DMV score is a mean per token", _python("score_mean"), OK, lambda out, err: out.strip() == "True"),
        Case("hmmlearn lengths and attributes", _python("lengths"), OK,
             lambda out, err: out.strip() == "True (40,) (2, 2) (2, 1) (2, 1, 1) (5, 1) (40,) (40, 2) True"),
        Case("NLTKTagger accuracy without a mapping", _python("nltk"), OK,
             lambda out, err: out.strip() == "refused True"),
        # crashes
        *[Case(f"segment {name}", f"{i} segment {d}/{name} --iterations 3", ERROR)
          for name in ("latin.csv", "bin.csv", "long.csv", "big.csv", "const.csv", "header.npy", "empty.npz",
                       "cut.npz", "dup.csv")],
        Case("segment .gz CSV", f"{i} segment {d}/s.csv.gz --iterations 3 --json", OK,
             lambda out, err: _json_from(out)["steps"] == 272),
        Case("report of a segment --json", f"{i} report {d}/seg.json -o {d}/seg.html", OK),
        *[Case(f"report {name}", f"{i} report {d}/{name} -o {d}/r.html", ERROR)
          for name in ("empty.json", "trace_str.json", "trace_null.json", "wrong.json", "bin.json", "deep.json")],
        Case("--tag-dict binary", f"{i} tag {d}/c.conllu --tag-dict {d}/bin.txt", ERROR),
        Case("--grammar binary", f"{i} parse {d}/c.conllu -o {d}/x --model pcfg --grammar {d}/bin.txt", ERROR),
        *[Case(f"--cluster {addr!r}", f"{i} tag {d}/c.conllu --infer svi --cluster '{addr}'", ERROR)
          for addr in ("bogus://x:1", "not a url", "")],
        # hangs
        Case("--cluster to a silent port", f"{i} tag {d}/c.conllu --infer svi --cluster tcp://127.0.0.1:{{silent}} "
             "--cluster-timeout 3", ERROR),
        Case("tag on a scheduler without workers", f"{i} tag {d}/c.conllu --infer svi --cluster {{scheduler}} "
             "--cluster-timeout 3", ERROR),
        Case("segment on a scheduler without workers", f"{i} segment {d}/s.csv --infer svi --cluster {{scheduler}} "
             "--cluster-timeout 3", ERROR),
        # silent wrong answers
        Case("align - -", f"{i} align - - -o {d}/x < {d}/src.txt", ERROR),
        Case("eval tags - -", f"{i} eval tags - - < {d}/c.conllu", ERROR),
        Case("align --gold longer than the bitext", f"{i} align {d}/bi.txt -o {d}/x --gold {d}/gold13.align "
             "--gold-format pharaoh --iterations 1", ERROR),
        Case("segment model with negative counts", f"{i} segment {d}/s.csv --load {d}/negative.npz", ERROR),
        Case("BOM in the first column name", f"{i} segment {d}/bom.csv --iterations 3 --json", OK,
             lambda out, err: _json_from(out)["columns"] == ["a", "b"]),
        Case("segment --states 5000 on 272 rows", f"{i} segment {d}/s.csv --states 5000", ERROR),
    ]


def _silent_port() -> tuple[int, socket.socket]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held = []
    threading.Thread(target=lambda: [held.append(server.accept()) for _ in iter(int, 1)], daemon=True).start()
    return server.getsockname()[1], server


def _verdict(case: Case, status: int | None, out: str, err: str) -> str | None:
    """None when the case behaved, else 'traceback', 'hang' or 'silent'."""
    if status is None:
        return "hang"
    if "Traceback (most recent call last)" in err:
        return "traceback"
    if case.expect == ERROR:
        lines = err.strip().splitlines()
        return None if status == 2 and lines and lines[-1].startswith("induce: error:") else "silent"
    try:
        return None if status == 0 and case.check(out, err) else "silent"
    except (ValueError, KeyError, TypeError):
        return "silent"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a case counts as a hang")
    parser.add_argument("--only", help="run the cases whose name contains this")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case")
    args = parser.parse_args(argv)
    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(repo))
    os.environ["PYTHONPATH"] = str(repo)
    counts = {"traceback": 0, "hang": 0, "silent": 0}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        _inputs(d)
        port, server = _silent_port()
        from distributed import LocalCluster

        with LocalCluster(n_workers=0, processes=False, protocol="tcp://", dashboard_address=":0") as empty:
            fill = {"{induce}": f"{sys.executable} -m induce", "{py}": sys.executable, "{d}": str(d),
                    "{silent}": str(port), "{scheduler}": empty.scheduler_address}
            cases = [c for c in _cases() if not args.only or args.only in c.name]
            for case in cases:
                command = case.command
                for key, value in fill.items():
                    command = command.replace(key, value)
                start = time.perf_counter()
                try:
                    done = subprocess.run(command, shell=True, env=env, capture_output=True, text=True,
                                          timeout=case.timeout or args.timeout, cwd=d)
                    status, out, err = done.returncode, done.stdout, done.stderr
                except subprocess.TimeoutExpired:
                    status, out, err = None, "", ""
                verdict = _verdict(case, status, out, err)
                if verdict:
                    counts[verdict] += 1
                if verdict or args.verbose:
                    tail = (err.strip().splitlines() or [""])[-1][:160]
                    print(f"{verdict or 'ok':9s} {time.perf_counter() - start:6.1f}s  {case.name}: {tail}")
        server.close()
    print(f"{len(cases)} reproducers: {counts['traceback']} tracebacks, {counts['hang']} hangs, "
          f"{counts['silent']} silent wrong answers")
    return 0 if not any(counts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
