"""Every consumer of the declared choices takes up every declared value: a test here fails when one misses it.

The consumers: ``ArchConfig`` and its checks, the Hydra schema and the generated variants and sweeps, the result
columns and point identity, variant labels, the quality model, the work model, the predictor's and sizes' flips,
the regression and benchmark cases, the report's tables. Each is asked about every value of every choice, read
from the declarations, so a new choice or value is checked without an edit here.
"""

from __future__ import annotations

import dataclasses

import pytest

from ablations.cli import CONF_DIR
from ablations.config.checks import arch_from
from ablations.config.generated_variants import all_variants, leave_one_out
from ablations.results.identity import point_identity
from ablations.results.store import config_hash
from ablations.results.variant_labels import variant_label
from blockbench import Choice, Registry, Traits, choice, choices, declare, llama2_choices, testing
from components import FFNS, POSITIONS, ArchConfig, ModelConfig
from components.declared_set import BUILT_IN
from components.registry import traits
from tests.temporary_choice import kept

VALUES = [(declared.group, v) for declared in choices() for v in declared.values]
IDS = [f"{g}={v}" for g, v in VALUES]


compose_cfg = testing.compose


def tiny(**groups: object) -> ArchConfig:
    return ArchConfig(model=ModelConfig(d_model=32, n_layers=2, n_heads=4, max_seq_len=32), **groups)


def at(group: str, value: str) -> object:
    return next(declared for declared in choices() if declared.group == group).at_size(value, 2)


def test_arch_config_takes_choices_by_keyword_only():
    with pytest.raises(TypeError):
        ArchConfig(ModelConfig(), at("pos", "rope"))  # positionally, a new group would silently take its default
    with pytest.raises(TypeError, match="unknown choice group"):
        ArchConfig(model=ModelConfig(), colour="blue")
    assert [g for g in tiny().groups] == [declared.group for declared in choices()]


def test_the_declarations_are_consistent():
    assert len({declared.rung for declared in llama2_choices()}) == len(llama2_choices())
    for declared in choices():
        testing.check_declaration(declared)


def test_a_group_that_owns_its_hook_shares_its_name():
    """An owned hook builds one group's module, so it is named as the group is (``pos=rope`` fills ``pos``); a shared
    hook (``qk``, ``scores``, ``flag``, ...) is a place several groups may plug into, named for the place."""
    owners = {declared.hook: declared.group for declared in choices() if declared.owns_hook}
    assert owners and all(hook == group for hook, group in owners.items()), owners


def test_a_group_is_declared_with_what_it_alone_can_say():
    @dataclasses.dataclass
    class TinyConfig:
        name: str = "off"

    registry: Registry[None] = Registry("tiny.name")
    registry.add("off", None)
    registry.add("on", None)
    last = choices()[-1].order
    with kept():
        tiny_choice = declare(Choice(group="tiny", config=TinyConfig, registry=registry, hook="flag",
                                     about={"off": "nothing", "on": "something"}))
        # GPT-2's value is the config's default; neither model has it; it goes after every group declared before it.
        assert (tiny_choice.gpt2, tiny_choice.llama2, tiny_choice.order) == ("off", "off", last + 1)
        assert choices()[-1] is tiny_choice and tiny_choice.title == "" and not tiny_choice.in_llama2
        assert tiny().tiny == TinyConfig()
    assert "tiny" not in ArchConfig().groups


def test_once_a_command_loads_the_plugins_the_catalog_is_frozen_but_to_the_plugin_loader(tmp_path, monkeypatch):
    """After a command's start (``command_start.load``: ``components.plugins.load_catalog``) a group, a value into a
    declared group and a value's description are refused in one line; a plugin named later in the process still
    loads, through the loader; a free registry is no catalog's."""
    import textwrap

    from ablations.config import command_start
    from components.declared_set import DECLARED, FrozenError
    from components.plugins import load_explicit

    @dataclasses.dataclass
    class LateConfig:
        name: str = "off"

    late: Registry[None] = Registry("late.name")
    late.add("off", None)
    with kept():
        monkeypatch.setattr(DECLARED, "plugins_started", False)
        monkeypatch.delenv("BLOCKBENCH_PLUGINS", raising=False)
        command_start.load()  # what every command does before its modules import
        assert DECLARED.frozen
        rule = "the catalog froze when the plugins loaded"
        with pytest.raises(FrozenError, match=f"^choice group 'late': {rule}"):
            declare(Choice(group="late", config=LateConfig, registry=late, hook="flag", about={"off": "nothing"}))
        assert "late" not in [each.group for each in choices()]
        with pytest.raises(FrozenError, match=f"^ffn.name=relu_late: {rule}"):
            FFNS.add("relu_late", FFNS.get("gelu"))
        assert "relu_late" not in FFNS
        with pytest.raises(FrozenError, match=f"^ffn=gelu's description: {rule}"):
            choice("ffn").describe("gelu", "said again")
        late.add("on", None)  # not declared: no group of the catalog
        (tmp_path / "late_plugin.py").write_text(textwrap.dedent("""
            from blockbench import FFNS, GeluMLP
            FFNS.register("relu_later")(GeluMLP)
        """))
        monkeypatch.syspath_prepend(str(tmp_path))
        load_explicit(["late_plugin"])
        assert "relu_later" in FFNS and DECLARED.frozen
    assert "relu_later" not in FFNS


