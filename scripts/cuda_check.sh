#!/usr/bin/env bash
# The one prepared CUDA run (issue 3, item 7): tests, a smoke sweep, the GPU quality profile briefly (issue 31),
# the kv sweep's decode as CUDA graph replays (issue 58), and the default kv and norm sweeps on the GPU, in bf16. Writes logs and result tables under $OUT (the device tool's folder) or results/cuda/.
# Run from the repository root on a machine with a CUDA build of torch >= 2.5 already installed:
#   bash scripts/cuda_check.sh
#
# Offline (the project's GPU machine has torch, pandas, seaborn, matplotlib, scipy, pytest and pytest-benchmark
# but no network): put the missing wheels in .whl/ (git-ignored; the device tool carries it with carry=[".whl"])
# on a machine with network, for the GPU machine's Python 3.12:
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#     -d .whl hydra-core==1.3.2 omegaconf==2.3.0 pyyaml packaging tqdm
#   python3 -m pip wheel --no-deps antlr4-python3-runtime==4.9.3 -w .whl    # 4.9.3 is an sdist only
# The script then installs them, without network and without touching the machine's packages, into
# /tmp/site and puts that and the repository on PYTHONPATH.
set -uo pipefail
OUT=${OUT:-results/cuda}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python -c "import torch; assert torch.cuda.is_available(), 'no CUDA'; print(torch.__version__, torch.cuda.get_device_name())" \
  | tee "$OUT/device.txt" || exit 1
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
  pip install -q --no-deps -e . && pip install -q "hydra-core>=1.3,<1.4" pandas seaborn tqdm pytest pytest-benchmark
fi
python -c "import hydra, omegaconf, ablations; print('hydra', hydra.__version__, 'omegaconf', omegaconf.__version__)" \
  | tee "$OUT/packages.txt" || exit 1
# -rfE names every failure and error with its one-line reason; the whole summary is kept, not its last lines.
python -m pytest -q -rfE --tb=line -p no:cacheprovider tests/components tests/ablations/test_measure.py \
  tests/ablations/test_ceilings.py tests/ablations/test_graphs.py tests/roofline > "$OUT/tests.txt" 2>&1
python -c "import transformers; print('transformers', transformers.__version__)" >> "$OUT/packages.txt" 2>&1
tail -n 12 "$OUT/tests.txt"
sweep() {  # folder, sweep name, extra overrides...
  local dir=$1 name=$2; shift 2
  python -m ablations "+sweep=$name" device=cuda "$@" "hydra.sweep.dir=$OUT/runs/$dir" 2>&1 | tail -n 3
  # Copied at once, so that a run stopped at the device tool's limit still returns every finished table
  # (the tool returns at most 8 files, none deeper than two folders).
  [ "$dir" = smoke ] || cp "$OUT/runs/$dir/results.csv" "$OUT/$dir-results.csv" 2>/dev/null
}
sweep smoke norm profile=smoke dtype=bfloat16
# The GPU quality profile, briefly (train=gpu: bf16 autocast, compiled training forward, pinned non-blocking copies):
# its tests first, then 200 of its 5000 steps on one seed of each norm; beside it, what the predictor says a whole
# seed takes here (predicted, not measured).
python -m pytest -q -rfE --tb=line -p no:cacheprovider tests/quality/test_gpu_profile.py >> "$OUT/tests.txt" 2>&1
tail -n 3 "$OUT/tests.txt"
sweep gpu_quality norm measure=false train=gpu train.steps=200 train.warmup=20 train.eval_interval=100 \
  "train.seeds=[0]" train.target_mde=null train.min_seeds=null train.max_seeds=null
# The predictor's hardware profile is the card found here (H100 or H200; conf/hardware).
case "$(cat "$OUT/device.txt")" in *H100*) hardware=h100_sxm ;; *) hardware=h200 ;; esac
python -m ablations.predict.quality_seed "hardware=$hardware" 2>&1 | tee "$OUT/gpu_quality_predicted.txt"
# Decode as served (issue 58): the kv sweep's timing with each decode step captured and replayed as a CUDA graph
# (profile.graphs=auto is on for CUDA), the timed unit Llama-2-7B's depth of 32 blocks so that a step moves a real
# model's bytes, then eagerly at one block as the committed reference ran it.
sweep kv_graphs kv dtype=bfloat16 train.enabled=false model.n_layers=32
sweep kv kv dtype=bfloat16 profile.graphs=off
sweep norm norm dtype=bfloat16
tar -czf "$OUT/runs.tar.gz" -C "$OUT" runs && rm -rf "$OUT/runs"
