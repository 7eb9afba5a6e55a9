"""Redaction of user names, home folders, host names and secret-looking values from any text
fadoctor prints, so that a report can be pasted publicly (pure: the caller says who it is).

`redacted` works on a model's values, before any renderer cuts a long value short or escapes it
for its format: a secret is never cut before it is recognised, and JSON output stays JSON. Every
pattern is bounded (no two quantifiers that can take the same characters in turn), so the cost
is linear in the text, whatever a pasted report holds."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Tuple, TypeVar

from fadoctor.safety.inert import mapped
from fadoctor.safety.secrets import REDACTED, without_credentials

if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")

USER, HOST, SECRET = "<user>", "<host>", REDACTED
# Account names too common to be identifying, and which occur as ordinary words.
_GENERIC = {"root", "user", "admin", "ubuntu", "runner", "jovyan", "nobody", "docker"}

_HOMES = [re.compile(r"(/home/|/Users/)([^/\s\"'<>]+)"),
          re.compile(r"([A-Za-z]:(?:\\\\|\\)Users(?:\\\\|\\))([^\\\s\"'<>]+)")]
_UNAME = re.compile(r"^((?:Linux|Darwin)\s+)(\S+)(\s+\d+\.\d+)", re.MULTILINE)
_PROMPT = re.compile(r"(?<![\w.-])[\w.-]{1,64}@[\w.-]{1,253}(?=:[~/])")
_ENV_SECRET = re.compile(
    r"(\b[A-Z0-9_]{0,64}(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?|"
    r"AUTH)[A-Z0-9_]{0,64}[\"']?[ \t]{0,32}[:=][ \t]{0,32}[\"']?)([^\s\"',;}]+)")
_WORD_SECRET = re.compile(
    r"(\b(?:password|passwd|token|secret|api_key|apikey|access_token|auth_token|hf_token)"
    r"[\"']?[ \t]{0,32}[:=][ \t]{0,32}[\"']?)([^\s\"',;}]+)", re.IGNORECASE)
_TOKENS = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}|sk-[\w-]{20,}|"
    r"AKIA[0-9A-Z]{16}|xox[abprs]-[\w-]{10,}|glpat-[\w-]{20,}|npm_[A-Za-z0-9]{30,}|"
    r"eyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]{10,})")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){0,8}\.[A-Za-z]{2,24}\b")
# HTTP credentials: `Authorization: Bearer …` (or Basic, token …) and a bare `Bearer …`.
_AUTHORIZATION = re.compile(
    r"(\b(?:proxy-)?authorization[\"']?[ \t]{0,32}[:=][ \t]{0,32}[\"']?(?:(?:bearer|basic|token|digest)"
    r"[ \t]{1,32})?)([^\s\"',;}]+)", re.IGNORECASE)
_BEARER = re.compile(r"(\bbearer[ \t]{1,32})([A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE)


@dataclass(frozen=True)
class Identity:
    """Who and where the report was made: the names to take out wherever they appear."""

    users: Tuple[str, ...] = ()
    hosts: Tuple[str, ...] = ()
    homes: Tuple[str, ...] = ()


def _holds(text: str, words: Tuple[str, ...], fold: bool = False) -> bool:
    """Whether a literal that a pattern cannot match without is in `text`: a pattern that has
    nothing to find costs a scan of every position, which a megabyte-long paste makes dear."""
    # casefold, and the dotless i, are what `re.IGNORECASE` takes for the same letter
    folded = text.casefold().replace("\u0131", "i") if fold else text
    return any(word in folded for word in words)


_SECRET_WORDS = ("password", "passwd", "token", "secret", "api_key", "apikey")
_ENV_WORDS = ("TOKEN", "SECRET", "PASSW", "API", "ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL", "AUTH")
_TOKEN_STARTS = ("hf_", "gh", "github_pat_", "sk-", "AKIA", "xox", "glpat-", "npm_", "eyJ")


def redact(text: str, identity: Identity = Identity()) -> str:
    for home in sorted((h.rstrip("/") for h in identity.homes if len(h.rstrip("/")) > 1),
                       key=len, reverse=True):
        text = re.sub(re.escape(home) + r"(?=[/\s\"'<>]|$)", "~", text)
    if "Users" in text or "/home/" in text:
        for pattern in _HOMES:
            text = pattern.sub(lambda m: m.group(1) + USER, text)
    if "://" in text:
        text = without_credentials(text) or ""  # user:password@ and token@ in URLs
    if _holds(text, ("authorization", "bearer"), fold=True):
        text = _AUTHORIZATION.sub(lambda m: m.group(1) + SECRET, text)
        text = _BEARER.sub(lambda m: m.group(1) + SECRET, text)
    if _holds(text, _ENV_WORDS):
        text = _ENV_SECRET.sub(lambda m: m.group(1) + SECRET, text)
    if _holds(text, _SECRET_WORDS, fold=True):
        text = _WORD_SECRET.sub(lambda m: m.group(1) + SECRET, text)
    if _holds(text, _TOKEN_STARTS):
        text = _TOKENS.sub(SECRET, text)
    if "@" in text:
        text = _PROMPT.sub(f"{USER}@{HOST}", text)
        text = _EMAIL.sub("<email>", text)
    if "Linux" in text or "Darwin" in text:
        text = _UNAME.sub(lambda m: m.group(1) + HOST + m.group(3), text)
    for host in sorted({h for h in identity.hosts if len(h) > 2}, key=len, reverse=True):
        text = re.sub(rf"(?<![\w.-]){re.escape(host)}(?![\w-])", HOST, text, flags=re.IGNORECASE)
    for user in sorted({u for u in identity.users if len(u) > 2 and u.lower() not in _GENERIC},
                       key=len, reverse=True):
        text = re.sub(rf"(?<![\w.-]){re.escape(user)}(?![\w-])", USER, text)
    return text


def redacted(model: M, identity: Identity = Identity()) -> M:
    """A copy of `model` whose every string (keys too) is `redact`ed: what a renderer then
    shortens or escapes holds no secret to leak."""
    return mapped(model, lambda text: redact(text, identity))
