"""``induce segment --model hsmm`` end to end: states, segments file, save/load, bad settings."""

import csv
import json

import numpy as np
import pytest

from induce.cli import main

from .test_fit import sample_hsmm


def test_segment_hsmm_writes_states_segments_and_model(tmp_path, capsys):
    x, _ = sample_hsmm(400, np.random.default_rng(2))
    series = tmp_path / "s.csv"
    series.write_text("x\n" + "\n".join(f"{v:.4f}" for v in x[:, 0]) + "\n")
    out, segs, model = tmp_path / "o.csv", tmp_path / "segs.csv", tmp_path / "m.npz"
    args = [str(series), "--model", "hsmm", "--infer", "em", "--durations", "poisson", "--max-duration", "60",
            "--states", "3", "--iterations", "20"]
    extra = ["-o", str(out), "--segments", str(segs), "--save-model", str(model), "--json"]
    assert main(["segment"] + args + extra) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["durations"] == "poisson" and len(summary["mean_durations"]) == 3
    states = [int(r["state"]) for r in csv.DictReader(out.open())]
    rows = [tuple(map(int, (r["sequence"], r["start"], r["end"], r["state"]))) for r in csv.DictReader(segs.open())]
    # the segments tile the series, consecutive states differ, and they agree with the state column
    assert rows[0][1] == 0 and rows[-1][2] == len(states)
    assert all(a[2] == b[1] and a[3] != b[3] for a, b in zip(rows, rows[1:]))
    assert all(states[s:e] == [k] * (e - s) for _, s, e, k in rows)
    out2 = tmp_path / "o2.csv"
    assert main(["segment", str(series), "--model", "hsmm", "--load", str(model), "-o", str(out2)]) == 0
    assert out2.read_text() == out.read_text()


def test_segment_hsmm_rejects_bad_settings(tmp_path, capsys):
    series = tmp_path / "s.csv"
    series.write_text("x\n1\n2\n3\n4\n")
    assert main(["segment", str(series), "--model", "hsmm", "--infer", "hdp-svi"]) == 2
    assert "induce: error" in capsys.readouterr().err
    assert main(["segment", str(series), "--model", "hsmm", "--states", "1"]) == 2


def test_segment_hsmm_negbin_learned_and_fixed_r(tmp_path, capsys):
    x, _ = sample_hsmm(300, np.random.default_rng(3))
    series = tmp_path / "s.csv"
    series.write_text("x\n" + "\n".join(f"{v:.4f}" for v in x[:, 0]) + "\n")
    base = ["segment", str(series), "--model", "hsmm", "--durations", "negbin", "--infer", "vi", "--iterations", "5",
            "--json"]
    assert main(base + ["--negbin-samples", "2", "--max-r", "6"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert len(summary["negbin_r"]) == 3 and all(1 <= r <= 6 for r in summary["negbin_r"])
    assert main(base + ["--negbin-r", "3"]) == 0
    assert json.loads(capsys.readouterr().out)["negbin_r"] == [3.0, 3.0, 3.0]
    with pytest.raises(SystemExit) as exc:  # refused by the option type, before any work
        main(base + ["--negbin-samples", "-1"])
    assert exc.value.code == 2
    assert "--negbin-samples: expected a non-negative integer" in capsys.readouterr().err
