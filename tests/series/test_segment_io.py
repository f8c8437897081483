"""Readers, model files and the ``induce segment`` command end to end."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from induce.cli import main
from induce.errors import ConfigError, CorpusFormatError, ModelFormatError
from induce.series import HMMSegmenter, read_series


def _write(path, text):
    path.write_text(text)
    return path


def test_csv_blank_lines_and_id_column_separate_sequences(tmp_path):
    t = read_series(_write(tmp_path / "a.csv", "a,b\n1,2\n3,4\n\n5,6\n"), ["b"])
    assert [s.tolist() for s in t.sequences] == [[[2.0], [4.0]], [[6.0]]]
    t = read_series(_write(tmp_path / "b.tsv", "id\tx\ns1\t1\ns1\t2\ns2\t3\n"), None, "id")
    assert [s.ravel().tolist() for s in t.sequences] == [[1.0, 2.0], [3.0]]
    assert t.seq_of_row == [0, 0, 1]


@pytest.mark.parametrize("text,line",
                         [("x\n1\n\n2\nNA\n", 5), ("x\n1\nabc\n", 3), ("x,y\n1,2\n3\n", 3), ("x\n1\ninf\n", 3)])
def test_csv_bad_values_name_file_and_line(tmp_path, text, line):
    path = _write(tmp_path / "bad.csv", text)
    with pytest.raises(CorpusFormatError, match=rf"bad.csv:{line}: expected"):
        read_series(path)


def test_csv_unknown_column_and_numpy_inputs(tmp_path):
    with pytest.raises(CorpusFormatError, match="columns"):
        read_series(_write(tmp_path / "a.csv", "a\n1\n"), ["z"])
    np.save(tmp_path / "one.npy", np.arange(6.0).reshape(3, 2))
    assert read_series(tmp_path / "one.npy").sequences[0].shape == (3, 2)
    np.savez(tmp_path / "two.npz", a=np.arange(3.0), b=np.arange(4.0))
    assert [s.shape for s in read_series(tmp_path / "two.npz").sequences] == [(3, 1), (4, 1)]
    np.save(tmp_path / "nan.npy", np.array([1.0, np.nan]))
    with pytest.raises(CorpusFormatError):
        read_series(tmp_path / "nan.npy")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", ["gaussian", "diag-gaussian", "poisson", "categorical"])
def test_save_load_round_trip(tmp_path, name):
    rng = np.random.default_rng(0)
    X = rng.poisson(3.0, size=(80, 1 if name == "categorical" else 2)).astype(float)
    m = HMMSegmenter(2, name, infer="vi", n_iter=5, tol=0.0).fit(X)
    m.save(tmp_path / "m.npz")
    back = HMMSegmenter.load(tmp_path / "m.npz")
    assert back.get_params() == {**m.get_params(), "emission": name}
    np.testing.assert_array_equal(back.predict(X), m.predict(X))
    assert back.score(X) == pytest.approx(m.score(X), rel=1e-12)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_tampered_model_is_rejected(tmp_path):
    m = HMMSegmenter(2, "gaussian", infer="em", n_iter=3).fit(np.random.default_rng(1).normal(size=(50, 2)))
    m.save(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as data:
        arrays = {k: data[k] for k in data.files}
    arrays["stats"] = arrays["stats"][:, :3]
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ModelFormatError, match="stats"):
        HMMSegmenter.load(tmp_path / "bad.npz")
    arrays["stats"] = np.full((2, 7), np.nan)
    np.savez(tmp_path / "nan.npz", **arrays)
    with pytest.raises(ModelFormatError):
        HMMSegmenter.load(tmp_path / "nan.npz")
    with pytest.raises(ConfigError):
        HMMSegmenter(0).fit(np.zeros((5, 1)))
    with pytest.raises(ConfigError, match="same columns"):
        HMMSegmenter(2).fit([np.zeros((5, 1)), np.zeros((5, 2))])
    with pytest.raises(ConfigError, match="not fitted"):
        HMMSegmenter(2).predict(np.zeros((5, 1)))


def test_cli_nile_switches_once_near_1898(tmp_path, corpora, capsys):
    out = tmp_path / "nile.csv"
    summary = tmp_path / "s.json"
    rc = main(["segment", str(corpora / "timeseries" / "nile.csv"), "-o", str(out), "--columns", "value",
               "--states", "2", "--infer", "em", "--posteriors", "--json", str(summary),
               "--save-model", str(tmp_path / "m.npz")])
    assert rc == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 100 and set(rows[0]) == {"time", "value", "state", "p_state_0", "p_state_1"}
    states = [int(r["state"]) for r in rows]
    switches = [int(rows[t]["time"]) for t in range(1, 100) if states[t] != states[t - 1]]
    assert len(switches) == 1 and 1897 <= switches[0] <= 1900
    info = json.loads(summary.read_text())
    assert info["states"] == 2 and info["steps"] == 100
    rc = main(["segment", str(corpora / "timeseries" / "nile.csv"), "--columns", "value", "--load",
               str(tmp_path / "m.npz"), "--heldout", "0.2", "--json"])
    assert rc == 0
    assert "heldout_loglik_per_step" in json.loads(capsys.readouterr().out)


def test_cli_errors_exit_2(tmp_path, capsys):
    bad = _write(tmp_path / "bad.csv", "x\n1\n2\n?\n")
    assert main(["segment", str(bad)]) == 2
    assert "bad.csv:4: expected a finite number" in capsys.readouterr().err
    for argv in (["--states", "0"], ["--heldout", "1.5"], ["--infer", "gibbs"], ["--tol", "-1"]):
        with pytest.raises(SystemExit) as exc:
            main(["segment", str(bad)] + argv)
        assert exc.value.code == 2


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("emission", ["gaussian", "diag-gaussian", "poisson", "categorical"])
def test_cli_every_family_runs_every_algorithm(tmp_path, corpora, capsys, emission):
    series = corpora / "timeseries" / "lynx.csv"
    for infer in ("em", "vi", "cvi2", "svi", "scvi", "hdp-cvi", "hdp-scvi", "hdp-svi"):
        out = tmp_path / f"{infer}.csv"
        rc = main(["segment", str(series), "--columns", "value", "--emission", emission, "--infer", infer,
                   "--states", "2", "--iterations", "3", "--heldout", "0.2", "--decode", "posterior",
                   "-o", str(out), "--json"])
        assert rc == 0
        info = json.loads(capsys.readouterr().out)
        assert np.isfinite(info["heldout_loglik_per_step"]) and sum(info["state_counts"]) == 114
        assert len(list(csv.DictReader(out.open()))) == 114


def test_cli_round_makes_decimal_counts_poisson_ready(tmp_path, capsys):
    series = _write(tmp_path / "c.csv", "v\n1.0\n2.4\n3.6\n10.2\n11\n9.9\n")
    assert main(["segment", str(series), "--emission", "poisson", "--states", "2", "--infer", "em"]) == 2
    assert "c.csv:3: expected non-negative integer counts; got '[2.4]'" in capsys.readouterr().err
    assert main(["segment", str(series), "--emission", "poisson", "--states", "2", "--infer", "em", "--round",
                 "--json"]) == 0


def test_cli_segment_report_shows_the_series_and_the_warnings_go_to_the_json(tmp_path, corpora):
    report, summary = tmp_path / "nile.html", tmp_path / "nile.json"
    rc = main(["segment", str(corpora / "timeseries" / "nile.csv"), "--columns", "value", "--states", "2",
               "--iterations", "2", "--report", str(report), "--json", str(summary)])
    assert rc == 0
    html = report.read_text()
    assert 'id="series"' in html and 'id="convergence"' in html
    import json

    assert any("not converged after 2 passes" in w for w in json.loads(summary.read_text())["warnings"])


def test_cli_model_hdp_hmm_is_the_hdp_algorithms(corpora, capsys):
    """``--model hdp-hmm`` (default cvi) runs the HDP-HMM as ``--infer hdp-*`` does, with its effective states."""
    series = str(corpora / "timeseries" / "nile.csv")
    base = ["segment", series, "--states", "6", "--iterations", "5", "--json"]
    runs = {}
    for extra in (["--model", "hdp-hmm"], ["--infer", "hdp-cvi"], ["--model", "hdp-hmm", "--infer", "scvi"]):
        assert main(base + extra) == 0
        runs[" ".join(extra)] = json.loads(capsys.readouterr().out)
    assert runs["--model hdp-hmm"]["infer"] == "hdp-cvi"
    assert runs["--model hdp-hmm"]["state_counts"] == runs["--infer hdp-cvi"]["state_counts"]
    assert runs["--model hdp-hmm --infer scvi"]["infer"] == "hdp-scvi"
    assert all(1 <= r["effective_states"] <= 6 for r in runs.values())
    assert main(base + ["--model", "hdp-hmm", "--infer", "vi"]) == 2
    assert "--model hdp-hmm runs --infer cvi, scvi, svi" in capsys.readouterr().err
    assert main(base + ["--model", "hsmm", "--infer", "hdp-cvi"]) == 2
