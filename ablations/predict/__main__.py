"""``python -m ablations.predict [hardware=NAME] [model=NAME] [key=value ...]``: each choice at full size.

Hydra composes ``conf/predict.yaml`` with the ``hardware`` and ``model`` groups. Prints, per scenario, each
one-choice flip against the GPT-2 baseline at the same size: predicted time, what bounds it, KV-cache memory and
the largest batch that fits, and which ceilings and efficiencies the prediction used.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ablations.config.schema import register_configs
from ablations.predict.scenarios import Scenario, flips
from ablations.predict.table import ELEMENT_BYTES, markdown, prediction_table
from ablations.roofline.hardware import Hardware
from components import ModelConfig

CONF = Path(__file__).resolve().parents[2] / "conf"
PROG = "ablations.predict"


class UsageError(Exception):
    pass


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml") if not p.stem.endswith("_schema"))


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
    out = [Scenario("prefill", int(cfg.prefill.batch), int(cfg.prefill.tokens))]
    out += [Scenario("decode", int(b), int(cfg.decode.context)) for b in cfg.decode.batches]
    out.append(Scenario("train", int(cfg.train.batch), int(cfg.train.seq)))
    for key, sc in zip(("prefill.tokens", *["decode.context"] * len(cfg.decode.batches), "train.seq"), out,
                       strict=True):
        if sc.seq > cfg.model.max_seq_len:
            raise UsageError(f"{key}={sc.seq} exceeds model.max_seq_len={cfg.model.max_seq_len}; allowed: "
                             f"1..{cfg.model.max_seq_len}")
    return out


def run(overrides: list[str]) -> str:
    cfg = load(overrides)
    if cfg.dtype not in ELEMENT_BYTES:
        raise UsageError(f"dtype={cfg.dtype!r} is not known; allowed: {', '.join(ELEMENT_BYTES)}")
    hw = Hardware.from_dict(OmegaConf.to_container(cfg.hardware, resolve=True))
    sizes = OmegaConf.to_container(cfg.model, resolve=True)
    gqa_kv = int(sizes.pop("gqa_kv_heads"))
    name = str(cfg.hydra.runtime.choices.model)
    variants = flips(ModelConfig(**sizes), gqa_kv, name)
    table = prediction_table(variants, hw, scenarios(cfg), str(cfg.dtype), int(cfg.fit_context))
    lines = [f"Predicted (not measured): {name} on {hw.name}, {cfg.dtype}, LM head included.",
             f"Ceilings: {hw.source}.", f"Efficiencies: {hw.efficiency_source}."]
    if hw.dtype != cfg.dtype:
        lines.append(f"Note: the ceilings are {hw.name}'s for {hw.dtype}, not {cfg.dtype}.")
    return "\n".join([*lines, "", markdown(table, int(cfg.fit_context))])


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in args):
        print(__doc__.strip())
        print(f"hardware: {', '.join(options('hardware'))}\nmodel: {', '.join(options('model'))}")
        return 0
    try:
        print(run(args))
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
