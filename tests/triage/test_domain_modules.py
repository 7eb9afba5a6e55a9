"""torchvision's and torchaudio's modules by release (tools/gen_domain_modules.py from the release
wheels, data/domain_modules.yaml): the generator on wheels made here, and the data file as the
generator renders it."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import gen_domain_modules  # noqa: E402


def _wheel(folder: Path, name: str, version: str, files: list) -> None:
    with zipfile.ZipFile(folder / f"{name}-{version}-cp310-cp310-linux_x86_64.whl", "w") as archive:
        for path in files:
            archive.writestr(path, "")


def test_a_module_some_releases_lack_is_kept_with_its_releases(tmp_path: Path) -> None:
    _wheel(tmp_path, "torchvision", "0.16.2", ["torchvision/__init__.py",
                                               "torchvision/transforms/__init__.py",
                                               "torchvision/transforms/functional_tensor.py"])
    _wheel(tmp_path, "torchvision", "0.17.2", ["torchvision/__init__.py",
                                               "torchvision/transforms/__init__.py",
                                               "torchvision/transforms/_functional_tensor.py"])
    _wheel(tmp_path, "torchaudio", "2.1.2", ["torchaudio/__init__.py", "torchaudio/backend/x.py"])
    found = gen_domain_modules.collect(tmp_path)
    vision = found["torchvision"]
    assert vision["tags"] == ["0.16.2", "0.17.2"]  # type: ignore[index]
    assert vision["modules"] == {  # type: ignore[index]
        "torchvision.transforms._functional_tensor": "1",
        "torchvision.transforms.functional_tensor": "0"}
    assert found["torchaudio"]["modules"] == {}  # type: ignore[index]  # one release: no difference


def test_the_data_file_is_the_generators_rendering() -> None:
    text = (ROOT / "data" / "domain_modules.yaml").read_text(encoding="utf-8")
    assert gen_domain_modules.render(yaml.safe_load(text)) == text
