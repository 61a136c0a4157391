"""Every consumer of the declared choices takes up every declared value: a test here fails when one misses it.

The consumers: ``ArchConfig`` and its checks, the Hydra schema and the generated variants and sweeps, the result
columns and point identity, variant labels, the quality model, the work model, the predictor's and sizes' flips,
the regression and benchmark cases, the report's tables. Each is asked about every value of every choice, read
from the declarations, so a new choice or value is checked without an edit here.
"""

from __future__ import annotations

import dataclasses
import functools

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from ablations.cli import CONF_DIR
from ablations.config.generated import all_variants, leave_one_out
from ablations.config.schema import RunConfig
from ablations.config.variants import arch_from, arch_from_row, flips_of, variant_label
from ablations.quality.arch import quality_arch
from ablations.results.identity import point_identity
from ablations.results.store import COLUMNS, config_hash
from components import ArchConfig, Decoder, ModelConfig, build_decoder, choices, llama2_choices
from components.work import Step

VALUES = [(c.group, v) for c in choices() for v in c.values]
IDS = [f"{g}={v}" for g, v in VALUES]


def compose_cfg(overrides: list[str]) -> object:
    return _composed(tuple(overrides)).copy()


@functools.cache
def _composed(overrides: tuple[str, ...]) -> object:
    # Composing is most of these tests' time; several tests ask for the same point.
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def tiny(**groups: object) -> ArchConfig:
    return ArchConfig(model=ModelConfig(d_model=32, n_layers=2, n_heads=4, max_seq_len=32), **groups)


def at(group: str, value: str) -> object:
    return next(c for c in choices() if c.group == group).at_size(value, 2)


def test_arch_config_takes_choices_by_keyword_only():
    with pytest.raises(TypeError):
        ArchConfig(ModelConfig(), at("pos", "rope"))  # positionally, a new group would silently take its default
    with pytest.raises(TypeError, match="unknown choice group"):
        ArchConfig(model=ModelConfig(), colour="blue")
    assert [g for g in tiny().groups] == [c.group for c in choices()]


def test_the_declarations_are_consistent():
    groups = [c.group for c in choices()]
    assert len(set(groups)) == len(groups) and len({c.order for c in choices()}) == len(groups)
    for c in choices():
        assert c.config().name == c.gpt2 and c.gpt2 in c.values and c.llama2 in c.values
        assert set(c.flips) <= set(c.values) - {c.gpt2}
    assert len({c.rung for c in llama2_choices()}) == len(llama2_choices())


def test_every_value_and_setting_flip_says_what_it_is():
    # The choice tables of the docs and the README are made of these (ablations.config.doc_text); a key for a value
    # that no longer exists is as wrong as a value without one.
    for c in choices():
        assert set(c.about) == set(c.values) | set(c.setting_flips), c.group
        assert all(text.strip() for text in c.about.values()), c.group


@pytest.mark.parametrize("group,value", VALUES, ids=IDS)
def test_every_value_has_its_config_file_and_composes(group, value):
    assert (CONF_DIR / group / f"{value}.yaml").exists()
    cfg = compose_cfg([f"{group}={value}", "train=smoke"])
    arch = arch_from(cfg)
    assert getattr(arch, group).name == value
    assert isinstance(getattr(cfg, group), type(OmegaConf.structured(RunConfig)[group]))


@pytest.mark.parametrize("group,value", VALUES, ids=IDS)
def test_every_value_builds_labels_counts_and_reads_back(group, value):
    c = next(c for c in choices() if c.group == group)
    arch = tiny(**{group: at(group, value)}).validate()
    model = build_decoder(arch)
    x = torch.randn(2, 5, 32)
    assert model(x).shape == x.shape
    # The label names the value (and only GPT-2's block is "gpt2").
    assert (variant_label(arch) == "gpt2") == c.has(arch, c.gpt2)
    # The work model counts it: parameters as built, FLOPs as torch counts them.
    assert Decoder.work(arch, Step(2, 5, 5)).flops > 0
    # A result row written for it reads back as the same choice.
    row = {**c.row_values(arch), "n_heads": 4, "n_kv_heads": arch.n_kv_heads, "d_model": 32, "n_layers": 2}
    assert c.has(arch_from_row(row), value) or not c.has(arch, value)
    assert set(c.row_values(arch)) <= set(COLUMNS)


@pytest.mark.parametrize("group,value", VALUES, ids=IDS)
def test_the_quality_model_carries_every_value(group, value):
    cfg = compose_cfg([f"{group}={value}", "train=smoke"])
    arch = arch_from(cfg)
    c = next(c for c in choices() if c.group == group)
    q = quality_arch(cfg, arch).validate()
    assert c.has(q, value) or not c.has(arch, value) or group == "attn"  # attention maps its KV heads
    for other in choices():  # and leaves every other choice as the point has it
        if other.group not in (group, "attn", "ffn"):
            assert getattr(q, other.group) == getattr(arch, other.group)


def test_every_flip_is_predicted_and_sized():
    from ablations.predict.scenarios import flips
    from ablations.report.sizes import counterfactuals

    base = tiny()
    predicted = flips(base.model, 2, "custom")
    sized = {e.model for e in counterfactuals()}
    for c in choices():
        for value in c.flips:
            name = c.name_in(base.replace(**{c.group: at(c.group, value)}))
            assert c.has(predicted[name], value), name
            assert any(m.startswith(f"gpt2 + {name.rstrip('0123456789')}") for m in sized), name
    llama = predicted["llama2"]
    assert all(c.has(llama, c.llama2) for c in llama2_choices())
    assert flips_of(base, 2)["llama2"] == llama


