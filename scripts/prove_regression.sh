#!/usr/bin/env bash
# Proof that the regression workflow catches a slowdown and lets the unchanged code through:
# the norm benchmarks of the working tree against BASE_REV (default HEAD), once as they are (must pass,
# exit 0) and once with the test-only switch that runs RMSNorm's forward twice (must fail, exit 1).
#
#   scripts/prove_regression.sh [BASE_REV]        # ~2 minutes on 2 cores
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python
BASE=${1:-HEAD}
SELECT=(-- -k "test_norm or norm-")

echo "=== without injection: expect PASS (exit 0)"
"$PY" scripts/bench_regression.py "$BASE" "${SELECT[@]}"
clean=$?
echo "=== with BLOCKBENCH_BENCH_SLOWDOWN=rmsnorm (RMSNorm forward runs twice): expect FAIL (exit 1)"
"$PY" scripts/bench_regression.py "$BASE" --head-env BLOCKBENCH_BENCH_SLOWDOWN=rmsnorm "${SELECT[@]}"
slow=$?
echo "=== exit without injection: $clean (expected 0); with injection: $slow (expected 1)"
[ "$clean" -eq 0 ] && [ "$slow" -eq 1 ]
