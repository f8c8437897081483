"""Stochastic and single-sequence HMM inference: thesis Figures 3.15 and 3.17, scale, resume.

Usage::

    python benchmarks/stochastic_bench.py fig315 [--corpus wsj|brown] [--epochs 5] [--ref-iterations 50]
    python benchmarks/stochastic_bench.py fig317 [--steps 1000] [--seeds 5]
    python benchmarks/stochastic_bench.py scale [--tokens 100000000] [--minutes 9]
    python benchmarks/stochastic_bench.py resume
    python benchmarks/stochastic_bench.py memory [--repeat 4]
    python benchmarks/stochastic_bench.py epochs [--seeds 3]
    python benchmarks/stochastic_bench.py svi-steps [--seeds 3]

``fig315``: WSJ (ptb-sample + CoNLL-2000 train and test, lowercased; only the
text is used, so the CoNLL-2000 tags being silver does not matter), 90:10
seeded sentence split, K=45, alpha=beta=0.1, held-out per-token predictive
log-likelihood (thesis eq. 3.108-3.109) against time for ``svi`` and ``scvi``
with M=100 and kappa in {0.5, 0.7, 0.9}, and kappa=0.5 with M in {20, 100,
500}; batch ``vi`` and ``cvi2`` as reference lines.  ``--corpus brown``: the
same on the Brown corpus (57k sentences, 1.16M tokens; words only).
``fig317``: the same training sentences concatenated with an end-of-sentence
symbol into one sequence (test sentences likewise into one held-out sequence);
T in {2, 5, 10}, T*M = 1000, kappa = 0.5; ``scvi3``, ``scvi3-vanilla``,
``svi-buffered`` (B=10) and ``svi-vanilla``; mean and sd over seeds.
``scale``: a seeded stream of WSJ + Brown sentences resampled on the fly
(held-out: 1% of the pool's sentences, never streamed) through ``scvi``, K=45,
M=1000, one pass; tokens/s, peak RSS, held-out log-likelihood over time.
``resume``: ``induce tag --stream`` on CoNLL-2000 train from disk, killed with
SIGTERM in the middle and resumed with ``--resume``, against an uninterrupted
run with the same seed.
``memory``: peak RSS of ``induce tag --stream`` on Brown as plain text and on
the same text repeated 4x on disk, the same number of minibatches each.
``epochs``: the default epoch cap and held-out stop of ``svi`` / ``scvi`` on ptb-sample (K = 45, gold POS):
M-1 after 1, 3, 10, 30 and 100 epochs (``tol=0``) and the epoch of the best held-out log-likelihood, at
alpha = beta = 0.1 and at the default priors (seed 0); then, over ``--seeds``, what ``--infer svi|scvi`` gave
before 2026-11-25 (one epoch at 0.1 / 0.1), the default (stop on held-out), and the default priors run to the
50-epoch cap.
``svi-steps``: is svi's gap on Brown-12 (its default priors, (1, 0.003), against its grid's best point, beta 0.3)
the step schedule? ``svi`` on Brown with the 12 universal tags (K = 12) at the default priors under other
minibatch sizes, ``tau``, ``kappa`` and all 100 epochs, beside batch ``vi`` at the same priors and ``svi`` at
beta 0.3; M-1, V-M and the tokens' share of the largest state over ``--seeds`` seeds.
Every mode prints a table and writes JSON under ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from induce.corpus.corpus import Corpus, gather_sentences
from induce.corpus.formats import read_sentences
from induce.corpus.transforms import pipeline
from induce.corpus.vocab import Vocabulary
from induce.algorithms import minibatch
from induce.infer import stochastic_hmm as sh
from induce.taggers import HMMTagger

ROOT = Path(__file__).resolve().parent
CORPORA = Path(os.environ.get("INDUCE_CORPORA", ROOT.parent.parent / "shared" / "corpora"))
RESULTS = ROOT / "results"
EOS = "</s>"
WSJ = ("ptb-sample", "conll2000/train.txt", "conll2000/test.txt")
FIG315_CORPORA = {"wsj": WSJ, "brown": ("brown",)}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def load_text(parts) -> Corpus:
    lower = pipeline(lowercase_words=True)
    sents = itertools.chain.from_iterable(lower(read_sentences(CORPORA / p)) for p in parts)
    return Corpus.from_sentences(sents, keep_sentences=False, name="+".join(parts))


def split(corpus: Corpus, seed: int = 0, fraction: float = 0.1):
    order = np.random.default_rng(seed).permutation(corpus.n_sentences)
    n_held = int(round(fraction * corpus.n_sentences))
    return corpus.subset(np.sort(order[n_held:])), corpus.subset(np.sort(order[:n_held]))


def save(name: str, payload: dict) -> None:
    RESULTS.mkdir(exist_ok=True)
    with open(RESULTS / name, "w") as out:
        json.dump(payload, out, indent=1, default=float)
    print(f"wrote {RESULTS / name}")


# ----------------------------------------------------------------- fig 3.15
def fig315(args) -> None:
    corpus = load_text(FIG315_CORPORA[args.corpus])
    train, held = split(corpus)
    print(f"{args.corpus}: {train.n_sentences} train / {held.n_sentences} held-out sentences, "
          f"{train.n_tokens} / {held.n_tokens} tokens, W={len(corpus.vocab)}")
    runs = []
    settings = [(100, 0.5), (100, 0.7), (100, 0.9), (20, 0.5), (500, 0.5)]
    for M, kappa in settings:
        for infer in ("svi", "scvi"):
            batches_per_epoch = -(-train.n_sentences // M)
            m = HMMTagger(n_states=45, infer=infer, alpha=0.1, beta=0.1, batch_size=M, kappa=kappa, tau=args.tau,
                          n_epochs=args.epochs, tol=0, heldout_every=max(1, batches_per_epoch // 4),
                          random_state=args.seed)
            t0 = time.perf_counter()
            m.fit(train, heldout=held)
            wall = time.perf_counter() - t0
            final = m.trace_[-1]
            runs.append({"infer": infer, "M": M, "kappa": kappa, "epochs": args.epochs, "wall_seconds": wall,
                         "final_heldout": final["heldout_log_likelihood_per_token"],
                         "train_seconds": final["seconds"], "trace": m.trace_})
            print(f"{infer:5s} M={M:3d} kappa={kappa}: held-out {final['heldout_log_likelihood_per_token']:.4f} "
                  f"after {final['tokens_seen']} tokens, {final['seconds']:.1f} s training")
    refs = []
    for infer in ("vi", "cvi2"):
        m = HMMTagger(n_states=45, infer=infer, alpha=0.1, beta=0.1, n_iter=args.ref_iterations,
                      random_state=args.seed)
        t0 = time.perf_counter()
        m.fit(train)
        wall = time.perf_counter() - t0
        ll = m.predictive_log_likelihood(held)
        refs.append({"infer": infer, "iterations": args.ref_iterations, "seconds": wall, "heldout": ll})
        print(f"{infer:5s} batch, {args.ref_iterations} iterations: held-out {ll:.4f} ({wall:.1f} s)")
    print("\n| M | kappa | svi held-out | scvi held-out | scvi - svi | svi s | scvi s |")
    print("|---|---|---|---|---|---|---|")
    for M, kappa in settings:
        a = next(r for r in runs if r["infer"] == "svi" and r["M"] == M and r["kappa"] == kappa)
        b = next(r for r in runs if r["infer"] == "scvi" and r["M"] == M and r["kappa"] == kappa)
        print(f"| {M} | {kappa} | {a['final_heldout']:.4f} | {b['final_heldout']:.4f} | "
              f"{b['final_heldout'] - a['final_heldout']:+.4f} | {a['train_seconds']:.0f} | {b['train_seconds']:.0f} |")
    for r in refs:
        print(f"| batch {r['infer']} ({r['iterations']} it.) | | {r['heldout']:.4f} | | | {r['seconds']:.0f} | |")
    name = "stochastic_fig315" + ("" if args.corpus == "wsj" else f"_{args.corpus}")
    name += ("" if args.tau == 1.0 else f"_tau{args.tau:g}") + ".json"
    save(name, {"corpus": args.corpus, "tau": args.tau, "train_sentences": train.n_sentences, "train_tokens": train.n_tokens,
                "heldout_tokens": held.n_tokens, "W": len(corpus.vocab), "runs": runs,
                "references": refs, "peak_rss_mb": peak_rss_mb(),
                "command": " ".join(sys.argv)})


# ----------------------------------------------------------------- fig 3.17
def one_sequence(corpus: Corpus, vocab: Vocabulary, eos: int) -> Corpus:
    """All sentences followed by the end-of-sentence symbol, as one sequence."""
    tokens = np.insert(corpus.tokens, corpus.offsets[1:], eos).astype(np.int32)
    return Corpus(tokens=tokens, offsets=np.array([0, len(tokens)], dtype=np.int64), vocab=vocab)


def fig317(args) -> None:
    corpus = load_text(WSJ)
    vocab = Vocabulary(list(corpus.vocab.itos) + [EOS])
    train, held = split(corpus)
    eos = vocab.stoi[EOS]
    train_seq = one_sequence(train, vocab, eos)
    held_seq = one_sequence(held, vocab, eos)
    print(f"one WSJ sequence: {train_seq.n_tokens} training / {held_seq.n_tokens} held-out tokens")
    rows = []
    for T in args.T:
        M = 1000 // T
        for infer in ("scvi3", "scvi3-vanilla", "svi-buffered", "svi-vanilla"):
            finals, secs, traces = [], [], []
            for seed in range(args.seeds):
                m = HMMTagger(n_states=45, infer=infer, alpha=0.1, beta=0.1, subseq_length=T, batch_size=M,
                              kappa=0.5, buffer=10, n_epochs=100, tol=0, max_batches=args.steps,
                              heldout_every=max(1, args.steps // 5), random_state=seed)
                m.fit(train_seq, heldout=held_seq)
                finals.append(m.trace_[-1]["heldout_log_likelihood_per_token"])
                secs.append(m.trace_[-1]["seconds"])
                traces.append(m.trace_)
            row = {"T": T, "M": M, "infer": infer, "seeds": args.seeds, "steps": args.steps,
                   "mean": statistics.fmean(finals), "sd": statistics.stdev(finals) if len(finals) > 1 else 0.0,
                   "seconds_mean": statistics.fmean(secs), "finals": finals, "traces": traces}
            rows.append(row)
            print(f"T={T:2d} M={M:3d} {infer:14s} held-out {row['mean']:.4f} ± {row['sd']:.4f} "
                  f"({row['seconds_mean']:.1f} s / run)")
    print("\n| T | M | scvi3 | scvi3-vanilla | svi-buffered | svi-vanilla |")
    print("|---|---|---|---|---|---|")
    for T in args.T:
        cells = [next(r for r in rows if r["T"] == T and r["infer"] == a)
                 for a in ("scvi3", "scvi3-vanilla", "svi-buffered", "svi-vanilla")]
        print(f"| {T} | {1000 // T} | " + " | ".join(f"{c['mean']:.4f} ± {c['sd']:.4f} ({c['seconds_mean']:.0f} s)"
                                                    for c in cells) + " |")
    name = "stochastic_fig317.json" if args.T == [2, 5, 10] else (
        f"stochastic_fig317_T{'-'.join(map(str, args.T))}_{args.steps}steps.json")
    save(name, {"train_tokens": train_seq.n_tokens, "heldout_tokens": held_seq.n_tokens,
                                    "W": len(vocab), "rows": rows, "command": " ".join(sys.argv)})


# -------------------------------------------------------------------- scale
def scale(args) -> None:
    pool = load_text(WSJ + ("brown",))
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(pool.n_sentences)
    n_held = pool.n_sentences // 100
    held = pool.subset(np.sort(order[:n_held]))
    train = pool.subset(np.sort(order[n_held:]))
    K, W, M = 45, len(pool.vocab), args.batch_size
    mean_len = train.n_tokens / train.n_sentences
    n_sentences = int(args.tokens / mean_len)
    n_batches = -(-n_sentences // M)
    print(f"pool: {train.n_sentences} sentences / {train.n_tokens} tokens (W={W}); stream: {n_batches} minibatches "
          f"of {M} sentences ~ {args.tokens:.3g} tokens; held-out {held.n_tokens} tokens; "
          f"RSS before training {peak_rss_mb():.0f} MB")
    deadline = time.perf_counter() + 60.0 * args.minutes

    def stream():
        srng = np.random.default_rng(args.seed + 1)
        for _ in range(n_batches):
            if time.perf_counter() > deadline:
                return
            idx = np.sort(srng.integers(0, train.n_sentences, size=M))
            yield gather_sentences(train.tokens, train.offsets, idx)

    counts = sh.GlobalCounts.exponential(np.random.default_rng(args.seed), K, W, int(n_sentences * mean_len))
    updater = sh.SentenceUpdater("scvi", 0.1, 0.1, n_sentences)
    t0 = time.perf_counter()
    res = minibatch.run(counts, updater, stream(), tau=1.0, kappa=0.5,
                 heldout=(held.tokens.astype(np.int32), held.offsets), heldout_every=max(1, n_batches // 20),
                 callback=lambda r: print(f"  batch {r['batch']:6d} tokens {r['tokens_seen']:>11,d} "
                                          f"train {r['seconds']:7.1f} s held-out "
                                          f"{r.get('heldout_log_likelihood_per_token', float('nan')):.4f}",
                                          flush=True))
    wall = time.perf_counter() - t0
    tps = res.tokens_seen / res.seconds
    out = {"tokens_target": args.tokens, "tokens_seen": res.tokens_seen, "batches": res.batches,
           "train_seconds": res.seconds, "wall_seconds": wall, "tokens_per_s": tps,
           "extrapolated_seconds_for_target": args.tokens / tps, "peak_rss_mb": peak_rss_mb(),
           "final_heldout": res.trace[-1]["heldout_log_likelihood_per_token"], "K": K, "W": W, "M": M,
           "trace": res.trace, "command": " ".join(sys.argv)}
    print(f"\nscvi K=45 M={M}: {res.tokens_seen:,d} tokens in {res.seconds:.1f} s training ({wall:.1f} s wall) = "
          f"{tps:,.0f} tokens/s; {args.tokens:.3g} tokens would take {args.tokens / tps / 60:.1f} min; "
          f"peak RSS {out['peak_rss_mb']:.0f} MB; held-out {out['final_heldout']:.4f}")
    save("stochastic_scale.json", out)


# ------------------------------------------------------------------- resume
def resume(args) -> None:
    data = CORPORA / "conll2000" / "train.txt"
    env = dict(os.environ, PYTHONPATH=str(ROOT.parent))
    base = [sys.executable, "-m", "induce", "tag", str(data), "--stream", "--infer", "scvi", "--states", "45",
            "--batch-size", "50", "--epochs", "3", "--seed", "3", "--buffer-sentences", "2000", "--quiet",
            "--heldout", "0.05", "--json", "-"]
    with tempfile.TemporaryDirectory() as tmp:
        full, part, ck = f"{tmp}/full.npz", f"{tmp}/resumed.npz", f"{tmp}/run.ckpt"
        t0 = time.perf_counter()
        subprocess.run(base + ["--save", full], check=True, env=env, capture_output=True)
        t_full = time.perf_counter() - t0
        proc = subprocess.Popen(base + ["--checkpoint", ck, "--checkpoint-every", "10"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        while not os.path.exists(ck) and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(args.kill_after)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate()
        rc = proc.returncode
        print(f"killed run: exit status {rc}; {err.decode().strip()}")
        from induce.checkpoint import load_checkpoint

        meta, _ = load_checkpoint(ck, "stochastic_hmm")
        done = meta["batches"]
        out = subprocess.run(base + ["--checkpoint", ck, "--resume", "--save", part], check=True, env=env,
                             capture_output=True)
        info = json.loads(out.stdout)
        a, b = HMMTagger.load(full), HMMTagger.load(part)
        dt = float(np.abs(a.transition_counts_ - b.transition_counts_).max())
        de = float(np.abs(a.emission_counts_ - b.emission_counts_).max())
    print(f"uninterrupted {t_full:.1f} s; interrupted after {done} of {info['minibatches']} minibatches, resumed; "
          f"max |difference| of counts: transitions {dt:.3g}, emissions {de:.3g}")
    save("stochastic_resume.json", {"exit_status_on_sigterm": rc, "batches_before_kill": done,
                                    "batches_total": info["minibatches"], "max_abs_diff_transitions": dt,
                                    "max_abs_diff_emissions": de, "command": " ".join(sys.argv)})


# ------------------------------------------------------------------- memory
def memory(args) -> None:
    """Peak RSS of ``induce tag --stream`` on the same text repeated 1x and Nx on disk (same work)."""
    pool = load_text(("brown",))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "x1.txt"
        with open(one, "w") as out:
            for i in range(pool.n_sentences):
                out.write(" ".join(pool.words(i)) + "\n")
        big = Path(tmp) / f"x{args.repeat}.txt"
        with open(big, "w") as out:
            text = one.read_text()
            for _ in range(args.repeat):
                out.write(text)
        env = dict(os.environ, PYTHONPATH=str(ROOT.parent))
        for path in (one, big):
            cmd = ["/usr/bin/time", "-v", sys.executable, "-m", "induce", "tag", str(path), "--format", "plain",
                   "--stream", "--infer", "scvi", "--states", "45", "--batch-size", "1000", "--max-batches",
                   str(args.batches), "--buffer-sentences", "20000", "--heldout", "0.01", "--quiet", "--json", "-"]
            out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
            rss = next(int(l.split(":")[1]) for l in out.stderr.splitlines() if "Maximum resident set size" in l)
            info = json.loads(out.stdout)
            rows.append({"file_tokens": info["tokens"] + info["heldout_tokens"], "file_mb": path.stat().st_size / 2**20,
                         "minibatches": info["minibatches"], "tokens_seen": info["tokens_seen"],
                         "peak_rss_mb": rss / 1024.0, "seconds": info["seconds"]})
            print(f"{path.name}: {rows[-1]['file_tokens']:,d} tokens on disk ({rows[-1]['file_mb']:.0f} MB), "
                  f"{info['minibatches']} minibatches, peak RSS {rss / 1024:.0f} MB, {info['seconds']:.1f} s")
    save("stochastic_memory.json", {"rows": rows, "command": " ".join(sys.argv)})


# ----------------------------------------------------------------- epochs
def epochs(args) -> None:
    import warnings

    from induce.corpus.formats import load_corpus
    from induce.eval.tagging import tagging_report

    corpus = load_corpus(CORPORA / "ptb-sample")
    gold = corpus.tags["pos"]
    K = len(corpus.tag_vocabs["pos"])

    def fit(infer, seed, **kw):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = HMMTagger(n_states=K, infer=infer, random_state=seed, **kw).fit(corpus)
        rep = tagging_report(m.labels_, gold, corpus.offsets)
        held = [r["heldout_log_likelihood_per_token"] for r in m.trace_ if "epoch" in r]
        return {"infer": infer, "seed": seed, **kw, "m1": rep["m1"], "vm": rep["vm"],
                "epochs": m.n_iter_, "converged": m.converged_, "heldout_by_epoch": held,
                "seconds": time.perf_counter() - t0}

    curves = []
    for infer in ("scvi", "svi"):
        for priors in ({"alpha": 0.1, "beta": 0.1}, {}):
            runs = [fit(infer, 0, n_epochs=e, tol=0, **priors) for e in (1, 3, 10, 30, 100)]
            held = runs[-1]["heldout_by_epoch"]
            curves.append({"infer": infer, **priors, "m1_by_epochs": {r["epochs"]: r["m1"] for r in runs},
                           "best_heldout_epoch": int(np.argmax(held)) + 1, "heldout_by_epoch": held})
            print(f"{infer:4s} {priors or 'default priors'}: M-1 after 1/3/10/30/100 epochs "
                  + " / ".join(f"{100 * r['m1']:.1f}" for r in runs)
                  + f"; best held-out LL at epoch {curves[-1]['best_heldout_epoch']}", flush=True)
    variants = {"before": dict(n_epochs=1, alpha=0.1, beta=0.1, heldout_fraction=0), "default": {},
                "cap 50": dict(n_epochs=50, tol=0)}
    rows = []
    for infer in ("scvi", "svi"):
        for name, kw in variants.items():
            runs = [fit(infer, s, **kw) for s in range(args.seeds)]
            rows.append({"infer": infer, "variant": name, "runs": runs})
            print(f"{infer:4s} {name:8s} M-1 {100 * statistics.fmean(r['m1'] for r in runs):.1f} "
                  f"V-M {100 * statistics.fmean(r['vm'] for r in runs):.1f} "
                  f"epochs {[r['epochs'] for r in runs]} {statistics.fmean(r['seconds'] for r in runs):.1f} s",
                  flush=True)
    save("stochastic_epochs.json", {"curves": curves, "rows": rows, "command": " ".join(sys.argv)})


SVI_STEPS = {"default (M 100, tau 1, kappa 0.5)": {}, "tau 64": {"tau": 64}, "tau 1024": {"tau": 1024},
             "kappa 0.7": {"kappa": 0.7}, "kappa 1": {"kappa": 1.0}, "M 300": {"batch_size": 300},
             "M 1000": {"batch_size": 1000}, "M 3000": {"batch_size": 3000},
             "100 epochs (tol 0)": {"n_epochs": 100, "tol": 0}, "beta 0.3": {"beta": 0.3},
             "batch vi, the same priors": {"infer": "vi", "alpha": 1.0, "beta": 0.003}}


def svi_steps(args) -> None:
    import warnings

    from induce.corpus.formats import load_corpus
    from induce.eval.tagging import tagging_report

    corpus = load_corpus(CORPORA / "brown", universal_map="en-brown")
    gold = corpus.tags["universal"]
    K = len(corpus.tag_vocabs["universal"])
    rows = []
    for name, kw in SVI_STEPS.items():
        runs = []
        for seed in range(args.seeds):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = HMMTagger(n_states=K, random_state=seed, **{"infer": "svi", **kw}).fit(corpus)
            rep = tagging_report(m.labels_, gold, corpus.offsets)
            runs.append({"seed": seed, "m1": rep["m1"], "vm": rep["vm"], "passes": m.n_iter_,
                         "largest_state": float(np.bincount(m.labels_).max() / len(m.labels_)),
                         "seconds": time.perf_counter() - t0})
        rows.append({"variant": name, **kw, "runs": runs})
        each = ", ".join(f"{100 * r['m1']:.1f}" for r in runs)
        print(f"{name:30s} M-1 {100 * statistics.fmean(r['m1'] for r in runs):.1f} ({each}) "
              f"V-M {100 * statistics.fmean(r['vm'] for r in runs):.1f} "
              f"passes {[r['passes'] for r in runs]}", flush=True)
    save("stochastic_svi_steps.json", {"corpus": "brown, 12 universal tags", "K": K, "rows": rows,
                                       "command": " ".join(sys.argv)})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("fig315")
    p.add_argument("--corpus", choices=sorted(FIG315_CORPORA), default="wsj")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--ref-iterations", type=int, default=50)
    p.add_argument("--tau", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("fig317")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--T", type=int, nargs="+", default=[2, 5, 10])
    p = sub.add_parser("scale")
    p.add_argument("--tokens", type=float, default=1e8)
    p.add_argument("--minutes", type=float, default=9.0)
    p.add_argument("--batch-size", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("resume")
    p.add_argument("--kill-after", type=float, default=0.5)
    p = sub.add_parser("memory")
    p.add_argument("--repeat", type=int, default=4)
    p.add_argument("--batches", type=int, default=50)
    p = sub.add_parser("epochs")
    p.add_argument("--seeds", type=int, default=3)
    p = sub.add_parser("svi-steps")
    p.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    {"fig315": fig315, "fig317": fig317, "scale": scale, "resume": resume, "memory": memory,
     "epochs": epochs, "svi-steps": svi_steps}[args.mode](args)


if __name__ == "__main__":
    main()
