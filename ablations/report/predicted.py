"""The predictor's train-step ratio of each one-choice flip at full size, for the report's predicted time to loss.

The same model as ``python -m ablations.predict`` (``ablations.roofline``: the work model's FLOPs and bytes on a
machine's datasheet ceilings and published efficiencies), read from the same files: the model size
(``conf/model/<model>.yaml``), the machine (``conf/hardware/<hardware>.yaml``) and the training step's shape and
precision (``conf/predict.yaml``).
"""

from __future__ import annotations

import functools

from omegaconf import OmegaConf

from ablations.config.paths import conf_dir
from ablations.report.flip_sets import flips_at_size
from ablations.report.flips import flip_name
from ablations.roofline.hardware import Hardware
from ablations.roofline.time_model import predict_mode
from ablations.roofline.work import ELEMENT_BYTES
from components import ModelConfig

MODEL, HARDWARE = "llama2_7b", "h100_sxm"


@functools.cache
def train_step_ratios(model: str = MODEL, hardware: str = HARDWARE) -> dict[str, float]:
    """Each flip's predicted training-step time over GPT-2's block at ``model``'s sizes on ``hardware``, by the flip's
    label (``LayerNorm → RMSNorm``, ``ablations.report.flips.flip_name``, the embeddings being the size's)."""

    sizes = {k: v for k, v in OmegaConf.to_container(OmegaConf.load(conf_dir() / "model" / f"{model}.yaml")).items()
             if k != "defaults"}
    kv = int(sizes.pop("gqa_kv_heads"))
    hw = Hardware.from_dict(dict(OmegaConf.load(conf_dir() / "hardware" / f"{hardware}.yaml")))
    predict = OmegaConf.load(conf_dir() / "predict.yaml")
    elem = ELEMENT_BYTES[str(predict.dtype)]
    batch, seq = int(predict.train.batch), int(predict.train.seq)
    flips = flips_at_size(ModelConfig(**sizes), kv, model)
    seconds = {name: predict_mode(arch, "train", batch, seq, hw, elem).seconds for name, arch in flips.items()}
    labels = {name: flip_name(name, arch, embeddings=False) for name, arch in flips.items()}
    return {labels[name]: s / seconds["gpt2"] for name, s in seconds.items() if labels[name]}
