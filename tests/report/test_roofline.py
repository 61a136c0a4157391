"""The report's roofline section and the validation of the performance model, on hand-made rows."""

from __future__ import annotations

import pandas as pd
import pytest

from ablations.report.roofline import arch_of, error_summary, points, roofline_section, validation
from ablations.report.tables import add_case
from ablations.results.store import COLUMNS
from ablations.roofline.calls import kernel_calls
from ablations.roofline.hardware import Hardware
from ablations.roofline.time_model import predict
from ablations.roofline.work import mode_work
from components import ArchConfig, AttnConfig, ModelConfig

ARCH = dict(pos="learned", norm="layernorm", ffn="gelu", attn="gqa", n_heads=4, d_model=32, n_layers=1,
            ffn_hidden=128, bias=True, dtype="float32", device="cpu", sweep="kv", status="ok")
HW = Hardware(name="t", peak_flops=1e11, bandwidth=1e10, memory_bytes=1e9, call_overhead=1e-6,
              overlapped_calls=False, matmul_efficiency=[[1, 0.2], [1024, 0.8]], memory_efficiency=0.5,
              attention_memory_efficiency=0.4, attention_compute_efficiency=0.3, dtype="float32",
              source="test machine", efficiency_source="test")


def rows(variant: str, kv: int, ratio: float, seconds: float, roofline: float) -> list[dict]:
    base = dict(ARCH, variant=variant, n_kv_heads=kv, mode="decode", batch=2, seq_len=64)
    return [
        dict(base, metric="decode_latency_ratio", value=ratio, lo=ratio * 0.995, hi=ratio * 1.005),
        dict(base, metric="decode_ratio_interval", value=0.01, lo=ratio * 0.99, hi=ratio * 1.01, statistic="ci95"),
        dict(base, metric="decode_latency", value=seconds),
        dict(base, metric="decode_baseline_latency", value=seconds / ratio),
        dict(base, metric="roofline_ratio", value=roofline),
        dict(base, metric="roofline_time", value=1e-5, note="memory-bound at this run's ceilings"),
        dict(base, metric="bandwidth_utilisation", value=0.25),
        dict(base, metric="bytes_moved", value=1e5),
    ]


@pytest.fixture
def measured() -> pd.DataFrame:
    table = pd.DataFrame(rows("gpt2", 4, 1.0, 2e-4, 1.0) + rows("gqa2", 2, 0.8, 1.6e-4, 0.6), columns=COLUMNS)
    return add_case(table)


def test_points_are_one_row_per_timed_point(measured):
    p = points(measured).set_index("case")
    assert list(p.index) == ["gpt2", "gqa2"]
    assert p.loc["gqa2", "measured_ratio"] == 0.8 and p.loc["gqa2", "roofline_ratio"] == 0.6
    assert p.loc["gqa2", "bound"] == "memory" and p.loc["gqa2", "bandwidth_utilisation"] == 0.25
    assert p.loc["gqa2", "baseline_latency"] == pytest.approx(2e-4)


def test_validation_predicts_each_point_against_its_baseline(measured):
    v = validation(points(measured), HW).set_index("case")
    gqa = ArchConfig(ModelConfig(d_model=32, n_layers=1, n_heads=4), attn=AttnConfig("gqa", 2))
    assert arch_of(v.loc["gqa2"]).n_kv_heads == 2
    want = predict(mode_work(gqa, "decode", 2, 64), HW, kernel_calls(gqa, "decode")).seconds
    assert v.loc["gqa2", "predicted_s"] == pytest.approx(want)
    base = predict(mode_work(ArchConfig(gqa.model), "decode", 2, 64), HW, kernel_calls(ArchConfig(gqa.model), "decode"))
    assert v.loc["gqa2", "predicted_ratio"] == pytest.approx(want / base.seconds)
    assert v.loc["gqa2", "ratio_error"] == pytest.approx(want / base.seconds / 0.8 - 1)
    assert v.loc["gqa2", "time_error"] == pytest.approx(want / 1.6e-4 - 1)
    assert v.loc["gpt2", "predicted_ratio"] == pytest.approx(1.0)


def test_rows_name_rope_with_its_layout():
    row = pd.Series(dict(ARCH, pos="rope-interleaved", n_kv_heads=4))
    arch = arch_of(row)
    assert (arch.pos.name, arch.pos.layout, arch.attn.name) == ("rope", "interleaved", "mha")


def test_error_summary_counts_flips_only_for_ratios_and_says_whether_the_goal_was_met(measured):
    v = validation(points(measured), HW)
    summary = error_summary(v).iloc[0]
    assert summary["points"] == "decode (2; 1 flips)"
    err = abs(v.loc[v["case"] == "gqa2", "ratio_error"].iloc[0])
    assert summary["ratio error worst"] == f"{100 * err:.0f}%"
    assert summary["goal for ratios"].startswith("met" if err <= 0.15 else "missed")


def test_roofline_section_shows_measured_beside_roofline_and_every_decode_point(measured):
    text = "\n".join(roofline_section(measured))
    assert "| decode | gqa2 | 2x64 | 0.800× [0.792, 0.808] | 0.600× | memory | 25% |" in text
    assert "| 2 x 64 | 25% | 25% |" in text
    empty = "\n".join(roofline_section(measured[measured["metric"] != "roofline_ratio"]))
    assert empty.startswith("No roofline rows")


def test_a_utilisation_above_one_is_flagged_in_every_column_never_shown_bare(measured):
    from ablations.report.formatting import UNDER_MEASURED, fmt_util

    assert fmt_util(0.45) == "45%" and fmt_util(1.0) == "100%" and fmt_util(float("nan")) == "—"
    assert fmt_util(1.18) == f"118% ({UNDER_MEASURED})"
    over = measured.copy()
    over.loc[over["metric"] == "bandwidth_utilisation", "value"] = 1.3
    extra = over[over["metric"] == "bandwidth_utilisation"].assign(metric="utilisation", value=1.18)
    text = "\n".join(roofline_section(pd.concat([over, extra], ignore_index=True)))
    assert ("| decode | gqa2 | 2x64 | 0.800× [0.792, 0.808] | 0.600× | memory | 130% (ceiling under-measured) | "
            "118% (ceiling under-measured) |") in text
    assert "| 2 x 64 | 130% (ceiling under-measured) | 130% (ceiling under-measured) |" in text


def test_the_drift_between_points_is_the_baselines_own_time_measured_at_each():
    from ablations.report.roofline import baseline_drift, drift_text

    shape = dict(sweep="kv", base_case="gpt2", mode="decode", batch=1, seq_len=64)
    pts = pd.DataFrame([dict(shape, baseline_latency=s) for s in (1.0, 1.1, 1.25)]
                       + [dict(shape, seq_len=128, baseline_latency=s) for s in (2.0, 2.1)]
                       + [dict(shape, mode="forward", baseline_latency=3.0)])  # timed at one point: no drift
    drift = baseline_drift(pts)
    assert sorted(drift.round(6)) == [0.05, 0.25]
    assert drift_text(pts) == (" (in this run the baseline's own time at one shape moved by a median 15% and up to "
                               "25% between points, over 2 shapes)")
    assert drift_text(pts.iloc[-1:]) == ""
