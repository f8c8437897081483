"""HDP-HMM benchmarks (thesis 5.4.4 and 5.5): state recovery, q(C>0) approximation error, text prediction.

Usage::

    python benchmarks/hdp_bench.py recovery [--runs 10] [--cvi-iter 1000] [--beam-iter 3000]
        [--first-dataset 1010 --datasets theta_pos theta_neg --algorithms cvi scvi] [--n-init 3] [--learn]
    python benchmarks/hdp_bench.py runaway [--dataset 1000] [--iterations 300]
    python benchmarks/hdp_bench.py speed [--iterations 300]
    python benchmarks/hdp_bench.py move-cost [--first-dataset 1011 --datasets 2 --repeats 2]
    python benchmarks/hdp_bench.py qc-sim [--runs 5]
    python benchmarks/hdp_bench.py qc-alice [--K 10] [--iterations 100] [--runs 1] [--driver heuristic --eval-every 20]
    python benchmarks/hdp_bench.py text [--sentences 1000|5000|0] [--iterations 100] [--lowercase] [--models ...]
    python benchmarks/hdp_bench.py text-grid [--sentences 1000|5000|0] [--alphas ...] [--betas ...] [--runs 1]
    python benchmarks/hdp_bench.py stochastic [--sentences N] [--epochs 20] [--batch-size 100] [--fix-hyper]
    python benchmarks/hdp_bench.py tagging [--truncations 45 100] [--iterations 200]

``recovery`` (thesis Figure 5.7): 100 sequences of length 100 from
``theta_pos`` / ``theta_neg`` with the shared ``phi`` (eq. 5.69-5.70; K=10)
and from the regular grammar of Beal et al. (2002) (K=12); gamma = sigma =
beta = 1 fixed (``--learn``: gamma and sigma learned as by default, beta = 1);
a fresh dataset per run; effective states (99% of tokens) vs iterations and
wall time for cvi, beam and scvi (``--cvi-iter`` epochs of ``--batch-size``).
``runaway`` (docs/experiments/hdp_defaults.md): table counts and the sigma evidence (eq. 5.10) of fits with sigma
learned from pass 1, after the default burn-in and fixed, on one theta_pos dataset.
``speed``: seconds per cvi iteration and per beam sweep on the same data, same run.
``move-cost`` (docs/experiments/hdp_defaults.md, "Cost"): seconds per fit of the defaults (learned gamma and
sigma, beta = 1, every pass: cvi 1,000 passes, scvi 300 epochs) with the split-merge moves, without them
(``merge_moves=False``) and, for scvi, with instant merges in place of the memoized moves
(``scvi_memory=False``), on theta_pos, theta_neg and grammar datasets; the variants alternate in the orders
ABC, CBA, ... (``--repeats``) in one process, so that drift in the machine's load falls on all of them.
``qc-sim`` (Figure 5.2): mean absolute error (eq. 5.68) of the approximate
q(C>0) against the exact one on random chains of total length I*T.
``qc-alice`` (Figures 5.4-5.5): the same error over cvi iterations on the
first 10,000 characters of Alice (26 letters + space, 100 x 100);
gamma=5, sigma=3, beta=1/27; heat maps of the exact q(C>0) after the first
and last iteration (PNG).
``text`` (Figure 5.9): HDP-HMM cvi (hyperparameters fixed, learned, learned
after a burn-in, with the symmetric or the asymmetric emission prior) vs HMM
cvi2 at K=45 on the first N WSJ sentences (ptb-sample, then CoNLL-2000; 0 =
all; ``--subset random``: N drawn at random from all of it), log-likelihood
per token on a 90:10 split (``--subset shared-test``: N training sentences
drawn from all WSJ's 90%, every size scored on its 10%).
``text-grid``: the same split, HMM cvi2 over a grid of fixed (alpha, beta):
how much the finite HMM's hyperparameters alone move the test log-likelihood
at each size (the best point is chosen on the test set itself, so it is an
upper bound on what hyperparameter learning could gain, not a tuned result).
``stochastic`` (Figure 5.10): HMM scvi vs HDP-HMM scvi (and svi, J&W) on the
same split with the same minibatches and step schedule.
``tagging``: unsupervised tagging metrics (cross-validated M-1, 1-1, VI, V-M)
and the effective number of states of HDP cvi on the same 1,000 sentences.
Every mode prints a table and writes JSON (and PNGs) under ``benchmarks/results/``; ``recovery`` writes its
per-iteration trace under ``benchmarks/out/`` (``benchmarks/recovery_summary.py`` condenses it into results/).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
from pathlib import Path

import numpy as np

from induce.algorithms.hdp_cvi import OBJECTIVE
from induce.corpus.corpus import Corpus
from induce.corpus.sentence import Sentence
from induce.infer import hdp
from induce.infer.hdp_passes import hdp_cvi_pass
from induce.infer.hmm_passes import init_chain_posteriors, totals_from_local
from induce.kernels.hdp_qc import EXACT, HEURISTIC, MEANFIELD, SAMPLING, accumulate_qc
from induce.kernels.hmm import forward_backward
from induce.taggers import HDPHMMTagger, HMMTagger
from induce.taggers.hdp_hmm import MAX_ITER
from induce.taggers.synthetic import sample_beal_grammar, sample_zhang

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
TRACES = ROOT / "out"  # large traces, ignored by git; benchmarks/recovery_summary.py condenses them into results/
CORPORA = Path(os.environ.get("INDUCE_CORPORA", ROOT.parent.parent / "shared" / "corpora"))
NO_SAMPLES = np.zeros((0, 1, 1))  # hdp_cvi_pass: no sampled count tables
APPROX = [("meanfield", MEANFIELD, 1), ("sampling-100", SAMPLING, 100), ("sampling-1000", SAMPLING, 1000),
          ("sampling-10000", SAMPLING, 10000), ("heuristic", HEURISTIC, 1)]


def _machine() -> str:
    return f"{platform.node()} {platform.processor() or platform.machine()} {os.cpu_count()} cpus (shared, load ~3-5)"


def _save(name: str, payload: dict, directory: Path = RESULTS) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    payload = {"machine": _machine(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())} | payload
    (directory / name).write_text(json.dumps(payload, separators=(",", ":"), default=float))


# ------------------------------------------------------------------ recovery
#: the recovery data: name -> (sampler of the dataset with a seed, truncation K, true number of states)
RECOVERY_DATA = {"theta_pos": (lambda s: sample_zhang("pos", seed=s), 10, 4),
                 "theta_neg": (lambda s: sample_zhang("neg", seed=s), 10, 4),
                 "grammar": (lambda s: sample_beal_grammar(seed=s), 12, 7)}


def recovery(args) -> None:
    """Fresh datasets ``first_dataset .. first_dataset + runs - 1`` (seeds of the samplers), ``random_state`` = offset."""
    datasets = {k: v for k, v in RECOVERY_DATA.items() if k in args.datasets}
    iters = {"cvi": args.cvi_iter, "beam": args.beam_iter, "scvi": args.cvi_iter}
    # --learn: gamma and sigma learned with the default burn-in (beta = 1 as the thesis); else all fixed at 1
    hyper = dict(beta=1) if args.learn else dict(gamma=1, sigma=1, beta=1, fix_hyper=True)
    out = {}
    for name, (make, K, truth) in datasets.items():
        out[name] = {}
        for infer in args.algorithms:
            runs = []
            for run in range(args.runs):
                data_seed = args.first_dataset + run
                corpus = make(data_seed)
                t0 = time.perf_counter()
                model = HDPHMMTagger(truncation=K, infer=infer, n_iter=iters[infer], **hyper, order=args.order,
                                     tol=None if args.stop else 0,
                                     random_state=data_seed - 1000, batch_size=args.batch_size,
                                     n_init=args.n_init if infer == "cvi" else 1, merge_moves=not args.no_moves,
                                     scvi_memory=args.scvi_memory or None).fit(corpus)
                fit_seconds = time.perf_counter() - t0
                eff = [r["effective_states"] for r in model.trace_]  # n_init > 1: the start kept
                secs = np.cumsum([r["seconds"] for r in model.trace_]).tolist()
                runs.append({"dataset": data_seed, "effective_states": eff, "seconds": secs,
                             "bound": getattr(model, "bound_", None),
                             "moves": [[r["iteration"], r["splits"], r["merges"]] for r in model.trace_
                                       if "splits" in r],
                             "fit_seconds": fit_seconds, "init_objectives": model.init_objectives_,
                             "passes": model.n_iter_, "converged": model.converged_,
                             "gamma": model.gamma_, "sigma": model.sigma_, "hyper_burn_in": model.hyper_burn_in_})
                print(f"{name:9s} {infer:4s} dataset {data_seed}: final {eff[-1]:2d} states, settles at iteration "
                      f"{_settled(eff)} ({secs[_settled(eff) - 1]:.1f} s), {fit_seconds:6.1f} s", flush=True)
            out[name][infer] = runs
    suffix = "" if args.first_dataset == 1000 and len(datasets) == 3 and len(args.algorithms) == 2 \
        else f"_{'-'.join(datasets)}_{'-'.join(args.algorithms)}_from{args.first_dataset}"
    if args.cvi_iter != 1000 and "cvi" in args.algorithms:
        suffix += f"_cvi{args.cvi_iter}it"
    if args.order != "sequential":
        suffix += f"_{args.order}"
    if args.n_init > 1 and "cvi" in args.algorithms:
        suffix += f"_init{args.n_init}"
    if args.learn:
        suffix += "_learned"
    if args.no_moves:
        suffix += "_nomoves"
    if args.stop:
        suffix += "_stop"
    if args.scvi_memory and "scvi" in args.algorithms:
        suffix += "_memory"
    if "scvi" in args.algorithms:
        suffix += f"_batch{args.batch_size}"
    suffix += args.suffix
    _save(f"hdp_recovery{suffix}.json", {"args": vars(args), "results": out}, TRACES)
    print("\ndataset    algo  iters  final states (runs)          exact-truth  mean   s/run  "
          "median settle: iteration / seconds   exact-truth at iteration 300 / 1000 / 2000 / 3000 / 5000")
    for name, (_, K, truth) in datasets.items():
        for infer, runs in out[name].items():
            finals = [r["effective_states"][-1] for r in runs]
            settle = [_settled(r["effective_states"]) for r in runs]
            settle_s = [r["seconds"][i - 1] for r, i in zip(runs, settle)]
            n_iter = int(np.median([len(r["effective_states"]) for r in runs]))  # --stop: the median passes run
            # a run the stop ended keeps its last count
            at = [f"{sum(r['effective_states'][min(i, len(r['effective_states'])) - 1] == truth for r in runs)}"
                  if i <= max(len(r["effective_states"]) for r in runs) else "-"
                  for i in (300, 1000, 2000, 3000, 5000)]
            print(f"{name:9s}  {infer:4s}  {n_iter:5d}  {str(finals):28s} "
                  f"{sum(f == truth for f in finals):2d}/{len(runs)}       {np.mean(finals):4.1f}  "
                  f"{np.mean([r['fit_seconds'] for r in runs]):6.1f}  {np.median(settle):6.0f} / "
                  f"{np.median(settle_s):6.1f}   {' / '.join(at)}")
    if set(args.algorithms) == {"cvi", "beam"}:
        _plot_recovery(out, datasets, f"hdp_recovery{suffix}.png")


def _settled(eff) -> int:
    """Iteration after which the effective number of states no longer changes."""
    changes = [i for i in range(1, len(eff)) if eff[i] != eff[i - 1]]
    return changes[-1] + 1 if changes else 1


def _plot_recovery(out, datasets, filename: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, by in zip(axes, ("iteration", "seconds")):
        for name in datasets:
            for infer, style in (("cvi", "-"), ("beam", "--")):
                runs = out[name][infer]
                eff = np.mean([r["effective_states"] for r in runs], axis=0)
                x = np.arange(1, len(eff) + 1) if by == "iteration" else np.mean([r["seconds"] for r in runs], axis=0)
                ax.plot(x, eff, style, label=f"{name} {infer}")
        ax.set_xscale("log")
        ax.set_xlabel(by)
        ax.set_ylabel("effective states (99% of tokens)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / filename, dpi=110)


def runaway(args) -> None:
    """docs/experiments/hdp_defaults.md: why learned sigma runs away on the recovery data (theta_pos, K = 10, beta = 1).

    Fits learned from pass 1 (the old default, ``hyper_burn_in=0``; first-order and sampled tables),
    with the default adaptive burn-in, and with everything fixed at 1.  For each final ``q(z)``: the
    expected table count of eq. 5.35 against the mean exact count over ``C ~ Poisson(E[C])`` draws (the
    most variable counts with that mean) and the customers; and eq. 5.10 (the sigma evidence) at the
    expected counts for sigma = 1, the learned sigma and its maximiser on a grid.
    """
    corpus = sample_zhang("pos", seed=args.dataset)
    fits = {"learned from pass 1": dict(hyper_burn_in=0),
            "learned from pass 1, sampled tables": dict(hyper_burn_in=0, table_estimate="sampled"),
            "learned, default burn-in": {}, "fixed gamma = sigma = 1": dict(fix_hyper=True)}
    rng = np.random.default_rng(0)
    grid = np.exp(np.linspace(np.log(0.01), np.log(1e5), 400))
    rows = []
    for label, kw in fits.items():
        m = HDPHMMTagger(truncation=10, n_iter=args.iterations, tol=0, beta=1, random_state=args.dataset - 1000,
                         **kw).fit(corpus)
        C, prior, sigma = m.transition_counts_, m.state_prior_, m.sigma_
        first = hdp.expected_tables(C, m.qc_positive_, prior).sum()
        poisson = hdp.sampled_tables(rng.poisson(C, size=(20, *C.shape)).astype(float), prior).sum()
        pi = prior / sigma
        ev = {s: hdp.transition_log_evidence(C, pi, s) for s in (1.0, sigma)}
        best = grid[np.argmax([hdp.transition_log_evidence(C, pi, s) for s in grid])]
        rows.append({"fit": label, "effective_states": m.effective_states_, "gamma": m.gamma_, "sigma": sigma,
                     "held_passes": m.hyper_burn_in_, "objective": m.trace_[-1][OBJECTIVE],
                     "customers": float(C.sum()), "tables_first_order": float(first),
                     "tables_poisson": float(poisson), "evidence_sigma1": ev[1.0], "evidence_learned": ev[sigma],
                     "evidence_argmax_sigma": float(best)})
        print(rows[-1], flush=True)
    _save(f"hdp_runaway_{args.dataset}_{args.iterations}it.json", {"args": vars(args), "rows": rows})


def speed(args) -> None:
    """Seconds per cvi iteration and per beam sweep on the recovery data, same run (warm kernels)."""
    rows = []
    for name, corpus, K in (("theta_pos", sample_zhang("pos", seed=1000), 10),
                            ("grammar", sample_beal_grammar(seed=1000), 12)):
        for infer in ("cvi", "beam"):
            HDPHMMTagger(truncation=K, infer=infer, n_iter=2, gamma=1, sigma=1, beta=1, fix_hyper=True).fit(corpus)
            model = HDPHMMTagger(truncation=K, infer=infer, n_iter=args.iterations, tol=0, gamma=1, sigma=1, beta=1,
                                 fix_hyper=True).fit(corpus)
            sec = float(np.median([r["seconds"] for r in model.trace_]))
            rows.append({"data": name, "infer": infer, "seconds_per_iteration": sec})
            print(f"{name:9s} {infer:4s} {1000 * sec:7.2f} ms / iteration", flush=True)
    _save("hdp_speed.json", {"args": vars(args), "rows": rows})


MOVE_VARIANTS = {"cvi": {"moves": {}, "no moves": dict(merge_moves=False)},
                 "scvi": {"memoized moves": {}, "instant merges": dict(scvi_memory=False),
                          "no moves": dict(merge_moves=False)}}


def move_cost(args) -> None:
    """Seconds per fit with and without the split-merge moves, interleaved (see the module docstring)."""
    rows = []
    for infer, variants in MOVE_VARIANTS.items():
        names = list(variants)
        seconds = {v: [] for v in names}
        for make, K, _ in RECOVERY_DATA.values():
            for seed in range(args.first_dataset, args.first_dataset + args.datasets):
                corpus = make(seed)
                for rep in range(args.repeats):
                    for v in (names if rep % 2 == 0 else names[::-1]):
                        t0 = time.perf_counter()
                        HDPHMMTagger(truncation=K, infer=infer, n_iter=MAX_ITER[infer], tol=0, beta=1,
                                     random_state=seed - 1000, **variants[v]).fit(corpus)
                        seconds[v].append(time.perf_counter() - t0)
        base = float(np.mean(seconds["no moves"]))
        for v in names:
            rows.append({"infer": infer, "variant": v, "fits": len(seconds[v]), "seconds": float(np.mean(seconds[v])),
                         "against_no_moves": float(np.mean(seconds[v])) / base})
            print(f"{infer:4s} {v:15s} {rows[-1]['seconds']:7.2f} s a fit ({rows[-1]['fits']} fits)  "
                  f"{rows[-1]['against_no_moves']:.2f}x no moves", flush=True)
    _save("hdp_move_cost.json", {"args": vars(args), "machine": _machine(), "rows": rows})


# ------------------------------------------------------------------ q(C>0)
def _chain_qc(A, E, method, n_samples, logq0, logq0_row):
    T, K = E.shape
    fwd, bwd, scale, xi = np.empty((T, K)), np.empty((T, K)), np.empty(T), np.empty((K, K))
    logZ = forward_backward(A, E, T, fwd, bwd, scale, xi)
    accumulate_qc(method, A, E, T, fwd, bwd, scale, logZ, n_samples, logq0, logq0_row)


def _error(exact, approx):
    """Eq. 5.68 over j, k = 1..K (the start row is exact for every method)."""
    return float(np.abs(hdp.q_positive(exact[1:]) - hdp.q_positive(approx[1:])).mean())


def qc_sim(args) -> None:
    """Random chains (thesis 5.4.4 simulation): transition rows ~ U[0,1], normalised.

    ``--potentials flat``: no emission potentials, a homogeneous chain with
    random uniform conditionals; ``random``: emission potentials ~ U[0,1] per
    position as well, which makes the conditionals ``q(z_t | z_{t-1})`` differ
    with ``t`` (the thesis draws every conditional independently).
    """
    lengths = [10**e for e in range(args.max_exp + 1)]
    res = {}
    for K in (10, 50):
        res[K] = {}
        for IT in lengths:
            if K == 50 and IT > args.max_exact_k50:
                continue
            I, T = (1, IT) if IT <= 100 else (IT // 100, 100)
            errs = {n: [] for n, _, _ in APPROX}
            t_exact = 0.0
            for run in range(args.runs):
                rng = np.random.default_rng(run)
                np.random.seed(run)
                logs = {n: (np.zeros((K + 1, K)), np.zeros(K + 1)) for n, _, _ in APPROX + [("exact", EXACT, 1)]}
                for _ in range(I):
                    A = rng.random((K + 1, K))
                    A /= A.sum(axis=1, keepdims=True)
                    E = rng.random((T, K)) if args.potentials == "random" else np.ones((T, K))
                    t0 = time.perf_counter()
                    _chain_qc(A, E, EXACT, 1, *logs["exact"])
                    t_exact += time.perf_counter() - t0
                    for name, code, S in APPROX:
                        _chain_qc(A, E, code, S, *logs[name])
                for name, _, _ in APPROX:
                    errs[name].append(_error(logs["exact"][0], logs[name][0]))
            res[K][IT] = {n: (float(np.mean(v)), float(np.std(v))) for n, v in errs.items()}
            print(f"K={K:2d} I*T={IT:>7d}  " + "  ".join(f"{n}={m:.2e}" for n, (m, _) in res[K][IT].items())
                  + f"  (exact {t_exact / args.runs:.1f} s)", flush=True)
    _save(f"hdp_qc_sim_{args.potentials}.json", {"args": vars(args), "results": res})


def alice_corpus(n_chars: int = 10000, length: int = 100) -> Corpus:
    """Thesis 5.4.4: keep the 26 letters and the space, first ``n_chars`` characters as sequences of ``length``."""
    text = (CORPORA / "extras" / "alice" / "carroll-alice.txt").read_text(encoding="utf-8").lower()
    text = re.sub(r"\s+", " ", re.sub(r"[^a-z\s]", "", text)).strip()[:n_chars]
    seqs = [list(text[i:i + length].replace(" ", "_")) for i in range(0, len(text), length)]
    return Corpus.from_sentences([Sentence(s, {}) for s in seqs])


def qc_alice(args) -> None:
    """cvi on Alice driven by the exact (or heuristic) q(C>0); every approximation evaluated on the same posteriors."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    corpus = alice_corpus()
    tokens, offsets = corpus.tokens, corpus.offsets.astype(np.int64)
    entropy = np.zeros(len(offsets) - 1)  # hdp_cvi_pass: H(q(z^i)) per sentence (not used here)
    W = len(corpus.vocab)
    K = args.K
    curves = {n: [] for n, _, _ in APPROX}
    maps = []
    for run in range(args.runs):
        I, N = corpus.n_sentences, corpus.n_tokens
        sent_trans, gamma = np.zeros((I, K + 1, K)), np.zeros((N, K))
        init_chain_posteriors(tokens, offsets, K, run, sent_trans, gamma)
        trans, emit = np.zeros((K + 1, K)), np.zeros((W, K))
        glob = hdp.HDPGlobals(K, 5.0, 3.0)
        order = np.arange(I, dtype=np.int64)
        beta_w = np.full(W, 1.0 / 27)  # Dir(1/27) over the 27 symbols: pseudo-counts 1/27, total 1
        errs = {n: [] for n, _, _ in APPROX}
        driver = EXACT if args.driver == "exact" else HEURISTIC
        for it in range(args.iterations):
            t0 = time.perf_counter()
            totals_from_local(tokens, offsets, sent_trans, gamma, W, trans, emit)
            prior = glob.prior()
            last = it == args.iterations - 1
            evaluate = driver == EXACT or it % args.eval_every == 0 or last
            # the approximations see the same sequence of q(z^i) (q(C>0) does not change counts within a pass)
            for name, code, S in APPROX:
                if not evaluate or (code == SAMPLING and it % args.sample_every and not last):
                    errs[name].append(None)
                    continue
                lq, lr = np.zeros((K + 1, K)), np.zeros(K + 1)
                hdp_cvi_pass(trans.copy(), emit.copy(), sent_trans.copy(), gamma.copy(), tokens, offsets, order,
                             prior, glob.sigma, beta_w, 1.0, code, S, 1000 * run + it, lq, lr, NO_SAMPLES, entropy)
                errs[name].append(lq)
            if evaluate and driver != EXACT:
                ex, ex_row = np.zeros((K + 1, K)), np.zeros(K + 1)
                hdp_cvi_pass(trans.copy(), emit.copy(), sent_trans.copy(), gamma.copy(), tokens, offsets, order,
                             prior, glob.sigma, beta_w, 1.0, EXACT, 1, it, ex, ex_row, NO_SAMPLES, entropy)
            lq, lr = np.zeros((K + 1, K)), np.zeros(K + 1)
            hdp_cvi_pass(trans, emit, sent_trans, gamma, tokens, offsets, order, prior, glob.sigma, beta_w, 1.0,
                         driver, 1, it, lq, lr, NO_SAMPLES, entropy)
            if driver == EXACT:
                ex = lq
            for name in errs:
                errs[name][-1] = np.nan if errs[name][-1] is None else _error(ex, errs[name][-1])
            glob.update(trans, emit.sum(axis=0), lq, lr, learn_gamma=False, learn_sigma=False)
            if run == 0 and it in (0, args.iterations - 1):
                maps.append(hdp.q_positive(ex[1:]))
            print(f"K={K} run {run} it {it + 1:3d} ({time.perf_counter() - t0:5.1f} s) "
                  + " ".join(f"{n}={errs[n][-1]:.1e}" for n in errs if not np.isnan(errs[n][-1]))
                  + f"  eff={hdp.effective_states(emit.sum(axis=0))}", flush=True)
        for n in curves:
            curves[n].append(errs[n])
    summary = {n: {"mean": float(np.nanmean(v)), "max": float(np.nanmax(v)),
                   "per_iteration": np.mean(v, axis=0).tolist()}
               for n, v in curves.items()}
    _save(f"hdp_qc_alice_K{K}.json", {"args": vars(args), "results": summary})
    print(f"\nAlice K={K}, {args.iterations} iterations x {args.runs} runs: mean / max error (eq. 5.68)")
    for n, s in summary.items():
        print(f"  {n:15s} {s['mean']:.2e} / {s['max']:.2e}")
    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    for ax, m, title in zip(axes, maps, ("after the first iteration", "after the last iteration")):
        im = ax.imshow(m, vmin=0, vmax=1, cmap="Greys")
        ax.set_title(f"q(C>0), K={K}, {title}", fontsize=9)
        ax.set_xlabel("k")
        ax.set_ylabel("j")
    fig.colorbar(im, ax=axes, shrink=0.8)
    fig.savefig(RESULTS / f"hdp_qc_alice_K{K}.png", dpi=110)