def test_every_value_is_a_regression_and_a_benchmark_case():
    from ablations.regress.cases import all_cases, block_variants
    from tests.benchmarks.cases import SWEEPS

    names = {case.name for case in all_cases()}
    blocks = block_variants()
    for c in choices():
        for value in c.values[1:]:
            assert any(o.get(c.group) == value for o in blocks.values()), (c.group, value)
            if c.sweep:
                assert value in SWEEPS[c.group], (c.group, value)
        for settings in c.setting_flips.values():  # a setting flip: on GPT-2's block, and on Llama-2's in modern
            dotted = {f"{c.group}.{k}": v for k, v in settings.items()}
            assert any(dotted.items() <= o.items() for o in blocks.values()), (c.group, settings)
            assert any(dotted.items() <= o.items() for o in SWEEPS["modern"].values()), (c.group, settings)
        for value in c.after_llama2:
            assert any(o.get(c.group) == value for o in SWEEPS["modern"].values()), (c.group, value)
    assert {f"block/{name}/decode" for name in blocks} <= names


def test_the_generated_variants_move_what_their_names_say():
    by_name = {v.name: v for v in all_variants()}
    for v in all_variants():
        arch = arch_from(compose_cfg([f"variant={v.name}"]))
        for c in choices():
            settings = v.settings.get(c.group, {})
            if settings:  # a setting flip (a window) moves the group off every value: its settings say what it is
                assert all(getattr(getattr(arch, c.group), k) == x for k, x in settings.items()), (v.name, c.group)
            else:
                assert c.has(arch, v.values.get(c.group, c.gpt2)), (v.name, c.group)
    llama = arch_from(compose_cfg(["variant=llama2"]))
    assert variant_label(llama) == "llama2" and not llama.model.tie_embeddings
    for v in leave_one_out()[1:-1]:  # each reverts exactly one Llama-2 choice
        assert len(by_name["llama2"].values) - len(v.values) == 1


# Point identities computed by the code before choices were declared (revision 88878a2): adding a declared choice
# (QK-norm) or a value (ALiBi) since must leave them as they were, so earlier run folders stay reusable.
FIXED_SEED_PROTOCOL = ["train.target_mde=null", "train.min_seeds=null", "train.max_seeds=null",
                       "train.common_init=false", "train.final_eval_batches=null"]
# The default profile's fixed rounds of that revision (before the headline target): a profile is what is measured,
# so today's default is another identity, and these settings give that revision's back.
FIXED_ROUNDS_PROFILE = ["profile.rounds=8", "profile.decode_rounds=16", "profile.target_halfwidth=null",
                        "profile.min_rounds=null", "profile.max_rounds=null"]
PINNED = {
    (): ("gpt2", "70d79770aea3"),
    ("norm=rmsnorm",): ("rmsnorm", "202c38ba944b"),
    ("pos=rope",): ("rope", "65535b74ed08"),
    ("variant=llama2",): ("llama2", "d029ae1d0551"),
    ("attn=gqa",): ("gqa2", "8a8047b25cd4"),
    ("bias=off",): ("nobias", "2cadacbb7cd4"),
    ("variant=llama2_gelu",): ("llama2-gelu", "c2539de19740"),
    ("ffn=swiglu", "profile=smoke"): ("swiglu", "50d509e255f2"),
}


@pytest.mark.parametrize("overrides,expected", PINNED.items(), ids=[" ".join(k) or "default" for k in PINNED])
def test_point_identity_survives_new_choices(overrides, expected):
    # The quality protocol of that revision (fixed seeds, one init stream, the curve's windows for the final loss):
    # at those values the newer train settings leave the identity as it was (ablations.results.identity).
    default_profile = not any(o.startswith("profile=") for o in overrides)
    cfg = compose_cfg([*FIXED_SEED_PROTOCOL, *(FIXED_ROUNDS_PROFILE if default_profile else []), *overrides])
    assert (variant_label(arch_from(cfg)), config_hash(point_identity(cfg))) == expected


def test_a_choice_neither_model_has_enters_the_identity_only_when_moved():
    neutral = [c for c in choices() if not c.in_llama2]
    for c in neutral:
        moved = point_identity(compose_cfg([f"{c.group}={c.flips[0]}"]))
        assert c.group in moved and c.group not in point_identity(compose_cfg([]))
    assert all(c.group in point_identity(compose_cfg([])) for c in llama2_choices())


def test_a_neutral_setting_at_its_default_stays_out_of_the_identity(monkeypatch):
    from ablations.results import identity

    @dataclasses.dataclass
    class WithWindow:
        name: str = "mha"
        n_kv_heads: int | None = None
        window: int | None = dataclasses.field(default=None, metadata={"neutral": True})

    assert identity._without_neutral(WithWindow, {"name": "mha", "n_kv_heads": None, "window": None}) == {
        "name": "mha", "n_kv_heads": None}
    assert identity._without_neutral(WithWindow, {"name": "mha", "n_kv_heads": None, "window": 8})["window"] == 8


def test_a_sweep_into_a_folder_with_points_of_another_configuration_is_refused(tmp_path):
    from ablations.cli import prevalidate
    from ablations.errors import UsageError

    points = tmp_path / "points"
    points.mkdir()
    args = ["+sweep=norm", "profile=smoke", f"hydra.sweep.dir={tmp_path}"]
    assert prevalidate(args) == 2
    (points / "gpt2-000000000000.csv").write_text("sweep\n")
    with pytest.raises(UsageError) as exit_info:
        prevalidate(args)
    assert exit_info.value.code == 2
    err = exit_info.value.message
    assert err.count("\n") == 0 and "1 point file(s) of another configuration" in err and "gpt2-000000000000" in err
