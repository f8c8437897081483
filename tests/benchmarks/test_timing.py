"""benchmarks/timing.py: peers alternate with a rotated order, every timing carries its load, high load is marked."""

def test_rounds_rotate_the_order_and_summaries_take_medians(monkeypatch, benchmark_script):
    timing = benchmark_script("timing")
    loads = iter([0.2, 0.3, 0.3, 0.4, 1.6, 1.7, 0.5, 0.5, 0.5, 0.6, 0.6, 0.7])  # before, after each timing
    monkeypatch.setattr(timing, "load", lambda: next(loads))
    calls = []

    def peer(name, wall):
        return lambda: (calls.append(name), (wall[len([c for c in calls if c == name]) - 1], 0.5))[1]

    table = timing.alternate({"a": peer("a", [3.0, 1.0, 2.0]), "b": peer("b", [5.0, 4.0, 6.0])}, 3, log=lambda s: None)
    assert calls == ["a", "b", "b", "a", "a", "b"]
    assert table["a"]["wall"] == 2.0 and table["a"]["wall_min"] == 1.0 and table["a"]["cpu"] == 0.5
    assert table["b"]["wall"] == 5.0 and table["b"]["wall_max"] == 6.0
    # the third timing (b, load 1.6 -> 1.7) ran above 1.5: b is marked, a is not
    assert table["b"]["loaded"] and table["b"]["max_load"] == 1.7 and table["b"]["runs"][1]["loaded"]
    assert not table["a"]["loaded"] and table["a"]["max_load"] == 0.6
