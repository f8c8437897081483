"""benchmarks/recovery_summary.py: the condensed recovery trace keeps every table's numbers."""

import json

import numpy as np


def _expand(rle):
    return [v for v, n in rle for _ in range(n)]


def test_run_length_round_trip_and_settle_point(benchmark_script):
    summary = benchmark_script("recovery_summary")
    eff = [10, 10, 9, 7, 7, 7, 4, 5, 4, 4, 4]
    seconds = list(np.cumsum(np.full(len(eff), 0.5)))
    run = summary.summarise_run({"dataset": 1003, "effective_states": eff, "seconds": seconds})
    assert run["effective_states_rle"] == [[10, 2], [9, 1], [7, 3], [4, 1], [5, 1], [4, 3]]
    assert _expand(run["effective_states_rle"]) == eff
    # the last change is at iteration 9 (1-based): 5 -> 4, and it never changes again
    assert run["final"] == 4 and run["settle_iteration"] == 9 and run["settle_seconds"] == 4.5
    assert run["seconds"] == 5.5 and "fit_seconds" not in run
    constant = summary.summarise_run({"dataset": 1, "effective_states": [4] * 5, "seconds": [1, 2, 3, 4, 5],
                                      "fit_seconds": 6.0, "init_objectives": [-3.0, -2.0]})
    assert constant["settle_iteration"] == 1 and constant["fit_seconds"] == 6.0
    assert constant["init_objectives"] == [-3.0, -2.0]


def test_main_adds_one_entry_per_trace(tmp_path, monkeypatch, benchmark_script):
    summary = benchmark_script("recovery_summary")
    trace = {"machine": "m", "date": "d", "args": {"runs": 2},
             "results": {"theta_pos": {"cvi": [{"dataset": 1000, "effective_states": [5, 4, 4], "seconds": [1, 2, 3]},
                                               {"dataset": 1001, "effective_states": [6, 6, 3], "seconds": [1, 2, 3]}]}}}
    path = tmp_path / "hdp_recovery_x.json"
    path.write_text(json.dumps(trace))
    out = tmp_path / "summary.json"
    out.write_text(json.dumps({"older.json": {"kept": True}}))
    monkeypatch.setattr("sys.argv", ["recovery_summary.py", str(path), "--out", str(out)])
    summary.main()
    written = json.loads(out.read_text())
    assert set(written) == {"older.json", "hdp_recovery_x.json"}
    runs = written["hdp_recovery_x.json"]["results"]["theta_pos"]["cvi"]
    assert [r["final"] for r in runs] == [4, 3] and [r["settle_iteration"] for r in runs] == [2, 3]
