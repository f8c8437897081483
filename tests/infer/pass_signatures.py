"""Fingerprints of the compiled HMM passes' outputs on fixed seeds (the refactor's bit-for-bit reference).

``signatures()`` runs cvi1, cgs, block-parallel cvi2 and the stochastic driver (svi, scvi, scvi3) for a few
sweeps on the demo corpus and a CoNLL-2000 slice and returns, for every output array, a SHA-256 of its bytes
(with dtype and shape) and, for every scalar, its exact ``repr``.  ``pass_signatures.json`` holds the values
recorded before the passes were split into named steps; ``test_pass_signatures.py`` asserts equality.

The record depends on the host in one place: numpy's float64 ``exp`` has its own AVX-512 implementation and
calls the C library's elsewhere, and the two differ in the last bit now and then, which svi's ``exp(digamma(.))``
(:func:`induce.infer.estimators.vi_params`) carries into its counts.  ``pass_signatures.json`` was recorded on a
host with AVX-512; ``pass_signatures_noavx512.json`` holds the entries that differ on a host without it (svi's:
recorded on an AMD EPYC "znver3" host by the code of main 33e4f7e, whose other entries equal the first file's
there), and :func:`recorded` gives the record for this host.  Regenerate (only when a change of results is
intended) with::

    INDUCE_CORPORA=... PYTHONPATH=. python tests/infer/pass_signatures.py

which writes the file of this host's kind (on a host without AVX-512, only the entries that differ from
``pass_signatures.json``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from induce.corpus.demo import demo_corpus
from induce.infer import hmm_passes as passes
from induce.algorithms import minibatch
from induce.infer import stochastic_hmm as sh
from induce.infer.hmm_batched import cvi2_block_pass

FILE = Path(__file__).with_name("pass_signatures.json")
NO_AVX512_FILE = Path(__file__).with_name("pass_signatures_noavx512.json")
NO_MASK = np.zeros((0, 0), dtype=np.uint8)
SWEEPS = 3


def digest(a: np.ndarray) -> str:
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()[:20]


def corpora(corpora_dir: Path | None) -> dict:
    """``name -> (tokens, offsets, W, K)``: the demo corpus and, with the real corpora, 300 CoNLL-2000 sentences."""
    out = {}
    demo = demo_corpus(120, seed=1)
    out["demo"] = (demo.tokens, demo.offsets, len(demo.vocab), 6)
    if corpora_dir is not None:
        from induce.corpus.corpus import Corpus
        from induce.corpus.formats import load_corpus

        train = load_corpus(corpora_dir / "conll2000" / "train.txt", lowercase=True)
        c = Corpus.from_sentences(train.sentences[:300])
        out["conll300"] = (c.tokens, c.offsets, len(c.vocab), 10)
    return {k: (np.ascontiguousarray(t, dtype=np.int32), np.ascontiguousarray(o, dtype=np.int64), W, K)
            for k, (t, o, W, K) in out.items()}


def tag_mask(W: int, K: int, seed: int) -> np.ndarray:
    """A random tag dictionary: each word allows about half of the states, at least one."""
    rng = np.random.default_rng(seed)
    allowed = (rng.random((W, K)) < 0.5).astype(np.uint8)
    allowed[np.arange(W), rng.integers(0, K, size=W)] = 1
    return allowed


def local_start(tokens, offsets, K, dtype):
    sent_trans = np.zeros((len(offsets) - 1, K + 1, K), dtype=dtype)
    gamma = np.zeros((len(tokens), K), dtype=dtype)
    passes.init_chain_posteriors(tokens, offsets, K, 11, sent_trans, gamma)
    return sent_trans, gamma


def run_cvi1(tokens, offsets, W, K, allowed):
    _, q = local_start(tokens, offsets, K, np.float64)
    G = np.zeros((K + 1, K))
    C_emit = np.zeros((W, K))
    passes.factorised_counts(tokens, offsets, q, W, G, C_emit)
    order = np.random.default_rng(3).permutation(len(offsets) - 1).astype(np.int64)
    changes = [repr(float(passes.cvi1_pass(G, C_emit, q, tokens, offsets, order, 0.1, 0.01, allowed)))
               for _ in range(SWEEPS)]
    return {"change": changes, "q": digest(q), "G": digest(G), "C_emit": digest(C_emit)}


def run_cgs(tokens, offsets, W, K, allowed):
    rng = np.random.default_rng(5)
    z = rng.integers(0, K, size=len(tokens)).astype(np.int32)
    if allowed.shape[0]:
        for p in range(len(tokens)):
            z[p] = np.flatnonzero(allowed[tokens[p]])[0]
    Ct = np.zeros((K + 1, K), dtype=np.int64)
    Ce = np.zeros((W, K), dtype=np.int64)
    passes.hard_counts(tokens, offsets, z, W, K, Ct, Ce)
    votes = np.zeros((len(tokens), K), dtype=np.int32)
    changed = [int(passes.cgs_pass(Ct, Ce, z, tokens, offsets, 0.1, 0.01, temp, 17 + n, allowed, votes))
               for n, temp in enumerate((2.0, 1.0, 0.5))]
    return {"changed": changed, "z": digest(z), "Ct": digest(Ct), "Ce": digest(Ce), "votes": digest(votes)}


def run_cvi2_block(tokens, offsets, W, K, allowed, block, n_chunks):
    sent_trans, gamma = local_start(tokens, offsets, K, np.float32)
    C_trans = np.zeros((K + 1, K))
    C_emit = np.zeros((W, K))
    passes.totals_from_local(tokens, offsets, sent_trans, gamma, W, C_trans, C_emit)
    order = np.random.default_rng(4).permutation(len(offsets) - 1).astype(np.int64)
    lls = [repr(float(cvi2_block_pass(C_trans, C_emit, sent_trans, gamma, tokens, offsets, order, 0.1, 0.01,
                                      allowed, block, n_chunks))) for _ in range(SWEEPS)]
    return {"ll": lls, "C_trans": digest(C_trans), "C_emit": digest(C_emit), "sent_trans": digest(sent_trans),
            "gamma": digest(gamma)}


def run_stochastic(tokens, offsets, W, K, algorithm):
    rng = np.random.default_rng(9)
    counts = sh.GlobalCounts.exponential(rng, K, W, len(tokens))
    I = len(offsets) - 1
    heldout = sh.gather_sentences(tokens, offsets, np.arange(min(10, I)))
    if algorithm in sh.STOCHASTIC:
        updater = sh.SentenceUpdater(algorithm, 0.1, 0.01, I)
        batches = sh.sentence_batches(tokens, offsets, 16, 2, np.random.default_rng(2))
    else:
        updater = sh.SubchainUpdater(algorithm, 0.1, 0.01, tokens, 5, 2, K)
        batches = sh.minibatches(updater.n_sub, 8, np.random.default_rng(2), 1)
    result = minibatch.run(counts, updater, batches, tau=1.0, kappa=0.6, heldout=heldout, heldout_every=3,
                    alpha=0.1, beta=0.01)
    trace = [{k: repr(v) for k, v in rec.items() if "seconds" not in k} for rec in result.trace]
    out = {"batches": result.batches, "tokens_seen": result.tokens_seen, "trace": digest(
        np.frombuffer(json.dumps(trace, sort_keys=True).encode(), dtype=np.uint8))}
    out.update({name: digest(a) for name, a in counts.arrays().items()})
    out.update({f"updater.{name}": digest(a) for name, a in updater.arrays().items()})
    return out


def signatures(corpora_dir: Path | None) -> dict:
    out = {}
    for name, (tokens, offsets, W, K) in corpora(corpora_dir).items():
        allowed = tag_mask(W, K, 1)
        out[f"{name}/cvi1"] = run_cvi1(tokens, offsets, W, K, NO_MASK)
        out[f"{name}/cvi1+dict"] = run_cvi1(tokens, offsets, W, K, allowed)
        out[f"{name}/cgs"] = run_cgs(tokens, offsets, W, K, NO_MASK)
        out[f"{name}/cgs+dict"] = run_cgs(tokens, offsets, W, K, allowed)
        out[f"{name}/cvi2-block1"] = run_cvi2_block(tokens, offsets, W, K, NO_MASK, 1, 1)
        out[f"{name}/cvi2-block8"] = run_cvi2_block(tokens, offsets, W, K, NO_MASK, 8, 2)
        out[f"{name}/cvi2-block8+dict"] = run_cvi2_block(tokens, offsets, W, K, allowed, 8, 3)
        for algorithm in ("svi", "scvi", "scvi3", "svi-buffered"):
            out[f"{name}/{algorithm}"] = run_stochastic(tokens, offsets, W, K, algorithm)
    return out


def numpy_has_avx512() -> bool:
    """Whether numpy runs its AVX-512 loops here (its float64 ``exp`` among them)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # pragma: no cover - another numpy layout: take the main record
        return True
    return bool(__cpu_features__.get("AVX512F"))


def recorded() -> dict:
    """The recorded signatures for this host (see the module docstring)."""
    out = json.loads(FILE.read_text())
    if not numpy_has_avx512():
        out.update(json.loads(NO_AVX512_FILE.read_text()))
    return out


if __name__ == "__main__":
    env = os.environ.get("INDUCE_CORPORA")
    got = signatures(Path(env) if env else None)
    if numpy_has_avx512():
        FILE.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        print(f"wrote {FILE}")
    else:
        main = json.loads(FILE.read_text())
        NO_AVX512_FILE.write_text(json.dumps({k: v for k, v in got.items() if main.get(k) != v}, indent=1,
                                             sort_keys=True) + "\n")
        print(f"wrote {NO_AVX512_FILE}")
