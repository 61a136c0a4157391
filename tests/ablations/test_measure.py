"""The measurement pieces, checked against numbers derived by hand."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest
import torch
from torch import nn

from ablations.measure import flops
from ablations.measure.memory import parameter_bytes, saved_activation_bytes
from ablations.measure.timing import PairedTiming, time_paired
from ablations.regress.cases import block_variants
from ablations.results.rows import Summary
from ablations.results.store import COLUMNS, collect, point_done, write_point
from ablations.results.variant_labels import variant_label
from components import ArchConfig, AttnConfig, BiasConfig, FFNConfig, ModelConfig, NormConfig, PosConfig, build_decoder

VARIANTS = [
    ArchConfig(ModelConfig(64, 2, 4, 128)),
    ArchConfig(ModelConfig(64, 2, 4, 128), pos=PosConfig("rope"), norm=NormConfig("rmsnorm"),
               ffn=FFNConfig("swiglu"), attn=AttnConfig("gqa", 2), bias=BiasConfig("off")),
    ArchConfig(ModelConfig(64, 1, 4, 128), attn=AttnConfig("mqa"), ffn=FFNConfig("swiglu", multiple_of=64)),
]


@pytest.mark.parametrize("arch", VARIANTS, ids=["gpt2", "llama2", "mqa-swiglu"])
@pytest.mark.parametrize("batch,seq", [(1, 16), (3, 40)])
def test_counted_flops_equal_the_analytic_count(arch, batch, seq):
    model = build_decoder(arch)
    x = torch.randn(batch, seq, arch.model.d_model)
    assert flops.count_flops(lambda: model(x)) == flops.analytic_forward_flops(arch, batch, seq)

    def train() -> None:
        model(x).square().mean().backward()

    assert flops.count_flops(train) == flops.analytic_train_flops(arch, batch, seq)


# Longer than the window every setting flip declares (64), so a window hides keys from the later queries.
HIDDEN_SEQ = 80


@pytest.mark.parametrize("name,overrides", list(block_variants().items()))
def test_every_declared_block_counts_what_it_executes_and_states_its_designs_work(name, overrides):
    """Every value of every declared choice and every setting flip (the regression check's block variants): torch's
    counter sees the executed work (a dense masked kernel scores every key it holds), and the design's work is less
    exactly where a window hides keys: by the keys it hides."""
    import components
    from ablations.regress.architecture import arch

    case_arch = arch(components, **overrides)
    model = build_decoder(case_arch)
    x = torch.randn(1, HIDDEN_SEQ, case_arch.model.d_model)
    work = flops.analytic_forward_work(case_arch, 1, HIDDEN_SEQ)
    assert flops.count_flops(lambda: model(x)) == work.executed_flops
    window = case_arch.attn.window
    if window is None:
        assert work.flops == work.executed_flops and work.masked_flops == 0
    else:
        # One key a query: scores and values.
        per_key = 2 * case_arch.model.n_heads * HIDDEN_SEQ * 2 * case_arch.head_dim
        assert work.masked_flops == per_key * (HIDDEN_SEQ - window) * case_arch.model.n_layers


def test_decode_step_flops_attend_to_the_whole_cache():
    arch = VARIANTS[1]
    model = build_decoder(arch).eval()
    cache = model.new_cache(2, 64)
    cache.pos = 40
    token = torch.randn(2, 1, arch.model.d_model)
    with torch.no_grad():
        counted = flops.count_flops(lambda: model(token, cache))
    assert counted == flops.analytic_forward_flops(arch, 2, 1, context=41)


def test_analytic_flops_by_hand():
    # One GPT-2 block, d=64, 4 heads, B=1, T=8: dense 2*8*(4*64*64 + 2*64*256), attention 4*4*8*8*16.
    arch = ArchConfig(ModelConfig(64, 1, 4, 128))
    assert flops.analytic_forward_flops(arch, 1, 8) == 2 * 8 * (4 * 64 * 64 + 2 * 64 * 256) + 4 * 4 * 8 * 8 * 16


def test_saved_activation_bytes_exact_for_a_linear_layer():
    layer = nn.Linear(32, 16)
    x = torch.randn(4, 32, requires_grad=False)
    # Linear saves its input for the weight gradient (the weight itself is a parameter, not counted).
    assert saved_activation_bytes(layer, lambda: layer(x).sum().backward()) == 4 * 32 * 4
    assert parameter_bytes(layer) == (32 * 16 + 16) * 4


def test_saved_activations_grow_with_sequence_and_shrink_with_gqa():
    mha = build_decoder(ArchConfig(ModelConfig(64, 1, 4, 128)))
    gqa = build_decoder(ArchConfig(ModelConfig(64, 1, 4, 128), attn=AttnConfig("mqa")))

    def saved(model: nn.Module, seq: int) -> int:
        x = torch.randn(1, seq, 64)
        return saved_activation_bytes(model, lambda: model(x).square().mean().backward())

    assert saved(mha, 32) > saved(mha, 16)
    assert saved(gqa, 32) < saved(mha, 32)  # K and V for one head instead of four


def test_summary_statistics():
    s = Summary.of([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.median, s.p25, s.p75, s.min, s.max, s.n) == (3.0, 2.0, 4.0, 1.0, 5.0, 5)
    assert Summary.of([2.0]).median == 2.0
    with pytest.raises(ValueError):
        Summary.of([])


def test_paired_ratios_and_interleaving():
    calls: list[str] = []
    paired = time_paired(lambda: calls.append("a"), lambda: calls.append("b"), rounds=4, min_run_time=0.001,
                         warmup=1, device=torch.device("cpu"))
    assert len(paired.a) == len(paired.b) == 4
    assert PairedTiming([2.0, 3.0], [1.0, 2.0]).ratios == [2.0, 1.5]
    # ABBA: after warm-up, the runs of round 2 start with b.
    assert calls[:2] == ["a", "b"] and "b" in calls[2:]


def test_prepare_runs_before_warmup_and_every_round_in_that_rounds_order():
    events: list[object] = []
    time_paired(lambda: events.append("a"), lambda: events.append("b"), rounds=4, min_run_time=0.001, warmup=1,
                device=torch.device("cpu"), prepare=lambda order: events.append(order))
    orders = [e for e in events if isinstance(e, tuple)]
    assert orders == [(0, 1), (0, 1), (1, 0), (0, 1), (1, 0)]
    assert events[:3] == [(0, 1), "a", "b"]  # the warm-up already runs on prepared state
    # Each round's calls come after its prepare and before the next one.
    rounds = "".join(e if isinstance(e, str) else "|" for e in events).split("|")[2:]
    assert [r[0] for r in rounds] == ["a", "b", "a", "b"]


def test_a_call_longer_than_min_run_time_is_timed_once_per_round():
    import time

    calls = {"a": 0, "b": 0}

    def slow() -> None:
        calls["a"] += 1
        time.sleep(0.02)

    def fast() -> None:
        calls["b"] += 1

    paired = time_paired(slow, fast, rounds=3, min_run_time=0.01, warmup=1, device=torch.device("cpu"))
    # One warm-up call, then exactly one timed call per round: no discarded block-sizing call.
    assert calls["a"] == 1 + 3
    assert calls["b"] > 1 + 3
    assert all(t >= 0.02 for t in paired.a)


def test_a_fast_call_is_timed_in_blocks_sized_once_not_every_round():
    from ablations.measure.timing import block_size

    calls = {"a": 0, "b": 0}
    now = [0.0]

    def step(side: str) -> callable:
        def fn() -> None:  # a 4 ms call on a clock that only the calls move (a sleep overshoots under load)
            calls[side] += 1
            now[0] += 0.004
        return fn

    time_paired(step("a"), step("b"), rounds=5, min_run_time=0.01, warmup=1, device=torch.device("cpu"),
                clock=lambda: now[0])
    # 4 ms calls: blocks of 3 (12 ms >= 10 ms), one block a round, after one warm-up call. Timer.blocked_autorange
    # per round ran 1 + 10 sizing calls before its block: 21 calls a round.
    assert block_size(0.004) == 3
    assert calls == {"a": 1 + 5 * 3, "b": 1 + 5 * 3}
    assert block_size(2.0) == 1 and block_size(1e-6) == 10_000


def test_min_statistic_takes_the_faster_of_at_least_two_blocks():
    from ablations.measure.timing import _measure

    durations = iter([0.03, 0.01, 0.05])
    clock_now = [0.0]

    def clock() -> float:
        return clock_now[0]

    def fn() -> None:
        clock_now[0] += next(durations)

    assert _measure(fn, 1, 0.02, torch.device("cpu"), "min", clock) == pytest.approx(0.01)


def test_variant_labels():
    base = ModelConfig(64, 1, 16, 128)
    assert variant_label(ArchConfig(base)) == "gpt2"
    assert variant_label(ArchConfig(base, norm=NormConfig("rmsnorm"))) == "rmsnorm"
    assert variant_label(ArchConfig(base, attn=AttnConfig("gqa", 16))) == "gpt2"  # same as MHA
    assert variant_label(ArchConfig(base, attn=AttnConfig("gqa", 4))) == "gqa4"
    assert variant_label(ArchConfig(base, attn=AttnConfig("mqa"))) == "mqa"
    assert variant_label(ArchConfig(base, bias=BiasConfig("off"))) == "nobias"
    untied = replace(base, tie_embeddings=False)
    four = ArchConfig(base, pos=PosConfig("rope"), norm=NormConfig("rmsnorm"), ffn=FFNConfig("swiglu"),
                      attn=AttnConfig("gqa", 2))
    assert variant_label(four) == "llama2-bias-tied"  # Llama-2's other four choices on GPT-2's conventions
    assert variant_label(four.replace(model=untied)) == "llama2-bias"
    assert variant_label(four.replace(model=untied, bias=BiasConfig("off"))) == "llama2"
    assert variant_label(four.replace(bias=BiasConfig("off"))) == "llama2-tied"
    assert variant_label(four.replace(model=untied, bias=BiasConfig("off"), attn=AttnConfig("mha"))) == "llama2-mha"
    assert variant_label(ArchConfig(untied)) == "gpt2-untied"


def test_point_files_are_whole_or_absent(tmp_path):
    path = tmp_path / "points" / "a-123.csv"
    assert not point_done(path)
    write_point([{"variant": "a", "metric": "params", "value": 1, "status": "ok"}], path)
    assert point_done(path)
    assert list(pd.read_csv(path).columns) == COLUMNS
    write_point([{"variant": "b", "metric": "error", "status": "failed"}], tmp_path / "points" / "b-1.csv")
    assert not point_done(tmp_path / "points" / "b-1.csv")
    (tmp_path / "points" / "c-1.csv").write_text("sweep,variant\n")  # a truncated file is not done
    assert not point_done(tmp_path / "points" / "c-1.csv")
    assert not list((tmp_path / "points").glob(".*.tmp"))
    table = collect(tmp_path)
    assert set(table["variant"].dropna()) == {"a", "b"}