# ------------------------------------------------------------------ text
WSJ = ("ptb-sample", "conll2000/train.txt", "conll2000/test.txt")


def wsj_split(n_sentences: int, lowercase: bool = False, unk_threshold: int = 0,
              subset: str = "first") -> tuple[Corpus, Corpus]:
    """``n_sentences`` of WSJ (ptb-sample, then CoNLL-2000 train and test; 0 = all), random 90:10 split (seed 0).

    ``subset``: ``"first"`` takes the first ``n_sentences`` (a few contiguous
    files); ``"random"`` draws them at random (seed 0) from all of WSJ, so a
    small set spans every file's topics and vocabulary; ``"shared-test"``
    splits all of WSJ 90:10 and trains on ``n_sentences`` drawn at random from
    its 90% (so every size is scored on the same test set, the all-WSJ one).

    ``lowercase`` as in ``benchmarks/stochastic_bench.py`` (the thesis's WSJ text experiments).
    ``unk_threshold`` N > 0: the closed-vocabulary convention -- training words seen fewer than N times and
    test words not kept in training become ``<unk>``, a word every model learns like any other.
    """
    import itertools

    from induce.corpus.formats import load_corpus
    from induce.corpus.transforms import count_words, frequent_words, replace_unknown

    sents = list(itertools.chain.from_iterable(load_corpus(CORPORA / p).sentences for p in WSJ))
    if n_sentences and subset == "random":
        pick = np.sort(np.random.default_rng(0).choice(len(sents), size=n_sentences, replace=False))
        sents = [sents[i] for i in pick]
    elif n_sentences and subset == "first":
        sents = sents[:n_sentences]
    if lowercase:
        sents = [Sentence([w.lower() for w in s.words]) for s in sents]
    idx = np.random.default_rng(0).permutation(len(sents))
    cut = int(0.9 * len(sents))
    train, test = [sents[i] for i in idx[:cut]], [sents[i] for i in idx[cut:]]
    if n_sentences and subset == "shared-test":
        train = train[:n_sentences]  # the permutation is random, so this is a random draw from the 90%
    if unk_threshold > 0:
        known = frequent_words(count_words(train), unk_threshold)
        train, test = ([replace_unknown(s, known) for s in part] for part in (train, test))
    return Corpus.from_sentences(train), Corpus.from_sentences(test)


