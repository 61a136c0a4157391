"""``python -m ablations.predict.quality_seed [hardware=NAME] [train=NAME] [key=value ...]``: the predicted time of
one quality seed on named hardware, for GPT-2's and Llama-2's quality models (the two ends of every sweep).

Predicted, not measured: the roofline (``ablations.roofline``) times ``train.steps`` training steps (forward and
backward at ``train.batch`` x ``train.context``, LM head included) and the evaluations' forward passes (the curve's
``eval_batches`` at step 0 and every ``eval_interval``, the final score's batches), in ``train.precision``'s dtype
(fp32 when null). Not modelled: the optimizer step, the extrapolation's longer windows, data loading, and
``torch.compile``'s first compilation. Defaults to ``train=gpu`` on ``hardware=h100_sxm``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from ablations.config.checks import check_run
from ablations.config.errors import UsageError, command
from ablations.config.paths import conf_dir, conf_entry, conf_names
from ablations.config.register import register_configs
from ablations.config.schema import TrainConfig
from ablations.predict.table import ELEMENT_BYTES, fmt_seconds
from ablations.quality.arch import quality_arch
from ablations.quality.data import vocab_of
from ablations.quality.validation import final_batches
from ablations.roofline.calls import kernel_calls
from ablations.roofline.hardware import Hardware
from ablations.roofline.time_model import predict
from ablations.roofline.work import mode_work
from components import ArchConfig
from components.config import ConfigError

DEFAULTS = {"hardware": "h100_sxm", "train": "gpu"}
# The two ends of every sweep: the blocks a point is paired with.
BLOCKS = ("gpt2", "llama2")


@dataclass(frozen=True)
class SeedTime:
    training: float
    evaluation: float

    @property
    def seconds(self) -> float:
        return self.training + self.evaluation


def evaluations(tc: TrainConfig) -> int:
    """Forward batches of one seed's evaluations: the curve's at step 0 and every ``eval_interval`` before the end,
    then the final score's."""
    curve_points = 1 + (int(tc.steps) - 1) // int(tc.eval_interval)
    return curve_points * int(tc.eval_batches) + final_batches(tc)


def seed_time(arch: ArchConfig, tc: TrainConfig, hw: Hardware) -> SeedTime:
    """One seed of ``arch`` trained as ``tc`` says, predicted on ``hw``."""
    elem = ELEMENT_BYTES[tc.precision if tc.precision != "auto" else "float32"]
    batch, context = int(tc.batch), int(tc.context)

    def seconds(mode: str) -> float:
        work = mode_work(arch, mode, batch, context, elem, lm_head=True)
        return predict(work, hw, kernel_calls(arch, mode)).seconds

    return SeedTime(int(tc.steps) * seconds("train"), evaluations(tc) * seconds("prefill"))


def composed(overrides: list[str]) -> DictConfig:
    register_configs()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    OmegaConf.resolve(cfg)
    return cfg


def run(args: list[str]) -> str:
    named = {a.split("=")[0] for a in args}
    hardware = next((a.split("=", 1)[1] for a in args if a.startswith("hardware=")), DEFAULTS["hardware"])
    if hardware not in conf_names("hardware"):
        raise UsageError(f"hardware={hardware!r} is not known; allowed: {', '.join(conf_names('hardware'))}")
    # Read as Hydra reads it: PyYAML alone takes 989.0e12 (no exponent sign) for a string.
    hw = Hardware.from_dict(OmegaConf.to_container(OmegaConf.load(conf_entry("hardware", hardware)), resolve=True))
    overrides = [a for a in args if not a.startswith("hardware=")]
    overrides += [f"{k}={v}" for k, v in DEFAULTS.items() if k != "hardware" and k not in named]
    lines = []
    try:
        for block in BLOCKS:
            cfg = composed([*overrides, f"variant={block}"])
            tc = OmegaConf.to_object(cfg.train)
            q = quality_arch(tc, vocab_of(OmegaConf.to_object(cfg.data)), check_run(cfg), bool(cfg.match_params))
            t = seed_time(q, tc, hw)
            lines.append(f"| {block} | {fmt_seconds(t.training)} | {fmt_seconds(t.evaluation)} | "
                         f"{fmt_seconds(t.seconds)} |")
    except (ConfigError, HydraException, OmegaConfBaseException) as exc:  # they describe the overrides
        raise UsageError(" ".join(str(exc).split())) from None
    head = (f"Predicted (not measured): one quality seed of train={tc.name} on {hw.name}, "
            f"{tc.precision}: {tc.steps} steps of {tc.batch} x {tc.context}, d={tc.d_model}, "
            f"{tc.n_layers} layers, vocabulary {q.model.vocab_size}. Not modelled: the optimizer step, the "
            "extrapolation, data loading, torch.compile's first compilation.")
    return "\n".join([head, "", "| block | training | evaluation | seed |", "|---|---|---|---|", *lines])


@command("predict")
def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in args):
        print(__doc__.strip())
        return 0
    print(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
