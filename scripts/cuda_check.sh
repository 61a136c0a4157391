#!/usr/bin/env bash
# The one prepared CUDA run (issue 3, item 7): tests, a smoke sweep, and the default kv and norm sweeps on
# the GPU, in bf16. Writes logs and result tables under $OUT (the device tool's folder) or results/cuda/.
# Run from the repository root on a machine with a CUDA build of torch >= 2.5 already installed:
#   bash scripts/cuda_check.sh
set -uo pipefail
OUT=${OUT:-results/cuda}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python -c "import torch; assert torch.cuda.is_available(), 'no CUDA'; print(torch.__version__, torch.cuda.get_device_name())" \
  | tee "$OUT/device.txt" || exit 1
pip install -q --no-deps -e . && pip install -q "hydra-core>=1.3,<1.4" pandas seaborn tqdm pytest pytest-benchmark
python -m pytest -q tests/components tests/ablations/test_measure.py 2>&1 | tail -n 5 | tee "$OUT/tests.txt"
sweep() {  # folder, sweep name, extra overrides...
  local dir=$1 name=$2; shift 2
  python -m ablations "+sweep=$name" device=cuda "$@" "hydra.sweep.dir=$OUT/runs/$dir" 2>&1 | tail -n 3
}
sweep smoke norm profile=smoke dtype=bfloat16
sweep kv kv dtype=bfloat16
sweep norm norm dtype=bfloat16
# Collect the tables (the device tool returns at most 8 files).
for name in kv norm; do cp "$OUT/runs/$name/results.csv" "$OUT/$name-results.csv" 2>/dev/null; done
tar -czf "$OUT/runs.tar.gz" -C "$OUT" runs && rm -rf "$OUT/runs"
