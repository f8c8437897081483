"""Word-vector emissions on ptb-sample (issue 36): M-1 of ``HMMTagger(emission="embeddings")`` per setting and
seed, beside the categorical default.

Vectors are trained as ``induce embed`` trains them (:func:`induce.embeddings.train_vectors`) on the text of
Brown + CoNLL-2000 + ptb-sample (``--train-on``), cached under ``--cache`` by their settings.  Each setting is
``covariance:norm:infer:iterations:dim:window[:unknown[:min_count[:tol]]]``; every setting runs ``--seeds`` seeds.
Printed: one markdown row per setting (mean ± sd over the seeds of M-1, cross-validated M-1, V-M, CPU seconds per
fit), the load average before and after each fit; ``--json`` keeps every run.

    python benchmarks/embeddings_bench.py --settings diag:unit:em:50:20:1 --seeds 3 --categorical \
        --json benchmarks/results/embeddings.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from induce import HMMTagger
from induce.corpus.formats import load_corpus
from induce.corpus.vectors import write_vectors
from induce.embeddings import train_vectors
from induce.eval.tagging import tagging_report

CORPORA = os.environ.get("INDUCE_CORPORA", "../shared/corpora")
TRAIN_ON = ("brown", "conll2000", "ptb-sample")


def sentences_of(names) -> list[list[str]]:
    """The sentences (word lists) of the named corpora under ``$INDUCE_CORPORA``."""
    out = []
    for name in names:
        corpus = load_corpus(Path(CORPORA) / name)
        itos, off = corpus.vocab.itos, corpus.offsets
        out += [[itos[t] for t in corpus.tokens[lo:hi]] for lo, hi in zip(off[:-1], off[1:])]
    return out


def vectors_file(cache: Path, dim: int, window: int, min_count: int, epochs: int, train_on) -> Path:
    """Train (once; cached by the settings) and write the vectors; returns the file."""
    path = cache / f"vec_{'+'.join(train_on)}_d{dim}_w{window}_m{min_count}_e{epochs}.vec"
    if not path.exists():
        start = time.process_time()
        found = train_vectors(sentences_of(train_on), dim=dim, window=window, min_count=min_count, epochs=epochs)
        write_vectors(path, found.words, found.vectors)
        print(f"trained {path.name}: {len(found.words)} words, {time.process_time() - start:.1f} CPU s", flush=True)
    return path


def one_fit(corpus, gold, seed: int, params: dict) -> dict:
    """Fit, score against ``gold``; CPU seconds and the load average around the fit."""
    load_before = os.getloadavg()[0]
    start = time.process_time()
    model = HMMTagger(random_state=seed, **params).fit(corpus)
    seconds = time.process_time() - start
    report = tagging_report(model.labels_, gold, corpus.offsets)
    row = {"seed": seed, "m1": report["m1"], "m1_cv": report.get("m1_cv"), "vm": report["vm"],
           "1to1": report["1to1"], "iterations": model.n_iter_, "cpu_seconds": round(seconds, 1),
           "load_before": load_before, "load_after": os.getloadavg()[0]}
    if params.get("emission") == "embeddings":
        row.update(unknown_types=model.unknown_types_, unknown_tokens=model.unknown_tokens_)
    print(json.dumps({**{k: v for k, v in params.items() if k != "embeddings"}, **row}), flush=True)
    return row


def parse_setting(text: str) -> dict:
    parts = text.split(":")
    cov, norm, infer, iters, dim, window = parts[:6]
    return {"covariance": cov, "vector_norm": norm, "infer": infer, "n_iter": int(iters), "dim": int(dim),
            "window": int(window), "unknown_vectors": parts[6] if len(parts) > 6 else "suffix",
            "min_count": int(parts[7]) if len(parts) > 7 else 1, "tol": float(parts[8]) if len(parts) > 8 else None}


def summary(name: str, rows: list[dict]) -> str:
    def ms(key, scale=100.0):
        values = np.array([r[key] for r in rows if r.get(key) is not None]) * scale
        return f"{values.mean():.1f} ± {values.std(ddof=1) if len(values) > 1 else 0.0:.1f}"
    cpu = np.mean([r["cpu_seconds"] for r in rows])
    loads = [r["load_before"] for r in rows] + [r["load_after"] for r in rows]
    return (f"| {name} | {len(rows)} | {ms('m1')} | {ms('m1_cv')} | {ms('vm')} | "
            f"{min(r['iterations'] for r in rows)}-{max(r['iterations'] for r in rows)} | {cpu:.0f} | "
            f"{min(loads):.1f}-{max(loads):.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--settings", default="diag:unit:em:50:20:1", help="comma-separated settings (see above)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seed-base", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=10, help="vector training epochs")
    ap.add_argument("--train-on", default=",".join(TRAIN_ON))
    ap.add_argument("--categorical", action="store_true", help="also the categorical default (cvi2) on the seeds")
    ap.add_argument("--cache", default="/tmp/induce_embeddings_bench")
    ap.add_argument("--json", help="write every run here")
    args = ap.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    corpus = load_corpus(Path(CORPORA) / "ptb-sample")
    gold = corpus.tags["pos"]
    seeds = range(args.seed_base, args.seed_base + args.seeds)
    results, lines = {}, []
    settings = [s for s in args.settings.split(",") if s]
    for text in settings:
        s = parse_setting(text)
        path = vectors_file(cache, s["dim"], s["window"], s["min_count"], args.epochs, args.train_on.split(","))
        params = {"emission": "embeddings", "embeddings": str(path), "n_states": 45, "infer": s["infer"],
                  "n_iter": s["n_iter"], "covariance": s["covariance"], "vector_norm": s["vector_norm"],
                  "unknown_vectors": s["unknown_vectors"], "tol": s["tol"]}
        results[text] = [one_fit(corpus, gold, seed, params) for seed in seeds]
        lines.append(summary(f"embeddings {text}", results[text]))
    if args.categorical:
        results["categorical"] = [one_fit(corpus, gold, seed, {"n_states": 45}) for seed in seeds]
        lines.append(summary("categorical default (cvi2)", results["categorical"]))
    print("| setting | seeds | M-1 | M-1 (cv) | V-M | passes | CPU s / fit | load |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps({"epochs": args.epochs, "train_on": args.train_on,
                                               "runs": results}, indent=1))


if __name__ == "__main__":
    main()
