"""Redaction (pure): what identifies a person, a machine or a secret goes; versions, paths of
packages and error text stay readable."""

from __future__ import annotations

import json

import pytest

from fadoctor.safety.redact import Identity, redact

KEEP = [
    "torch 2.5.1+cu124, cuDNN 8.9.2.26, driver 535.104.05, Ubuntu 22.04.3 LTS",
    "ldd (Ubuntu GLIBC 2.35-0ubuntu3.8) 2.35",
    "/usr/lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.32' not found",
    "pip install flash-attn==2.7.4.post1 --no-build-isolation",
    "undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationESs",
    "max_tokens_per_batch = 4096",
]


@pytest.mark.parametrize("text", KEEP)
def test_technical_text_is_kept(text: str) -> None:
    assert redact(text, Identity(users=("root", "ubuntu"), hosts=("gpu7",))) == text


@pytest.mark.parametrize("text, secret", [
    ("/home/alice/venvs/ft/bin/python", "alice"),
    ("/Users/bob/miniconda3/envs/x/lib/python3.11", "bob"),
    ("C:\\Users\\carol\\AppData\\Local\\Programs\\Python", "carol"),
    ('{"python": "C:\\\\Users\\\\carol\\\\env\\\\python.exe"}', "carol"),
    ("Linux dgx-node-17 5.15.0-105-generic #115-Ubuntu SMP x86_64 GNU/Linux", "dgx-node-17"),
    ("dave@gpubox:~/work$ python train.py", "gpubox"),
    ("dave@gpubox:~/work$ python train.py", "dave"),
    ("HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz"),
    ('"WANDB_API_KEY": "0123456789abcdef0123"', "0123456789abcdef0123"),
    ("password: hunter2hunter2", "hunter2hunter2"),
    ("pip install git+https://deploy:s3cr3tpass@git.example.com/repo.git", "s3cr3tpass"),
    ("aws AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("token ghp_0123456789abcdefghijABCDEFGHIJ", "ghp_0123456789abcdefghijABCDEFGHIJ"),
    ("mail me at erin.smith@example.org", "erin.smith@example.org"),
])
def test_identifying_text_goes(text: str, secret: str) -> None:
    assert secret not in redact(text)


def test_this_machines_names_go_wherever_they_appear() -> None:
    identity = Identity(users=("frank",), hosts=("trainer-03.lab.example",), homes=("/data/frank",))
    out = redact("frank ran it on trainer-03.lab.example from /data/frank/exp/run.py", identity)
    assert "frank" not in out and "trainer-03" not in out
    assert "~/exp/run.py" in out


def test_json_stays_json() -> None:
    facts = {"python": "/home/alice/.venv/bin/python", "environment": {"HF_TOKEN": "hf_" + "x" * 30}}
    out = json.loads(redact(json.dumps(facts, indent=2)))
    assert out["python"] == "/home/<user>/.venv/bin/python"
    assert out["environment"]["HF_TOKEN"] == "<redacted>"


def test_a_token_used_as_the_url_user_name_is_redacted() -> None:
    """`https://TOKEN@host/` (a token with no password after it, as private indexes take it), not
    only `user:password@`: the same rule as the environment's URLs (fadoctor.safety.secrets)."""
    text = "Looking in indexes: https://s3cr3tv4lue@mirror.example/simple and https://u:p@h.example/"
    assert redact(text) == ("Looking in indexes: https://<redacted>@mirror.example/simple and "
                            "https://<redacted>@h.example/")


@pytest.mark.parametrize("text, secret", [
    # Letters that re.IGNORECASE takes for ASCII ones: the literal guard in front of each
    # pattern must take them too, or a secret behind them would go through unredacted.
    ("pa\u017f\u017fword: hunter2hunter2", "hunter2hunter2"),       # long s
    ("to\u212aen=0123456789abcdef", "0123456789abcdef"),           # Kelvin sign
    ("Author\u0131zation: Bearer abcdefgh12345678", "abcdefgh12345678"),  # dotless i
    ("AUTHORIZATION: token abcdefgh12345678", "abcdefgh12345678"),
])
def test_case_folded_keywords_are_still_found(text: str, secret: str) -> None:
    assert secret not in redact(text)
