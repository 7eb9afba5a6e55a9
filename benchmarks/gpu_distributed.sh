#!/usr/bin/env bash
# Verify the distributed check on a 2-GPU machine, with torchrun, and benchmark it.
#
#   OUT=/some/folder benchmarks/gpu_distributed.sh BASE_SITE [FA4_SITE...]
#
# BASE_SITE holds fadoctor's own dependencies that the machine's python3 lacks (pip --target);
# FA4_SITE... are folders that add flash-attn-4 (the "other flash-attn" one simulated node gets
# on its PYTHONPATH; without them a small fake flash-attn distribution made here is used). The
# ranks run the rank agent by path in python3, the interpreter that holds torch: fadoctor is not
# installed in the examined environment. Scenarios, each checked and logged PASS/FAIL:
#   1. one node, 2 ranks (torchrun --nproc-per-node 2), each with the kernel smoke tests on its
#      own GPU; and `check --distributed` under torchrun
#   2. a simulated 2-node job: two torchrun invocations, --nnodes 2 --node-rank 0|1, a localhost
#      rendezvous, one GPU each
#   3. the same, node 1 with another flash-attn on its PYTHONPATH: the report names rank 1
#   4. the same, node 1 with its GPU hidden (CUDA_VISIBLE_DEVICES=""): the report names rank 1
#   5. a rank killed mid-gather: node 1 killed while its probes hang; one node with rank 1 killed
#      (torchrun then stops rank 0): both reported by rank number, neither waited for forever
#   6. benchmarks/bench_distributed.py: 1 and 2 ranks, one and two nodes, against one check
# Writes 8 files to $OUT: reports.txt, one-node-report.json, gathered-one-node.json,
# gathered-two-nodes.json, gathered-differ.json, gathered-killed.json, bench.json, log.txt.
set -uo pipefail
# Never NVLink multicast (NVLS) on these machines: for every process started from here.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
out=${OUT:?set OUT to the output folder}; base=${1:?BASE_SITE}; shift
# The ranks examine python3 as it is: only what a scenario puts on PYTHONPATH is added.
unset PYTHONPATH
fa4=$(IFS=:; echo "$*")
here=$(cd "$(dirname "$0")" && pwd); src=$(cd "$here/../src" && pwd)
agent="$src/fadoctor/in_target/rank_agent.py"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$out"; log="$out/log.txt"; reports="$out/reports.txt"; : >"$log"; : >"$reports"
say() { echo "$*" | tee -a "$log"; }
doctor() { PYTHONPATH="$src:$base" python3 -m fadoctor "$@"; }
torchrun() { python3 -m torch.distributed.run "$@"; }
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
report() {  # title, facts dir: the text report (-v) into reports.txt, its exit status to the log
  { echo "===== $1"; doctor check --facts-dir "$2" -v; echo "(exit $?)"; echo; } >>"$reports" 2>&1
}
cat >"$work/help.py" <<'EOF'
"""Helpers of gpu_distributed.sh: check a report, kill a process tree, find a rank's agent."""
import json, os, signal, sys


def parents():
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            out[int(pid)] = int(open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()[1])
        except OSError:
            pass
    return out


def kill_tree(root):  # the agent's children run in sessions of their own: walk the tree
    tree, frontier, table = [root], [root], parents()
    while frontier:
        frontier = [p for p, parent in table.items() if parent in frontier]
        tree += frontier
    for pid in tree:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    print("killed", tree)


def find_agent(rank):
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = open("/proc/%s/environ" % pid, "rb").read().split(b"\0")
            cmd = open("/proc/%s/cmdline" % pid, "rb").read()
        except OSError:
            continue
        if ("RANK=%s" % rank).encode() in env and b"rank_agent.py" in cmd:
            print(pid)
            return


def expect(gathered, report, test):  # a python expression over g, r, checks, text
    g = json.load(open(gathered))
    r = json.load(open(report))
    checks = {c["id"]: c for c in r["merged"]["checks"]}
    text = {k: " | ".join([f["message"] for f in c["findings"]] + [c["skipped_reason"] or ""])
            for k, c in checks.items()}
    ok = eval(test)
    print(("PASS" if ok else "FAIL") + ": " + test)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    {"kill-tree": lambda a: kill_tree(int(a[0])), "find-agent": lambda a: find_agent(a[0]),
     "expect": lambda a: expect(*a)}[sys.argv[1]](sys.argv[2:])
