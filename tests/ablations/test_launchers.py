"""A launcher that runs points side by side (joblib, submitit) gets no timing, and the sweep still collects.

In-process: one point run as a joblib job would run it, then the end of the sweep reading each point's outcome from
its file where a launcher returned none. The joblib sweep itself, in processes, is
``test_parallel_launcher_skips_timing_and_still_collects`` in the extended tier (tests/ablations/test_sweeps.py).
"""

from __future__ import annotations

import logging

import pandas as pd
import pytest

from ablations import runner
from ablations.config.plan import SweepEnd
from ablations.sweep.end import finish
from tests.ablations.jobs import job_config

TIMED = {"latency", "latency_ratio", "decode_latency", "prefill_latency", "throughput"}


@pytest.mark.parametrize("overrides,timed,launcher", [
    (["hydra/launcher=joblib"], False, "joblib"),
    (["hydra/launcher=joblib", "allow_parallel_timing=true"], True, "joblib"),
    ([], True, "basic"),
])
def test_a_parallel_launcher_skips_timing_unless_allowed(overrides, timed, launcher, tmp_path, as_job, caplog,
                                                         monkeypatch):
    from tests.ablations.untimed import untimed

    untimed(monkeypatch)  # timing, where it runs, is replaced: this is about whether it runs
    cfg = job_config(tmp_path, *overrides)
    as_job(cfg)
    with caplog.at_level(logging.WARNING, logger="ablations"):
        assert runner.run_job(cfg) == "ok"
    (point,) = (tmp_path / "points").glob("*.csv")
    table = pd.read_csv(point)
    assert set(table["launcher"]) == {launcher}
    assert bool(TIMED & set(table["metric"])) == timed
    assert {"flops", "activation_bytes", "params", "kv_cache_bytes"} <= set(table["metric"])  # measured either way
    skipped = [r.getMessage() for r in caplog.records if "timing are SKIPPED" in r.getMessage()]
    assert len(skipped) == (0 if timed else 1)
    if skipped:
        assert skipped[0].startswith(f"launcher {launcher} runs points side by side")


def test_the_parent_of_a_parallel_sweep_reads_each_points_outcome_from_its_file(tmp_path, as_job, capsys,
                                                                                monkeypatch):
    from tests.ablations.untimed import untimed

    untimed(monkeypatch)
    for num, variant in enumerate(("gpt2", "rmsnorm")):
        cfg = job_config(tmp_path, "hydra/launcher=joblib", f"variant={variant}", num=num)
        as_job(cfg)
        runner.run_job(cfg)
    # No outcomes came back: the end reads each point's from its file.
    finish(SweepEnd(tmp_path, figures=False), [])
    err = capsys.readouterr().err
    assert "2 point(s): 2 ok, 0 failed, 0 skipped" in err
    assert set(pd.read_csv(tmp_path / "results.csv")["variant"]) == {"gpt2", "rmsnorm"}


def test_a_variant_that_moves_nothing_in_the_timed_decoder_is_not_timed(tmp_path, as_job, caplog, monkeypatch):
    """Untied embeddings change the language model, not the decoder the timing measures: the two timed blocks would
    be the same block, an A/A read as the choice's cost, so the point skips timing and says why."""
    from tests.ablations.untimed import untimed

    untimed(monkeypatch)
    cfg = job_config(tmp_path, "variant=untied")
    as_job(cfg)
    with caplog.at_level(logging.WARNING, logger="ablations"):
        assert runner.run_job(cfg) == "ok"
    (point,) = (tmp_path / "points").glob("*.csv")
    table = pd.read_csv(point)
    assert not TIMED & set(table["metric"])
    assert {"flops", "params"} <= set(table["metric"])
    (skipped,) = [r.getMessage() for r in caplog.records if "timing are SKIPPED" in r.getMessage()]
    assert skipped.startswith("model.tie_embeddings=false acts outside the timed decoder")
