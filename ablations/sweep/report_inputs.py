"""The report's inputs that are not rows (``ablations.results.report_inputs``), taken from the configuration: written
beside ``sweep.json`` when a sweep starts, and by ``python -m ablations.sweep.report_inputs DIR...`` beside a folder
of rows that has none.

The full-size step ratios are the predictor's (``python -m ablations.predict``: the work model's FLOPs and bytes on a
machine's datasheet ceilings and published efficiencies), read from the same files: the model size
(``conf/model/<model>.yaml``), the machine (``conf/hardware/<hardware>.yaml``) and the training step's shape and
precision (``conf/predict.yaml``).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
from pathlib import Path

from omegaconf import OmegaConf

from ablations.config.paths import conf_dir
from ablations.measure.calibration import MACHINE
from ablations.report.flip_sets import flips_at_size
from ablations.report.flips import flip_name
from ablations.results.report_inputs import RECORD, ReportInputs, write_report_inputs
from ablations.roofline.hardware import Hardware, load_hardware
from ablations.roofline.time_model import predict_mode
from ablations.roofline.work import ELEMENT_BYTES
from components import ModelConfig

MODEL, HARDWARE = "llama2_7b", "h100_sxm"


def report_inputs() -> ReportInputs:
    """The inputs as this checkout's configuration and this machine's calibration give them."""
    hw = load_hardware(MACHINE)
    return ReportInputs(
        no_worse_margin=float(OmegaConf.load(conf_dir() / "train" / "default.yaml").target_mde),
        full_size=f"{MODEL} on {HARDWARE}", train_step_ratios=train_step_ratios(),
        calibration=dataclasses.asdict(hw) if hw is not None else None)


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ablations.sweep.report_inputs",
                                     description=f"Write {RECORD} beside each folder's rows that has none.")
    parser.add_argument("folders", nargs="+", type=Path, metavar="DIR")
    parser.add_argument("--replace", action="store_true", help=f"write {RECORD} where one is already")
    args = parser.parse_args(argv)
    inputs = report_inputs()
    for folder in args.folders:
        if not folder.is_dir():
            print(f"error: {folder} is not a folder", file=sys.stderr)
            return 2
        if args.replace or not (folder / RECORD).is_file():
            write_report_inputs(folder, inputs)
            print(folder / RECORD)
    return 0


if __name__ == "__main__":
    sys.exit(main())
