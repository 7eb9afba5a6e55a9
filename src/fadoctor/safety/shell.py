"""Remedy commands built word by word, so that they are safe to paste whatever the examined
environment says: values are validated (a PEP 508 name, a PEP 440 version, an https URL) and every
word is shell-quoted; `is_safe` is the test every command must pass before it is shown."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Callable, Iterable, List, Optional, Sequence, Tuple, Union

from packaging.version import InvalidVersion, Version

from fadoctor.errors import InputError
from fadoctor.safety.inert import one_line

# PEP 508 names (PEP 503 normalises them); extras follow the same rule.
_NAME = re.compile(r"[A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9]", re.IGNORECASE | re.ASCII)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
# NAME=value where the value needs no quoting: kept as an assignment, as the shell reads it.
_ENV_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=[\w@%+:,./-]*", re.ASCII)
# a NAME=value word as shlex.split returns it (its value unquoted: "TORCH_CUDA_ARCH_LIST=7.5 8.6");
# upper case, as the variables fadoctor sets are (a requirement such as xformers==0.0.21 is not)
_ENV_WORD = re.compile(r"([A-Z_][A-Z0-9_]*)=(?!=)(.*)", re.ASCII | re.DOTALL)
_URL = re.compile(r"https://[A-Za-z0-9.-]+(/[A-Za-z0-9._~%+!,;=:@/-]*)?", re.ASCII)
# A word as `quote` writes it: bare safe characters; double-quoted when the text means the same
# inside double quotes to a POSIX shell, cmd.exe and PowerShell (no `"`, `$`, backquote, `!` or
# `%`, and a backslash only before another character: `"C:\Python\python.exe"`, `"torch>=2.7"`);
# else single-quoted ('"'"' joins quotes). An environment assignment may precede it. A line is
# such words, or `&&`, one space apart.
_PLAIN = r"[^\"$`!%\\\n]"
_DOUBLE = re.compile(rf"{_PLAIN}*(?:\\{_PLAIN}+)*", re.ASCII)
_BARE = re.compile(r"[\w@%+=:,./-]+", re.ASCII)
_QUOTED = (r"(?:[\w@%+=:,./-]+|'[^']*'(?:\"'\"'[^']*')*|"
           rf"\"{_DOUBLE.pattern}\")")
_WORD = rf"(?:[A-Za-z_][A-Za-z0-9_]*=)?{_QUOTED}"
_COMMAND = rf"{_WORD}(?: {_WORD})*"
_LINE = re.compile(rf"{_COMMAND}(?: && {_COMMAND})*", re.ASCII)
# Windows shells (`into_lines`): PowerShell's `$env:NAME = "value"` and its call operator before a
# quoted interpreter path (`& "C:\…\python.exe" -m pip …`); cmd.exe's `set "NAME=value"` is words.
_PS_SET = re.compile(rf'\$env:[A-Za-z_][A-Za-z0-9_]* = "{_DOUBLE.pattern}"', re.ASCII)
_PS_CALL = re.compile(rf'& "{_DOUBLE.pattern}"(?: {_WORD})*', re.ASCII)


class Unsafe(InputError):
    """A value that cannot go into a command; the message says why, in inert text. Remedies
    built from the examined environment catch it (`attempt`); from a file the user gave (a
    matrix) it is bad input."""


@dataclass(frozen=True)
class Word:
    """Text that is already exactly one shell word, or an operator: made only here."""

    text: str


AND = Word("&&")


def quote(word: str) -> str:
    """One shell word that reads back as `word`: bare when it is plain, in double quotes when
    those mean the same to every shell a remedy is pasted into, else in POSIX single quotes."""
    if _BARE.fullmatch(word):
        return word
    if _DOUBLE.fullmatch(word):
        return f'"{word}"'
    return shlex.quote(word)


def _printable(text: str) -> str:
    if any(not ch.isprintable() or "\udc80" <= ch <= "\udcff" for ch in text):
        raise Unsafe(f'"{one_line(text)}" holds control characters or undecodable bytes')
    return text


def name(text: str) -> str:
    """A distribution (project) name or extra, checked against PEP 508."""
    if not _NAME.fullmatch(text):
        raise Unsafe(f'"{one_line(text)}" is not a valid distribution name (PEP 508)')
    return text


def version(text: Union[str, Version]) -> str:
    """A PEP 440 version, in its normalised form."""
    try:
        return str(text if isinstance(text, Version) else Version(text))
    except InvalidVersion:
        raise Unsafe(f'"{one_line(str(text))}" is not a valid version (PEP 440)') from None


def requirement(project: str, pinned: Optional[Union[str, Version]] = None,
                extras: Sequence[str] = (), op: str = "==") -> str:
    """`name[extra]==version`, every part validated."""
    if op not in ("==", ">=", "<", "<=", ">", "~=", "!="):
        raise Unsafe(f'"{one_line(op)}" is not a version comparison')
    spec = name(project) + (f"[{','.join(name(e) for e in extras)}]" if extras else "")
    return spec + (f"{op}{version(pinned)}" if pinned is not None else "")


def url(text: str) -> str:
    """An https URL made of URL characters only (no quotes, spaces or shell syntax)."""
    if not _URL.fullmatch(text):
        raise Unsafe(f'"{one_line(text)}" is not a plain https URL')
    return text


def env(var: str, value: Union[str, int]) -> Word:
    """`NAME=value` before a command."""
    if not _ENV_NAME.fullmatch(var):
        raise Unsafe(f'"{one_line(var)}" is not an environment variable name')
    return Word(f"{var}={quote(_printable(str(value)))}")


def command(*words: Union[str, Word]) -> str:
    """One command line: each str is one word, quoted; a `Word` is taken as it is."""
    text = " ".join(w.text if isinstance(w, Word) else quote(_printable(w)) for w in words)
    assert is_safe(text), text
    return text


def is_safe(line: str) -> bool:
    """Whether `line` is words as `command` writes them: nothing a shell would read as more than
    the words shown (no `;`, `$(…)`, backquotes, redirections, globs or control characters)."""
    return all(ch.isprintable() for ch in line) and any(
        form.fullmatch(line) is not None for form in (_LINE, _PS_SET, _PS_CALL))


def words_of(line: str) -> str:
    """A command that fadoctor's own code wrote as one string, as literal words: split as a POSIX
    shell would split it, and each word quoted again. Whatever a value from the examined
    environment put into it stays inside its words: `;`, `|`, `$(...)`, `&&` and globs come out
    quoted, never as shell syntax. (Two commands are two entries of a remedy's list.)"""
    try:
        parts = shlex.split(line)
    except ValueError as exc:
        raise Unsafe(f'"{one_line(line)}" does not split into words: {exc}') from None
    if not parts:
        raise Unsafe("an empty command")
    return " ".join(_printable(w) if _ENV_ASSIGN.fullmatch(w) else quote(_printable(w))
                    for w in parts)


def attempt(build: Callable[[], Iterable[str]]) -> Tuple[List[str], Optional[str]]:
    """The commands `build` makes, or none and the reason when a value was unsafe."""
    try:
        return list(build()), None
    except Unsafe as exc:
        return [], str(exc)


# -- into the examined environment -----------------------------------------------------------

# Commands fadoctor writes name the installer as bare `pip` and the interpreter as bare `python`;
# `into` gives them the examined interpreter, so that a remedy pasted in any shell installs into
# the environment that was examined (a bare `pip` installs wherever the shell's PATH points).
_PIPS = ("pip", "pip3")
_PYTHONS = ("python", "python3")
# pip's spellings that uv pip spells otherwise; `-y` has no meaning there (it never prompts).
_UV_SPELLING = {"--no-cache-dir": "--no-cache", "--force-reinstall": "--reinstall"}
_UV_DROPPED = ("-y", "--yes")


@dataclass(frozen=True)
class Installer:
    """How to install into the examined environment: its interpreter's path, and whether it has
    pip (a uv-made environment has none: `uv pip … --python PATH` installs into it). `known` is
    False when the interpreter is not known (a pasted report that names none): commands then say
    `python -m pip`, to run with the python of the environment the report comes from."""

    python: str = "python"
    pip: bool = True
    known: bool = False
    shell: str = "posix"  # or "powershell", "cmd": how `into_lines` writes assignments


def _installer_words(inst: Installer, words: List[str]) -> List[str]:
    """`pip SUB ARGS…` (words[0] is pip) for this installer."""
    if inst.pip or len(words) < 2:
        return [inst.python, "-m", "pip", *words[1:]]
    rest = [_UV_SPELLING.get(w, w) for w in words[2:] if w not in _UV_DROPPED]
    return ["uv", "pip", words[1], "--python", inst.python, *rest]


def _one_into(words: List[str], inst: Installer) -> List[str]:
    lead = 0
    while lead < len(words) and _ENV_WORD.fullmatch(words[lead]):
        lead += 1
    head, body = words[:lead], words[lead:]
    if body and body[0] in _PIPS:
        return head + _installer_words(inst, body)
    if body and body[0] in _PYTHONS:
        if body[1:3] == ["-m", "pip"]:
            return head + _installer_words(inst, body[2:])
        return head + [inst.python, *body[1:]]
    if body[:1] == ["fadoctor"] and inst.known and "--python" not in body:
        return words + ["--python", inst.python]  # else it examines whatever env runs it
    return words


def _quoted(word: str) -> str:
    """A word quoted for the shell; a NAME=value word keeps NAME= bare and quotes its value."""
    assign = _ENV_WORD.fullmatch(word)
    if assign is not None:
        return f"{assign.group(1)}={quote(assign.group(2))}"
    return quote(word)


def _parts(line: str, inst: Installer) -> List[List[str]]:
    """The commands of `line` (its parts joined by `&&`), each as words, `pip` and `python`
    made the examined interpreter's."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise Unsafe(f'"{one_line(line)}" does not split into words: {exc}') from None
    _printable(inst.python)
    parts: List[List[str]] = [[]]
    for word in words:
        if word == "&&":
            parts.append([])
        else:
            parts[-1].append(word)
    return [_one_into(part, inst) for part in parts if part]


def into(line: str, inst: Installer) -> str:
    """`line` with every command that runs `pip` or `python` (after its NAME=value words, in each
    part joined by `&&`) running the examined interpreter's instead, its path quoted."""
    text = " && ".join(" ".join(w if _ENV_ASSIGN.fullmatch(w) else _quoted(w) for w in part)
                       for part in _parts(line, inst))
    assert is_safe(text), text
    return text


def _assignment(shell: str, var: str, value: str) -> Optional[str]:
    """NAME=value as its own line for a Windows shell (None where the value cannot be written
    there literally)."""
    if not _DOUBLE.fullmatch(value):
        return None
    return f'$env:{var} = "{value}"' if shell == "powershell" else f'set "{var}={value}"'


def into_lines(line: str, inst: Installer) -> List[str]:
    """`into` for the examined environment's shell: one line for a POSIX shell; for PowerShell
    and cmd.exe each command on its own line (Windows PowerShell 5.1 has no `&&`), with its
    NAME=value words and `export` set first as that shell sets a variable, and (PowerShell) a
    quoted interpreter path run through its call operator `&`."""
    if inst.shell == "posix":
        return [into(line, inst)]
    out: List[str] = []
    for part in _parts(line, inst):
        lead = 0
        while lead < len(part) and _ENV_WORD.fullmatch(part[lead]):
            lead += 1
        sets, body = part[:lead], part[lead:]
        if body[:1] == ["export"] and all(_ENV_WORD.fullmatch(w) for w in body[1:]):
            sets, body = sets + body[1:], []
        assigns = [_ENV_WORD.fullmatch(w) for w in sets]
        lines = [_assignment(inst.shell, m.group(1), m.group(2)) for m in assigns if m]
        if len(lines) != len(sets) or None in lines:
            return [into(line, inst)]  # a value no Windows shell reads literally: as it was
        out += [one for one in lines if one is not None]
        if body:
            text = " ".join(_quoted(w) for w in body)
            out.append(f"& {text}" if inst.shell == "powershell" and text.startswith('"') else text)
    assert all(is_safe(one) for one in out), out
    return out
