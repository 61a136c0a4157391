"""Decode as it is served: ``profile.graphs`` picks graph replays on CUDA only, refuses them without CUDA at the door,
checks a replay against the eager step before timing it, and every decode row says how the step ran. No GPU is
needed: the capture is replaced by the eager step where the tests run without one."""

from __future__ import annotations

import pytest
import torch

from ablations.measure import graphs
from ablations.runner import plan_point
from components import ConfigError
from tests.ablations.untimed import point_rows, untimed
from tests.quality.helpers import composed


@pytest.mark.parametrize(("setting", "device", "on"), [("auto", "cuda", True), ("auto", "cpu", False),
                                                       ("on", "cuda", True), ("off", "cuda", False)])
def test_auto_graphs_decode_on_cuda_only(setting, device, on):
    assert graphs.use_graphs(setting, torch.device(device)) is on


def test_graphs_on_without_cuda_or_an_unknown_setting_is_one_line_at_the_door():
    with pytest.raises(ConfigError, match=r"profile\.graphs=on needs a CUDA device"):
        plan_point(composed("device=cpu", "profile.graphs=on"))
    with pytest.raises(ConfigError, match=r"profile\.graphs=always is not one of auto, on, off"):
        plan_point(composed("device=cpu", "profile.graphs=always"))


def test_a_replay_that_computes_something_else_is_refused_before_timing():
    eager = torch.ones(3)
    graphs.check_replay(eager, lambda: torch.ones(3), "step")
    with pytest.raises(RuntimeError, match="replay's output differs"):
        graphs.check_replay(eager, lambda: torch.zeros(3), "step")


def test_decode_rows_say_whether_the_step_ran_as_graph_replays(monkeypatch):
    untimed(monkeypatch)
    rows = point_rows("attn=gqa")
    decode = [r for r in rows if r["metric"] == "decode_latency_ratio"]
    assert decode and all(r["graphs"] is False for r in decode)
    captured: list[int] = []
    monkeypatch.setattr(graphs, "use_graphs", lambda setting, device: True)
    monkeypatch.setattr(graphs, "capture", lambda step, device: captured.append(1) or step)
    checked: list[str] = []
    real_check = graphs.check_replay
    monkeypatch.setattr(graphs, "check_replay", lambda eager, replay, what: checked.append(what)
                        or real_check(eager, replay, what))
    rows = point_rows("attn=gqa")
    decode = [r for r in rows if r["metric"] == "decode_latency_ratio"]
    assert decode and all(r["graphs"] is True for r in decode)
    assert captured and len(checked) == 2 * len(decode)  # both sides checked at every decode shape