def _size_tag(n_sentences: int) -> str:
    """``1k``, ``5k``, ... or ``all``: the size part of the JSON names of the WSJ modes."""
    return f"{n_sentences // 1000}k" if n_sentences else "all"


def _text_models(iterations: int, seed: int, which: list[str] | None, burn_in: int, beta_start: float = 10.0):
    """``(key, label, constructor)`` of the models named in ``which`` (``None``: every model)."""
    hdp_kw = dict(truncation=45, infer="cvi", n_iter=iterations, tol=0, gamma=10, sigma=5, beta=0.1,
                  random_state=seed)
    asym_w = dict(emission_prior="asymmetric", emission_concentration="symmetric")  # beta from W x 0.1 (hdp.md)

    def asym_burn_from(start: float):
        """hdp-asym-burn with beta of Dir(beta tau) from ``start`` (hdp.md, "Starting emission concentration")."""
        return lambda: HDPHMMTagger(emission_prior="asymmetric", emission_concentration=start, new_word_mass=1.0,
                                    hyper_burn_in=burn_in, **hdp_kw)

    models = {
        "hmm-cvi2": ("HMM cvi2 (alpha=beta=0.1)",
                     lambda: HMMTagger(n_states=45, infer="cvi2", n_iter=iterations, alpha=0.1, beta=0.1,
                                       random_state=seed)),
        "hdp-fixed": ("HDP-HMM cvi (gamma=10, sigma=5, beta=0.1 fixed)",
                      lambda: HDPHMMTagger(fix_hyper=True, **hdp_kw)),
        "hdp-learned": ("HDP-HMM cvi (gamma, sigma learned, default burn-in; Dir(0.1))",
                        lambda: HDPHMMTagger(**hdp_kw)),
        "hdp-learned-nomoves": ("HDP-HMM cvi (as hdp-learned, without the split-merge moves)",
                                lambda: HDPHMMTagger(merge_moves=False, **hdp_kw)),
        "hdp-scvi": ("HDP-HMM scvi defaults (gamma, sigma learned; memoized split-merge rounds; Dir(0.1))",
                     lambda: HDPHMMTagger(**(hdp_kw | dict(infer="scvi")))),
        "hdp-scvi-instant": ("HDP-HMM scvi (as hdp-scvi, with the instant merges of the previous default)",
                             lambda: HDPHMMTagger(scvi_memory=False, **(hdp_kw | dict(infer="scvi")))),
        "hdp-scvi-nomoves": ("HDP-HMM scvi (as hdp-scvi, without moves)",
                             lambda: HDPHMMTagger(merge_moves=False, **(hdp_kw | dict(infer="scvi")))),
        "hdp-learned-pass1": ("HDP-HMM cvi (gamma, sigma learned from pass 1; Dir(0.1))",
                              lambda: HDPHMMTagger(hyper_burn_in=0, **hdp_kw)),
        "hdp-asym": ("HDP-HMM cvi (gamma, sigma, beta, tau learned; Dir(beta tau))",
                     lambda: HDPHMMTagger(**asym_w, hyper_burn_in=0, **hdp_kw)),
        "hdp-learned-burn": (f"HDP-HMM cvi (gamma, sigma learned after {burn_in} passes; Dir(0.1))",
                             lambda: HDPHMMTagger(hyper_burn_in=burn_in, **hdp_kw)),
        "hdp-asym-burn": (f"HDP-HMM cvi (gamma, sigma, beta, tau learned after {burn_in} passes; Dir(beta tau))",
                          lambda: HDPHMMTagger(**asym_w, new_word_mass=1.0, hyper_burn_in=burn_in, **hdp_kw)),
        "hdp-asym-burn-b100": (f"HDP-HMM cvi (as hdp-asym-burn, beta of Dir(beta tau) starting at 100 as in thesis "
                               f"5.5.3, not W x 0.1)",
                               asym_burn_from(100.0)),
        "hdp-asym-burn-start": (f"HDP-HMM cvi (as hdp-asym-burn, beta of Dir(beta tau) starting at {beta_start:g})",
                                asym_burn_from(beta_start)),
        "hdp-asym-burn-newmass": (f"HDP-HMM cvi (gamma, sigma, beta, tau and the new-word mass learned after "
                                  f"{burn_in} passes; Dir(beta tau))",
                                  lambda: HDPHMMTagger(**asym_w, new_word_mass="learned", hyper_burn_in=burn_in,
                                                       **hdp_kw)),
        "hdp-asym-burn-newmass-sampled": (f"HDP-HMM cvi (as hdp-asym-burn-newmass, {burn_in} passes burn-in; "
                                          f"tables from 10 sampled count draws per pass)",
                                          lambda: HDPHMMTagger(**asym_w, new_word_mass="learned",
                                                               hyper_burn_in=burn_in, table_estimate="sampled",
                                                               **hdp_kw)),
    }
    return [(k, *models[k]) for k in (models if which is None else which)]


