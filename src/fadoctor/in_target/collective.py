"""Stage `collective` (run by the rank agent on each rank, never by `check`): all_reduce and
all_gather over gloo and NCCL with the job's other ranks.

It reads this rank's place from the option `rank_spec` (JSON, from the agent), joins the job's
c10d store as a client, forms a gloo group (and, where every rank has a GPU of its own, an NCCL
group), checks each collective's result on this rank and times it. Before each phase it marks
`<prefix>coll/at/<phase>/<rank>` and `<prefix>coll/phase/<rank>` in the store: when a collective
hangs or crashes, the agent reads where this rank was and which ranks never arrived there. The
bandwidths are computed by the parent from the bytes and seconds returned here
(fadoctor.distributed.bandwidth).
"""

import json
import os
import socket
import time
from typing import Any, Callable, Dict, List, Optional

from .context import Context

# Sizes S of the whole array (the nccl-tests definition): all_gather sends S/n bytes per rank.
SIZES = {"gloo": (1 << 16, 1 << 20), "nccl": (1 << 20, 1 << 24, 1 << 28)}
ITERATIONS = {"gloo": 3, "nccl": 10}
WARMUP = 2


class Spec:
    """This rank's place in the job, as the agent read it from the launcher's environment."""

    def __init__(self, raw: Dict[str, Any]) -> None:
        self.rank = int(raw["rank"])
        self.world_size = int(raw["world_size"])
        self.local_rank = int(raw.get("local_rank") or 0)
        self.host = str(raw["master_addr"])
        self.port = int(raw["master_port"])
        self.prefix = str(raw["prefix"])
        self.timeout = float(raw.get("timeout", 60.0))
        self.backends = list(raw.get("backends", ["gloo", "nccl"]))
        # The node: the launcher's node rank where it gives one (torchrun's GROUP_RANK, srun's
        # SLURM_NODEID), else the host name.
        node = raw.get("node_rank")
        self.node = "node %d" % node if node is not None else str(raw.get("host"))


class Mark:
    """Marks each phase in the store: where this rank is, and that it arrived there."""

    def __init__(self, store: Any, spec: Spec) -> None:
        self.store = store
        self.spec = spec

    def key(self, kind: str) -> str:  # the keys the agent's gather.Channel reads
        return "%scoll/%s/%d" % (self.spec.prefix, kind, self.spec.rank)

    def __call__(self, phase: str) -> None:
        self.store.set(self.key("phase"), json.dumps(phase))
        self.store.set(self.key("at/" + phase), "1")


