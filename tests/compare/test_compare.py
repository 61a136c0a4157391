"""``blockbench compare``: direction-aware regression checks between two results tables."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from ablations.results.store import COLUMNS
from ablations.tools import compare as C


def row(metric, value, variant="rmsnorm", sweep="norm", mode="train", batch=1, seq_len=512, unit="s", **extra):
    return dict(dict.fromkeys(COLUMNS), sweep=sweep, variant=variant, metric=metric, mode=mode, batch=batch,
                seq_len=seq_len, value=value, unit=unit, status="ok", **extra)


def write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows, columns=COLUMNS).to_csv(path, index=False)
    return path


BASE = [
    row("latency", 0.100),
    row("latency_ratio", 1.05, unit="x", lo=1.0, hi=1.1),
    row("throughput", 5000.0, unit="tokens/s"),
    row("decode_latency_ratio", 0.5, mode="decode", batch=4, seq_len=4096, unit="x"),
    row("flops", 1e9, unit="FLOP"),
    row("params", 7_000_000, mode="", batch=None, seq_len=None, unit="count"),
    row("matmul_peak", 9e10, mode="2048x2048", batch=None, seq_len=None, unit="FLOP/s"),
]


def changed(metric, factor, rows=BASE):
    return [dict(r, value=r["value"] * factor) if r["metric"] == metric else r for r in rows]


def run_main(tmp_path, old_rows, new_rows, *flags):
    old = write(tmp_path / "old" / "results.csv", old_rows)
    new = write(tmp_path / "new" / "results.csv", new_rows)
    return C.main([str(old), str(new), *flags])


def test_identical_tables_pass(tmp_path, capsys):
    assert run_main(tmp_path, BASE, BASE) == 0
    assert "OK: no metric regressed" in capsys.readouterr().out


@pytest.mark.parametrize("metric,factor", [
    ("latency", 2.0),            # time up = worse
    ("latency_ratio", 1.3),      # the variant lost ground against the baseline
    ("throughput", 0.5),         # tokens/s down = worse
    ("decode_latency_ratio", 1.5),
    ("flops", 1.1),              # deterministic: more math for the same variant
    ("params", 1.05),
])
def test_a_worse_metric_fails_and_says_which_by_how_much(tmp_path, capsys, metric, factor):
    assert run_main(tmp_path, BASE, changed(metric, factor)) == 1
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("REGRESSED"))
    assert f"REGRESSED {metric} " in line and "variant=rmsnorm" in line and "sweep=norm" in line
    pct = abs(factor - 1) * 100
    assert f"{pct:.1f}%" in line
    assert "FAIL: 1 regression(s)" in out


@pytest.mark.parametrize("metric,factor", [("latency", 0.5), ("throughput", 2.0), ("latency_ratio", 0.8),
                                           ("flops", 0.9)])
def test_a_better_metric_passes(tmp_path, metric, factor):
    assert run_main(tmp_path, BASE, changed(metric, factor)) == 0


def test_changes_within_the_default_thresholds_pass(tmp_path):
    new = changed("latency", 1.3, changed("latency_ratio", 1.08, changed("throughput", 0.8)))
    assert run_main(tmp_path, BASE, new) == 0


def test_threshold_flags_override_defaults_by_name_or_glob(tmp_path):
    new = changed("latency", 1.3)
    assert run_main(tmp_path, BASE, new, "--threshold", "latency=20") == 1
    assert run_main(tmp_path, BASE, new, "-t", "*latency=20", "-t", "latency=40") == 0  # the last flag wins
    assert run_main(tmp_path, BASE, changed("latency_ratio", 1.08), "-t", "*_ratio=5%") == 1


def test_throughput_threshold_is_a_drop_in_percent_of_the_old_rate():
    assert C.worse_pct(100.0, 60.0, C.LOWER_IS_WORSE) == pytest.approx(40.0)
    assert C.worse_pct(1.0, 1.5, C.HIGHER_IS_WORSE) == pytest.approx(50.0)
    assert C.worse_pct(0.0, 0.0, C.HIGHER_IS_WORSE) == 0.0


def test_machine_metrics_are_noted_not_failed(tmp_path, capsys):
    assert run_main(tmp_path, BASE, changed("matmul_peak", 0.5)) == 0
    assert "matmul_peak moved -50%" in capsys.readouterr().out


def test_rows_are_matched_on_shape_and_mode(tmp_path, capsys):
    other_shape = [dict(r, batch=4) if r["metric"] == "latency" else r for r in changed("latency", 3.0)]
    # The 3x slower latency is at another shape: nothing to match, so no regression, and it is reported.
    assert run_main(tmp_path, BASE, other_shape) == 0
    out = capsys.readouterr().out
    assert "ONLY IN OLD" in out and "ONLY IN NEW" in out


def test_duplicate_rows_reduce_to_their_median(tmp_path):
    old = [*BASE, row("latency", 0.1, seed=1), row("latency", 0.1, seed=2)]
    new = [*BASE, row("latency", 0.1, seed=1), row("latency", 9.0, seed=2)]  # one outlier among three
    assert run_main(tmp_path, old, new) == 0


def test_a_point_that_fails_now_is_a_regression(tmp_path, capsys):
    new = [*BASE, dict(row("latency", None, variant="gqa"), status="failed", error="boom")]
    assert run_main(tmp_path, BASE, new) == 1
    assert "point fails in NEW but not in OLD: sweep=norm variant=gqa" in capsys.readouterr().out


def test_a_run_folder_with_points_only_is_read(tmp_path):
    write(tmp_path / "old" / "points" / "a.csv", BASE[:3])
    write(tmp_path / "old" / "points" / "b.csv", BASE[3:])
    new = write(tmp_path / "new.csv", BASE)
    assert C.main([str(tmp_path / "old"), str(new)]) == 0


def test_missing_or_bad_input_exits_2_with_one_line(tmp_path, capsys):
    good = write(tmp_path / "good.csv", BASE)
    (tmp_path / "bad.csv").write_text("just,some\n1,2\n")
    (tmp_path / "empty").mkdir()
    # The whole command once, in a process of its own (no traceback reaches the terminal); the rest in-process.
    proc = subprocess.run([sys.executable, "-m", "ablations.commands", "compare", str(tmp_path / "nope.csv"),
                           str(good)], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("blockbench compare: error:") and "no such file" in line
    for old, needle in ((tmp_path / "bad.csv", "missing column"), (tmp_path / "empty", "no results.csv")):
        assert C.main([str(old), str(good)]) == 2
        out, err = capsys.readouterr()
        [line] = err.strip().splitlines()
        assert out == "" and line.startswith("blockbench compare: error:") and needle in line


def test_tables_with_nothing_in_common_exit_2(tmp_path, capsys):
    assert run_main(tmp_path, BASE, [dict(r, sweep="kv") for r in BASE]) == 2
    assert "nothing to compare" in capsys.readouterr().err


def test_bad_threshold_flag_is_a_usage_error(tmp_path):
    with pytest.raises(SystemExit) as exc:
        run_main(tmp_path, BASE, BASE, "--threshold", "latency")
    assert exc.value.code == 2