def _unseen_scores(model, test: Corpus) -> dict:
    """How a model scores the test words unseen in training (all mapped to its last emission row).

    ``unseen_share``: their share of the test tokens; ``unseen_emission``: the
    usage-weighted mean over states of that row, ``sum_k p(k) B[unseen, k]``
    (the scored unseen-word mass).  Two scores that do not depend on the
    unknown-word convention:

    * ``test_ll_seen_per_token``: log p(seen test tokens) per seen token with
      the unseen positions marginalised (their emission factor set to 1);
      ``test_ll_seen_renorm_per_token`` the same with every state's emissions
      renormalised over the seen words (what is left when no mass is kept
      for unseen words at all);
    * ``test_ll_per_type_unseen``: log-likelihood per token when each unseen
      word gets one word's share.  The row of ``Dir(beta tau)`` is the mass of
      *all* unseen words together (``beta tau_unseen``), so it is divided by
      the number ``U`` of distinct unseen test words (the base measure uniform
      over them; this reads ``U`` off the test set, and any base measure over
      more words would score lower); the rows of ``Dir(beta)``
      and of the finite HMM are already one word's share, ``beta / (C_k. + W beta)``.
    """
    n = test.n_tokens
    ids = model._encode(test)[0]
    unseen_mask = ids == len(model.vocab_)
    unseen = int(np.count_nonzero(unseen_mask))
    types = len(np.unique(test.tokens[unseen_mask]))
    B = model.emissions_
    usage = model.emission_counts_.sum(axis=0)
    out = {"unseen_share": unseen / n, "unseen_types": types,
           "unseen_emission": float(B[-1] @ usage / usage.sum())}
    changed = B.copy()
    changed[-1] = 1.0
    model.emissions_ = changed
    out["test_ll_seen_per_token"] = model.score(test) * n / max(1, n - unseen)
    changed[:-1] = B[:-1] / B[:-1].sum(axis=0, keepdims=True)
    out["test_ll_seen_renorm_per_token"] = model.score(test) * n / max(1, n - unseen)
    changed[:-1] = B[:-1]
    class_mass = getattr(model, "emission_prior", "symmetric") == "asymmetric"
    changed[-1] = B[-1] / max(1, types) if class_mass else B[-1]
    out["test_ll_per_type_unseen"] = model.score(test)
    model.emissions_ = B
    return out


