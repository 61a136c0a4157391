"""``blockbench repeat``: do two runs of one sweep quote the same paired ratios?"""

from __future__ import annotations

import pytest

from ablations.tools import repeat as R

from .test_compare import BASE, row, write


def test_both_directions_count_and_only_ratios_are_compared(tmp_path, capsys):
    a = write(tmp_path / "a" / "results.csv", BASE)
    faster = [dict(r, value=r["value"] * 0.9) if r["metric"] == "decode_latency_ratio" else r for r in BASE]
    b = write(tmp_path / "b" / "results.csv", faster)
    # decode ratio 0.5 -> 0.45 is 10% apart although it "improved": not repeatable at 5%.
    assert R.main([str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "1 of 2 ratios agree within 5%; 1 do not" in out
    assert R.main([str(a), str(b), "--tolerance", "10.5"]) == 0
    table = R.agreement(R.load_table(a), R.load_table(b), list(R.DEFAULT_METRICS))
    assert set(table["metric"]) == {"latency_ratio", "decode_latency_ratio"}  # latency, flops... left out
    assert table.loc[0, "metric"] == "decode_latency_ratio" and table.loc[0, "diff_pct"] == pytest.approx(10.0)


def test_seeds_or_duplicate_rows_reduce_to_their_median(tmp_path):
    a = write(tmp_path / "a.csv", [row("latency_ratio", v) for v in (1.00, 1.02, 1.50)])
    b = write(tmp_path / "b.csv", [row("latency_ratio", 1.03)])
    table = R.agreement(R.load_table(a), R.load_table(b), ["latency_ratio"])
    assert table.loc[0, "value_a"] == pytest.approx(1.02) and table.loc[0, "diff_pct"] == pytest.approx(100 / 102)


def test_missing_table_or_nothing_shared_exits_2(tmp_path, capsys):
    a = write(tmp_path / "a.csv", BASE)
    assert R.main([str(a), str(tmp_path / "nope.csv")]) == 2
    other = write(tmp_path / "b.csv", [row("latency_ratio", 1.0, sweep="pos")])
    assert R.main([str(a), str(other)]) == 2
    assert "share no ratio rows" in capsys.readouterr().err
