"""Aligner stopping rule (tol, caps, ConvergenceWarning) and learned priors (empirical Bayes on decoded links)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from scipy import sparse
from sklearn.exceptions import ConvergenceWarning

from induce.align import WordAligner
from induce.align.direction import TrainConfig, _Trainer
from induce.cli import main
from induce.corpus.parallel import read_parallel
from induce.infer.hyper import fit_symmetric_dirichlet, log_evidence

from .test_training import TOY, _bitext


@pytest.fixture(scope="module")
def deen(corpora):
    root = corpora / "align" / "de-en"
    return [(s, t) for s, t in read_parallel(root / "test.de", root / "test.en")]


@pytest.mark.parametrize("infer,hmm_cvi", [("em", "cvi2"), ("vi", "cvi2"), ("cvi", "cvi2"), ("cvi", "cvi1")])
def test_every_stage_stops_before_its_cap(deen, infer, hmm_cvi):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        aligner = WordAligner(infer=infer, hmm_cvi=hmm_cvi, n_iter=60, n_iter_ibm1=60, tol=1e-3,
                              random_state=0).fit(deen)
    assert aligner.converged_ and 3 < aligner.n_iter_ < 60 and 3 < aligner.n_iter_ibm1_ < 60
    assert aligner.warnings_ == []
    history = aligner.forward_.history
    stages = [stage for stage, *_ in aligner.forward_.stages]
    assert [h["stage"] for h in history] == [s for s, _, n, _ in aligner.forward_.stages for _ in range(n)]
    assert stages[0] == "ibm1" and all(np.isfinite(h["log_likelihood"]) for h in history)
    if infer == "em":  # EM's log-likelihood never decreases within a stage (thesis section 3.3)
        for stage in stages:
            ll = [h["log_likelihood"] for h in history if h["stage"] == stage]
            assert all(b >= a - 1e-9 * abs(a) for a, b in zip(ll, ll[1:])), stage


def test_the_cap_warns_and_tol_zero_runs_every_pass():
    with pytest.warns(ConvergenceWarning, match="align forward ibm1 em: not converged after 2 passes"):
        aligner = WordAligner(infer="em", n_iter=2, n_iter_ibm1=2, tol=1e-14).fit(TOY)
    assert not aligner.converged_ and aligner.n_iter_ == 2 and len(aligner.warnings_) == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fixed = WordAligner(model="ibm1", infer="cvi", n_iter=7, tol=0).fit(TOY)
    assert fixed.n_iter_ == 7 and fixed.n_iter_ibm1_ == 0 and len(fixed.forward_.history) == 7


def _sample_ibm1(a: float, n_src: int = 40, n_tgt: int = 150, n_pairs: int = 2000, length: int = 6, seed: int = 0):
    """Pairs from IBM Model 1 whose translation rows (NULL's included) were drawn from Dir(a) over the target words."""
    rng = np.random.default_rng(seed)
    table = rng.dirichlet(np.full(n_tgt, a), size=n_src + 1)
    cum = np.cumsum(table, axis=1)
    src = rng.integers(0, n_src, size=(n_pairs, length))
    links = rng.integers(0, length + 1, size=(n_pairs, length))  # 0 = NULL
    rows = np.where(links == 0, 0, np.take_along_axis(src, np.maximum(links - 1, 0), axis=1) + 1)
    tgt = (rng.random((n_pairs, length, 1)) > cum[rows]).sum(-1)
    return [([f"e{x}" for x in s], [f"f{x}" for x in t]) for s, t in zip(src, tgt)]


@pytest.mark.parametrize("a", [0.01, 0.05])
@pytest.mark.parametrize("infer", ["vi", "cvi"])
def test_ibm1_learned_prior_recovers_a_known_concentration(a, infer):
    """Within a factor 2 (decoded links underestimate denser rows: 0.2 comes out near 0.07,
    docs/experiments/alignment.md)."""
    aligner = WordAligner(model="ibm1", infer=infer, symmetrize="forward", learn_hyper=True, n_iter=50,
                          tol=1e-3).fit(_sample_ibm1(a))
    assert aligner.learned_hyper_ == ("alpha",)
    assert a / 2 < aligner.alpha_["forward"] < 2 * a
    assert [h["alpha"] for h in aligner.forward_.history][-1] == aligner.alpha_["forward"]


def test_decoded_counts_and_their_evidence():
    """The trainer's evidence is that of the Viterbi links' counts (row = source word + 1, NULL = 0), and
    the jump counts are the widths between consecutive non-NULL links from position 0."""
    bitext, n_src, n_tgt = _bitext(TOY)
    trainer = _Trainer(bitext, n_src, n_tgt, TrainConfig(model="hmm", infer="cvi", learn=("alpha", "jump_alpha")),
                       np.random.default_rng(0), lambda n: None)
    params = trainer.train_cvi()
    links = params.viterbi(bitext)
    sentence = np.repeat(np.arange(bitext.n_pairs), np.diff(bitext.tgt_off))
    rows = [0 if i < 0 else bitext.src_tok[bitext.src_off[s] + i] + 1 for s, i in zip(sentence, links)]
    counts = sparse.csr_matrix((np.ones(len(rows)), (rows, bitext.tgt_tok)), shape=(n_src + 1, n_tgt))
    dense = counts.toarray()
    assert log_evidence(counts, 0.3) == pytest.approx(log_evidence(dense, 0.3))
    assert fit_symmetric_dirichlet(counts, 1.0) == pytest.approx(fit_symmetric_dirichlet(dense, 1.0))
    expected = np.zeros(15)
    for s in range(bitext.n_pairs):
        previous = 0
        for i in links[bitext.tgt_off[s]:bitext.tgt_off[s + 1]]:
            if i >= 0:
                expected[np.clip(i + 1 - previous, -7, 7) + 7] += 1
                previous = i + 1
    np.testing.assert_array_equal(trainer._jump_counts(links, sentence), expected)


def test_given_priors_are_held_and_em_learns_nothing(tmp_path):
    aligner = WordAligner(infer="cvi", alpha=0.01, learn_hyper=True, n_iter=3, n_iter_ibm1=3, tol=0).fit(TOY)
    assert aligner.learned_hyper_ == ("jump_alpha",) and aligner.alpha_ == {"forward": 0.01, "reverse": 0.01}
    aligner.save(tmp_path / "a.npz")
    again = WordAligner.load(tmp_path / "a.npz")
    assert again.alpha_ == aligner.alpha_ and again.jump_alpha_ == aligner.jump_alpha_
    assert aligner.jump_alpha_ != {"forward": 0.1, "reverse": 0.1}
    assert WordAligner(infer="em", learn_hyper=True, tol=0).fit(TOY).learned_hyper_ == ()
    default = WordAligner(tol=0).fit(TOY)
    assert default.alpha_ == {"forward": 1e-4, "reverse": 1e-4} and default.learned_hyper_ == ()


def test_cli_reports_passes_convergence_priors_and_the_cap_warning(tmp_path, capsys):
    src, tgt = tmp_path / "s.txt", tmp_path / "t.txt"
    src.write_text("\n".join(" ".join(s) for s, _ in TOY) + "\n")
    tgt.write_text("\n".join(" ".join(t) for _, t in TOY) + "\n")
    out = tmp_path / "o.align"
    rc = main(["align", str(src), str(tgt), "-o", str(out), "--json", "--quiet", "--model", "hmm", "--infer", "cvi",
               "--iterations", "2", "--ibm1-iterations", "2", "--tol", "1e-14", "--learn-hyper", "all"])
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert rc == 0 and result["iterations"] == 2 and result["ibm1_iterations"] == 2 and result["converged"] is False
    assert result["learned"] == ["alpha", "jump_alpha"] and set(result["alpha"]) == {"forward", "reverse"}
    assert len(result["warnings"]) == 4 and captured.err.count("induce: warning: align") == 4