def text(args) -> None:
    """HDP-HMM cvi vs HMM cvi2 at K = 45 (thesis Figure 5.9) on WSJ subsets; test log-likelihood per token."""
    train, test = wsj_split(args.sentences, args.lowercase, args.unk_threshold, args.subset)
    print(f"{args.sentences or 'all'} sentences: {train.n_sentences} train / {test.n_sentences} test, "
          f"{train.n_tokens} / {test.n_tokens} tokens", flush=True)
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.runs):
        for key, label, make in _text_models(args.iterations, seed, args.models, args.burn_in, args.beta_start):
            model = make()
            t0 = time.perf_counter()
            model.fit(train)
            secs = time.perf_counter() - t0
            row = {"model": label, "key": key, "seed": seed, "iterations": args.iterations,
                   "test_ll_per_token": model.score(test), "seconds": secs} | _unseen_scores(model, test)
            if isinstance(model, HDPHMMTagger):
                row |= {"effective_states": model.effective_states_, "gamma": model.gamma_, "sigma": model.sigma_,
                        "emission_concentration": model.emission_concentration_,
                        "emission_concentration_start": model.emission_concentration,
                        "train_objective": model.trace_[-1].get(OBJECTIVE),  # (cvi; scvi: None)
                        "new_word_mass": model.emission_new_mass_,
                        "sigma_trace": [r["sigma"] for r in model.trace_]}
            rows.append(row)
            print({k: v for k, v in row.items() if k != "sigma_trace"}, flush=True)
    seed_tag = f"_seed{args.first_seed}" if args.first_seed else ""
    tag = _size_tag(args.sentences) + f"_{args.iterations}it" + seed_tag + args.suffix
    _save(f"hdp_text_wsj{tag}.json", {"args": vars(args), "train_tokens": train.n_tokens,
                                      "test_tokens": test.n_tokens, "rows": rows})
    print("\nmodel                                                        test log-lik/token (mean over seeds)")
    for label in dict.fromkeys(r["model"] for r in rows):
        v = [r["test_ll_per_token"] for r in rows if r["model"] == label]
        seen = [r["test_ll_seen_per_token"] for r in rows if r["model"] == label]
        per_type = [r["test_ll_per_type_unseen"] for r in rows if r["model"] == label]
        renorm = [r["test_ll_seen_renorm_per_token"] for r in rows if r["model"] == label]
        print(f"{label:60s} {np.mean(v):.4f} +- {np.std(v):.4f}   seen tokens only: {np.mean(seen):.4f} "
              f"(renormalised {np.mean(renorm):.4f})   unseen words one word's share: {np.mean(per_type):.4f}")


