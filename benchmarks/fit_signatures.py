"""Estimator-level fingerprints of every HMMTagger and HDPHMMTagger algorithm: a refactor's bit-for-bit check.

For each fit on a small demo corpus (tag dictionary, learned priors, block cvi2, cgs votes, held-out stop,
HDP merges and asymmetric prior included) it prints a SHA-256 of the parameters, counts, labels and trace
(times left out), with the learned hyperparameters, passes, convergence flag and warnings.  Two checkouts
agree bit for bit when their outputs are equal on the same machine (thread counts change float sums)::

    PYTHONPATH=/path/to/old python benchmarks/fit_signatures.py > old.json
    PYTHONPATH=. python benchmarks/fit_signatures.py > new.json && cmp old.json new.json

``tests/infer/test_pass_signatures.py`` checks the compiled passes themselves against recorded values.
"""

import hashlib
import json
import sys
import warnings

import numpy as np

from induce.corpus.demo import demo_corpus
from induce.taggers import HMMTagger
from induce.taggers.hdp_hmm import HDPHMMTagger
from induce.taggers.tag_dict import TagDictionary

FITTED = ("transitions_", "emissions_", "labels_", "transition_counts_", "emission_counts_")
SCALARS = ("alpha_", "beta_", "gamma_", "sigma_", "emission_concentration_", "bound_", "stick_u_", "stick_v_",
           "state_prior_")


def digest(a) -> str:
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()[:16]


def signature(model) -> dict:
    out = {k: digest(getattr(model, k)) for k in FITTED if getattr(model, k, None) is not None}
    trace = [{k: repr(v) if isinstance(v, float) else v for k, v in r.items()
              if "seconds" not in k and k != "tokens_per_s"} for r in model.trace_]
    out["trace"] = hashlib.sha256(json.dumps(trace, default=str, sort_keys=True).encode()).hexdigest()[:16]
    out |= {k: repr(np.asarray(getattr(model, k)).tolist()) for k in SCALARS if hasattr(model, k)}
    return out | {"n_iter": model.n_iter_, "converged": model.converged_, "warnings": list(model.warnings_)}


def models(gold: str) -> dict:
    """``name -> (estimator, uses the tag dictionary)``."""
    base = dict(n_states=6, n_iter=8, random_state=3, eval_column=gold)
    minibatch = dict(n_states=6, n_epochs=3, batch_size=20, random_state=2, subseq_length=8, buffer=2)
    out = {a: (HMMTagger(infer=a, **base), False) for a in ("em", "vi", "cvi1", "cvi2", "cgs", "cvi3")}
    out |= {a: (HMMTagger(infer=a, **minibatch), False)
            for a in ("svi", "scvi", "scvi3", "scvi3-vanilla", "svi-buffered", "svi-vanilla")}
    out |= {f"{a}+dict": (HMMTagger(infer=a, **base), True) for a in ("em", "cvi2", "cgs")}
    out |= {
        "em-ml": (HMMTagger(infer="em", map_estimate=False, alpha=0.5, beta=0.1, **base), False),
        "em-learn": (HMMTagger(infer="em", learn_hyper=True, hyper_burn_in=2, **base), False),
        "cvi2-block": (HMMTagger(infer="cvi2", cvi2_block=4, order="shuffle", **base), False),
        "cvi2-perstate": (HMMTagger(infer="cvi2", learn_hyper="per-state", hyper_burn_in=1, **base), False),
        "cgs-keep": (HMMTagger(infer="cgs", cgs_keep=3, learn_hyper=True, hyper_burn_in=2, **base), False),
        "cvi1-viterbi": (HMMTagger(infer="cvi1", decode="viterbi", **base), False),
        "vi-tol": (HMMTagger(infer="vi", n_iter=200, tol=1e-3, n_states=6, random_state=1), False),
        "svi-noheld": (HMMTagger(infer="svi", n_states=6, n_epochs=2, batch_size=20, heldout_fraction=0.0,
                                 random_state=2), False),
        "svi+dict": (HMMTagger(infer="svi", n_epochs=2, batch_size=20), True),
    }
    hdp = dict(truncation=8, n_iter=6, random_state=4)
    out |= {f"hdp-{a}": (HDPHMMTagger(infer=a, **hdp), False) for a in ("cvi", "scvi", "svi", "beam")}
    out |= {
        "hdp-scvi-nomem": (HDPHMMTagger(infer="scvi", scvi_memory=False, **(hdp | {"n_iter": 12})), False),
        "hdp-scvi-asym": (HDPHMMTagger(infer="scvi", emission_prior="asymmetric", **hdp), False),
        "hdp-cvi-asym": (HDPHMMTagger(infer="cvi", emission_prior="asymmetric", **hdp), False),
        "hdp-scvi-mem": (HDPHMMTagger(infer="scvi", truncation=8, n_iter=30, random_state=5), False),
    }
    return out


def main() -> None:
    corpus = demo_corpus(150, seed=1)
    gold = sorted(corpus.tags)[0]
    tag_dict = TagDictionary.from_gold(corpus, gold)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (model, with_dict) in models(gold).items():
            out[name] = signature(model.fit(corpus, tag_dict=tag_dict) if with_dict else model.fit(corpus))
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
