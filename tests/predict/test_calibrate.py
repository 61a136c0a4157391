"""The calibration writes a hardware entry the predictor loads (tiny shapes; no timing is asserted)."""

from __future__ import annotations

import yaml

from ablations.measure import calibration
from ablations.predict import calibrate
from ablations.roofline.hardware import Hardware


def test_calibration_writes_a_loadable_entry_with_its_provenance(tmp_path, monkeypatch):
    for name, value in (("ROWS", (1, 8)), ("D_MODEL", 32), ("HEADS", 4), ("HEAD_DIM", 8), ("CONTEXT", 64)):
        monkeypatch.setattr(calibration, name, value)
    real = calibration.calibrate
    monkeypatch.setattr(calibrate, "calibrate", lambda rounds: real(rounds=1, min_run_time=0.0, buffer_mib=1,
                                                                     matmul_n=64))
    out = tmp_path / "this_machine.yaml"
    assert calibrate.main(["--threads", "1", "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# This machine, measured by python -m ablations.predict.calibrate")
    hw = Hardware.from_dict(yaml.safe_load(text))
    assert hw.name == "this_machine" and not hw.overlapped_calls and "1 threads" in hw.source
    assert [n for n, _ in hw.matmul_efficiency] == [1, 8]
    for fraction in (*[f for _, f in hw.matmul_efficiency], hw.memory_efficiency, hw.attention_memory_efficiency,
                     hw.attention_compute_efficiency):
        assert 0 < fraction <= 1
    assert hw.peak_flops > 0 and hw.bandwidth > 0 and hw.call_overhead > 0 and hw.memory_bytes > 0