def device_facts(torch: Any, spec: Spec) -> Dict[str, Any]:
    """This rank's own GPU: the LOCAL_RANK-th device torch sees, as training code picks it."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if not torch.cuda.is_available():
        return {"index": None, "error": "torch sees no GPU (CUDA_VISIBLE_DEVICES=%s)" % visible}
    count = torch.cuda.device_count()
    if spec.local_rank >= count:
        return {"index": None, "error": "LOCAL_RANK %d, but torch sees %d GPU(s) "
                "(CUDA_VISIBLE_DEVICES=%s)" % (spec.local_rank, count, visible)}
    torch.cuda.set_device(spec.local_rank)
    props = torch.cuda.get_device_properties(spec.local_rank)
    uuid = getattr(props, "uuid", None)
    bus = getattr(props, "pci_bus_id", None)
    domain = getattr(props, "pci_domain_id", None)
    return {"index": spec.local_rank, "name": str(props.name),
            "capability": "%d.%d" % (props.major, props.minor),
            "uuid": str(uuid) if uuid is not None else None,
            "pci": "%04x:%02x:%02x" % (domain or 0, bus, getattr(props, "pci_device_id", 0) or 0)
            if bus is not None else None}


def nccl_version(torch: Any) -> Optional[str]:
    try:
        version = torch.cuda.nccl.version()
    except Exception:
        return None
    if isinstance(version, tuple):
        return ".".join(str(v) for v in version)
    code = int(version)  # torch < 1.13: NCCL_VERSION_CODE, major*10000 + minor*100 + patch
    return "%d.%d.%d" % (code // 10000, code // 100 % 100, code % 100)


def _timed(torch: Any, run: Callable[[], None], cuda: bool, iterations: int) -> float:
    for _ in range(WARMUP):
        run()
    if cuda:
        torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(iterations):
        run()
    if cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - started) / iterations


def one_op(dist: Any, torch: Any, op: str, size: int, group: Any, members: List[int],
           device: Any, iterations: int) -> Dict[str, Any]:
    """Run `op` on `size` bytes of float32 in `group`; check this rank's result; time it."""
    n = len(members)
    me = members.index(dist.get_rank())
    count = max(size // 4 // n, 1) * n  # elements of the whole array, a multiple of n
    cuda = device.type == "cuda"
    if op == "all_reduce":
        tensor = torch.full((count,), float(me + 1), dtype=torch.float32, device=device)
        expected = float(n * (n + 1) // 2)

        def run() -> None:
            tensor.fill_(float(me + 1))
            dist.all_reduce(tensor, group=group)

        seconds = _timed(torch, run, cuda, iterations)
        correct = bool(torch.all(tensor == expected).item())
    else:
        chunk = torch.full((count // n,), float(me + 1), dtype=torch.float32, device=device)
        parts = [torch.empty_like(chunk) for _ in range(n)]
        seconds = _timed(torch, lambda: dist.all_gather(parts, chunk, group=group), cuda,
                         iterations)
        correct = all(bool(torch.all(p == float(i + 1)).item()) for i, p in enumerate(parts))
    return {"op": op, "bytes": count * 4, "ranks": n, "correct": correct,
            "seconds": seconds, "iterations": iterations}


Result = Dict[str, List[Dict[str, Any]]]


def groups_by_node(dist: Any, nodes: List[str], backend: str, timeout: Any) -> List[Any]:
    """[("job", group, ranks)] and, on more than one node, (node, group, ranks) for each node.

    Every rank creates every group, in the same order, as torch.distributed requires."""
    world = list(range(len(nodes)))
    scopes = [("job", dist.group.WORLD if backend == "gloo" else
               dist.new_group(backend=backend, timeout=timeout), world)]
    names = sorted(set(nodes))
    if len(names) > 1:
        for name in names:
            members = [r for r, h in enumerate(nodes) if h == name]
            group = dist.new_group(ranks=members, backend=backend, timeout=timeout)
            scopes.append((name, group, members))
    return scopes


def run_backend(dist: Any, torch: Any, backend: str, nodes: List[str], mark: Mark,
                device: Any, timeout: Any, result: Result) -> None:
    mark("%s/init" % backend)
    scopes = groups_by_node(dist, nodes, backend, timeout)
    me = dist.get_rank()
    for scope, group, members in scopes:
        if me not in members or len(members) < 2:  # one rank alone moves no data
            continue
        for size in SIZES[backend]:
            for op in ("all_reduce", "all_gather"):
                mark("%s/%s/%s/%d" % (backend, scope, op, size))
                data = one_op(dist, torch, op, size, group, members, device, ITERATIONS[backend])
                data.update({"backend": backend, "scope": scope})
                result["ops"].append(data)


def nccl_blocker(torch: Any, dist: Any, devices: List[Dict[str, Any]], hosts: List[str]
                 ) -> Optional[str]:
    """Why NCCL cannot run on every rank (then no rank tries, so none waits for the others)."""
    if not dist.is_nccl_available():
        return "this torch has no NCCL (torch.distributed.is_nccl_available() is False)"
    without = [r for r, d in enumerate(devices) if d.get("index") is None]
    if without:
        return "no GPU of its own on rank(s) %s: %s" % (
            ",".join(str(r) for r in without), devices[without[0]].get("error"))
    seen: Dict[Any, int] = {}
    for r, d in enumerate(devices):
        key = (hosts[r], d.get("uuid") or d.get("pci") or d.get("index"))
        if key in seen:
            return "ranks %d and %d use the same GPU (%s on %s)" % (seen[key], r, key[1], key[0])
        seen[key] = r
    return None


def run(context: Context) -> Dict[str, Any]:
    spec = Spec(json.loads(context.options["rank_spec"]))
    import datetime

    import torch
    import torch.distributed as dist

    device = device_facts(torch, spec)
    device["nccl_version"] = nccl_version(torch)
    timeout = datetime.timedelta(seconds=spec.timeout)
    store = dist.TCPStore(spec.host, spec.port, None, False, timeout)
    mark = Mark(store, spec)
    # Each rank's node, GPU and host, through the store (all_gather_object would need numpy).
    store.set(mark.key("info"), json.dumps([spec.node, device, socket.gethostname()]))
    mark("gloo/join")
    dist.init_process_group("gloo", store=dist.PrefixStore(spec.prefix + "pg", store),
                            rank=spec.rank, world_size=spec.world_size, timeout=timeout)
    info = "%scoll/info/%%d" % spec.prefix
    pairs = [json.loads(store.get(info % r)) for r in range(spec.world_size)]
    nodes, devices, hosts = [p[0] for p in pairs], [p[1] for p in pairs], [p[2] for p in pairs]
    result: Result = {"ops": [], "skipped": []}
    for backend in spec.backends:
        blocker = nccl_blocker(torch, dist, devices, hosts) if backend == "nccl" else None
        if blocker is not None:
            result["skipped"].append({"backend": backend, "reason": blocker})
            continue
        where = torch.device("cuda", spec.local_rank) if backend == "nccl" else torch.device("cpu")
        run_backend(dist, torch, backend, nodes, mark, where, timeout, result)
    mark("done")
    # No destroy_process_group: the worker ends with os._exit, which tears the groups down.
    return {"device": device, "ops": result["ops"], "skipped": result["skipped"]}
