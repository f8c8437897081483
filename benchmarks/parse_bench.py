"""Grammar-induction benchmark: DMV accuracy tables, PCFG bracket F1, CVI vs MH, speed.

Sections (``--sections``, default all):

* ``dmv``       -- directed / undirected attachment accuracy of the DMV trained with
  em, vi and cvi (alpha 0.1 and 1) from the harmonic initialiser (5 seeds: the
  seed only orders CVI's sentences; em and vi are deterministic) and from random
  initialisations (5 seeds), on every shared treebank.  Punctuation is removed
  before training and scoring (UPOS PUNCT/SYM, PTB punctuation tags, CoNLL 2007
  CPOS PUNT/F), then sentences longer than the cutoff are dropped.  WSJ rows
  train and test on the same sample text (as Klein & Manning did on WSJ10);
  UD/CoNLL rows train on train and report on test; treebanks without a train
  file train on dev+test and report on test.
* ``dmv_disjoint`` -- the same table trained on the CoNLL-2000 WSJ text (other WSJ
  sections, silver tags) and scored on the gold WSJ dependency sample, WSJ10 and WSJ20.
* ``pcfg``      -- unlabeled bracket F1 (evalb conventions of induce.eval.brackets)
  of a fully connected PCFG over the 45 PTB tags on WSJ10 (ptb-sample), em/vi/cvi,
  5 seeds, against left- and right-branching trees.
* ``synthetic`` -- the Sesotho data of thesis 4.5.1 is absent, so CVI and the
  collapsed MH sampler are compared on strings sampled from a known sparse
  grammar: test perplexity and rule-probability recovery vs iterations and time.
* ``learned``   -- learned priors (``learn_hyper``) against the default alpha = 1, seed 0 of each, the default
  stopping rule: the DMV (cvi, vi; burn-in 0, 10, 30) on the WSJ10 condition (punctuation removed, at most 10
  words; trained and scored on the same sentences) of wsj-dep-sample (pos), el_gdt and tr_imst train (xpos);
  the PCFG (cvi, vi) of the ``pcfg`` section, seeds 0 to ``--seeds`` - 1 (docs/experiments/grammar_defaults.md,
  "Learned priors").
* ``speed``     -- seconds per iteration (median), peak RSS of a fresh process per
  row (mostly the numba/LLVM runtime) and peak traced numpy memory during ``fit``
  on WSJ10 and EWT train <= 20 words, and the inside/Viterbi kernels against
  NLTK's ViterbiParser and InsideChartParser on the same grammar and sentences.

    nice -n 10 python benchmarks/parse_bench.py --out-dir benchmarks/results
    python benchmarks/parse_bench.py --report      # markdown tables from the saved JSON

Prints tables and writes ``parse_<section>.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from induce.atomic import atomic_write
from induce.corpus.corpus import Corpus
from induce.corpus.formats import read_sentences
from induce.corpus.transforms import remove_tokens
from induce.eval.brackets import bracket_scores
from induce.eval.dependencies import CONLL2007_PUNCTUATION, PTB_PUNCTUATION, UPOS_PUNCTUATION, attachment_scores
from induce.parsers import DMVParser, PCFGInducer
from induce.parsers.grammar import Grammar, to_nltk
from induce.parsers.synthetic import generate, sparse_grammar
from induce.parsers.trees import branching_tree

REPO = Path(__file__).resolve().parent.parent
CORPORA = Path(os.environ.get("INDUCE_CORPORA", REPO.parent / "shared" / "corpora"))
PUNCT = {"pos": PTB_PUNCTUATION, "upos": UPOS_PUNCTUATION, "cpos": CONLL2007_PUNCTUATION}
KLEIN_MANNING_WSJ10 = 0.432


# ------------------------------------------------------------------- data
def load(paths, column: str, max_length: int, encoding: str = "utf-8") -> Corpus:
    """Sentences of ``paths`` with punctuation (by ``column``) removed, at most ``max_length`` words."""
    kept = []
    for path in paths:
        for sent in read_sentences(path, encoding=encoding):
            mask = np.array([t not in PUNCT[column] for t in sent.tags[column]], dtype=bool)
            sent = remove_tokens(sent, mask) if not mask.all() else sent
            if 0 < len(sent) <= max_length:
                kept.append(sent)
    return Corpus.from_sentences(kept)


def treebanks(max_length: int = 10):
    """``(name, train, test, column, note)`` for every shared dependency treebank."""
    wsj = CORPORA / "wsj-dep-sample"
    ud = CORPORA / "ud"
    yield f"wsj{max_length}", [wsj], [wsj], "pos", "train = test (sample)"
    for name in sorted(p.name for p in ud.iterdir() if p.is_dir()):
        files = {f.name.split("-ud-")[1].split(".")[0]: f for f in (ud / name).glob("*.conllu")}
        if "train" in files:
            yield name, [files["train"]], [files["test"]], "upos", "train -> test"
        else:
            yield name, [files["dev"], files["test"]], [files["test"]], "upos", "no train: dev+test -> test"
    for lang in ("eus", "esp"):
        c7 = CORPORA / "conll2007"
        yield f"conll07-{lang}", [c7 / f"{lang}.train"], [c7 / f"{lang}.test"], "cpos", "train -> test"


def encoding_of(path: Path) -> str:
    return "latin-1" if path.name.startswith("eus.") else "utf-8"


# -------------------------------------------------------------------- DMV
DMV_CONFIGS = [("em", 1.0), ("vi", 0.1), ("vi", 1.0), ("cvi", 0.1), ("cvi", 1.0)]


def run_dmv(args) -> dict:
    plan = [(tb, 10) for tb in treebanks(10)]
    plan += [(tb, 40) for tb in treebanks(40) if tb[0] in ("wsj40", "en_ewt")]
    return dmv_table(args, plan, "dmv")


def run_dmv_disjoint(args) -> dict:
    """Closer to the thesis setting (train on other WSJ sections, test on held-out WSJ):
    train on the CoNLL-2000 WSJ text (sections 15-18, 20; *silver* Brill tags) and
    score on the gold dependency sample (sections 00-01), both WSJ10."""
    c2k = CORPORA / "conll2000"
    wsj = CORPORA / "wsj-dep-sample"
    plan = [((f"wsj{n}-disjoint", [c2k / "train.txt", c2k / "test.txt"], [wsj], "pos",
              "train: CoNLL-2000 WSJ text (silver tags) -> test: wsj-dep-sample"), n) for n in (10, 20)]
    return dmv_table(args, plan, "dmv_disjoint")


def dmv_table(args, plan, section: str) -> dict:
    rows = []
    for (name, train_paths, test_paths, col, note), cutoff in plan:
        enc = encoding_of(train_paths[0])
        train = load(train_paths, col, cutoff, enc)
        test = load(test_paths, col, cutoff, enc)
        for init in ("harmonic", "random"):
            for infer, alpha in DMV_CONFIGS:
                seeds = range(args.seeds) if (init == "random" or infer == "cvi") else [0]
                scores = []
                for seed in seeds:
                    t0 = time.perf_counter()
                    model = DMVParser(infer=infer, alpha=alpha, n_iter=args.dmv_iterations, tol=0, init=init,
                                      tag_column=col, random_state=seed).fit(train)
                    s = attachment_scores(model.predict_flat(test), test.heads, test.offsets)
                    scores.append((s["directed"], s["undirected"], time.perf_counter() - t0))
                arr = np.array(scores)
                row = {"treebank": name, "max_length": cutoff, "note": note, "train_sentences": train.n_sentences,
                       "test_tokens": test.n_tokens, "init": init, "infer": infer, "alpha": alpha,
                       "runs": len(scores), "directed": arr[:, 0].mean(), "directed_std": arr[:, 0].std(),
                       "undirected": arr[:, 1].mean(), "undirected_std": arr[:, 1].std(),
                       "seconds": arr[:, 2].mean()}
                rows.append(row)
                print(f"{name:>14} <={cutoff:<3} {init:>8} {infer:>3} a={alpha:<4} n={len(scores)} "
                      f"dir {100 * row['directed']:5.1f}±{100 * row['directed_std']:3.1f} "
                      f"undir {100 * row['undirected']:5.1f}±{100 * row['undirected_std']:3.1f} "
                      f"({row['seconds']:.1f}s/run)", flush=True)
                save(args, section, {"iterations": args.dmv_iterations, "klein_manning_wsj10_em": KLEIN_MANNING_WSJ10,
                                   "punctuation": "removed before training and scoring", "rows": rows})
    return {"rows": rows}


# ------------------------------------------------------------ learned priors
LEARNED_DMV_DATA = (("wsj10", "wsj-dep-sample", "pos"), ("el_gdt", "ud/el_gdt/el_gdt-ud-train.conllu", "xpos"),
                    ("tr_imst", "ud/tr_imst/tr_imst-ud-train.conllu", "xpos"))


def run_learned(args) -> dict:
    rows = []

    def keep(row):
        rows.append(row)
        print("  ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()), flush=True)
        save(args, "learned", {"seed": "0 (DMV); 0..seeds-1 (PCFG)", "rows": rows})

    for name, rel, column in LEARNED_DMV_DATA:
        corpus = load_ptb_wsj10(rel)
        for infer in ("cvi", "vi"):
            for variant, kw in (("alpha 1", {}), ("learned, burn-in 0", dict(learn_hyper=True)),
                                ("learned, burn-in 10", dict(learn_hyper=True, hyper_burn_in=10)),
                                ("learned, burn-in 30", dict(learn_hyper=True, hyper_burn_in=30))):
                model = DMVParser(infer=infer, tag_column=column, random_state=0, **kw).fit(corpus)
                s = attachment_scores(model.predict_flat(corpus), corpus.heads, corpus.offsets)
                keep({"model": "dmv", "data": name, "sentences": corpus.n_sentences, "infer": infer,
                      "variant": variant, "directed": s["directed"], "undirected": s["undirected"],
                      "passes": model.n_iter_, **{f"alpha_{k}": float(v) for k, v in model.alpha_.items()}})
    corpus = load_ptb_wsj10()
    gold = [s.tree for s in corpus.sentences]
    for infer in ("cvi", "vi"):
        for variant, kw in (("alpha 1", dict(alpha=1.0, learn_hyper=False)), ("learned", dict(learn_hyper=True))):
            for seed in range(args.seeds):
                model = PCFGInducer(n_nonterminals=args.nonterminals, infer=infer, tag_column="pos",
                                    random_state=seed, **kw).fit(corpus)
                sc = bracket_scores(model.parse(corpus), gold, labeled=False)
                keep({"model": "pcfg", "data": "wsj10 ptb-sample", "infer": infer, "variant": variant,
                      "seed": seed, "f1": sc["f1"], "passes": model.n_iter_, "alpha_": float(model.alpha_)})
    return {"rows": rows}


# ------------------------------------------------------------------- PCFG
def run_pcfg(args) -> dict:
    corpus = load_ptb_wsj10()
    gold = [s.tree for s in corpus.sentences]
    rows = []
    for right in (False, True):
        trees = [branching_tree(s.words, s.tags["pos"], right=right) for s in corpus.sentences]
        sc = bracket_scores(trees, gold, labeled=False)
        rows.append({"method": "right-branching" if right else "left-branching", "f1": sc["f1"],
                     "precision": sc["precision"], "recall": sc["recall"], "runs": 1, "f1_std": 0.0})
        print(f"{rows[-1]['method']:>16}  F1 {100 * sc['f1']:5.1f}", flush=True)
    for infer, alpha in DMV_CONFIGS:
        f1s, lls = [], []
        for seed in range(args.seeds):
            model = PCFGInducer(n_nonterminals=args.nonterminals, infer=infer, alpha=alpha,
                                n_iter=args.pcfg_iterations, tag_column="pos", random_state=seed).fit(corpus)
            sc = bracket_scores(model.parse(corpus), gold, labeled=False)
            f1s.append((sc["f1"], sc["precision"], sc["recall"]))
            lls.append(float(model.log_likelihood(corpus).sum()))
        arr = np.array(f1s)
        rows.append({"method": f"pcfg-{infer}", "alpha": alpha, "runs": args.seeds, "f1": arr[:, 0].mean(),
                     "f1_std": arr[:, 0].std(), "precision": arr[:, 1].mean(), "recall": arr[:, 2].mean(),
                     "log_likelihood": float(np.mean(lls))})
        print(f"{rows[-1]['method']:>16} a={alpha:<4} F1 {100 * arr[:, 0].mean():5.1f}±{100 * arr[:, 0].std():3.1f}"
              f"  LL {np.mean(lls):.0f}", flush=True)
        save(args, "pcfg", {"data": "WSJ10 ptb-sample, punctuation removed, PTB tags as terminals",
                            "sentences": corpus.n_sentences, "nonterminals": args.nonterminals,
                            "iterations": args.pcfg_iterations, "metric": "unlabeled evalb F1 (sentence span counted)",
                            "rows": rows})
    return {"rows": rows}


def load_ptb_wsj10(rel: str = "ptb-sample") -> Corpus:
    """The ``induce parse --wsj10`` condition of ``CORPORA / rel``: punctuation removed, at most 10 words."""
    from induce.corpus.formats import load_corpus

    return load_corpus(CORPORA / rel, wsj10=True, strip_punct=True)


# -------------------------------------------------------------- synthetic
def _learner_grammar(true: Grammar) -> Grammar:
    """The true binary skeleton, every terminal for every nonterminal, uniform weights."""
    mask_e = np.ones_like(true.emit_mask)
    return Grammar(true.nonterminals, true.terminals, true.binary_mask.astype(float), mask_e.astype(float),
                   true.binary_mask.copy(), mask_e)


def _row_tv(model: PCFGInducer, true: Grammar) -> float:
    """Mean total-variation distance between learned and true rule distributions of each nonterminal."""
    terms = {w: i for i, w in enumerate(model.grammar_.terminals)}
    emit = np.zeros((true.n_nonterminals, len(true.terminals)))
    for j, w in enumerate(true.terminals):
        emit[:, j] = model.emissions_[:, terms[w]]
    learned = true.rows(model.rules_, emit)
    truth = true.rows(true.binary, true.emit)
    learned = learned / learned.sum(1, keepdims=True)
    return float(0.5 * np.abs(learned - truth).sum(1).mean())


def run_synthetic(args) -> dict:
    true = sparse_grammar(args.syn_nonterminals, args.syn_terminals, 3, 5, seed=11)
    strings = generate(true, args.syn_train + args.syn_test, max_length=15, seed=12)
    train, test = strings[: args.syn_train], strings[args.syn_train:]
    n_test = sum(map(len, test))
    true_ppl = None
    oracle = PCFGInducer(grammar=true, n_iter=0, init_noise=0.0).fit(train)
    true_ppl = float(np.exp(-oracle.log_likelihood(test).sum() / n_test))
    learner = _learner_grammar(true)
    curves = {}
    for infer, iters in (("cvi", args.syn_cvi_iterations), ("mh", args.syn_mh_iterations)):
        runs = []
        for seed in range(args.seeds):
            curve = []
            clock = {"train": 0.0, "last": time.perf_counter()}
            checkpoints = set(np.unique(np.round(np.geomspace(1, iters, 25)).astype(int)))

            def record(model, it, curve=curve, clock=clock, checkpoints=checkpoints):
                now = time.perf_counter()
                clock["train"] += now - clock["last"]
                if it in checkpoints:
                    ll = model.log_likelihood(test).sum()
                    curve.append({"iteration": it, "seconds": clock["train"],
                                  "test_perplexity": float(np.exp(-ll / n_test)), "rule_tv": _row_tv(model, true)})
                clock["last"] = time.perf_counter()

            model = PCFGInducer(grammar=learner, infer=infer, alpha=args.syn_prior, n_iter=iters,
                                random_state=seed).fit(train, callback=record)
            runs.append({"seed": seed, "curve": curve, "acceptance_rate": model.acceptance_rate_})
            last = curve[-1]
            print(f"synthetic {infer:>3} seed {seed}: ppl {last['test_perplexity']:.3f} (true {true_ppl:.3f}) "
                  f"rule TV {last['rule_tv']:.3f} in {last['seconds']:.1f}s / {iters} it"
                  + (f", acceptance {model.acceptance_rate_:.3f}" if infer == "mh" else ""), flush=True)
        curves[infer] = runs
        save(args, "synthetic", {"grammar": {"nonterminals": args.syn_nonterminals, "terminals": args.syn_terminals,
                                             "binary_rules_per_nonterminal": 3, "words_per_nonterminal": 5},
                                 "train_strings": len(train), "test_strings": len(test), "prior": args.syn_prior,
                                 "true_grammar_test_perplexity": true_ppl, "runs": curves})
    return curves


# ------------------------------------------------------------------ speed
SPEED_ROWS = [("dmv", a, d) for d in ("wsj10", "ewt20") for a in ("em", "vi", "cvi")] + \
             [("pcfg", a, d) for d in ("wsj10", "ewt20") for a in ("em", "vi", "cvi", "mh")]


def speed_one(model_name: str, infer: str, data: str, iterations: int, nonterminals: int) -> dict:
    if data == "wsj10":
        corpus = load_ptb_wsj10() if model_name == "pcfg" else load([CORPORA / "wsj-dep-sample"], "pos", 10)
        col = "pos"
    else:
        corpus = load([CORPORA / "ud/en_ewt/en_ewt-ud-train.conllu"], "upos", 20)
        col = "upos"
    if model_name == "dmv":
        model = DMVParser(infer=infer, n_iter=iterations, tol=0, tag_column=col, random_state=0)
    else:
        model = PCFGInducer(n_nonterminals=nonterminals, infer=infer, n_iter=iterations, tag_column=col,
                            random_state=0)
    tracemalloc.start()
    model.fit(corpus)
    per_iter = [h["seconds"] for h in model.history_[1:]]
    return {"model": model_name, "infer": infer, "data": data, "sentences": corpus.n_sentences,
            "tokens": corpus.n_tokens, "seconds_per_iteration": float(np.median(per_iter)),
            "init_seconds": model.history_[0]["seconds"],
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "peak_traced_mib": tracemalloc.get_traced_memory()[1] / 2**20}


def nltk_reference(args) -> list[dict]:
    """Our Viterbi and inside kernels vs NLTK on the same fitted grammar and sentences.

    NLTK's ViterbiParser is exact (the max log-probabilities are compared);
    InsideChartParser is best-first over whole trees and does not finish on a
    fully connected grammar without a beam, so it runs with ``beam_size=200`` on
    the 4-nonterminal grammar and 3 sentences only.
    """
    from nltk.parse import InsideChartParser, ViterbiParser

    corpus = load_ptb_wsj10()
    idx = np.argsort(corpus.lengths, kind="stable")
    pick = [i for i in idx if corpus.lengths[i] >= 5][: args.nltk_sentences]
    sub = corpus.subset(pick)
    tags = [sub.tag_strings("pos", i) for i in range(sub.n_sentences)]
    rows = []
    for n_nt in (4, args.nonterminals):
        model = PCFGInducer(n_nonterminals=n_nt, infer="em", n_iter=5, tag_column="pos", random_state=0).fit(corpus)
        grammar = Grammar(model.grammar_.nonterminals, model.grammar_.terminals, model.rules_, model.emissions_,
                          model.rules_ > 0, model.emissions_ > 0)
        pcfg = to_nltk(grammar)
        fitted = PCFGInducer(grammar=grammar, n_iter=0, init_noise=0.0, tag_column="pos").fit(sub)
        out = {"nonterminals": n_nt, "productions": len(pcfg.productions()), "sentences": sub.n_sentences,
               "mean_length": float(sub.lengths.mean())}
        fitted.viterbi_scores(sub.head(1))
        fitted.log_likelihood(sub.head(1))
        t0 = time.perf_counter()
        ours = fitted.viterbi_scores(sub)
        out["induce_viterbi_seconds"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        fitted.log_likelihood(sub)
        out["induce_inside_seconds"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        ref = [ViterbiParser(pcfg).parse_one(t) for t in tags]
        out["nltk_viterbi_seconds"] = time.perf_counter() - t0
        out["viterbi_max_abs_logprob_diff"] = float(max(abs(np.log(r.prob()) - o) for r, o in zip(ref, ours)))
        if n_nt == 4:
            t0 = time.perf_counter()
            for t in tags[:3]:
                InsideChartParser(pcfg, beam_size=200).parse_one(t)
            out["nltk_inside_chart_beam200_seconds_3_sentences"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            fitted.log_likelihood(sub.head(3))
            out["induce_inside_seconds_3_sentences"] = time.perf_counter() - t0
        rows.append(out)
    return rows


def run_speed(args) -> dict:
    rows = []
    for model_name, infer, data in SPEED_ROWS:
        cmd = [sys.executable, __file__, "--speed-one", model_name, infer, data,
               "--nonterminals", str(args.nonterminals), "--speed-iterations", str(args.speed_iterations)]
        row = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
        rows.append(row)
        print(f"{model_name:>4} {infer:>3} {data:>5}: {row['seconds_per_iteration']:.3f} s/it "
              f"({row['sentences']} sent., {row['tokens']} tok.), peak RSS {row['peak_rss_mib']:.0f} MiB, "
              f"numpy peak {row['peak_traced_mib']:.1f} MiB", flush=True)
        save(args, "speed", {"rows": rows})
    ref = nltk_reference(args)
    print("NLTK reference:", json.dumps(ref, indent=1), flush=True)
    save(args, "speed", {"rows": rows, "nltk_reference": ref, "pcfg_nonterminals": args.nonterminals})
    return {"rows": rows, "nltk_reference": ref}


# ----------------------------------------------------------------- report
def _pct(mean: float, std: float | None = None) -> str:
    return f"{100 * mean:.1f}" + (f" ± {100 * std:.1f}" if std else "")


def report(out_dir: Path) -> None:
    """Print the markdown tables of docs/experiments/grammar.md and speed.md from the saved JSON."""
    for section in ("dmv", "dmv_disjoint"):
        path = out_dir / f"parse_{section}.json"
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        configs = [(i, a) for i, a in DMV_CONFIGS]
        head = " | ".join(f"{i} a={a:g}" for i, a in configs)
        print(f"\n{section}: directed / undirected accuracy (%), {data['iterations']} iterations\n")
        print(f"| treebank | len | init | train sent. | {head} |")
        print("|---|---|---|---|" + "---|" * len(configs))
        by_key = {(r["treebank"], r["max_length"], r["init"], r["infer"], r["alpha"]): r for r in data["rows"]}
        seen = []
        for r in data["rows"]:
            key = (r["treebank"], r["max_length"], r["init"])
            if key in seen:
                continue
            seen.append(key)
            cells = []
            for infer, alpha in configs:
                row = by_key.get(key + (infer, alpha))
                cells.append("–" if row is None else
                             f"{_pct(row['directed'], row['directed_std'])} / {_pct(row['undirected'])}")
            best = max(range(len(configs)), key=lambda j: by_key.get(key + configs[j], {"directed": -1})["directed"])
            cells[best] = f"**{cells[best]}**"
            print(f"| {key[0]} | {key[1]} | {key[2]} | {r['train_sentences']} | " + " | ".join(cells) + " |")
    path = out_dir / "parse_pcfg.json"
    if path.exists():
        data = json.loads(path.read_text())
        print(f"\npcfg: {data['data']}, {data['sentences']} sentences, {data['nonterminals']} nonterminals, "
              f"{data['iterations']} iterations, {data['metric']}\n")
        print("| method | alpha | runs | F1 | P | R |\n|---|---|---|---|---|---|")
        for r in data["rows"]:
            print(f"| {r['method']} | {r.get('alpha', '–')} | {r['runs']} | {_pct(r['f1'], r['f1_std'])} | "
                  f"{_pct(r['precision'])} | {_pct(r['recall'])} |")
    path = out_dir / "parse_synthetic.json"
    if path.exists():
        data = json.loads(path.read_text())
        print(f"\nsynthetic: true-grammar test perplexity {data['true_grammar_test_perplexity']:.3f}\n")
        print("| method | iteration | seconds | test perplexity | rule TV |\n|---|---|---|---|---|")
        for method, runs in data["runs"].items():
            iters = sorted({p["iteration"] for p in runs[0]["curve"]})
            for it in [i for i in iters if i in (1, 3, 5, 10, 30, 100, 300, 1000)]:
                pts = [p for run in runs for p in run["curve"] if p["iteration"] == it]
                ppl = np.array([p["test_perplexity"] for p in pts])
                tv = np.array([p["rule_tv"] for p in pts])
                sec = np.mean([p["seconds"] for p in pts])
                print(f"| {method} | {it} | {sec:.2f} | {ppl.mean():.3f} ± {ppl.std():.3f} | {tv.mean():.3f} |")
    path = out_dir / "parse_speed.json"
    if path.exists():
        data = json.loads(path.read_text())
        print("\nspeed\n\n| model | infer | data | sentences | tokens | s / iteration | peak RSS MiB | numpy peak MiB |")
        print("|---|---|---|---|---|---|---|---|")
        for r in data["rows"]:
            print(f"| {r['model']} | {r['infer']} | {r['data']} | {r['sentences']} | {r['tokens']} | "
                  f"{r['seconds_per_iteration']:.3f} | {r['peak_rss_mib']:.0f} | {r['peak_traced_mib']:.1f} |")
        for r in data.get("nltk_reference", []):
            print(f"\nNLTK reference ({r['nonterminals']} nonterminals, {r['productions']} productions, "
                  f"{r['sentences']} sentences): {json.dumps({k: v for k, v in r.items() if 'seconds' in k or 'diff' in k})}")


# ------------------------------------------------------------------ main
def save(args, section: str, payload: dict) -> None:
    meta = {"date": datetime.date.today().isoformat(), "host": platform.node(), "python": platform.python_version(),
            "command": " ".join(sys.argv)}
    with atomic_write(Path(args.out_dir) / f"parse_{section}.json") as out:
        json.dump({**meta, **payload}, out, indent=1, default=float)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sections", default="dmv,dmv_disjoint,pcfg,synthetic,speed")
    p.add_argument("--out-dir", default=str(REPO / "benchmarks" / "results"))
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--dmv-iterations", type=int, default=40)
    p.add_argument("--pcfg-iterations", type=int, default=50)
    p.add_argument("--nonterminals", type=int, default=10)
    p.add_argument("--syn-nonterminals", type=int, default=6)
    p.add_argument("--syn-terminals", type=int, default=40)
    p.add_argument("--syn-train", type=int, default=1000)
    p.add_argument("--syn-test", type=int, default=100)
    p.add_argument("--syn-prior", type=float, default=1e-5)
    p.add_argument("--syn-cvi-iterations", type=int, default=30)
    p.add_argument("--syn-mh-iterations", type=int, default=1000)
    p.add_argument("--speed-iterations", type=int, default=3)
    p.add_argument("--nltk-sentences", type=int, default=10)
    p.add_argument("--speed-one", nargs=3, metavar=("MODEL", "INFER", "DATA"), help=argparse.SUPPRESS)
    p.add_argument("--report", action="store_true", help="print the markdown tables from --out-dir and exit")
    args = p.parse_args()
    if args.report:
        report(Path(args.out_dir))
        return
    if args.speed_one:
        print(json.dumps(speed_one(*args.speed_one, args.speed_iterations, args.nonterminals)))
        return
    runners = {"dmv": run_dmv, "dmv_disjoint": run_dmv_disjoint, "pcfg": run_pcfg, "synthetic": run_synthetic,
               "learned": run_learned, "speed": run_speed}
    for section in args.sections.split(","):
        print(f"== {section}", flush=True)
        runners[section](args)


if __name__ == "__main__":
    main()