EOF
expect() {  # description, facts dir, python expression over g (gathered.json), r (the report)
  doctor check --facts-dir "$2" -f json >"$work/r.json" 2>>"$log"
  if python3 "$work/help.py" expect "$2/gathered.json" "$work/r.json" "$3" >>"$log" 2>&1
  then say "PASS $1"; else say "FAIL $1"; fi
}
two_nodes() {  # name, node-1 env (VAR=value ...), extra agent args: one torchrun per node
  local name=$1 env1=$2 p; p=$(port); shift 2
  CUDA_VISIBLE_DEVICES=0 torchrun --nnodes 2 --node-rank 0 --nproc-per-node 1 \
    --master-addr 127.0.0.1 --master-port "$p" "$agent" --out "$work/$name" "$@" \
    >>"$log" 2>&1 &
  local first=$!
  env CUDA_VISIBLE_DEVICES=1 $env1 python3 -m torch.distributed.run --nnodes 2 --node-rank 1 \
    --nproc-per-node 1 --master-addr 127.0.0.1 --master-port "$p" "$agent" \
    --out "$work/$name" "$@" >>"$log" 2>&1
  say "$name: node 1 exit $?"; wait "$first"; say "$name: node 0 exit $?"
}
fake_fa() {  # folder, body of flash_attn/__init__.py: a flash-attn 2.6.3 distribution
  mkdir -p "$1/flash_attn" "$1/flash_attn-2.6.3.dist-info"
  printf '%s\n' "$2" >"$1/flash_attn/__init__.py"
  printf 'Metadata-Version: 2.1\nName: flash-attn\nVersion: 2.6.3\n' \
    >"$1/flash_attn-2.6.3.dist-info/METADATA"
}
kill_tree() { python3 "$work/help.py" kill-tree "$1" >>"$log"; }
wait_for() {  # file, seconds
  local i; for ((i = 0; i < $2 * 5; i++)); do [ -f "$1" ] && return 0; sleep 0.2; done; return 1
}

{ nvidia-smi --query-gpu=index,name,compute_cap,driver_version --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, torch.cuda.device_count(), "GPUs, NCCL", torch.cuda.nccl.version() if torch.cuda.is_available() else None)'
  env | grep -E '^(NCCL_NVLS_ENABLE|TORCH_SYMM_MEM_DISABLE_MULTICAST|NVSHMEM_DISABLE_NVLS)='
} >>"$log" 2>&1
start=$SECONDS

# 1. One node, two ranks; then check --distributed itself under torchrun.
torchrun --nproc-per-node 2 --master-port "$(port)" "$agent" --out "$work/one-node" >>"$log" 2>&1
say "one-node: torchrun exit $?"
report "one node, 2 ranks (torchrun --nproc-per-node 2)" "$work/one-node"
doctor check --facts-dir "$work/one-node" -f json >"$out/one-node-report.json" 2>>"$log"
cp "$work/one-node/gathered.json" "$out/gathered-one-node.json"
expect "one node: 2 ranks, NCCL correct on both" "$work/one-node" \
  'len(g["ranks"]) == 2 and not g["missing"] and checks["FAD207"]["status"] == "passed"'
expect "one node: each rank ran the kernel smoke tests on its own GPU" "$work/one-node" \
  'all(r["kernels"]["stages"] and not r["kernels"]["skipped"] for r in g["ranks"]) and checks["FAD140"]["status"] != "skipped"'
{ echo "===== check --distributed under torchrun (rank 0 prints; exit = rank 0's)"
  PYTHONPATH="$src:$base" torchrun --nproc-per-node 2 --master-port "$(port)" -m fadoctor \
    check --distributed; echo "(torchrun exit $?)"; echo; } >>"$reports" 2>>"$log"

# 2. A simulated two-node job, one GPU a node.
two_nodes two-nodes ""
report "two simulated nodes (torchrun --nnodes 2 --node-rank 0|1, localhost rendezvous)" \
  "$work/two-nodes"
cp "$work/two-nodes/gathered.json" "$out/gathered-two-nodes.json"
expect "two nodes: NCCL across them" "$work/two-nodes" \
  'len(r["nodes"]) == 2 and checks["FAD207"]["status"] == "passed"'

