"""``python -m ablations.predict [hardware=NAME] [model=NAME] [key=value ...]``: each choice at full size.

Hydra composes ``conf/predict.yaml`` with the ``hardware`` and ``model`` groups (the package's entries and the user's
own, in ``$BLOCKBENCH_HOME``: ``ablations.config.paths``). Prints, per scenario, each
one-choice flip of GPT-2's block against it and each flip on Llama-2's block (the choices that came after it, and
named settings such as a sliding window) against Llama-2's block, at the same size (the ``against`` column):
predicted time, what bounds it, KV-cache memory and the largest batch that fits, and which ceilings and
efficiencies the prediction used. A context past the model's ``max_seq_len`` needs ``extend_context=true``.
"""

from __future__ import annotations

import sys
from dataclasses import replace

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ablations.config.errors import UsageError, command
from ablations.config.paths import conf_dir, conf_names
from ablations.config.register import register_configs
from ablations.predict.scenarios import Scenario, predicted
from ablations.predict.table import ELEMENT_BYTES, markdown, prediction_table
from ablations.roofline.hardware import Hardware
from components import ModelConfig

CONF = conf_dir()


def options(group: str) -> list[str]:
    """A group's names: the package's and the user's folder's."""
    return conf_names(group)


def check_choices(overrides: list[str]) -> None:
    """A bad ``hardware=`` or ``model=`` name, before Hydra's own multi-line message."""
    for item in overrides:
        key, _, value = item.partition("=")
        if key in ("hardware", "model") and value not in options(key):
            raise UsageError(f"{key}={value!r} is not known; allowed: {', '.join(options(key))}")


def load(overrides: list[str]) -> DictConfig:
    check_choices(overrides)
    register_configs()
    try:
        with initialize_config_dir(config_dir=str(CONF), version_base=None):
            return compose(config_name="predict", overrides=overrides, return_hydra_config=True)
    except (HydraException, OmegaConfBaseException) as e:
        raise UsageError(str(e).strip().splitlines()[0]) from None


def scenarios(cfg: DictConfig) -> list[Scenario]:
    """Prefill, decode at each batch and context, and a training step, as ``cfg`` asks; a length past
    ``model.max_seq_len`` is refused unless ``extend_context`` (``extended`` raises it first)."""
    contexts = [int(context) for context in cfg.decode.contexts]
    out = [Scenario("prefill", int(cfg.prefill.batch), int(cfg.prefill.tokens))]
    out += [Scenario("decode", int(b), context) for context in contexts for b in cfg.decode.batches]
    out.append(Scenario("train", int(cfg.train.batch), int(cfg.train.seq)))
    keys = ("prefill.tokens", *["decode.contexts"] * (len(out) - 2), "train.seq")
    for key, sc in zip(keys, out, strict=True):
        if sc.seq > cfg.model.max_seq_len and not cfg.get("extend_context", False):
            raise UsageError(f"{key}={sc.seq} exceeds model.max_seq_len={cfg.model.max_seq_len}; allowed: "
                             f"1..{cfg.model.max_seq_len}, or extend_context=true to predict past it")
    return out


def extended(cfg: DictConfig, model: ModelConfig, asked: list[Scenario]) -> tuple[ModelConfig, str]:
    """``model`` with ``max_seq_len`` raised to the longest length ``asked`` for when ``extend_context`` allows it,
    and the line that says so (empty when nothing was raised). The raise is a counterfactual for a model published
    at a shorter context (Llama-2's 4096), and grows a learned position table (GPT-2's block) with it."""
    longest = max(sc.seq for sc in asked)
    if not cfg.get("extend_context", False) or longest <= model.max_seq_len:
        return model, ""
    note = (f"Counterfactual context: model.max_seq_len raised from {model.max_seq_len:,} to {longest:,} for the "
            "prediction (extend_context=true); the model was not published at that length.")
    return replace(model, max_seq_len=longest), note


def run(overrides: list[str]) -> str:
    cfg = load(overrides)
    if cfg.dtype not in ELEMENT_BYTES:
        raise UsageError(f"dtype={cfg.dtype!r} is not known; allowed: {', '.join(ELEMENT_BYTES)}")
    hw = Hardware.from_dict(OmegaConf.to_container(cfg.hardware, resolve=True))
    sizes = OmegaConf.to_container(cfg.model, resolve=True)
    gqa_kv = int(sizes.pop("gqa_kv_heads"))
    name = str(cfg.hydra.runtime.choices.model)
    asked = scenarios(cfg)
    model, note = extended(cfg, ModelConfig(**sizes), asked)
    p = predicted(model, gqa_kv, name)
    table = prediction_table(p.variants, hw, asked, str(cfg.dtype), int(cfg.fit_context), p.against)
    lines = [f"Predicted (not measured): {name} on {hw.name}, {cfg.dtype}, LM head included.",
             f"Ceilings: {hw.source}.", f"Efficiencies: {hw.efficiency_source}.",
             "Ratios are against the block in `against`: GPT-2's (gpt2) or Llama-2's (llama2) at the same size. "
             "Memory: weights and KV cache; activations and training memory are not modelled."]
    if note:
        lines.append(note)
    if hw.dtype != cfg.dtype:
        lines.append(f"Note: the ceilings are {hw.name}'s for {hw.dtype}, not {cfg.dtype}.")
    return "\n".join([*lines, "", markdown(table, int(cfg.fit_context))])


@command("predict")
def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in args):
        print(__doc__.strip())
        print(f"hardware: {', '.join(options('hardware'))}\nmodel: {', '.join(options('model'))}")
        return 0
    print(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