def test_what_a_class_does_not_say_is_a_traits_default():
    assert traits(None) == Traits() and POSITIONS.traits("rope") == Traits()
    assert POSITIONS.traits("learned").bounded_length and FFNS.traits("geglu").gated  # inherited from SwiGLU's
    # ``reference_only`` is read from the class itself: learned positions are built on NoPE's class.
    assert POSITIONS.traits("none").reference_only and not POSITIONS.traits("learned").reference_only


@pytest.mark.parametrize("group,value", VALUES, ids=IDS)
def test_every_value_has_its_config_file(group, value):
    # blockbench's own values keep a file (a comment says where the value comes from); a plugin's are generated.
    if choice(group).registry.source(value) == BUILT_IN:
        assert (CONF_DIR / group / f"{value}.yaml").exists()
    else:
        assert not (CONF_DIR / group / f"{value}.yaml").exists()


@pytest.mark.parametrize("group,value", VALUES, ids=IDS)
def test_every_value_passes_the_consumer_checks(group, value):
    # The checks a plugin author runs on their own choice (blockbench.testing.check_choice), on every built-in.
    declared = choice(group)
    testing.check_composes(declared, value)
    testing.check_builds_labels_counts_and_reads_back(declared, value)
    testing.check_quality_model(declared, value)
    testing.check_regression_cases(declared, value)
    testing.check_generated_variants(declared, value)


@pytest.mark.parametrize("group", [declared.group for declared in choices()])
def test_every_group_passes_check_choice(group):
    # The whole function as a plugin calls it, on one value (the per-value checks above cover the rest).
    testing.check_choice(group, [choice(group).values[-1]])


def test_every_value_is_a_benchmark_case():
    from tests.benchmarks.cases import SWEEPS

    for declared in choices():
        for value in declared.values[1:]:
            if declared.sweep:
                assert value in SWEEPS[declared.group], (declared.group, value)
        for settings in declared.setting_flips.values():  # a setting flip: on Llama-2's block in modern
            dotted = {f"{declared.group}.{k}": v for k, v in settings.items()}
            assert any(dotted.items() <= o.items() for o in SWEEPS["modern"].values()), (declared.group, settings)
        for value in declared.after_llama2:
            assert any(o.get(declared.group) == value for o in SWEEPS["modern"].values()), (declared.group, value)


def test_every_generated_variant_moves_what_its_name_says():
    # check_generated_variants covers those that set a group to a value; these are the rest (gpt2, setting flips).
    for v in all_variants():
        if v.values and not v.settings.keys() - {"model"}:
            continue
        arch = arch_from(compose_cfg([f"variant={v.name}"]))
        for declared in choices():
            settings = v.settings.get(declared.group, {})
            if settings:
                assert all(getattr(getattr(arch, declared.group), k) == x for k, x in settings.items()), (
                    v.name, declared.group)
            else:
                assert declared.has(arch, v.values.get(declared.group, declared.gpt2)), (v.name, declared.group)
    by_name = {v.name: v for v in all_variants()}
    llama = arch_from(compose_cfg(["variant=llama2"]))
    assert variant_label(llama) == "llama2" and not llama.model.tie_embeddings
    for v in leave_one_out()[1:-1]:  # each reverts exactly one Llama-2 choice
        assert len(by_name["llama2"].values) - len(v.values) == 1


# Point identities computed by the code before choices were declared (revision 88878a2): adding a declared choice
# (QK-norm) or a value (ALiBi) since must leave them as they were, so earlier run folders stay reusable.
FIXED_SEED_PROTOCOL = ["train.target_mde=null", "train.min_seeds=null", "train.max_seeds=null",
                       "train.common_init=false", "train.final_eval_batches=null", "train.budgets=[]",
                       "train.budget_seeds=null", "train.precision=float32", "train.attention_core=same",
                       "train.compile=false"]
# The default profile's fixed rounds of that revision (before the headline target): a profile is what is measured,
# so the default is another identity, and these settings give that revision's back.
FIXED_ROUNDS_PROFILE = ["profile.rounds=8", "profile.decode_rounds=16", "profile.target_halfwidth=null",
                        "profile.min_rounds=null", "profile.max_rounds=null"]
# Decode timed eagerly, as every point was before graph replays (its default, auto, replays on CUDA).
EAGER_DECODE = ["profile.graphs=off"]
# The default train option's one rate for every arm, before its tuned rates were committed (train.tuned_lr).
SHARED_RATE = ["train.lr=0.002"]
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
    # The quality protocol of that revision (fixed seeds, one init stream, the curve's windows for the final loss,
    # the float32 eager step): at those values the newer train settings leave the identity as it was
    # (ablations.results.identity).
    default_profile = not any(o.startswith("profile=") for o in overrides)
    cfg = compose_cfg([*FIXED_SEED_PROTOCOL, *(FIXED_ROUNDS_PROFILE + SHARED_RATE if default_profile else []),
                       *overrides, *EAGER_DECODE])
    assert (variant_label(arch_from(cfg)), config_hash(point_identity(cfg))) == expected


def test_a_choice_neither_model_has_enters_the_identity_only_when_moved():
    for declared in choices():
        testing.check_identity(declared)


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
    from ablations.cli import plan_run
    from ablations.config.errors import UsageError

    points = tmp_path / "points"
    points.mkdir()
    args = ["+sweep=norm", "profile=smoke", f"hydra.sweep.dir={tmp_path}"]
    assert len(plan_run(args)) == 2
    (points / "gpt2-000000000000.csv").write_text("sweep\n")
    with pytest.raises(UsageError) as exit_info:
        plan_run(args)
    assert exit_info.value.code == 2
    err = exit_info.value.message
    assert err.count("\n") == 0 and "1 point file(s) of another configuration" in err and "gpt2-000000000000" in err