def text_grid(args) -> None:
    """HMM cvi2 at K = 45 over fixed ``alpha x beta`` on one WSJ size: the room hyperparameters leave (oracle)."""
    train, test = wsj_split(args.sentences, args.lowercase, args.unk_threshold, args.subset)
    print(f"{args.sentences or 'all'} sentences: {train.n_sentences} train / {test.n_sentences} test", flush=True)
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.runs):
        for alpha in args.alphas:
            for beta in args.betas:
                t0 = time.perf_counter()
                model = HMMTagger(n_states=45, infer="cvi2", n_iter=args.iterations, alpha=alpha, beta=beta,
                                  random_state=seed).fit(train)
                rows.append({"alpha": alpha, "beta": beta, "seed": seed, "test_ll_per_token": model.score(test),
                             "seconds": time.perf_counter() - t0})
                print(rows[-1], flush=True)
    tag = _size_tag(args.sentences) + f"_{args.iterations}it" + args.suffix
    _save(f"hdp_text_grid_wsj{tag}.json", {"args": vars(args), "rows": rows})
    mean = {(a, b): np.mean([r["test_ll_per_token"] for r in rows if (r["alpha"], r["beta"]) == (a, b)])
            for a in args.alphas for b in args.betas}
    print("\nalpha \\ beta " + "".join(f"{b:>10g}" for b in args.betas))
    for a in args.alphas:
        print(f"{a:<13g}" + "".join(f"{mean[a, b]:10.4f}" for b in args.betas))
    best = max(mean, key=mean.get)
    if (0.1, 0.1) in mean:
        print(f"best {best}: {mean[best]:.4f}, {mean[best] - mean[0.1, 0.1]:+.4f} over alpha = beta = 0.1")


