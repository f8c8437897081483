"""Word-alignment benchmark: AER and training time of induce's aligners and eflomal.

English-French Hansards: train on the first N normalised training pairs plus
the trial and test text, score the 447 test pairs (sure/possible links).
Romanian-, Japanese- and German-English: train on the gold set's own text.
Both directions are trained once per row and decoded with intersection and
grow-diag-final-and.  eflomal (``pip install eflomal``; skipped with a
message when missing) runs on identical normalised data, with its default
model (``-m 3``) and each lower model level.

    nice -n 10 python benchmarks/align_bench.py --sizes 10000 50000 all \\
        --configs hmm:cvi hmm:em --out benchmarks/results/align.json

Prints a table and rewrites the JSON file after every row.  ``--params`` passes
further ``WordAligner`` hyperparameters (``tol=0 n_iter=5``, ``learn_hyper=1``);
each row records the passes run and whether every stage converged.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from induce.align import WordAligner, normalize_text, normalize_tokens
from induce.align.direction import encode_side
from induce.align.symmetrize import matrices_to_links, symmetrize_corpus
from induce.atomic import atomic_write
from induce.corpus.parallel import clip_alignments, read_alignments, read_parallel
from induce.corpus.vocab import Vocabulary
from induce.eval.alignment import alignment_scores

REPO = Path(__file__).resolve().parent.parent
CORPORA = Path(os.environ.get("INDUCE_CORPORA", REPO.parent / "shared" / "corpora")) / "align"
SYMMETRIZATIONS = ("intersection", "grow-diag-final-and")
ALL_CONFIGS = [f"{m}:{i}" for m in ("ibm1", "hmm") for i in ("em", "vi", "cvi")] + ["hmm:cvi1", "hmm:gibbs",
                                                                                    "fertility:gibbs", "fertility:cvi"]


# ----------------------------------------------------------------- data sets
def enfr_data(size: int | None):
    """(training pairs, number of scored pairs at the end, gold) for English-French."""
    root = CORPORA / "en-fr"
    train = []
    with open(root / "train" / "hansard.36.1.house.e", encoding="utf-8") as fe, \
            open(root / "train" / "hansard.36.1.house.f", encoding="utf-8") as ff:
        for k, (e, f) in enumerate(zip(fe, ff)):
            if size is not None and k >= size:
                break
            train.append((normalize_text(e, "en"), normalize_text(f, "fr")))
    trial = [(normalize_tokens(e), normalize_tokens(f)) for e, f in read_parallel(root / "trial.e", root / "trial.f")]
    test = [(normalize_tokens(e), normalize_tokens(f)) for e, f in read_parallel(root / "test.e", root / "test.f")]
    gold = read_alignments(root / "test.wa.nonullalign", "naacl", n_pairs=len(test))
    return train + trial + test, test, gold


def gold_set_data(name: str):
    """(pairs, pairs, gold) for a gold set trained on its own text."""
    root = CORPORA / name
    if name == "de-en":
        pairs = list(read_parallel(root / "test.de", root / "test.en"))
        gold = read_alignments(root / "de-en.wa", "pharaoh", n_pairs=len(pairs))
    else:
        stem = name.replace("-", "")
        pairs = list(read_parallel(root / f"{stem}.src-tgt"))
        gold = read_alignments(root / f"{stem}.gold", "pharaoh", n_pairs=len(pairs), one_based=True)
    pairs = [(normalize_tokens([w.lstrip("\ufeff") for w in s]), normalize_tokens(t)) for s, t in pairs]
    pairs = [([w for w in s if w], t) for s, t in pairs]
    gold, _ = clip_alignments(gold, pairs)
    return pairs, pairs, gold


def score(links, gold) -> dict:
    return alignment_scores([set(x) for x in links], [g.sure for g in gold], [g.possible for g in gold])


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


# -------------------------------------------------------------------- systems
def run_induce(config: str, pairs, test, gold, seed: int, alpha: float | None, params: dict | None = None) -> dict:
    model, infer = config.split(":")
    kwargs = {"hmm_cvi": "cvi1", "infer": "cvi"} if infer == "cvi1" else {"infer": infer}
    aligner = WordAligner(model=model, random_state=seed, alpha=alpha, **kwargs, **(params or {}))
    wall, cpu = time.perf_counter(), cpu_seconds()
    aligner.fit(pairs)
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    row = {"system": "induce", "model": model, "infer": infer, "alpha": alpha, "fit_wall_s": wall, "fit_cpu_s": cpu,
           "params": params or {}, "passes": [aligner.n_iter_ibm1_, aligner.n_iter_], "converged": aligner.converged_,
           "learned_alpha": aligner.alpha_, "learned_jump_alpha": aligner.jump_alpha_}
    for method in SYMMETRIZATIONS:
        aligner.set_params(symmetrize=method)
        # gibbs and fertility cvi: the test pairs are the last training pairs, decoded from the link marginals
        training = infer == "gibbs" or model == "fertility"
        links = aligner.align_training()[len(pairs) - len(test):] if training else aligner.align(test)
        row[method] = score(links, gold)
    return row


def run_eflomal(level: int, pairs, test, gold) -> dict:
    import eflomal

    src_lines = [" ".join(s) for s, _ in pairs]
    tgt_lines = [" ".join(t) for _, t in pairs]
    with tempfile.TemporaryDirectory() as tmp:
        fwd, rev = os.path.join(tmp, "fwd"), os.path.join(tmp, "rev")
        wall, cpu = time.perf_counter(), cpu_seconds()
        eflomal.Aligner(model=level).align(src_lines, tgt_lines, links_filename_fwd=fwd, links_filename_rev=rev,
                                           quiet=True)
        wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
        directional = [read_alignments(path, "pharaoh", n_pairs=len(pairs)) for path in (fwd, rev)]
    n = len(test)
    vocab_s, vocab_t = Vocabulary(), Vocabulary()
    _, src_off = encode_side((s for s, _ in test), vocab_s, True)
    _, tgt_off = encode_side((t for _, t in test), vocab_t, True)
    mats = []
    for links in directional:
        flat = np.zeros(int(np.sum(np.diff(src_off) * np.diff(tgt_off))), dtype=np.bool_)
        start = 0
        for (s, t), a in zip(test, links[-n:]):
            for i, j in a.sure:
                flat[start + i * len(t) + j] = True
            start += len(s) * len(t)
        mats.append(flat)
    row = {"system": "eflomal", "model": f"m{level}", "infer": "gibbs", "fit_wall_s": wall, "fit_cpu_s": cpu}
    for method in SYMMETRIZATIONS:
        row[method] = score(matrices_to_links(src_off, tgt_off, symmetrize_corpus(src_off, tgt_off, *mats, method)),
                            gold)
    return row


# ----------------------------------------------------------------------- main
def _number(text: str):
    """A ``--params`` value: an int, a float, or comma-separated ints (``gibbs_passes=2,2,10``)."""
    if "," in text:
        return tuple(int(x) for x in text.split(","))
    return int(text) if text.lstrip("-").isdigit() else float(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="*", default=["10000", "50000", "all"], help="en-fr training sizes")
    parser.add_argument("--configs", nargs="*", default=ALL_CONFIGS, help="model:infer rows (infer cvi1 = HMM CVI-1)")
    parser.add_argument("--big-configs", nargs="*", default=["hmm:cvi", "hmm:cvi1", "hmm:em"],
                        help="rows run on the full 251k-pair set")
    parser.add_argument("--gold-sets", nargs="*", default=["ro-en", "ja-en", "de-en"])
    parser.add_argument("--eflomal-levels", nargs="*", type=int, default=[3, 1, 2])
    parser.add_argument("--no-eflomal", action="store_true")
    parser.add_argument("--eflomal-first", action="store_true",
                        help="run eflomal before induce in every row (to alternate the order between runs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpha", type=float, default=None,
                        help="Dirichlet prior of the translation tables (default: WordAligner's)")
    parser.add_argument("--params", nargs="*", default=[], metavar="NAME=VALUE",
                        help="further WordAligner hyperparameters (numbers), e.g. tol=0 n_iter=5 learn_hyper=1 "
                             "gibbs_passes=2,2,10")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "align.json"))
    args = parser.parse_args(argv)

    params = {k: _number(v) for k, v in (p.split("=", 1) for p in args.params)}
    have_eflomal = not args.no_eflomal
    if have_eflomal:
        try:
            import eflomal  # noqa: F401
        except ImportError:
            print("eflomal is not installed (pip install eflomal): skipping it", file=sys.stderr)
            have_eflomal = False
    result = {"date": datetime.date.today().isoformat(), "machine": platform.platform(),
              "command": " ".join(sys.argv), "rows": []}
    datasets = [("en-fr", None if s == "all" else int(s)) for s in args.sizes] + [(g, None) for g in args.gold_sets]
    print(f"{'data':8} {'pairs':>7} {'system':8} {'model':5} {'infer':6} {'AER int':>8} {'AER gdfa':>8} "
          f"{'wall s':>8} {'cpu s':>8} {'pairs/cpu-s':>11}")
    for name, size in datasets:
        pairs, test, gold = enfr_data(size) if name == "en-fr" else gold_set_data(name)
        full = name == "en-fr" and size is None
        runs = [("induce", c) for c in (args.big_configs if full else args.configs)]
        if have_eflomal:
            theirs = [("eflomal", level) for level in args.eflomal_levels]
            runs = theirs + runs if args.eflomal_first else runs + theirs
        for system, what in runs:
            row = run_induce(what, pairs, test, gold, args.seed, args.alpha, params) if system == "induce" else \
                run_eflomal(what, pairs, test, gold)
            row.update({"data": name, "train_pairs": len(pairs), "test_pairs": len(test),
                        "pairs_per_cpu_s": len(pairs) / row["fit_cpu_s"] if row["fit_cpu_s"] >= 0.05 else None})
            result["rows"].append(row)
            print(f"{name:8} {len(pairs):7d} {row['system']:8} {row['model']:5} {row['infer']:6} "
                  f"{100 * row['intersection']['aer']:8.1f} {100 * row['grow-diag-final-and']['aer']:8.1f} "
                  f"{row['fit_wall_s']:8.1f} {row['fit_cpu_s']:8.1f} {row['pairs_per_cpu_s'] or 0:11.0f}"
                  f" {row.get('passes', '')} {row.get('learned_alpha', '')}", flush=True)
            with atomic_write(args.out) as out:
                json.dump(result, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
