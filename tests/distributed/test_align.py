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


def test_sparse_sums_add_as_numpy_does():
    """The tree sums' addition (:func:`induce.kernels.wire.add_sparse`) is numpy's union and scatter-add bit for
    bit: overlapping, disjoint, one-sided and empty id sets, of values and of rows."""
    from induce.kernels.wire import add_sparse

    rng = np.random.default_rng(3)
    for n, m, top in [(50, 70, 100), (40, 40, 1000), (0, 5, 10), (5, 0, 10), (0, 0, 1), (30, 30, 30)]:
        ia, ib = (np.sort(rng.choice(top, size=k, replace=False)).astype(np.int64) for k in (n, m))
        va, vb = rng.random(n) * 10.0 ** rng.integers(-8, 8, n), rng.random(m) * 10.0 ** rng.integers(-8, 8, m)
        ids, vals = add_sparse(ia, va, ib, vb)
        want = np.union1d(ia, ib)
        total = np.zeros(len(want))
        total[np.searchsorted(want, ia)] += va
        total[np.searchsorted(want, ib)] += vb
        np.testing.assert_array_equal(ids, want)
        np.testing.assert_array_equal(vals.view(np.int64), total.view(np.int64))
        ra, rb = np.outer(va, [1.0, 3.0, 0.1]), np.outer(vb, [2.0, 0.7, 5.0])  # rows (the em / cvi2 counts)
        rows = np.zeros((len(want), 3))
        rows[np.searchsorted(want, ia)] += ra
        rows[np.searchsorted(want, ib)] += rb
        got_ids, got = add_sparse(ia, ra, ib, rb)
        np.testing.assert_array_equal(got_ids, want)
        np.testing.assert_array_equal(got.view(np.int64), rows.view(np.int64))


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


@pytest.fixture(scope="module")
def files(tmp_path_factory, pairs):
    """The bitext as two line-aligned files (a blank pair and an over-long one included) and as one
    'source ||| target' file."""
    root = tmp_path_factory.mktemp("bitext")
    extra = [([], []), (["s1"] * 30, ["t1"] * 30)]
    rows = pairs[:40] + extra + pairs[40:]
    (root / "src.txt").write_text("".join(" ".join(s).upper() + "\n" for s, _ in rows))
    (root / "tgt.txt").write_text("".join(" ".join(t) + "\n" for _, t in rows))
    (root / "both.txt").write_text("".join(" ".join(s) + " ||| " + " ".join(t) + "\n" for s, t in rows if s))
    return root


def test_line_cuts_keep_the_files_line_aligned(files):
    from induce.corpus.parallel import read_parallel
    from induce.distributed.shards import line_cuts, range_file

    src, tgt = files / "src.txt", files / "tgt.txt"
    whole = list(read_parallel(src, tgt))
    for n in (1, 2, 3, 7):
        cuts = line_cuts(src, tgt, n)
        assert len(cuts) == n and all(a[1] > 0 and b[1] > 0 for a, b in cuts[1:])
        got = []
        for a, b in cuts:
            with range_file(*a) as s, range_file(*b) as t:
                got += list(read_parallel(s, t))
        assert got == whole


@pytest.mark.parametrize("two_files", [True, False])
@pytest.mark.parametrize("model", ["ibm1", "hmm"])
def test_workers_read_their_pairs_from_the_files(client, files, two_files, model, submitted):
    """Pairs from files (as the command line reads them): the workers read their line ranges and look their
    cells up; the client submits no token or cell array (only the tables' columns), and the fit equals the
    single-process one."""
    from induce.align.aligner import PairSource

    source = (PairSource(str(files / "src.txt"), str(files / "tgt.txt"), lowercase=True, max_length=20)
              if two_files else PairSource(str(files / "both.txt")))
    every = source.pairs()
    kept = [every[k] for k in source.kept(every)]
    assert len(kept) == len(every) - two_files  # (the over-long pair)
    kw = dict(model=model, infer="em", n_iter=3, n_iter_ibm1=2, symmetrize="intersection", random_state=0)
    ref = WordAligner(**kw).fit(kept)
    submitted.clear()
    got = WordAligner(client=client, **kw).fit(kept, source)
    ints = [a for a in submitted if a.dtype.kind in "iu" and a.size]
    assert ints and all(any(a is d.cols or a is d.row_ptr for d in (got.forward_, got.reverse_)) for a in ints)
    for a, b in ((got.forward_, ref.forward_), (got.reverse_, ref.reverse_)):
        np.testing.assert_allclose(a.values, b.values, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(a.weights, b.weights, rtol=1e-10)
    assert got.align(kept) == ref.align(kept)


@pytest.mark.parametrize("case", ["changed", "unreadable"])
def test_changed_or_unreadable_parallel_files_are_shipped(client, files, tmp_path, case, monkeypatch):
    """Files changed since the client read them, or not readable on the workers: the pairs are shipped, with a
    warning, and the fit is the single-process one."""
    from induce.align.aligner import PairSource
    from induce.distributed import align
    from tests.distributed.test_shards import _unreadable

    (tmp_path / "src.txt").write_text((files / "src.txt").read_text())
    (tmp_path / "tgt.txt").write_text((files / "tgt.txt").read_text().replace("t1 ", "t2 "))
    kept = PairSource(str(tmp_path / "src.txt"), str(files / "tgt.txt" if case == "changed" else
                                                       tmp_path / "tgt.txt")).pairs()
    source = PairSource(str(tmp_path / "src.txt"), str(tmp_path / "tgt.txt"))
    if case == "unreadable":
        submit = client.submit
        monkeypatch.setattr(client, "submit", lambda fn, *a, **k: submit(_unreadable if fn is align._read_pairs
                                                                         else fn, *a, **k))
    kw = dict(model="ibm1", infer="em", n_iter=2, symmetrize="forward")
    ref = WordAligner(**kw).fit(kept)
    with pytest.warns(UserWarning, match="shipped"):
        got = WordAligner(client=client, **kw).fit(kept, source)
    np.testing.assert_allclose(got.forward_.values, ref.forward_.values, rtol=1e-10, atol=1e-14)
