"""Triage's "paste this" commands (`Missing.command`) in the shell of the report they answer.
They are written for a POSIX shell; a report from Windows gets each in PowerShell or cmd.exe,
where `tail`, `grep`, `/dev/null` and `$?` do not exist. A command with a Linux-only tool
(`ldd`, `dmesg`, `rocminfo`, /etc) asks about something a Windows machine does not have, and
is left out there rather than shown as a line that fails."""

from __future__ import annotations

import re
from typing import Callable, Optional, Tuple

# (POSIX, PowerShell, cmd.exe): each a regex and its replacements; a replacement of None means
# the shell has no such step and the piece is dropped (cmd has no `tail`: the output is longer).
_Rule = Tuple[str, Optional[str], Optional[str]]
_RULES: Tuple[_Rule, ...] = (
    (r" 2>/dev/null", " 2>$null", " 2>nul"),
    (r" \| tail -n (\d+)", r" | Select-Object -Last \1", None),
    (r" \| head -(\d+)", r" | Select-Object -First \1", None),
    (r"echo \$([A-Z_]+)", r"echo $env:\1", r"echo %\1%"),
    (r"echo \$\?", "echo $LASTEXITCODE", "echo %ERRORLEVEL%"),
    (r"\bwhich (\w+)", r"Get-Command \1", r"where \1"),
    (r"free -g; nproc",
     "Get-CimInstance Win32_ComputerSystem | Select-Object TotalPhysicalMemory, "
     "NumberOfLogicalProcessors",
     'systeminfo | findstr /c:"Total Physical Memory" & echo %NUMBER_OF_PROCESSORS%'),
)
# `grep -i -E 'a|b'` (or a bare word): Select-String is case-insensitive already; findstr takes
# space-separated words as alternatives (/i: any case).
_GREP = re.compile(r" \| grep(?: -i)?(?: -E)? (?:'([^']+)'|(\w+))")
_LINUX_ONLY = re.compile(r"\b(?:ldd|dmesg|rocminfo|nproc|free)\b|/etc/|/proc/")


def _grep(shell: str) -> Callable[[re.Match[str]], str]:
    def replace(m: re.Match[str]) -> str:
        pattern = m.group(1) or m.group(2)
        if shell == "powershell":
            return f" | Select-String -Pattern '{pattern}'"
        return ' | findstr /i "' + " ".join(pattern.split("|")) + '"'
    return replace


def in_shell(command: str, shell: str) -> Optional[str]:
    """`command` as `shell` (posix, powershell or cmd) runs it; None where it asks for a tool
    that shell's machine does not have."""
    if shell == "posix":
        return command
    column = 1 if shell == "powershell" else 2
    out = command
    for rule in _RULES:
        replacement = rule[column]
        out = re.sub(rule[0], replacement if replacement is not None else "", out)
    out = _GREP.sub(_grep(shell), out)
    if _LINUX_ONLY.search(out):
        return None
    return _outside_quotes(out, "; ", " & ") if shell == "cmd" else out


def _outside_quotes(text: str, old: str, new: str) -> str:
    """`old` replaced where it stands outside double quotes (python -c "import torch; ...")."""
    pieces = text.split('"')
    return '"'.join(p.replace(old, new) if i % 2 == 0 else p for i, p in enumerate(pieces))

__all__ = ["in_shell"]
