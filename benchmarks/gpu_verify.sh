#!/usr/bin/env bash
# Verify `fadoctor check` on a GPU machine, with and without flash-attn-4, and benchmark it.
#
#   benchmarks/gpu_verify.sh OUT_DIR BASE_SITE FA4_SITE...
#
# BASE_SITE is a folder holding fadoctor's own dependencies that the machine's python3 lacks
# (installed with `pip install --target`); FA4_SITE... are folders that add flash-attn-4 and its
# CuTe DSL runtime. The examined interpreter is python3 either way: the two runs differ only in
# PYTHONPATH, which the worker inherits just as a training job would.
set -uo pipefail
out=${1:?OUT_DIR}; base=${2:?BASE_SITE}; shift 2
fa4=$(IFS=:; echo "$*")
src=$(cd "$(dirname "$0")/../src" && pwd)
mkdir -p "$out"
run() {  # name, pythonpath, args...
  local name=$1 path=$2; shift 2
  PYTHONPATH="$src:$path" python3 -m fadoctor "$@" >"$out/$name" 2>"$out/$name.stderr"
  echo "$name: exit $?"
}
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'
run check-without-fa4.txt "$base" check -v
run facts-without-fa4.json "$base" snapshot -o -
run check-with-fa4.txt "$base:$fa4" check -v
run facts-with-fa4.json "$base:$fa4" snapshot -o -
run check-with-fa4.json "$base:$fa4" check --format json
# The static analysis on this machine's real CUDA binaries: torch's own libc10_cuda.so and
# libtorch_cuda.so (kernels for this GPU), with and without importing anything.
lib=$(python3 -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
run check-static.txt "$base:$fa4" check --static -v --extension "$lib/libc10_cuda.so" \
  --extension "$lib/libtorch_cuda.so"
run facts-static.json "$base:$fa4" snapshot --static -o - --extension "$lib/libc10_cuda.so" \
  --extension "$lib/libtorch_cuda.so"
run fix-pins.txt "$base" fix --print-pins
run fix-pins-keep-torch.txt "$base" fix --print-pins --keep-torch
PYTHONPATH="$src:$base" python3 "$(dirname "$0")/bench_check.py" --runs 5 --json >"$out/bench.json" 2>&1
echo "bench: exit $?"
tail -n 60 "$out"/check-*.txt "$out"/fix-*.txt
cat "$out/bench.json"
