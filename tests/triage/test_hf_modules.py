"""transformers' modules by release (tools/gen_hf_modules.py from the release wheels,
data/transformers_modules.json): the generator's reading of a wheel made here, and what triage
says of "No module named 'transformers.X'"."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.diagnose import triage
from fadoctor.triage.mech_hf_modules import table

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import gen_hf_modules  # noqa: E402


def _wheel(folder: Path, version: str, *paths: str) -> None:
    with zipfile.ZipFile(folder / f"transformers-{version}-py3-none-any.whl", "w") as archive:
        for path in ("transformers/__init__.py", *paths):
            archive.writestr(path, "")


def test_modules_by_release_keep_only_what_some_lack(tmp_path: Path) -> None:
    _wheel(tmp_path, "4.33.3", "transformers/integrations.py")
    _wheel(tmp_path, "4.34.1", "transformers/integrations/__init__.py",
           "transformers/integrations/deepspeed.py")
    found = gen_hf_modules.collect(tmp_path)
    assert found["tags"] == ["4.33.3", "4.34.1"]
    # a module and then a package of the same dotted name: present in both, so not kept
    assert found["modules"] == {"transformers.integrations.deepspeed": "1"}


def test_the_data_file_is_the_generators_rendering() -> None:
    text = (ROOT / "data" / "transformers_modules.json").read_text(encoding="utf-8")
    assert gen_hf_modules.render(json.loads(text)) == text


def test_facts_read_from_the_wheels() -> None:
    tags, modules = table()
    assert tags[int(modules["transformers.modeling_layers"].split("-")[0])].startswith("4.52.")
    assert tags[int(modules["transformers.models.qwen3"].split("-")[0])].startswith("4.51.")


def test_a_module_newer_than_the_installed_transformers(matrix: Matrix) -> None:
    found = top("transformers==4.51.3\nRuntimeError: No module named "
                "'transformers.modeling_layers'\n", matrix)
    assert found.category == Category.VERSION_CONFLICT and "4.51.3 predates it" in found.message
    assert '"transformers>=4.52.4"' in said(found)


def test_a_module_the_installed_release_has_is_not_claimed(matrix: Matrix) -> None:
    result = triage("transformers==4.55.0\nNo module named 'transformers.modeling_layers'\n",
                    matrix)
    assert all("is in transformers" not in d.message for d in result.diagnosis)
