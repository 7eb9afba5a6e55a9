"""Secrets never enter facts: the value of any environment variable whose name says token,
secret, key, password or credential (whatever its prefix) is replaced, and so is the password
of any URL (`https://user:pass@host`)."""

from __future__ import annotations

import re
from typing import Dict, Optional

REDACTED = "<redacted>"
SECRET_NAME = re.compile(r"TOKEN|SECRET|KEY|PASSW(?:OR)?D|PASSPHRASE|CREDENTIAL|AUTH|COOKIE",
                         re.IGNORECASE)
# scheme://user:password@ and scheme://token@ (a token as the user name, as in GitHub URLs)
# (bounded, and starting only where a scheme can start: linear in the text)
URL_USERINFO = re.compile(r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{0,31}://)"
                          r"[^/?#@\s]{1,256}@")


def secret_name(name: str) -> bool:
    return SECRET_NAME.search(name) is not None


def without_credentials(text: Optional[str]) -> Optional[str]:
    """`text` with the user information of every URL in it replaced."""
    if text is None:
        return None
    return URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)


def redact_environment(environment: Dict[str, str]) -> Dict[str, str]:
    return {name: REDACTED if secret_name(name) else (without_credentials(value) or "")
            for name, value in environment.items()}
