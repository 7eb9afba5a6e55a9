"""Plans from every wheel source, labelled and ranked by provenance and cost: community wheels by
exact URL (third-party), the kernels Hub (downloads at load time), SDPA first only where it needs
no install and is as fast — each expectation traced to the matrix entry and its source."""

from __future__ import annotations

import json

import pytest
from packaging.version import Version

from fadoctor.facts.model import Family
from fadoctor.fix.render import PinFormat, plan_into, render_plan
from fadoctor.fix.solver import Constraints, Plan, solve
from fadoctor.install.machine import Machine, WhatIf, apply
from fadoctor.matrix import Matrix, load_matrix
from fadoctor.matrix.invariants import INVARIANTS
from fadoctor.safety.shell import Installer

COMMUNITY = "https://github.com/mjun0812/flash-attention-prebuild-wheels/releases/download/"


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix()


def h200(torch: str = "2.11.0+cu130", python: str = "3.12") -> Machine:
    """As recorded on the H200 machine (tests/fixtures/recorded): torch installed, no FA."""
    return apply(Machine(torch=Version(torch)), WhatIf(gpu_cc="9.0", python=python,
                                                      driver="580.159.04", glibc="2.39"))


def picks(plan: Plan) -> list:
    return [plan.best, *plan.alternatives]


def test_every_pick_is_labelled_and_the_order_follows_cost_then_tier(matrix: Matrix) -> None:
    plan = solve(h200(), Constraints(), matrix)
    tiers = [(p.kind == "build", p.changes_torch, p.provenance.tier) for p in picks(plan)
             if p.kind != "sdpa"]
    assert tiers == sorted(tiers)
    assert {p.provenance.tier for p in picks(plan)} >= {1, 3, 4, 5, 6}
    # cuDNN ran at 92% of FA4 on the H200: not as fast, so SDPA is last, not first.
    assert plan.best.family == Family.FA4 and picks(plan)[-1].kind == "sdpa"
    assert any("92% of FlashAttention-4" in n for n in picks(plan)[-1].notes)


def test_a_community_wheel_is_the_exact_listed_file_marked_third_party(matrix: Matrix) -> None:
    plan = solve(h200(), Constraints(), matrix)
    fa2 = next(p for p in picks(plan) if p.provenance.tier == 4 and p.family == Family.FA2)
    # doc/packages.md @ 3baf0ba8, Linux x86_64, 2.8.3, Python 3.12 / torch 2.11 / CUDA 13.0.
    assert fa2.url == (COMMUNITY + "v0.9.4/flash_attn-2.8.3+cu130torch2.11-cp312-cp312-"
                       "linux_x86_64.whl")
    assert fa2.provenance.third_party and fa2.torch is not None and fa2.torch.installed
    assert fa2.commands == (f"pip install --no-deps {fa2.url}", "pip install einops")
    assert any("publishes no sha256" in n for n in fa2.notes)
    fa3 = next(p for p in picks(plan) if p.provenance.tier == 4 and p.family == Family.FA3)
    assert fa3.url is not None and fa3.url.endswith("cu130torch2.11gite2743ab-cp39-abi3-"
                                                    "linux_x86_64.whl")


def test_no_community_wheel_for_a_torch_variant_it_never_built(matrix: Matrix) -> None:
    # The list has no CUDA 11.8 builds of 2.8.3 for torch 2.6: nothing is guessed.
    plan = solve(h200("2.6.0+cu118", "3.11"), Constraints(keep_torch=True), matrix)
    assert not [p for p in picks(plan) if p.provenance.tier == 4]


def test_the_hub_pick_pins_kernels_and_says_it_downloads_at_load(matrix: Matrix) -> None:
    plan = solve(h200(), Constraints(family=Family.FA2), matrix)
    hub = next(p for p in picks(plan) if p.kind == "hub")
    assert hub.commands == ("pip install kernels==0.17.2",)
    assert hub.provenance.tier == 3 and hub.provenance.downloads_at_load
    assert any('attn_implementation="kernels-community/flash-attn2"' in n for n in hub.notes)
    assert any("when the model loads" in n for n in hub.notes)


def test_the_hub_is_refused_below_its_stable_abi_floor(matrix: Matrix) -> None:
    # flash-attn2/build.toml: [torch.stable-abi] cuda = "2.10"; flash-attn3: stable-abi 2.9.
    plan = solve(h200("2.9.1+cu128"), Constraints(keep_torch=True), matrix)
    hubs = [p.summary for p in picks(plan) if p.kind == "hub"]
    assert len(hubs) == 1 and "kernels-community/flash-attn3" in hubs[0]
    assert any(r.startswith("kernels-community/flash-attn2: its CUDA build targets torch's "
                            "stable ABI 2.10") for r in plan.rejected)


def test_sdpa_comes_first_only_with_nothing_to_install_and_as_fast(matrix: Matrix) -> None:
    a100 = apply(Machine(torch=Version("2.6.0+cu124")), WhatIf(gpu_cc="8.0", python="3.11",
                                                              driver="570.124.06"))
    first = solve(a100, Constraints(), matrix)
    assert first.best.kind == "sdpa" and not first.best.commands
    asked = solve(a100, Constraints(family=Family.FA2), matrix)  # a family asked for: never
    assert asked.best.kind != "sdpa"
    fresh = solve(apply(Machine(), WhatIf(gpu_cc="8.0", python="3.11")), Constraints(), matrix)
    assert fresh.best.kind != "sdpa"  # its torch must be installed first: not zero-install


def test_provenance_in_text_and_json_and_commands_into_the_examined_python(matrix: Matrix
                                                                           ) -> None:
    plan = solve(h200(), Constraints(), matrix)
    text = render_plan(plan, PinFormat.text)
    assert "[tier 4: mjun0812/flash-attention-prebuild-wheels (community wheels, third-party)]" \
        in text
    data = json.loads(render_plan(plan, PinFormat.json))
    tiers = [data["best"]["provenance"]["tier"]] + [a["provenance"]["tier"]
                                                    for a in data["alternatives"]]
    assert 3 in tiers and 4 in tiers
    hub = next(a for a in data["alternatives"] if a["kind"] == "hub")
    assert hub["provenance"]["downloads_at_load"] is True
    into = plan_into(plan, Installer(python="/envs/a b/bin/python", pip=True, known=True))
    community = next(p for p in picks(into) if p.provenance.tier == 4)
    assert community.commands[0].startswith('"/envs/a b/bin/python" -m pip install --no-deps ')


def test_lint_names_a_community_row_whose_file_carries_other_versions(matrix: Matrix) -> None:
    group = matrix.community_wheels[0]
    row = [group.wheels[0][0], "2.9", *group.wheels[0][2:]]  # says torch 2.9; its file is for 2.5
    bad = matrix.model_copy(update={"community_wheels": [
        group.model_copy(update={"wheels": [row, row]})]})
    problems = [p for check in INVARIANTS for p in check(bad)]
    assert any("two files for" in p for p in problems)
    assert any("does not carry python" not in p and "does not carry" in p for p in problems)
