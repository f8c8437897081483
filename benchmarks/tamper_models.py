"""Tampered model files against one copy of induce: clean errors, uncaught exceptions, crashes, silent accepts.

Usage::

    python benchmarks/tamper_models.py [--code DIR] [--label NAME] [--kinds hmm,dmv,...]

``--code DIR`` is the root of the induce checkout to attack (default: this
one), e.g. an older commit unpacked with ``git archive COMMIT | tar -x -C DIR``.
Small models of every estimator kind are fitted and saved by that code (the
pcfg-la model on ptb-sample, from ``$INDUCE_CORPORA``), and an ``svi``
checkpoint is written (using it = resuming the run); then every array of
every file is tampered one class at a time (transposed, shrunk, grown, an extra
axis, NaN, inf, a negative value, an index of 2^30, another dtype, strings,
removed), and whole files are damaged (cut in half, last 20 bytes cut, random
bytes, empty, format version as a string), and every hyperparameter stored in
the header is set to None, a string, -1 and NaN in turn.  Each case is loaded and used
(predict / parse / align) in a worker process; a worker killed by a signal is
a crash, and the next worker resumes after that case.  Outcomes:
``clean`` (an ``InduceError``), ``uncaught`` (another exception), ``crash``
(signal), ``accepted`` (no error: the tampered file was used).
Prints a table per kind and class and writes
``benchmarks/results/tamper_models_<label>.json``.
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

import numpy as np

HERE = Path(__file__).resolve().parent
HEADER_NAMES = ("header", "meta", "__meta__")
KINDS = ("hmm", "hmm-tagdict", "hdp", "dmv", "pcfg", "aligner", "pcfg-la", "checkpoint")
TOY = [(s.split(), t.split()) for s, t in [
    ("das haus", "the house"), ("das buch", "the book"), ("ein buch", "a book"),
    ("das haus ist klein", "the house is small"), ("das buch ist klein", "the book is small"),
]]
TAGS = [s.split() for s in ["DT NN VBD DT NN", "PRP VBD DT JJ NN", "DT NN VBZ JJ", "NNP VBD IN DT NN"]]


# ------------------------------------------------------------ worker side
def _models():
    """kind -> (fit and save to a path, load from a path and use); imported from the code under attack.

    ``checkpoint``: an ``svi`` run stopped after 3 minibatches writes it; using
    it is resuming that run.
    """
    from induce.align import WordAligner
    from induce.corpus.demo import demo_corpus
    from induce.corpus.read_ptb import read_ptb
    from induce.parsers import DMVParser, LatentPCFGParser, PCFGInducer
    from induce.taggers import HDPHMMTagger, HMMTagger, TagDictionary

    c = demo_corpus(30, seed=1, max_len=10)
    root = Path(os.environ.get("INDUCE_CORPORA", HERE.parent.parent / "shared" / "corpora")) / "ptb-sample"
    trees = [s.tree for f in (1, 2, 3) for s in read_ptb(root / f"wsj_{f:04d}.mrg")][:25]
    svi = dict(n_states=3, infer="svi", batch_size=5, n_epochs=1, random_state=0)
    estimators = {
        "hmm": (HMMTagger, lambda: HMMTagger(n_states=3, infer="em", n_iter=2, random_state=0).fit(c),
                lambda m: m.predict_flat(c)),
        "hmm-tagdict": (HMMTagger, lambda: HMMTagger(infer="cvi2", n_iter=2, random_state=0).fit(
            c, tag_dict=TagDictionary.from_gold(c, "xpos")), lambda m: m.predict_flat(c)),
        "hdp": (HDPHMMTagger, lambda: HDPHMMTagger(truncation=3, n_iter=2, random_state=0).fit(c),
                lambda m: m.predict_flat(c)),
        "dmv": (DMVParser, lambda: DMVParser(infer="cvi", n_iter=2).fit(TAGS), lambda m: m.predict_flat(TAGS)),
        "pcfg": (PCFGInducer, lambda: PCFGInducer(n_nonterminals=2, n_iter=2, random_state=0).fit(TAGS),
                 lambda m: m.parse(TAGS)),
        "aligner": (WordAligner, lambda: WordAligner(model="hmm", infer="cvi", random_state=0).fit(TOY),
                    lambda m: m.align(TOY)),
        "pcfg-la": (LatentPCFGParser, lambda: LatentPCFGParser(n_subtypes=2, n_iter=1, min_iter=0,
                                                               random_state=0).fit(trees),
                    lambda m: m.parse(trees[:3])),
    }
    kinds = {kind: (lambda path, fit=fit: fit().save(path), lambda path, cls=cls, use=use: use(cls.load(path)))
             for kind, (cls, fit, use) in estimators.items()}
    kinds["checkpoint"] = (
        lambda path: HMMTagger(checkpoint=str(path), checkpoint_every=2, max_batches=3, **svi).fit(c),
        lambda path: HMMTagger(checkpoint=str(path), resume=True, **svi).fit(c).predict_flat(c))
    return kinds


def worker(kind: str, cases: list[str], start: int) -> None:
    from induce.errors import InduceError

    _, check = _models()[kind]
    for i in range(start, len(cases)):
        try:
            check(cases[i])
            outcome = "accepted"
        except InduceError as exc:
            outcome = f"clean\t{str(exc)[:200]}"
        except Exception as exc:  # noqa: BLE001 -- classifying is the point
            outcome = f"uncaught\t{type(exc).__name__}: {str(exc)[:160]}"
        print(f"{i}\t{outcome}".replace("\n", " "), flush=True)


def fit_all(out: Path, kinds: list[str]) -> None:
    for kind, (fit, _) in _models().items():
        if kind in kinds:
            fit(out / f"{kind}.npz")


# ------------------------------------------------------------ tampering
# the damage catalogue of the tamper tests ("missing": drop the array), one definition for both
from tests.test_model_tamper import TAMPERS  # noqa: E402  (run from the repository root)

ARRAY_TAMPERS = {name: (None if fn == "missing" else fn) for name, fn in TAMPERS.items()}


def _save(path: Path, arrays: dict) -> None:
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


def _edit_header(arrays: dict, edit) -> dict | None:
    """``arrays`` with ``edit(header dict)`` applied to the JSON header of whichever layout the file has."""
    for name in HEADER_NAMES:
        if name in arrays:
            a = arrays[name]
            head = json.loads(a.tobytes().decode() if a.dtype == np.uint8 else str(a))
            edit(head)
            data = json.dumps(head)
            arrays = dict(arrays)
            arrays[name] = np.frombuffer(data.encode(), dtype=np.uint8) if a.dtype == np.uint8 else np.array(data)
            return arrays
    return None


def _version_as_string(head: dict) -> None:
    key = "format_version" if "format_version" in head else "format"
    head[key] = str(head[key])


def _params(arrays: dict) -> dict:
    found = {}
    _edit_header(arrays, lambda head: found.update(head.get("params") or {}))
    return found


PARAM_VALUES = {"None": None, "a string": "bogus", "-1": -1, "NaN": float("nan")}


def make_cases(model: Path, out: Path) -> list[tuple[str, str, Path]]:
    """(class, field, path) of every tampered copy of ``model``."""
    with np.load(model, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    cases = []
    for tamper, fn in ARRAY_TAMPERS.items():
        for name, value in arrays.items():
            if name in HEADER_NAMES:
                continue
            changed = dict(arrays)
            if fn is None:
                del changed[name]
            else:
                new = fn(value)
                if new is None:
                    continue
                changed[name] = new
            path = out / f"{len(cases)}.npz"
            _save(path, changed)
            cases.append((tamper, name, path))
    raw = model.read_bytes()
    rng = np.random.default_rng(0)
    for tamper, content in [("cut in half", raw[: len(raw) // 2]), ("last 20 bytes cut", raw[:-20]),
                            ("random bytes", rng.bytes(len(raw))), ("empty file", b"")]:
        path = out / f"{len(cases)}.npz"
        path.write_bytes(content)
        cases.append((tamper, "-", path))
    path = out / f"{len(cases)}.npz"
    _save(path, _edit_header(arrays, _version_as_string))
    cases.append(("version as string", "-", path))
    for label, value in PARAM_VALUES.items():
        for key in _params(arrays):
            path = out / f"{len(cases)}.npz"
            _save(path, _edit_header(arrays, lambda head, key=key: head["params"].__setitem__(key, value)))
            cases.append((f"param = {label}", key, path))
    return cases


def run_cases(kind: str, paths: list[Path], env: dict) -> list[str]:
    """Outcome of every case; restarts the worker after a crash."""
    outcomes: list[str | None] = [None] * len(paths)
    listing = Path(tempfile.mkstemp(suffix=".json")[1])
    listing.write_text(json.dumps([str(p) for p in paths]))
    start = 0
    while start < len(paths):
        proc = subprocess.run([sys.executable, __file__, "worker", kind, str(listing), str(start)], env=env,
                              capture_output=True, text=True, timeout=1800)
        for line in proc.stdout.splitlines():
            i, outcome = line.split("\t", 1)
            outcomes[int(i)] = outcome
        done = max([i for i, o in enumerate(outcomes) if o is not None], default=-1)
        if proc.returncode == 0:
            break
        crashed = done + 1
        outcomes[crashed] = f"crash\tsignal {-proc.returncode}" if proc.returncode < 0 else \
            f"crash\texit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"
        start = crashed + 1
    listing.unlink()
    return outcomes


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker(sys.argv[2], json.loads(Path(sys.argv[3]).read_text()), int(sys.argv[4]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "fit":
        fit_all(Path(sys.argv[2]), sys.argv[3].split(","))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--code", type=Path, default=HERE.parent, help="root of the induce checkout to attack")
    ap.add_argument("--label", default="branch")
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated subset of {','.join(KINDS)}")
    args = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=str(args.code.resolve()))
    work = Path(tempfile.mkdtemp(prefix="tamper-"))
    subprocess.run([sys.executable, __file__, "fit", str(work), args.kinds], env=env, check=True)
    table = collections.defaultdict(collections.Counter)
    examples = {}
    for model in sorted(work.glob("*.npz")):
        kind = model.stem
        cases_dir = work / kind
        cases_dir.mkdir()
        cases = make_cases(model, cases_dir)
        outcomes = run_cases(kind, [p for _, _, p in cases], env)
        for (tamper, name, _), outcome in zip(cases, outcomes):
            cls = outcome.split("\t", 1)[0]
            table[(kind, tamper)][cls] += 1
            if cls != "clean":
                examples.setdefault(f"{kind} / {tamper} / {name}", outcome)
    classes = ("clean", "uncaught", "crash", "accepted")
    total = collections.Counter()
    print(f"{'kind':12} {'tamper':18} " + " ".join(f"{c:>8}" for c in classes))
    for (kind, tamper), counts in sorted(table.items()):
        total.update(counts)
        print(f"{kind:12} {tamper:18} " + " ".join(f"{counts[c]:8d}" for c in classes))
    print(f"{'all':31} " + " ".join(f"{total[c]:8d}" for c in classes))
    result = {"code": str(args.code), "totals": dict(total),
              "by_kind_and_class": {f"{k} / {t}": dict(v) for (k, t), v in sorted(table.items())},
              "not_clean": examples}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / f"tamper_models_{args.label}.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
