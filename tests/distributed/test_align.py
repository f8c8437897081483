"""Word alignment em / vi with the E-steps on a dask LocalCluster (induce.distributed.align)."""

import numpy as np
import pytest

pytest.importorskip("distributed")

from induce.align import WordAligner  # noqa: E402
from induce.errors import ConfigError  # noqa: E402


def sample_bitext():
    """A bitext from a hidden one-to-one lexicon with some reordering."""
    rng = np.random.default_rng(0)
    pairs = []
    for _ in range(80):
        n = int(rng.integers(3, 9))
        src = rng.integers(0, 30, size=n)
        perm = np.arange(n)
        if n > 3:
            i = int(rng.integers(0, n - 1))
            perm[[i, i + 1]] = perm[[i + 1, i]]
        pairs.append(([f"s{w}" for w in src], [f"t{w}" for w in src[perm]]))
    return pairs


@pytest.fixture(scope="module")
def pairs():
    return sample_bitext()


@pytest.mark.parametrize("model,infer", [("ibm1", "em"), ("hmm", "em"), ("hmm", "vi")])
def test_cluster_equals_single_process(client, pairs, model, infer, tmp_path):
    kw = dict(model=model, infer=infer, n_iter=3, n_iter_ibm1=2, symmetrize="intersection", random_state=0)
    ref = WordAligner(**kw).fit(pairs)
    got = WordAligner(client=client, **kw).fit(pairs)
    for a, b in ((got.forward_, ref.forward_), (got.reverse_, ref.reverse_)):
        np.testing.assert_allclose(a.values, b.values, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(a.weights, b.weights, rtol=1e-10)
        assert [h["log_likelihood"] for h in a.history] == pytest.approx([h["log_likelihood"] for h in b.history],
                                                                         rel=1e-12)
    assert got.align(pairs) == ref.align(pairs)
    got.save(tmp_path / "m.npz")  # the client is not part of the model
    assert WordAligner.load(tmp_path / "m.npz").align(pairs[:5]) == ref.align(pairs[:5])


def test_cvi_on_a_cluster_is_a_config_error(client, pairs):
    with pytest.raises(ConfigError, match="cluster"):
        WordAligner(infer="cvi", client=client).fit(pairs)
