"""Fingerprints of the series estimators' fits: a refactor's bit-for-bit check for the time-series engine.

The counterpart of ``benchmarks/fit_signatures.py`` for ``HMMSegmenter`` (em, vi, svi, scvi, cvi2, hdp-cvi,
hdp-scvi, hdp-svi), ``HSMMSegmenter`` (svi, scvi, cvi2; the negative binomial embedding's vi and svi) and
``HDPHSMMSegmenter`` (svi, scvi) on Old Faithful (Gaussian), the first 1,200 monthly sunspots (Poisson) and their
categorical codes (the cvi2 sweep of a family without a compiled predictive): SHA-256 of the fitted statistics and
of the trace, the passes run (and the score of the HMM fits).  Two checkouts agree when the outputs are equal on
the same machine::

    PYTHONPATH=/path/to/old python benchmarks/series_signatures.py > old.json
    PYTHONPATH=. python benchmarks/series_signatures.py > new.json && cmp old.json new.json
"""

import hashlib
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np

from induce.series.hdp_hsmm import HDPHSMMSegmenter
from induce.series.hsmm import HSMMSegmenter
from induce.series.segmenter import HMMSegmenter

ROOT = Path(__file__).resolve().parents[1]
CORPORA = Path(os.environ.get("INDUCE_CORPORA", ROOT.parent / "shared" / "corpora")) / "timeseries"


def digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(np.asarray(a, dtype=float)).tobytes())
    return h.hexdigest()[:16]


def signature(model, X=None) -> list:
    """Digests of the statistics and the trace, the passes run, and the score of ``X`` (when given)."""
    out = [digest(model.trans_counts_, model.stats_), digest(model.trace_), model.n_iter_]
    return out + [float(model.score(X))] if X is not None else out


def fits(faith: np.ndarray, sun: np.ndarray) -> dict:
    out = {}
    for name, X, em in (("faithful", faith, "gaussian"), ("sunspots", sun, "poisson")):
        for infer in ("em", "vi", "svi", "scvi", "cvi2", "hdp-cvi", "hdp-scvi", "hdp-svi"):
            m = HMMSegmenter(n_states=3, emission=em, infer=infer, n_iter=6, random_state=1, batch_size=4).fit(X)
            out[f"hmm/{name}/{infer}"] = signature(m, X)
        for infer in ("svi", "scvi", "cvi2"):
            out[f"hsmm/{name}/{infer}"] = signature(HSMMSegmenter(
                n_states=3, emission=em, infer=infer, n_iter=4, random_state=1, max_duration=30).fit(X[:300]))
        for infer in ("svi", "scvi"):
            out[f"hdphsmm/{name}/{infer}"] = signature(HDPHSMMSegmenter(
                n_states=4, emission=em, infer=infer, n_iter=3, random_state=1, max_duration=30).fit(X[:300]))
    codes = np.minimum(sun // 40, 5)
    for infer in ("cvi2", "svi", "scvi", "hdp-cvi", "hdp-scvi"):
        out[f"hmm/cat/{infer}"] = signature(HMMSegmenter(n_states=3, emission="categorical", infer=infer, n_iter=5,
                                                         random_state=2, batch_size=4).fit(codes))
    for infer in ("cvi2", "scvi"):
        out[f"hsmm/cat/{infer}"] = signature(HSMMSegmenter(n_states=3, emission="categorical", infer=infer, n_iter=3,
                                                           random_state=2, max_duration=20).fit(codes[:300]))
    nb = dict(n_states=3, emission="gaussian", durations="negbin", n_iter=3, random_state=4, max_duration=30)
    for infer in ("vi", "svi"):
        out[f"nbembed/{infer}"] = signature(HSMMSegmenter(negbin_samples=2, infer=infer, **nb).fit(faith[:200]))
    out["nbembed/fixed-r/vi"] = signature(HSMMSegmenter(r=2, infer="vi", **nb).fit(faith[:200]))
    return out


def main() -> None:
    faith = np.loadtxt(CORPORA / "faithful.csv", delimiter=",", skiprows=1)
    sun = np.loadtxt(CORPORA / "sunspot_month.csv", delimiter=",", skiprows=1)[:1200, 1].round()[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fits(faith, sun)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