def stochastic(args) -> None:
    """scvi HDP vs scvi HMM (thesis Figure 5.10) and svi (J&W) on the same split, minibatches and step schedule."""
    train, test = wsj_split(args.sentences, lowercase=args.lowercase)
    rows = []
    common = dict(batch_size=args.batch_size, tau=args.tau, kappa=args.kappa, random_state=args.seed)
    runs = [("HMM scvi (alpha=beta=0.1)", lambda: HMMTagger(n_states=45, infer="scvi", alpha=0.1, beta=0.1,
                                                             n_epochs=args.epochs, heldout_fraction=0, **common))]
    hdp_kw = dict(truncation=45, n_iter=args.epochs, tol=0, gamma=10, sigma=5, beta=0.1, fix_hyper=args.fix_hyper,
                  **common)
    for infer in args.hdp_infer:
        runs.append((f"HDP-HMM {infer} ({'fixed' if args.fix_hyper else 'learned'} gamma, sigma)",
                     lambda infer=infer: HDPHMMTagger(infer=infer, **hdp_kw)))
    if args.asymmetric:  # scvi with Dir(beta tau), the new-word mass fixed at 1 and learned
        start = "" if args.beta_start == "symmetric" else f", beta from {args.beta_start:g}"
        for mass in (1.0, "learned"):
            runs.append((f"HDP-HMM scvi, Dir(beta tau), new-word mass {mass}, burn-in {args.hyper_burn_in} epochs"
                         f"{start}",
                         lambda mass=mass: HDPHMMTagger(infer="scvi", emission_prior="asymmetric",
                                                        emission_concentration=args.beta_start, new_word_mass=mass,
                                                        hyper_burn_in=args.hyper_burn_in, **hdp_kw)))
    for label, make in runs:
        t0 = time.perf_counter()
        model = make().fit(train)
        row = {"model": label, "epochs": args.epochs, "test_ll_per_token": model.score(test),
               "seconds": time.perf_counter() - t0} | _unseen_scores(model, test)
        if isinstance(model, HDPHMMTagger):
            row |= {"effective_states": model.effective_states_, "gamma": model.gamma_, "sigma": model.sigma_,
                    "emission_concentration": model.emission_concentration_,
                    "new_word_mass": model.emission_new_mass_}
        rows.append(row)
        print(row, flush=True)
    tag = _size_tag(args.sentences)
    _save(f"hdp_stochastic_wsj{tag}{'_fixed' if args.fix_hyper else ''}{args.suffix}.json",
          {"args": vars(args), "rows": rows})


def tagging(args) -> None:
    """Unsupervised tagging metrics of the HDP tagger on the first ``--sentences`` of ptb-sample (0: all of it).

    gamma = 10, sigma = 5, beta = 0.01; fixed, or with ``--learn`` gamma and
    sigma learned (eq. 5.17, 5.20) after a burn-in of 50 passes.
    """
    from induce.corpus.formats import load_corpus
    from induce.eval.tagging import tagging_report

    sentences = load_corpus(CORPORA / "ptb-sample").sentences
    corpus = Corpus.from_sentences(sentences[:args.sentences] if args.sentences else sentences)
    rows = []
    prior = dict(emission_prior="asymmetric") if args.asymmetric else {}  # its defaults: start 10, burn-in 50
    for K in args.truncations:
        for seed in range(args.first_seed, args.first_seed + args.runs):
            t0 = time.perf_counter()
            model = HDPHMMTagger(truncation=K, infer="cvi", n_iter=args.iterations, tol=0, gamma=10, sigma=5, beta=0.01,
                                 fix_hyper=not (args.learn or args.asymmetric), hyper_burn_in=50, random_state=seed,
                                 **prior).fit(corpus)
            rep = tagging_report(model.labels_, corpus.tags["pos"], corpus.offsets)
            row = {"truncation": K, "seed": seed, "effective_states": model.effective_states_,
                   "gamma": model.gamma_, "sigma": model.sigma_, "beta": model.emission_concentration_,
                   "seconds": time.perf_counter() - t0,
                   **{k: rep[k] for k in ("m1_cv", "1to1", "vi", "vm")}}
            rows.append(row)
            print(row, flush=True)
    name = "wsj1k" if args.sentences == 1000 else f"ptb{args.sentences or 'all'}"
    last = args.first_seed + args.runs - 1
    suffix = "" if (args.first_seed, args.runs) == (0, 1) else f"_seeds{args.first_seed}-{last}"
    kind = "_asymmetric" if args.asymmetric else "_learned" if args.learn else ""
    _save(f"hdp_tagging_{name}{suffix}{kind}.json", {"args": vars(args), "rows": rows})


