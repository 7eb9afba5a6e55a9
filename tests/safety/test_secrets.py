"""Which environment variables are secrets, and what is left of URLs with credentials."""

from __future__ import annotations

import pytest

from fadoctor.safety.secrets import redact_environment, secret_name, without_credentials


@pytest.mark.parametrize("name", ["HF_TOKEN", "PYTORCH_HF_TOKEN", "flash_attn_api_key",
                                  "TORCHINDUCTOR_PASSWORD", "X_PASSWD", "AWS_SECRET_ACCESS_KEY",
                                  "GOOGLE_APPLICATION_CREDENTIALS", "PYTORCH_AUTH_HEADER"])
def test_secret_names_whatever_the_prefix_or_case(name: str) -> None:
    assert secret_name(name)


@pytest.mark.parametrize("name", ["CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF", "MAX_JOBS",
                                  "TORCH_CUDA_ARCH_LIST", "LD_LIBRARY_PATH"])
def test_ordinary_names_are_kept(name: str) -> None:
    assert not secret_name(name)


def test_urls_lose_their_credentials_and_keep_the_rest() -> None:
    assert without_credentials("https://u:p@h.example/a?b=c") == "https://<redacted>@h.example/a?b=c"
    assert without_credentials("git+https://tok@github.com/x") == "git+https://<redacted>@github.com/x"
    assert without_credentials("/usr/local/cuda:/opt/x@y") == "/usr/local/cuda:/opt/x@y"
    assert redact_environment({"A_TOKEN": "t", "B": "ftp://u:p@h/"}) == {
        "A_TOKEN": "<redacted>", "B": "ftp://<redacted>@h/"}