# 3. Node 1 with another flash-attn on its PYTHONPATH.
if [ -n "$fa4" ]; then other=$fa4; else other="$work/other-fa"; fake_fa "$other" '__version__ = "2.6.3"'; fi
two_nodes differ "PYTHONPATH=$other"
report "node 1 with another flash-attn on its PYTHONPATH ($other)" "$work/differ"
cp "$work/differ/gathered.json" "$out/gathered-differ.json"
expect "differ: FAD202 names rank 1 and the flash-attention difference" "$work/differ" \
  'checks["FAD202"]["status"] == "failed" and any(f["subject"].startswith("flash-attention") and "on rank 1 (node 1)" in f["message"] for f in checks["FAD202"]["findings"])'

# 4. Node 1 with its GPU hidden.
two_nodes hidden-gpu "CUDA_VISIBLE_DEVICES="
report "node 1 with its GPU hidden (CUDA_VISIBLE_DEVICES=\"\")" "$work/hidden-gpu"
expect "hidden GPU: FAD205 names rank 1; NCCL skipped naming it" "$work/hidden-gpu" \
  'checks["FAD205"]["status"] == "failed" and text["FAD205"].startswith("rank 1 has no GPU") and "rank(s) 1" in text["FAD207"]'

# 5a. Node 1 killed while its flash_attn import hangs: rank 0 hears its silence.
fake_fa "$work/hang-fa" "import time; open('$work/hung', 'w').close(); time.sleep(600)"
p=$(port)
CUDA_VISIBLE_DEVICES=0 torchrun --nnodes 2 --node-rank 0 --nproc-per-node 1 \
  --master-addr 127.0.0.1 --master-port "$p" "$agent" --out "$work/killed" --stale 5 \
  --wait 60 --collective-timeout 30 >>"$log" 2>&1 &
node0=$!
CUDA_VISIBLE_DEVICES=1 PYTHONPATH="$work/hang-fa" python3 -m torch.distributed.run --nnodes 2 \
  --node-rank 1 --nproc-per-node 1 --master-addr 127.0.0.1 --master-port "$p" "$agent" \
  --out "$work/killed" >>"$log" 2>&1 &
node1=$!
if wait_for "$work/hung" 120; then sleep 8; kill_tree "$node1"; killed=$SECONDS
  # Rank 0 writes the report's facts, then its torchrun waits (up to 300 s) in its exit barrier
  # for the dead node: stop it once the facts are there.
  wait_for "$work/killed/gathered.json" 120
  say "killed: rank 0 gathered $((SECONDS - killed)) s after node 1 died"
else say "FAIL killed: rank 1 never hung"; kill_tree "$node1"; fi
kill_tree "$node0"
report "node 1 killed mid-gather" "$work/killed"
cp "$work/killed/gathered.json" "$out/gathered-killed.json"
expect "killed node: rank 1 reported lost" "$work/killed" \
  '[(m["rank"], m["state"]) for m in g["missing"]] == [(1, "lost")] and text["FAD201"].startswith("rank 1 started")'

# 5b. One node, rank 1 killed: torchrun stops rank 0, which writes what it has.
fake_fa "$work/hang-rank1" "import os, time
if os.environ['RANK'] == '1':
    open('$work/hung1', 'w').close(); time.sleep(600)"
PYTHONPATH="$work/hang-rank1" torchrun --nproc-per-node 2 --master-port "$(port)" "$agent" \
  --out "$work/killed-one-node" >>"$log" 2>&1 &
launcher=$!
if wait_for "$work/hung1" 120; then sleep 3
  rank1=$(python3 "$work/help.py" find-agent 1)
  [ -n "$rank1" ] && kill_tree "$rank1"
  wait "$launcher"; say "killed-one-node: torchrun exit $?"
else say "FAIL killed-one-node: rank 1 never hung"; kill_tree "$launcher"; fi
report "one node, rank 1 killed (torchrun stops rank 0)" "$work/killed-one-node"
expect "killed rank on one node: rank 0 reports rank 1 when stopped" "$work/killed-one-node" \
  'g["interrupted"] == "SIGTERM" and [m["rank"] for m in g["missing"]] == [1]'
say "scenarios: $((SECONDS - start)) s"

# 6. What it costs: one check against 1 and 2 ranks, one and two nodes.
PYTHONPATH="$base" python3 "$here/bench_distributed.py" --python "$(command -v python3)" \
  --ranks 1,2 --nodes 2 --runs 2 --json >"$out/bench.json" 2>>"$log"
say "bench: exit $? ($((SECONDS - start)) s in all)"
grep -E '^(PASS|FAIL)' "$log"
cat "$out/bench.json"
