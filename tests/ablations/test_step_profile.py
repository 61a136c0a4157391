"""`blockbench step`: one point's quality step against the machine, and the report's table of the same rows."""

from __future__ import annotations

import pandas as pd
import pytest

from ablations.config.errors import UsageError
from ablations.measure.step_split import SPLIT, part_of, split_of
from ablations.report.step_efficiency import step_section, step_table
from ablations.step_profile import run


def test_the_command_prints_the_step_its_rate_and_split_for_both_arms():
    text = run(["profile=smoke", "model=tiny", "threads=1", "norm=rmsnorm"])
    assert text.startswith("Quality step of rmsnorm against gpt2: 8 x 32 bytes, d=64, 2 layers, 1 threads on cpu; "
                           "float32, attention core float32, eager (as set).")
    table = [line for line in text.splitlines() if line.startswith("| rmsnorm |") or line.startswith("| gpt2 |")]
    assert len(table) == 2
    cells = table[0].strip("|").split("|")
    assert len(cells) == 6 + len(SPLIT) and float(cells[1]) > 0 and cells[5].strip().endswith("%")


def test_a_bad_override_is_one_line():
    with pytest.raises(UsageError, match="train.precision=half is not known"):
        run(["profile=smoke", "train.precision=half"])


def test_ops_fall_into_the_declared_parts():
    assert part_of("aten::addmm", False) == "matmul" and part_of("aten::mm", False) == "matmul"
    assert part_of("aten::_scaled_dot_product_flash_attention_for_cpu_backward", False) == "attention"
    assert part_of("aten::mm", True) == "optimizer" and part_of("aten::gelu", False) == "other"
    assert set(part_of(n, False) for n in ("aten::bmm", "aten::add", "aten::native_layer_norm")) <= set(SPLIT)


def test_the_split_of_a_step_sums_to_one_and_finds_its_products():
    import torch

    a = torch.randn(256, 256, requires_grad=True)
    opt = torch.optim.SGD([a], lr=0.0)

    def step() -> None:
        (torch.relu(a @ a)).sum().backward()
        opt.step()

    step()
    split = split_of(step, torch.device("cpu"), calls=2)
    assert set(split) == set(SPLIT) and abs(sum(split.values()) - 1) < 1e-9
    assert split["matmul"] > 0 and split["optimizer"] > 0


def _rows(variant: str, **metrics: float) -> list[dict]:
    return [{"variant": variant, "metric": m, "value": v, "step_choice": "bfloat16, attention core float32, compiled:"
             " precision bfloat16: bf16 products 6.2x float32's"} for m, v in metrics.items()]


def test_the_report_tables_each_variants_step_and_its_split():
    q = pd.DataFrame(_rows("gpt2", train_step_time=0.08, train_flops_per_s=2.4e11, train_peak_fraction=0.11,
                           train_data_share=0.002, compile_time=4.0)
                     + _rows("rope", train_step_time=0.09, train_flops_per_s=2.1e11, train_peak_fraction=0.1,
                             train_data_share=0.002))
    measured = pd.DataFrame([{"variant": "rope", "metric": f"step_share_{k}", "value": 0.25} for k in SPLIT])
    table = step_table(q, measured).set_index("variant")
    assert table.loc["gpt2", "step (ms)"] == "80" and table.loc["gpt2", "achieved GFLOP/s"] == "240"
    assert table.loc["gpt2", "of peak"] == "11.0%" and table.loc["rope", "compile (s)"] == "—"
    assert table.loc["rope", SPLIT["matmul"]] == "25%" and table.loc["gpt2", SPLIT["matmul"]] == "—"
    assert table.loc["gpt2", "step ran as"] == "bfloat16, attention core float32, compiled"
    lines = step_section(q, measured)
    assert lines[0] == "#### The training step on this machine"
    assert "- bfloat16, attention core float32, compiled: precision bfloat16: bf16 products 6.2x float32's" in lines
    assert step_section(pd.DataFrame({"variant": [], "metric": [], "value": []}), measured) == []
