"""The Hugging Face libraries' API by release (data/hf_libs_api.yaml, tools/gen_lib_api.py):
a name asked of huggingface_hub, accelerate, peft, diffusers or kernels that the installed
release lacks is looked up like flash_attn's and transformers' names; a lazy __init__'s attach
table counts as binding its names; and diffusers' "requires `accelerate v0.17.0` or higher"
is a package floor."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

from tests.helpers.triage_said import said, top

from fadoctor.matrix import Matrix
from fadoctor.report import Category
from fadoctor.triage.api_tables import api

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import gen_lib_api
from gen_fa_api import collect

LAZY_INIT = '''
__version__ = "{v}"
__getattr__, __dir__, __all__ = _attach(
    __name__, submodules=[], submod_attrs={{"file_download": [{names}]}})
'''


def _wheel(folder: Path, version: str, names: str) -> None:
    with zipfile.ZipFile(folder / f"huggingface_hub-{version}-py3-none-any.whl", "w") as z:
        z.writestr("huggingface_hub/__init__.py", LAZY_INIT.format(v=version, names=names))
        z.writestr("huggingface_hub/file_download.py", "def hf_hub_download(repo_id):\n    pass\n")


def test_a_lazy_attach_table_binds_its_names(tmp_path: Path) -> None:
    _wheel(tmp_path, "0.25.2", '"cached_download", "hf_hub_download"')
    _wheel(tmp_path, "0.26.5", '"hf_hub_download"')
    found = collect(gen_lib_api.releases(tmp_path, "huggingface_hub"), imports=True)
    names = found["names"]
    assert found["tags"] == ["0.25.2", "0.26.5"]
    assert names["huggingface_hub:cached_download"] == "0"
    assert names["huggingface_hub:hf_hub_download"] == "0-1"


def test_the_generated_table_knows_when_hub_dropped_cached_download() -> None:
    hub = api("huggingface_hub")
    have = hub.names["huggingface_hub:cached_download"]
    assert hub.version(have[-1]) == "0.25.2" and hub.removed_in(have[-1] + 1) == "0.26"
    assert hub.minors and hub.dist == "huggingface-hub"


def test_a_name_the_installed_hub_lacks_is_pinned_to_the_last_release_with_it(
        matrix: Matrix) -> None:
    found = top("Traceback (most recent call last):\n"
                '  File "/venv/lib/python3.11/site-packages/diffusers/utils/dynamic_modules_utils'
                '.py", line 28, in <module>\n'
                "    from huggingface_hub import cached_download, hf_hub_download, model_info\n"
                "ImportError: cannot import name 'cached_download' from 'huggingface_hub' "
                "(/venv/lib/python3.11/site-packages/huggingface_hub/__init__.py)\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert "0.26 removed it" in found.message
    assert "huggingface-hub==0.25.2" in said(found)
    assert "upgrade diffusers" in said(found)


def test_a_name_newer_than_the_installed_accelerate_asks_for_an_upgrade(matrix: Matrix) -> None:
    found = top("accelerate==0.20.3\nImportError: cannot import name 'clear_device_cache' from "
                "'accelerate.utils.memory'\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert 'accelerate>=' in said(found)


def test_diffusers_floor_on_accelerate_is_read(matrix: Matrix) -> None:
    found = top("`enable_model_cpu_offload` requires `accelerate v0.17.0` or higher.\n", matrix)
    assert found.category == Category.VERSION_CONFLICT
    assert 'accelerate>=0.17.0' in said(found)
