"""HMM tagger benchmarks: speed against hmmlearn and tagging accuracy on real corpora.

Usage::

    python benchmarks/hmm_bench.py speed [--iterations 3] [--rounds 3] [--quick] [--json FILE]
    python benchmarks/hmm_bench.py accuracy --corpus wsj1k --iterations 200 --seeds 3
    python benchmarks/hmm_bench.py peer --iterations 50
    python benchmarks/hmm_bench.py tune --corpus wsjdev --algorithms vi,cvi2
    python benchmarks/hmm_bench.py blocks --corpus wsj --block-sizes 0,16,64,256,1024
    python benchmarks/hmm_bench.py semi --corpus wsj --sizes 1000,2000,3000,all
    python benchmarks/hmm_bench.py semi --corpus wsj --sizes 1000 --cutoffs 1,2,3,5,10
    python benchmarks/hmm_bench.py semi-tune --corpus wsj --algorithms em,vi,cvi1,cvi2
    python benchmarks/hmm_bench.py fit --corpus ewt --algorithms cvi2 --states 45
    python benchmarks/hmm_bench.py combine --inputs a.json,b.json --tag _10seeds
    python benchmarks/hmm_bench.py passes --before /path/to/old/checkout --iterations 7

``speed``: seconds per iteration of every algorithm on CoNLL-2000 train+test
(259k tokens, K=45) next to hmmlearn's ``CategoricalHMM`` EM
(``implementation="scaling"``) in the same run, the arithmetic floor
(3 T K^2 multiply-adds at 100 GFLOP/s) and peak RSS; peers alternated in ``--rounds`` rounds, each
timing after a warm-up (the fit's first pass; a 1-iteration hmmlearn fit), with its CPU time and the load
average before and after it (``LOADED`` above 1.5: repeat the run).  ``--quick``: 1 round of em, vi, cvi1,
cvi2 and hmmlearn, 2 timed iterations each (about 1.5 minutes on a quiet 16-core machine).
``accuracy``: unsupervised tagging metrics (cross-validated M-1, 1-1, VI,
V-measure) for em, vi, cvi1, cvi2, cgs over seeds, mean and sd.
``tune``: alpha x beta grid (default: the thesis grid {0.003, ..., 1.0}) on
held-out sentences (``wsjdev``: ptb-sample sentences 1000-1999), one seed; the
best setting per algorithm and metric goes to the JSON, which ``accuracy
--tuned`` reads (choosing by cross-validated M-1).
``blocks``: block-parallel cvi2 against the exact order (s/iter, final metrics).
``semi``: tag-dictionary (Merialdo) accuracy by training size and cutoff d.
``semi-tune``: alpha x beta grid for ``semi`` on sentences 1000-1999 with the
complete dictionary (``semi --tuned`` reads the best setting by accuracy).
``fit``: whole fits (setup included) in CPU and wall seconds (200 iterations).
``passes``: CPU seconds of one call of each compiled pass (cvi1, cgs, exact cvi2, cvi2 in
blocks of 256, an svi and an scvi epoch through the driver ``minibatch.run``) of the
checkout ``--before`` against this one's, in one process, alternated, on the
same inputs (CoNLL-2000, K=45): the check that splitting a pass into named
steps cost nothing.
``combine``: pools the runs of several ``accuracy`` JSON files (seed ranges run
separately) and reports mean and sd over all of them.
``accuracy`` and ``tune`` also take ``em-map`` (MAP Baum-Welch) and ``hmmlearn``.
``peer``: hmmlearn EM vs induce cvi2 on CoNLL-2000 train+test with posterior
decoding (the issue's reference: hmmlearn M-1 52.2, 1-1 35.2, V-M 45.4, VI 5.22).
Every mode prints a table and writes JSON under ``benchmarks/results/``.
Needs ``../shared/corpora`` (or ``$INDUCE_CORPORA``); hmmlearn is a
benchmark-only dependency (``pip install -e .[bench]``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import time
from pathlib import Path

import numpy as np

import timing
from induce.corpus.formats import load_corpus
from induce.eval.tagging import tagging_report
from induce.taggers import HMMTagger

ROOT = Path(__file__).resolve().parent
CORPORA = Path(os.environ.get("INDUCE_CORPORA", ROOT.parent.parent / "shared" / "corpora"))
ALGORITHMS = ("em", "vi", "cvi1", "cvi2", "cgs")
STOCHASTIC = ("svi", "scvi")  # speed: s per epoch (minibatches of 1,000 sentences)
# accuracy/tune also take "em-map" (Baum-Welch with MAP M-steps under the Dirichlet
# priors, HMMTagger(map_estimate=True)) and "hmmlearn" (the peer's EM, posterior decoding)


def conll2000():
    """CoNLL-2000 train + test as one corpus (Brill-tagger POS: silver, not gold)."""
    train = load_corpus(CORPORA / "conll2000" / "train.txt", lowercase=True)
    test = load_corpus(CORPORA / "conll2000" / "test.txt", lowercase=True, vocab=None)
    from induce.corpus.corpus import Corpus

    return Corpus.from_sentences(list(train.sentences) + list(test.sentences), name="conll2000")


def corpus_by_name(name: str):
    if name == "conll2000":
        return conll2000(), "pos"
    if name in ("wsj1k", "wsjdev", "wsj"):
        c = load_corpus(CORPORA / "ptb-sample")
        if name != "wsj":
            from induce.corpus.corpus import Corpus

            # wsj1k: the first 1,000 sentences (thesis's smallest WSJ set);
            # wsjdev: the next 1,000, held out for choosing alpha and beta
            part = slice(0, 1000) if name == "wsj1k" else slice(1000, 2000)
            c = Corpus.from_sentences(c.sentences[part], name=name)
        return c, "pos"
    if name == "ewt":
        from induce.corpus.corpus import Corpus
        from induce.corpus.formats import read_sentences

        sents = []
        for part in ("train", "dev", "test"):
            sents += read_sentences(CORPORA / "ud" / "en_ewt" / f"en_ewt-ud-{part}.conllu")
        return Corpus.from_sentences(sents, name="ewt"), "xpos"
    if name == "brown":
        return load_corpus(CORPORA / "brown", universal_map="en-brown"), "universal"
    if name == "brown-base":
        from induce.corpus.corpus import Corpus
        from induce.corpus.formats import read_sentences
        from induce.corpus.read_brown import add_base_tags

        # the 104 Brown base tags (affixes and contractions removed, induce.corpus.read_brown.base_tag)
        return Corpus.from_sentences(map(add_base_tags, read_sentences(CORPORA / "brown")), name="brown-base"), "base"
    raise SystemExit(f"unknown corpus {name}")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def machine() -> str:
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}"


def hmmlearn_em(corpus, K, n_iter, seed):
    from hmmlearn.hmm import CategoricalHMM

    X = corpus.tokens.reshape(-1, 1).astype(np.int64)
    lengths = corpus.lengths
    model = CategoricalHMM(n_components=K, n_iter=n_iter, tol=-np.inf, random_state=seed,
                           implementation="scaling", n_features=len(corpus.vocab))
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(X, lengths)
    seconds = time.perf_counter() - start
    model.fit_cpu_seconds = time.process_time() - cpu
    _, states = model.decode(X, lengths, algorithm="map")
    return model, seconds, states


def fit_labels(corpus, infer, K, n_iter, alpha, beta, seed, block=0):
    """State labels of one fit: an induce algorithm, ``em-map`` or ``hmmlearn`` (CategoricalHMM EM)."""
    if infer == "hmmlearn":
        return hmmlearn_em(corpus, K, n_iter, seed)[2]
    name, map_estimate = ("em", True) if infer == "em-map" else (infer, False)
    return HMMTagger(n_states=K, infer=name, n_iter=n_iter, alpha=alpha, beta=beta, map_estimate=map_estimate,
                     cvi2_block=block, random_state=seed).fit(corpus).labels_


def compile_seconds():
    """Seconds to compile (cold numba cache) or load (warm cache) every kernel: fits on a 2-sentence corpus."""
    from induce.corpus.corpus import Corpus
    from induce.corpus.sentence import Sentence

    tiny = Corpus.from_sentences([Sentence(["a", "b", "a"], {}), Sentence(["b"], {})])
    out = {}
    for infer, extra in [(a, {}) for a in ALGORITHMS] + [("cvi2", {"cvi2_block": 2})]:
        start = time.perf_counter()
        HMMTagger(n_states=2, infer=infer, n_iter=1, random_state=0, **extra).fit(tiny)
        out[infer + (" block" if extra else "")] = time.perf_counter() - start
    return out


def induce_speed_peer(corpus, K, infer, block, iterations):
    """A timing callable (:func:`timing.measure`): one fit of ``iterations`` + 1 passes, the first a warm-up;
    median wall seconds of the timed passes (the fit's trace) and median CPU seconds between them.  svi/scvi:
    ``iterations`` epochs of minibatches of 1,000 sentences, their training seconds over the epochs."""

    def run():
        cpu = [time.process_time()]
        if infer in STOCHASTIC:
            model = HMMTagger(n_states=K, infer=infer, n_epochs=iterations, batch_size=1000, random_state=0,
                              heldout_every=0, heldout_fraction=0).fit(corpus)
            return model.trace_[-1]["seconds"] / iterations, (time.process_time() - cpu[0]) / iterations
        model = HMMTagger(n_states=K, infer=infer, n_iter=iterations + 1, cvi2_block=block, random_state=0,
                          callback=lambda rec: cpu.append(time.process_time())).fit(corpus)
        return (statistics.median(r["seconds"] for r in model.trace_[1:]), statistics.median(np.diff(cpu[1:])))

    return run


def hmmlearn_speed_peer(corpus, K, iterations):
    """hmmlearn ``CategoricalHMM`` EM (scaling): a 1-iteration warm-up fit, then ``iterations`` timed ones."""

    def run():
        hmmlearn_em(corpus, K, 1, 0)
        hl, seconds, _ = hmmlearn_em(corpus, K, iterations, 0)
        return seconds / iterations, hl.fit_cpu_seconds / iterations

    return run


def mode_speed(args):
    """Per-iteration wall and CPU seconds of every algorithm and of hmmlearn, alternated in rounds
    (:func:`timing.alternate`: load average before and after every timing, LOADED above 1.5)."""
    corpus, column = corpus_by_name(args.corpus)
    K = args.states or len(corpus.tag_vocabs[column])
    N = corpus.n_tokens
    # arithmetic floor: forward, backward, pair counts = 3 T K^2 multiply-adds at 100 GFLOP/s
    floor = 3 * N * K * K * 2 / 100e9
    compile_s = compile_seconds()
    print("numba compile/load seconds:", {k: round(v, 2) for k, v in compile_s.items()}, flush=True)
    algorithms = args.algorithms if args.algorithms != ",".join(ALGORITHMS) or not args.quick else "em,vi,cvi1,cvi2"
    peers = {}
    for infer in algorithms.split(","):
        peers["cvi2 (exact)" if infer == "cvi2" else infer] = induce_speed_peer(corpus, K, infer, 0, args.iterations)
    for b in ([] if args.quick else [int(b) for b in args.block_sizes.split(",") if b]):
        peers[f"cvi2 block {b}"] = induce_speed_peer(corpus, K, "cvi2", b, args.iterations)
    if args.hmmlearn_iterations:
        peers["hmmlearn-scaling em"] = hmmlearn_speed_peer(corpus, K, args.hmmlearn_iterations)
    table = timing.alternate(peers, args.rounds or (1 if args.quick else 3))
    ref = table.get("hmmlearn-scaling em", {"wall": float("nan"), "cpu": float("nan")})
    rows = []
    for name, r in table.items():
        rows.append({"algorithm": name, "s_per_iter": r["wall"], "cpu_s_per_iter": r["cpu"],
                     "tokens_per_s": N / r["wall"], "x_floor": r["wall"] / floor,
                     "speedup_vs_hmmlearn": ref["wall"] / r["wall"], "cpu_speedup_vs_hmmlearn": ref["cpu"] / r["cpu"], "max_load": r["max_load"],
                     "loaded": r["loaded"], "runs": r["runs"]})
    print(f"corpus {args.corpus}: {corpus.n_sentences} sentences, {N} tokens, K={K}; floor {floor:.3f} s/iter")
    print(f"{'algorithm':22s} {'s/iter':>8s} {'tok/s':>10s} {'x floor':>8s} {'vs hmmlearn':>11s} "
          f"{'cpu s/it':>8s} {'cpu vs hl':>9s} {'max load':>8s}")
    for r in rows:
        print(f"{r['algorithm']:22s} {r['s_per_iter']:8.3f} {r['tokens_per_s']:10.0f} {r['x_floor']:8.1f} "
              f"{r['speedup_vs_hmmlearn']:11.1f} {r['cpu_s_per_iter']:8.3f} {r['cpu_speedup_vs_hmmlearn']:9.1f} "
              f"{r['max_load']:8.2f}{'  LOADED' if r['loaded'] else ''}")
    print(f"peak RSS {peak_rss_mb():.0f} MB")
    return {"corpus": args.corpus, "tokens": N, "states": K, "floor_s": floor, "rows": rows,
            "compile_s": compile_s, "peak_rss_mb": peak_rss_mb(), "load": os.getloadavg(),
            "machine_detail": timing.machine()}


def mode_fit(args):
    """Whole fits (setup and every iteration) in CPU and wall seconds: the issue's
    "200 cvi2 iterations on EWT in under 1 minute, on Brown in under 4" targets."""
    corpus, column = corpus_by_name(args.corpus)
    K = args.states or len(corpus.tag_vocabs[column])
    rows = []
    for infer in args.algorithms.split(","):
        cpu = []
        cpu0, wall0 = time.process_time(), time.perf_counter()
        HMMTagger(n_states=K, infer=infer, n_iter=args.iterations, alpha=args.alpha, beta=args.beta, random_state=0,
                  eval_every=args.iterations, callback=lambda rec: cpu.append(time.process_time())).fit(corpus)
        row = {"algorithm": infer, "iterations": args.iterations, "fit_cpu_s": time.process_time() - cpu0,
               "fit_wall_s": time.perf_counter() - wall0, "setup_cpu_s": cpu[0] - cpu0 - float(np.diff(cpu[:2])[0]),
               "iteration_cpu_s_median": float(np.median(np.diff(cpu))), "iteration_cpu_s_max": float(np.max(np.diff(cpu)))}
        rows.append(row)
        print(f"{infer:6s} K={K} {args.iterations} iterations: {row['fit_cpu_s']:.1f} s CPU, {row['fit_wall_s']:.1f} s wall "
              f"(setup ~{row['setup_cpu_s']:.1f} s CPU; iteration median {row['iteration_cpu_s_median']:.3f} s, "
              f"max {row['iteration_cpu_s_max']:.3f} s)", flush=True)
    return {"corpus": args.corpus, "tokens": corpus.n_tokens, "states": K, "rows": rows,
            "load": os.getloadavg(), "peak_rss_mb": peak_rss_mb()}


def mode_blocks(args):
    """cvi2 block size against the exact order: seconds per iteration and final metrics."""
    corpus, column = corpus_by_name(args.corpus)
    gold = corpus.tags[column]
    K = args.states or len(corpus.tag_vocabs[column])
    rows = []
    for block in [int(b) for b in args.block_sizes.split(",")]:
        runs = []
        for seed in range(args.seed_base, args.seed_base + args.seeds):
            model = HMMTagger(n_states=K, infer="cvi2", n_iter=args.iterations, alpha=args.alpha, beta=args.beta,
                              cvi2_block=block, random_state=seed).fit(corpus)
            rep = tagging_report(model.labels_, gold, corpus.offsets)
            rep["s_per_iter"] = statistics.median(r["seconds"] for r in model.trace_[1:])
            runs.append(rep)
        row = {"block": block, "runs": runs}
        for key in ("m1_cv", "1to1", "vi", "vm", "s_per_iter"):
            row[key] = statistics.mean(r[key] for r in runs)
        rows.append(row)
        print(f"block {block:5d}: {row['s_per_iter']:.3f} s/iter  M-1cv {row['m1_cv']:.3f} 1-1 {row['1to1']:.3f} "
              f"VI {row['vi']:.3f} V-M {row['vm']:.3f}", flush=True)
    return {"corpus": args.corpus, "states": K, "alpha": args.alpha, "beta": args.beta, "iterations": args.iterations,
            "seeds": args.seeds, "rows": rows, "load": os.getloadavg()}


def _grid(text):
    return [float(v) for v in text.split(",")]


def mode_tune(args):
    """alpha x beta grid on held-out data (one seed), best setting per algorithm and metric."""
    corpus, column = corpus_by_name(args.corpus)
    gold = corpus.tags[column]
    K = args.states or len(corpus.tag_vocabs[column])
    runs = []
    for infer in args.algorithms.split(","):
        n_iter = args.cgs_iterations if infer == "cgs" else args.iterations
        # maximum-likelihood EM has no hyperparameters: one run
        fixed = infer in ("em", "hmmlearn")
        alphas, betas = ([1.0], [1.0]) if fixed else (_grid(args.alpha_grid), _grid(args.beta_grid))
        for a in alphas:
            for b in betas:
                start = time.perf_counter()
                labels = fit_labels(corpus, infer, K, n_iter, a, b, args.seed_base)
                rep = tagging_report(labels, gold, corpus.offsets)
                runs.append({"algorithm": infer, "alpha": a, "beta": b, "iterations": n_iter,
                             "seconds": time.perf_counter() - start, **rep})
                print(f"{infer:5s} alpha={a:<6g} beta={b:<6g} M-1cv {rep['m1_cv']:.3f} 1-1 {rep['1to1']:.3f} "
                      f"VI {rep['vi']:.3f} V-M {rep['vm']:.3f} {runs[-1]['seconds']:.1f}s", flush=True)
    best = {}
    for infer in args.algorithms.split(","):
        mine = [r for r in runs if r["algorithm"] == infer]
        best[infer] = {m: {"alpha": r["alpha"], "beta": r["beta"], "value": r[m]}
                       for m, sign in (("m1_cv", 1), ("1to1", 1), ("vm", 1), ("vi", -1))
                       for r in [max(mine, key=lambda r: sign * r[m])]}
        print(infer, "best:", {m: (v["alpha"], v["beta"], round(v["value"], 3)) for m, v in best[infer].items()})
    return {"corpus": args.corpus, "gold_column": column, "states": K, "runs": runs, "best": best}


def summarize(row):
    """Mean and sd over ``row["runs"]`` of every tagging metric and the time; prints one line."""
    runs = row["runs"]
    for key in ("m1_cv", "m1", "1to1", "1to1_greedy", "vi", "vm", "seconds"):
        vals = [r[key] for r in runs]
        row[key] = statistics.mean(vals)
        row[key + "_sd"] = statistics.stdev(vals) if len(vals) > 1 else 0.0
    print(f"{row['algorithm']:8s} a={row['alpha']:g} b={row['beta']:g} it={row['iterations']:5d} n={len(runs):2d} "
          f"M-1cv {row['m1_cv']:.3f}±{row['m1_cv_sd']:.3f} 1-1g {row['1to1_greedy']:.3f}±{row['1to1_greedy_sd']:.3f} "
          f"1-1 {row['1to1']:.3f}±{row['1to1_sd']:.3f} VI {row['vi']:.3f}±{row['vi_sd']:.3f} "
          f"V-M {row['vm']:.3f}±{row['vm_sd']:.3f} time {row['seconds']:.1f}s", flush=True)
    return row


def mode_combine(args):
    """Pool the runs of several ``accuracy`` JSON files (e.g. seeds 0-2 and 3-9) by
    algorithm and setting; every file must be of the same corpus, K and tuning."""
    files = [json.loads(Path(f).read_text()) for f in args.inputs.split(",")]
    for key in ("corpus", "gold_column", "states"):
        if len({str(f[key]) for f in files}) != 1:
            raise SystemExit(f"combine: the inputs differ in {key}")
    pooled, seeds = {}, {}
    for f in files:
        for row in f["rows"]:
            key = (row["algorithm"], row["alpha"], row["beta"], row["iterations"])
            pooled.setdefault(key, []).extend(row["runs"])
            seeds.setdefault(key, []).extend(f["seeds"])
    rows = []
    for (infer, alpha, beta, iterations), runs in pooled.items():
        key = (infer, alpha, beta, iterations)
        if len(set(seeds[key])) != len(seeds[key]):
            raise SystemExit(f"combine: {infer} has a seed twice: {sorted(seeds[key])}")
        rows.append(summarize({"algorithm": infer, "alpha": alpha, "beta": beta, "iterations": iterations,
                               "seeds": sorted(seeds[key]), "runs": runs}))
    args.corpus = files[0]["corpus"]
    return {"corpus": args.corpus, "gold_column": files[0]["gold_column"], "states": files[0]["states"],
            "inputs": args.inputs.split(","), "rows": rows}


def mode_accuracy(args):
    corpus, column = corpus_by_name(args.corpus)
    gold = corpus.tags[column]
    K = args.states or len(corpus.tag_vocabs[column])
    tuned = json.loads(Path(args.tuned).read_text())["best"] if args.tuned else {}
    rows = []
    for infer in args.algorithms.split(","):
        runs = []
        # alpha, beta: chosen by held-out cross-validated M-1 when --tuned is given
        choice = tuned.get(infer, {}).get("m1_cv", {"alpha": args.alpha, "beta": args.beta})
        for seed in range(args.seed_base, args.seed_base + args.seeds):
            n_iter = args.cgs_iterations if infer == "cgs" else args.iterations
            start = time.perf_counter()
            labels = fit_labels(corpus, infer, K, n_iter, choice["alpha"], choice["beta"], seed, args.block_size)
            rep = tagging_report(labels, gold, corpus.offsets)
            rep["seconds"] = time.perf_counter() - start
            runs.append(rep)
        rows.append(summarize({"algorithm": infer, "alpha": choice["alpha"], "beta": choice["beta"],
                               "iterations": args.cgs_iterations if infer == "cgs" else args.iterations,
                               "runs": runs}))
    return {"corpus": args.corpus, "gold_column": column, "states": K, "tuned": args.tuned,
            "cvi2_block": args.block_size, "seeds": list(range(args.seed_base, args.seed_base + args.seeds)),
            "rows": rows}


def mode_semi(args):
    """Merialdo-style tagging with a tag dictionary (thesis Figures 3.10 and 3.12): plain accuracy.

    The dictionary holds every (word, tag) pair of the *whole* corpus; the model
    is trained on its first ``n`` sentences (``--sizes``).  With ``--cutoffs``
    (Figure 3.12) words seen fewer than ``d`` times in the training sentences
    may take any tag.
    """
    from induce.corpus.corpus import Corpus
    from induce.taggers import TagDictionary

    full, column = corpus_by_name(args.corpus)
    complete = TagDictionary.from_gold(full, column, cutoff=1)
    tuned = json.loads(Path(args.tuned).read_text())["best"] if args.tuned else {}
    rows = []
    sizes = [s for s in args.sizes.split(",")]
    cutoffs = [int(d) for d in args.cutoffs.split(",")]
    for size in sizes:
        n = full.n_sentences if size == "all" else int(size)
        train = Corpus.from_sentences(full.sentences[:n], vocab=full.vocab, tag_vocabs=full.tag_vocabs,
                                      name=f"{args.corpus}[:{n}]")
        gold = train.tags[column]
        freq = np.bincount(train.tokens, minlength=len(full.vocab))
        for d in cutoffs:
            allowed = complete.allowed.copy()
            allowed[freq < d] = 1
            tag_dict = TagDictionary(full.vocab, complete.tags, allowed)
            for infer in args.algorithms.split(","):
                accs, secs = [], []
                # alpha, beta: chosen by held-out accuracy (semi-tune mode) when --tuned is given
                choice = tuned.get(infer, {}).get("accuracy", {"alpha": args.alpha, "beta": args.beta})
                for seed in range(args.seed_base, args.seed_base + args.seeds):
                    n_iter = args.cgs_iterations if infer == "cgs" else args.iterations
                    start = time.perf_counter()
                    model = HMMTagger(infer=infer, n_iter=n_iter, alpha=choice["alpha"], beta=choice["beta"],
                                      random_state=seed).fit(train, tag_dict=tag_dict)
                    secs.append(time.perf_counter() - start)
                    accs.append(float(np.mean(model.labels_ == gold)))
                row = {"sentences": n, "tokens": train.n_tokens, "cutoff": d, "algorithm": infer, **choice,
                       "ambiguity": tag_dict.ambiguity(train), "accuracy": statistics.mean(accs),
                       "accuracy_sd": statistics.stdev(accs) if len(accs) > 1 else 0.0, "runs": accs,
                       "seconds": statistics.mean(secs)}
                rows.append(row)
                print(f"n={n:6d} d={d:2d} {infer:5s} amb {row['ambiguity']:.2f} acc {row['accuracy']:.4f}"
                      f"±{row['accuracy_sd']:.4f} {row['seconds']:.1f}s", flush=True)
    return {"corpus": args.corpus, "gold_column": column, "alpha": args.alpha, "beta": args.beta,
            "iterations": args.iterations, "seeds": args.seeds, "rows": rows}


def mode_semi_tune(args):
    """alpha x beta grid for the tag-dictionary task on held-out sentences 1000-1999 of ``--corpus``.

    The dictionary is the complete one of the whole corpus (as in ``semi``); one seed; the
    best setting by accuracy per algorithm goes to ``best[algorithm]["accuracy"]`` for
    ``semi --tuned``.
    """
    from induce.corpus.corpus import Corpus
    from induce.taggers import TagDictionary

    full, column = corpus_by_name(args.corpus)
    complete = TagDictionary.from_gold(full, column, cutoff=1)
    dev = Corpus.from_sentences(full.sentences[1000:2000], vocab=full.vocab, tag_vocabs=full.tag_vocabs,
                                name=f"{args.corpus}[1000:2000]")
    gold = dev.tags[column]
    runs = []
    for infer in args.algorithms.split(","):
        n_iter = args.cgs_iterations if infer == "cgs" else args.iterations
        alphas, betas = ([1.0], [1.0]) if infer == "em" else (_grid(args.alpha_grid), _grid(args.beta_grid))
        for a in alphas:
            for b in betas:
                start = time.perf_counter()
                model = HMMTagger(infer=infer, n_iter=n_iter, alpha=a, beta=b,
                                  random_state=args.seed_base).fit(dev, tag_dict=complete)
                acc = float(np.mean(model.labels_ == gold))
                runs.append({"algorithm": infer, "alpha": a, "beta": b, "accuracy": acc,
                             "seconds": time.perf_counter() - start})
                print(f"{infer:5s} alpha={a:<6g} beta={b:<6g} accuracy {acc:.4f} {runs[-1]['seconds']:.1f}s", flush=True)
    best = {}
    for infer in args.algorithms.split(","):
        r = max((r for r in runs if r["algorithm"] == infer), key=lambda r: r["accuracy"])
        best[infer] = {"accuracy": {"alpha": r["alpha"], "beta": r["beta"], "value": r["accuracy"]}}
        print(infer, "best:", best[infer]["accuracy"])
    return {"corpus": args.corpus, "held_out": "sentences 1000-1999", "gold_column": column,
            "iterations": args.iterations, "runs": runs, "best": best}


def mode_peer(args):
    corpus, column = corpus_by_name("conll2000")
    gold = corpus.tags[column]
    _, seconds, states = hmmlearn_em(corpus, 45, args.iterations, 0)
    rows = [{"algorithm": "hmmlearn em", "seconds": seconds, **tagging_report(states, gold, corpus.offsets)}]
    start = time.perf_counter()
    model = HMMTagger(n_states=45, infer="cvi2", n_iter=args.iterations, alpha=args.alpha, beta=args.beta,
                      random_state=0).fit(corpus)
    rows.append({"algorithm": "induce cvi2", "seconds": time.perf_counter() - start,
                 **tagging_report(model.labels_, gold, corpus.offsets)})
    for r in rows:
        print(f"{r['algorithm']:12s} M-1 {r['m1']:.3f} M-1cv {r['m1_cv']:.3f} 1-1 {r['1to1']:.3f} "
              f"V-M {r['vm']:.3f} VI {r['vi']:.3f} time {r['seconds']:.1f}s")
    return {"corpus": "conll2000 train+test (silver POS)", "iterations": args.iterations, "alpha": args.alpha,
            "beta": args.beta, "rows": rows}


def _module_from(path: Path, name: str):
    """The module file ``path`` imported as ``induce.infer.<name>`` (its relative imports resolve in this induce)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(f"induce.infer.{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def mode_passes(args):
    from induce.algorithms import minibatch
    from induce.infer import hmm_batched, hmm_passes, stochastic_hmm

    corpus, _ = corpus_by_name(args.corpus)
    K, W, alpha, beta = args.states, len(corpus.vocab), 0.1, 0.1
    tokens = np.ascontiguousarray(corpus.tokens, dtype=np.int32)
    offsets = np.ascontiguousarray(corpus.offsets, dtype=np.int64)
    I, N = len(offsets) - 1, len(tokens)
    names = ("hmm_passes", "hmm_batched", "stochastic_hmm")
    versions = {"before": {n: _module_from(Path(args.before) / "induce" / "infer" / f"{n}.py", f"_before_{n}")
                           for n in names},
                "after": dict(zip(names, (hmm_passes, hmm_batched, stochastic_hmm)), run=minibatch.run)}
    # the minibatch driver: induce.algorithms.minibatch.run (in stochastic_hmm.py before that file was split)
    before = versions["before"]
    before["run"] = getattr(before["stochastic_hmm"], "run", None) or _module_from(
        Path(args.before) / "induce" / "algorithms" / "minibatch.py", "_before_minibatch").run
    no_mask = np.zeros((0, 0), dtype=np.uint8)
    order = np.arange(I, dtype=np.int64)
    st32 = np.zeros((I, K + 1, K), dtype=np.float32)
    g32 = np.zeros((N, K), dtype=np.float32)
    hmm_passes.init_chain_posteriors(tokens, offsets, K, 1, st32, g32)
    q = g32.astype(np.float64)
    z = np.random.default_rng(1).integers(0, K, size=N).astype(np.int32)

    def cvi1(m):
        G, Ce = np.zeros((K + 1, K)), np.zeros((W, K))
        hmm_passes.factorised_counts(tokens, offsets, q, W, G, Ce)
        return lambda: m["hmm_passes"].cvi1_pass(G, Ce, q.copy(), tokens, offsets, order, alpha, beta, no_mask)

    def cgs(m):
        Ct, Ce = np.zeros((K + 1, K), np.int64), np.zeros((W, K), np.int64)
        hmm_passes.hard_counts(tokens, offsets, z, W, K, Ct, Ce)
        return lambda: m["hmm_passes"].cgs_pass(Ct, Ce, z.copy(), tokens, offsets, alpha, beta, 1.0, 3, no_mask,
                                                np.zeros((0, K), np.int32))

    def cvi2(m):
        Ct, Ce = np.zeros((K + 1, K)), np.zeros((W, K))
        hmm_passes.totals_from_local(tokens, offsets, st32, g32, W, Ct, Ce)
        return lambda: m["hmm_passes"].cvi2_pass(Ct, Ce, st32.copy(), g32.copy(), tokens, offsets, order, alpha, beta,
                                                 no_mask)

    def block(m):
        Ct, Ce = np.zeros((K + 1, K)), np.zeros((W, K))
        hmm_passes.totals_from_local(tokens, offsets, st32, g32, W, Ct, Ce)
        return lambda: m["hmm_batched"].cvi2_block_pass(Ct, Ce, st32.copy(), g32.copy(), tokens, offsets, order, alpha,
                                                        beta, no_mask, 256, hmm_passes.n_threads())

    def epoch(algorithm):
        def make(m):
            sh = m["stochastic_hmm"]
            counts = sh.GlobalCounts.exponential(np.random.default_rng(0), K, W, N)
            batches = sh.sentence_batches(tokens, offsets, 1000, 1, np.random.default_rng(0))
            return lambda: m["run"](counts, sh.SentenceUpdater(algorithm, alpha, beta, I), batches, tau=1.0,
                                    kappa=0.5)
        return make

    cases = {"cvi1": cvi1, "cgs": cgs, "cvi2 (exact)": cvi2, "cvi2 block 256": block, "svi epoch": epoch("svi"), "scvi epoch": epoch("scvi")}
    seconds = {(c, v): [] for c in cases for v in versions}
    for r in range(args.iterations + 1):  # round 0 compiles / loads the caches
        for case, make in cases.items():
            for v in (("before", "after") if r % 2 else ("after", "before")):
                call = make(versions[v])
                t0 = time.process_time()
                call()
                if r:
                    seconds[case, v].append(time.process_time() - t0)
    rows = []
    for case in cases:
        b, a = (statistics.median(seconds[case, v]) for v in ("before", "after"))
        rows.append({"pass": case, "before_cpu_s": b, "after_cpu_s": a, "after_over_before": a / b,
                     "pairs": [round(x / y, 3) for x, y in zip(seconds[case, "after"], seconds[case, "before"])]})
        print(f"{case:16s} before {b:7.3f}  after {a:7.3f} CPU s  after/before {a / b:6.3f}  per round "
              f"{rows[-1]['pairs']}", flush=True)
    return {"corpus": args.corpus, "tokens": N, "states": K, "before": str(args.before), "rounds": args.iterations,
            "rows": rows, "load": os.getloadavg()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("speed", "accuracy", "peer", "tune", "blocks", "semi", "semi-tune", "combine", "fit",
                                         "passes"))
    parser.add_argument("--before", default=None, help="passes: the checkout whose passes are timed against these")
    parser.add_argument("--inputs", default="", help="combine: comma-separated accuracy JSON files to pool")
    parser.add_argument("--corpus", default=None, help="conll2000 | wsj1k | wsj | ewt | brown | brown-base")
    parser.add_argument("--states", type=int, default=None)
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--cgs-iterations", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--beta", type=float, default=0.01)
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS))
    parser.add_argument("--seed-base", type=int, default=0, help="first seed (runs use seed-base .. +seeds-1)")
    parser.add_argument("--alpha-grid", default="0.003,0.01,0.03,0.1,0.3,1.0")
    parser.add_argument("--beta-grid", default="0.003,0.01,0.03,0.1,0.3,1.0")
    parser.add_argument("--tuned", default=None,
                        help="JSON written by the tune (accuracy) or semi-tune (semi) mode: per-algorithm alpha, beta")
    parser.add_argument("--block-size", type=int, default=0, help="cvi2 block size (0: exact sequential)")
    parser.add_argument("--tag", default="", help="suffix of the JSON file name")
    parser.add_argument("--block-sizes", default="16,256",
                        help="speed: extra cvi2 block sizes; blocks: block sizes to compare (0 = exact)")
    parser.add_argument("--sizes", default="1000,2000,3000,all", help="semi: training sentences")
    parser.add_argument("--cutoffs", default="1", help="semi: dictionary cutoffs d (Figure 3.12)")
    parser.add_argument("--hmmlearn-iterations", type=int, default=None,
                        help="speed: hmmlearn EM iterations (0: skip; default 3, --quick 2)")
    parser.add_argument("--rounds", type=int, default=None, help="speed: alternated rounds (default 3, --quick 1)")
    parser.add_argument("--quick", action="store_true",
                        help="speed: 1 round of em, vi, cvi1, cvi2 (no blocks), 2 timed iterations each")
    parser.add_argument("--json", default=None, help="write the results here too")
    args = parser.parse_args()
    defaults = {"speed": ("conll2000", 45, 3), "accuracy": ("wsj1k", None, 200), "peer": ("conll2000", 45, 50),
                "tune": ("wsjdev", None, 200), "blocks": ("wsj", None, 50),
                "semi": ("wsj", None, 50), "semi-tune": ("wsj", None, 50), "combine": (None, None, 0), "fit": ("ewt", None, 200),
                "passes": ("conll2000", 45, 7)}
    corpus, states, iterations = defaults[args.mode]
    args.corpus = args.corpus or corpus
    args.states = args.states if args.states is not None else states
    args.iterations = args.iterations or (2 if args.quick else iterations)
    if args.hmmlearn_iterations is None:
        args.hmmlearn_iterations = 2 if args.quick else 3
    result = globals()[f"mode_{args.mode.replace('-', '_')}"](args)
    result.update({"date": time.strftime("%Y-%m-%d"), "machine": machine()})
    out = ROOT / "results" / f"hmm_{args.mode}_{args.corpus}{args.tag}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=float))
    if args.json:
        timing.write_json(args.json, result)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