def beta_grid(args) -> None:
    """The HDP-HMM's defaults (``HDPHMMTagger(random_state=seed)``: cvi, truncation 45, learned gamma and sigma,
    split-merge moves, the stop) with the symmetric emission prior ``beta`` from ``--betas``, on a corpus of
    ``benchmarks/hmm_bench.py`` (wsjdev: the held-out WSJ set the HMM's priors were chosen on): M-1, V-M, passes,
    effective states and the states the labels use.  Writes ``results/hdp_beta_<corpus>.json``."""
    from hmm_bench import corpus_by_name

    from induce.eval.tagging import tagging_report

    corpus, gold = corpus_by_name(args.corpus)
    rows = []
    for beta in args.betas:
        for seed in range(args.first_seed, args.first_seed + args.runs):
            t0 = time.perf_counter()
            model = HDPHMMTagger(beta=beta, random_state=seed).fit(corpus)
            rep = tagging_report(model.labels_, corpus.tags[gold], corpus.offsets)
            rows.append({"beta": beta, "seed": seed, "m1": rep["m1"], "vm": rep["vm"], "passes": model.n_iter_,
                         "converged": model.converged_, "effective_states": model.effective_states_,
                         "label_states": int(len(np.unique(model.labels_))), "seconds": time.perf_counter() - t0})
            print(rows[-1], flush=True)
    for beta in args.betas:
        sel = [r for r in rows if r["beta"] == beta]
        print(f"beta {beta:g}: M-1 {np.mean([r['m1'] for r in sel]):.3f}  V-M {np.mean([r['vm'] for r in sel]):.3f}  "
              f"label states {np.mean([r['label_states'] for r in sel]):.1f}  passes {np.mean([r['passes'] for r in sel]):.0f}")
    _save(f"hdp_beta_{args.corpus}{args.suffix}.json", {"args": vars(args), "rows": rows})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("recovery")
    r.add_argument("--runs", type=int, default=10)
    r.add_argument("--cvi-iter", type=int, default=1000)
    r.add_argument("--beam-iter", type=int, default=3000)
    r.add_argument("--first-dataset", type=int, default=1000,
                   help="seed of the first sampled dataset (1000..1009: first recovery table of hdp.md; 1010..: fresh)")
    r.add_argument("--datasets", nargs="+", default=["theta_pos", "theta_neg", "grammar"],
                   choices=["theta_pos", "theta_neg", "grammar"])
    r.add_argument("--algorithms", nargs="+", default=["cvi", "beam"], choices=["cvi", "beam", "scvi"],
                   help="scvi runs --cvi-iter epochs")
    r.add_argument("--learn", action="store_true",
                   help="learn gamma and sigma (the defaults: adaptive burn-in), beta = 1; default: all fixed at 1")
    r.add_argument("--batch-size", type=int, default=10, help="scvi minibatch size (sequences)")
    r.add_argument("--suffix", default="", help="appended to the JSON name (keeps earlier runs of the same settings)")
    r.add_argument("--order", choices=("sequential", "shuffle"), default="sequential",
                   help="cvi: sentence order within a pass (shuffle: a fresh random order every pass)")
    r.add_argument("--no-moves", action="store_true", help="cvi without the split-merge moves (merge_moves=False)")
    r.add_argument("--scvi-memory", action="store_true",
                   help="scvi with the sentence memory (scvi_memory=True: each sentence's own counts left out)")
    r.add_argument("--n-init", type=int, default=1,
                   help="cvi: best of N random starts by the final objective (the time column covers all N)")
    r.add_argument("--stop", action="store_true",
                   help="cvi / scvi stop on convergence (the model's default tol) with --cvi-iter as the cap; "
                        "default: every pass runs (tol=0, the recorded protocol)")
    ra = sub.add_parser("runaway")
    ra.add_argument("--dataset", type=int, default=1000, help="theta_pos dataset seed")
    ra.add_argument("--iterations", type=int, default=300)
    sp = sub.add_parser("speed")
    sp.add_argument("--iterations", type=int, default=300)
    mc = sub.add_parser("move-cost")
    mc.add_argument("--first-dataset", type=int, default=1011)
    mc.add_argument("--datasets", type=int, default=2, help="datasets of each kind")
    mc.add_argument("--repeats", type=int, default=2, help="fits of each variant on each dataset (orders alternate)")
    s = sub.add_parser("qc-sim")
    s.add_argument("--runs", type=int, default=5)
    s.add_argument("--max-exp", type=int, default=5, help="largest I*T = 10^max_exp")
    s.add_argument("--potentials", choices=("flat", "random"), default="random")
    s.add_argument("--max-exact-k50", type=int, default=1000, help="largest I*T for K=50 (exact is O(ITK^4))")
    a = sub.add_parser("qc-alice")
    a.add_argument("--K", type=int, default=10)
    a.add_argument("--iterations", type=int, default=100)
    a.add_argument("--runs", type=int, default=1)
    a.add_argument("--sample-every", type=int, default=5, help="evaluate the (slow) sampling methods every N iterations")
    a.add_argument("--driver", choices=("exact", "heuristic"), default="exact",
                   help="q(C>0) method that drives cvi (heuristic: exact only at evaluated iterations)")
    a.add_argument("--eval-every", type=int, default=1, help="with --driver heuristic: compare every N iterations")
    t = sub.add_parser("text")
    tg = sub.add_parser("text-grid")
    for q, iterations in ((t, 100), (tg, 200)):  # the WSJ split and the runs, shared by both text modes
        q.add_argument("--sentences", type=int, default=1000, help="first N WSJ sentences (0: all)")
        q.add_argument("--iterations", type=int, default=iterations)
        q.add_argument("--runs", type=int, default=1)
        q.add_argument("--first-seed", type=int, default=0)
        q.add_argument("--lowercase", action="store_true")
        q.add_argument("--unk-threshold", type=int, default=0, metavar="N",
                       help="closed vocabulary: training words seen fewer than N times and unseen test words -> <unk>")
        q.add_argument("--suffix", default="", help="appended to the JSON name (keeps earlier runs of the same size)")
        q.add_argument("--subset", choices=("first", "random", "shared-test"), default="first",
                       help="which N sentences: the first N, N drawn at random (seed 0) from all of WSJ, or "
                            "shared-test: train on N random sentences of all WSJ's 90%%, test on its 10%%")
    t.add_argument("--models", nargs="+", default=["hmm-cvi2", "hdp-fixed", "hdp-learned", "hdp-asym"],
                   choices=[key for key, _, _ in _text_models(0, 0, None, 0)])
    t.add_argument("--burn-in", type=int, default=50, help="hyper_burn_in of the *-burn models")
    t.add_argument("--beta-start", type=float, default=10.0,
                   help="hdp-asym-burn-start: the starting beta of Dir(beta tau) (emission_concentration)")
    tg.add_argument("--alphas", type=float, nargs="+", default=[0.01, 0.1, 1.0])
    tg.add_argument("--betas", type=float, nargs="+", default=[0.01, 0.03, 0.1, 0.3])
    st = sub.add_parser("stochastic")
    st.add_argument("--sentences", type=int, default=1000, help="first N WSJ sentences (0: all)")
    st.add_argument("--lowercase", action="store_true")
    st.add_argument("--hdp-infer", nargs="+", default=["scvi", "svi"], choices=["scvi", "svi"])
    st.add_argument("--epochs", type=int, default=20)
    st.add_argument("--batch-size", type=int, default=100)
    st.add_argument("--tau", type=float, default=1.0)
    st.add_argument("--kappa", type=float, default=0.6)
    st.add_argument("--fix-hyper", action="store_true")
    st.add_argument("--asymmetric", action="store_true",
                    help="also HDP scvi with Dir(beta tau), new-word mass 1 and learned")
    st.add_argument("--hyper-burn-in", type=int, default=0, help="epochs before the hyperparameters of --asymmetric move")
    st.add_argument("--beta-start", type=lambda x: x if x == "symmetric" else float(x), default="symmetric",
                    help="--asymmetric: the starting beta of Dir(beta tau) (default symmetric: W x 0.1; see hdp.md)")
    st.add_argument("--suffix", default="", help="appended to the JSON name")
    st.add_argument("--seed", type=int, default=0, help="random_state of every model")
    g = sub.add_parser("tagging")
    g.add_argument("--truncations", type=int, nargs="+", default=[45, 100])
    g.add_argument("--iterations", type=int, default=200)
    g.add_argument("--runs", type=int, default=1, help="random starts per truncation (seeds first-seed, ...)")
    g.add_argument("--first-seed", type=int, default=0)
    g.add_argument("--sentences", type=int, default=1000, help="first N sentences of ptb-sample (0: all)")
    g.add_argument("--learn", action="store_true", help="learn gamma and sigma after 50 passes")
    g.add_argument("--asymmetric", action="store_true",
                   help="Dir(beta tau) at its defaults (beta from 10), everything learned after 50 passes")
    bg = sub.add_parser("beta-grid", help="the defaults with beta from a grid, tagging metrics (beta_grid)")
    bg.add_argument("--corpus", default="wsjdev", help="a corpus name of benchmarks/hmm_bench.py")
    bg.add_argument("--betas", type=float, nargs="+", default=[0.003, 0.01, 0.03, 0.1])
    bg.add_argument("--runs", type=int, default=3)
    bg.add_argument("--first-seed", type=int, default=0)
    bg.add_argument("--suffix", default="")
    args = p.parse_args()
    {"recovery": recovery, "runaway": runaway, "speed": speed, "qc-sim": qc_sim, "qc-alice": qc_alice, "text": text,
     "text-grid": text_grid, "tagging": tagging, "stochastic": stochastic, "beta-grid": beta_grid,
     "move-cost": move_cost}[args.mode](args)


if __name__ == "__main__":
    main()
