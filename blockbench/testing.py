"""``check_choice``: the checks every declared choice passes, for a plugin author's own tests.

Each check asks one consumer of the declarations about one value: the Hydra configs compose it, the block builds
it, its label, its work and its result row read back, the quality model carries it, the predictor and the sizes
table flip to it, the regression check times it, its generated variants move what their names say, and a group
neither model has enters a point's identity only when moved. blockbench's own ``tests/test_declarations.py`` runs
the same function on every built-in value, so a plugin's choice is held to exactly what a built-in is.

    from blockbench.testing import check_choice

    def test_relu2_takes_every_consumer():
        check_choice("ffn", ["relu2"])

A failure is an ``AssertionError`` naming the group, the value and the consumer. ``arch_with(group=value)`` builds
the small block the checks build, for a plugin's numerical tests.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import torch
from omegaconf import OmegaConf

from blockbench import Choice, Step, choice, choices, llama2_choices
from components import ArchConfig, Decoder, ModelConfig, build_decoder

# The size every check builds: small enough for a test, with 4 heads so GQA has 2 KV heads to share.
_D, _HEADS, _LAYERS, _SEQ = 32, 4, 2, 32


def check_choice(group: str, values: Iterable[str] | None = None) -> None:
    """Run every consumer check on ``group`` at ``values`` (default: every value of the group but GPT-2's, which
    blockbench's own tests hold; a plugin adding a value to a built-in group names it: ``["relu2"]``)."""
    declared = choice(group)
    check_declaration(declared)
    for value in (list(values) if values is not None else declared.values):
        assert value in declared.values, (
            f"{group}={value}: not a value of {group} (values: {', '.join(declared.values)})")
        check_composes(declared, value)
        check_builds_labels_counts_and_reads_back(declared, value)
        check_quality_model(declared, value)
        check_regression_cases(declared, value)
        check_generated_variants(declared, value)
    check_flips(declared)
    check_identity(declared)


def check_declaration(declared: Choice) -> None:
    """The declaration is consistent with itself and the others: GPT-2's value is the config's default, both
    models' values exist, the flips are values, no other group has its order, and each value and setting flip
    says what it is (the docs' choice tables are made of ``about``)."""
    assert declared.config().name == declared.gpt2, (
        f"{declared.group}: the config's default name must be GPT-2's value {declared.gpt2!r}")
    assert declared.gpt2 in declared.values and declared.llama2 in declared.values, (
        f"{declared.group}: gpt2 and llama2 must be registered values")
    assert set(declared.flips) <= set(declared.values) - {declared.gpt2}, (
        f"{declared.group}: flips {declared.flips} must be values other than GPT-2's")
    others = [o.group for o in choices() if o.order == declared.order and o is not declared]
    assert not others, f"{declared.group}: order={declared.order} is also {others}'s"
    assert set(declared.about) == set(declared.values) | set(declared.setting_flips), (
        f"{declared.group}: about must say what each value and setting flip is; has {sorted(declared.about)}, needs "
        f"{sorted(set(declared.values) | set(declared.setting_flips))}")
    assert all(text.strip() for text in declared.about.values()), f"{declared.group}: an about text is empty"


def tiny(**groups: Any) -> ArchConfig:
    return ArchConfig(model=ModelConfig(d_model=_D, n_layers=_LAYERS, n_heads=_HEADS, max_seq_len=_SEQ), **groups)


def arch_with(**values: str) -> ArchConfig:
    """The block ``check_choice`` builds (d=32, 4 heads, 2 layers, 32 positions) with each named group at a value,
    sized as every check sizes it (an attention value that shares K/V heads gets 2), checked: what a plugin's own
    numerical tests build, ``arch_with(ffn="relu2")``."""
    return tiny().replace(**{group: choice(group).at_size(value, 2) for group, value in values.items()}).validate()


def check_composes(declared: Choice, value: str) -> None:
    """``GROUP=VALUE`` composes through Hydra (a value without a file in ``conf/`` is generated from the
    declaration) into the group's own schema, and reads back as that value."""
    from ablations.config.checks import arch_from
    from ablations.config.run_config import RunConfig

    cfg = compose([f"{declared.group}={value}", "train=smoke"])
    assert getattr(arch_from(cfg), declared.group).name == value, f"{declared.group}={value}: composed as another value"
    assert isinstance(getattr(cfg, declared.group), type(OmegaConf.structured(RunConfig)[declared.group])), (
        f"{declared.group}={value}: not composed into the group's schema")


def check_builds_labels_counts_and_reads_back(declared: Choice, value: str) -> None:
    """The block builds and runs it; its label says "gpt2" only for GPT-2's block; the work model counts it; a
    result row written for it reads back as the same value, in columns the results table has."""
    from ablations.config.columns import row_values
    from ablations.results.row_arch import arch_from_row
    from ablations.results.store import COLUMNS
    from ablations.results.variant_labels import variant_label

    arch = arch_with(**{declared.group: value})
    model = build_decoder(arch)
    x = torch.randn(2, 5, _D)
    assert model(x).shape == x.shape, f"{declared.group}={value}: the decoder changed the hidden states' shape"
    assert (variant_label(arch) == "gpt2") == declared.has(arch, declared.gpt2), (
        f"{declared.group}={value}: labelled {variant_label(arch)}")
    assert Decoder.work(arch, Step(2, 5, 5)).flops > 0, f"{declared.group}={value}: the work model counts nothing"
    row = {**row_values(declared, arch), "n_heads": _HEADS, "n_kv_heads": arch.n_kv_heads, "d_model": _D,
           "n_layers": _LAYERS}
    assert declared.has(arch_from_row(row), value) or not declared.has(arch, value), (
        f"{declared.group}={value}: its row reads back wrong")
    missing = set(row_values(declared, arch)) - set(COLUMNS)
    assert not missing, f"{declared.group}={value}: row columns {sorted(missing)} are not result columns"


def check_quality_model(declared: Choice, value: str) -> None:
    """The quality run's small model takes the value and leaves every other choice as the point has it (attention
    maps its KV heads and the FFN its width to the small model's size)."""
    from ablations.runner import plan_point

    plan = plan_point(compose([f"{declared.group}={value}", "train=smoke"]))
    arch, q = plan.pair.arch, plan.quality.arch
    # Attention maps its KV heads.
    carried = declared.has(q, value) or not declared.has(arch, value) or declared.group == "attn"
    assert carried, f"{declared.group}={value}: not in the quality model"
    for other in choices():
        if other.group not in (declared.group, "attn", "ffn"):
            assert getattr(q, other.group) == getattr(arch, other.group), (
                f"{declared.group}={value}: the quality model moved {other.group}")


def check_flips(declared: Choice) -> None:
    """The predictor and the sizes table flip GPT-2's block to each of the group's flips."""
    from ablations.config.columns import name_in
    from ablations.predict.scenarios import flips
    from ablations.report.flip_sets import flips_of
    from ablations.report.sizes import counterfactuals

    base = tiny()
    predicted = flips(base.model, 2, "custom")
    sized = {e.model for e in counterfactuals()}
    for value in declared.flips:
        name = name_in(declared, base.replace(**{declared.group: declared.at_size(value, 2)}))
        assert name in predicted and declared.has(predicted[name], value), (
            f"{declared.group}={value}: not predicted as {name}")
        assert any(m.startswith(f"gpt2 + {name.rstrip('0123456789')}") for m in sized), (
            f"{declared.group}={value}: not in the sizes table")
    llama = predicted["llama2"]
    assert all(o.has(llama, o.llama2) for o in llama2_choices()) and flips_of(base, 2)["llama2"] == llama


def check_regression_cases(declared: Choice, value: str) -> None:
    """The regression check times the block at the value (and at each of the group's setting flips)."""
    from ablations.regress.cases import all_cases, block_variants

    blocks = block_variants()
    if value != declared.gpt2:
        assert any(o.get(declared.group) == value for o in blocks.values()), (
            f"{declared.group}={value}: no regression case")
    for settings in declared.setting_flips.values():
        dotted = {f"{declared.group}.{k}": v for k, v in settings.items()}
        assert any(dotted.items() <= o.items() for o in blocks.values()), (
            f"{declared.group}: {settings}: no regression case")
    names = {case.name for case in all_cases()}
    assert {f"block/{name}/decode" for name in blocks} <= names, f"{declared.group}={value}: a block case is not timed"


def check_generated_variants(declared: Choice, value: str) -> None:
    """Every generated variant that sets the group (``variant=NAME``) composes to what its name says."""
    from ablations.config.checks import arch_from
    from ablations.config.generated_variants import all_variants

    for v in all_variants():
        if v.values.get(declared.group) != value or declared.group in v.settings:
            continue
        arch = arch_from(compose([f"variant={v.name}"]))
        for o in choices():
            settings = v.settings.get(o.group, {})
            if settings:  # a setting flip (a window) moves the group off every value: its settings say what it is
                assert all(getattr(getattr(arch, o.group), k) == x for k, x in settings.items()), (v.name, o.group)
            else:
                assert o.has(arch, v.values.get(o.group, o.gpt2)), f"variant={v.name}: {o.group} is not as named"


def check_identity(declared: Choice) -> None:
    """A group neither model has enters a point's identity only when moved off GPT-2's value, so adding it keeps
    every existing point's identity; a Llama-2 group is always in it."""
    from ablations.results.identity import point_identity

    if declared.in_llama2:
        assert declared.group in point_identity(compose([])), (
            f"{declared.group}: a Llama-2 choice must be in every identity")
        return
    assert declared.group not in point_identity(compose([])), (
        f"{declared.group}: at GPT-2's value it must stay out of identities")
    if declared.flips:
        assert declared.group in point_identity(compose([f"{declared.group}={declared.flips[0]}"])), (
            f"{declared.group}: moved, not identified")


def compose(overrides: list[str]) -> Any:
    """The run config at ``overrides``, as ``blockbench run`` composes it (a copy: callers may change it)."""
    return _composed(tuple(overrides)).copy()


@functools.cache
def _composed(overrides: tuple[str, ...]) -> Any:
    # Composing is most of these checks' time, and several ask for the same point.
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from ablations.cli import CONF_DIR

    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return hydra_compose("config", overrides=list(overrides))
