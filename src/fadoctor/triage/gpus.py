"""GPU models named in a line of text -> compute capability, from the matrix's GPU table (pure)."""

from __future__ import annotations

import functools
import re
from typing import List, Optional, Tuple

from fadoctor.matrix import Matrix

# GeForce series whose every model shares one compute capability on NVIDIA's CUDA GPUs pages
# (torch_cuda_facts.md §3: "GTX 9xx (5.2)", "GTX 10xx ... (6.1)", "GeForce RTX 30xx" in the 8.6
# row, every RTX 40xx model 8.9, every RTX 50xx model 12.0; Turing's GeForce RTX 20xx and GTX
# 16xx at 7.5 on the older cuda-gpus page, the source of the matrix's other 7.5 rows). Used only
# when the table has no row.
_SERIES = (
    (re.compile(r"\bGTX\s*9[5-8]0", re.I), "5.2"), (re.compile(r"\bGTX\s*10[5-8]0", re.I), "6.1"),
    (re.compile(r"\bRTX\s*20[5-8]0", re.I), "7.5"), (re.compile(r"\bGTX\s*16[5-6]0", re.I), "7.5"),
    (re.compile(r"\bRTX\s*30[5-9]0", re.I), "8.6"), (re.compile(r"\bRTX\s*40[5-9]0", re.I), "8.9"),
    (re.compile(r"\bRTX\s*50[5-9]0", re.I), "12.0"))
_CONSUMER = re.compile(r"(?<!GeForce )\b((?:RTX|GTX)\s*\d{4})", re.I)
# A GeForce model by its number alone ("my 5090", "the 4090", "support 4090", "2x 4090", "3090 Ti",
# "4090 GPU", "a 1660S", "5090RTX"): only with a word that makes it a GPU, never a bare number (a
# traceback's "line 3090", "4090MiB").
_BARE = re.compile(
    # a maker before it: NVIDIA, or a board partner's brand ("Zotac 5070", "a nvidia 5080")
    r"(?:\b(?:my|an?|on|with|the|supports?|single|dual|two|four|eight|geforce|nvidia|zotac|asus|"
    r"msi|gigabyte|evga|palit|pny|inno3d|galax|gainward|colorful)\s+|"
    r"\b\d{1,2}\s?[x\u00d7]\s?|"
    r"\b(?:gpu|card)(?:\s+is\s+|\s?:\s?))?"  # "My GPU is 4090", "GPU: 3090", "Geforce 5090"
    # (glued to a label's colon: "platform:5070ti", "GPU:4090"; one lookbehind, cheaper than a list)
    r"(?:(?<=\d[x\u00d7])|(?<=[a-z]:)|(?<![\w.:/#=-]))((?:10[5-8]|16[56]|20[5-8]|30[5-9]|"
    r"40[5-9]|50[5-9])0|"
    r"(?<=gpu: )9[5-8]0|(?<=GPU: )9[5-8]0|(?<=geforce )9[5-8]0|(?<=GeForce )9[5-8]0)"
    r"(\s?Ti\b|\s?SUPER\b|D\b|S\b|[mM]\b)?"
    r"(\s+(?:GPUs?|cards?|graphics)\b|\s*显卡|\s?RTX\b)?(?![\w%/:-]|\.\w)", re.I)
_BARE_NEEDLES = tuple(f"{s}{d}0" for s, ds in (("10", "5678"), ("16", "56"), ("20", "5678"),
                                                 ("30", "56789"), ("40", "56789"), ("50", "56789"),
                                                 ("9", "5678")) for d in ds)
# Glued words: CJK prose next to a model name ("英伟达titanV"), where no word boundary separates
# them, a memory size glued to a model ("titanV12G"; two letters before it, so "A10G" stays),
# the word GPU glued to a model number ("H100GPU", "4090GPU"), and a plural ("8 H100s"; a
# lower-case s only: "1660S" is a SUPER), and a count glued before one ("8xA100s"; not 0x, hex).
_GLUED = re.compile(r"(?<=[^\x00-\x7f])(?=[A-Za-z0-9])|(?<=[A-Za-z0-9])(?=[^\x00-\x7f\s])|"
                    r"(?<=(?<!\w)[1-9][x\u00d7])(?=[A-Z])|(?<=(?<!\w)[1-9]\d[x\u00d7])(?=[A-Z])|"
                    r"(?<=[A-Za-z]{2})(?=\d{1,3}[Gg][Bb]?\b)|(?<=\d)(?=GPUs?\b|s\b)")
_MODEL = re.compile(r"\b(?:GeForce\s+)?(?:RTX|GTX)\s*\d{3,4}(?:\s*Ti)?(?:\s+(?:Laptop|SUPER))?", re.I)


# A GeForce RTX series written as such ("RTX 50XX", "RTX 40 series"): every model of one series
# has one compute capability (NVIDIA's CUDA GPUs list: 20xx 7.5, 30xx 8.6, 40xx 8.9, 50xx 12.0)
_GEFORCE_SERIES = re.compile(r"\bRTX\s?(20|30|40|50)[xX]{2}\b|\bRTX\s?(20|30|40|50)(?:00)?[\s-]?"
                             r"series\b|(?<![\w.])(20|30|40|50)(?:00)?[\s-]?series\s(?:cards?|gpus?|"
                             r"graphics)\b", re.I)
_SERIES_CC = {"20": "7.5", "30": "8.6", "40": "8.9", "50": "12.0"}


# GPUs given as an example, not the reporter's ("require a GPU with Compute Capability 8.9 or
# higher (e.g., RTX 4090). Your GPU's capability is 8.6.")
# ("older GPUs e.g. T4 on Kaggle" unbracketed is often the reporter's own)
_EXAMPLE = re.compile(r"\((?:e\.g\.|eg\.|for example|for instance)[^)]*\)", re.I)

# the joins of a list of GPUs in one line
_LIST = re.compile(r"\s+(?:and|&|\+|plus|with)\s+|,\s*|;\s*|\s+/\s+", re.I)


class GpuFinder:
    """`hint` finds lines that may name a GPU (one scan of the text); `names` resolves one."""

    def __init__(self, matrix: Matrix) -> None:
        self.matrix = matrix
        words = {g.name.split()[0].lower() for g in matrix.gpus} | \
            {g.key_word.lower() for g in matrix.gpus} | \
            {w.lower() for g in matrix.gpus for w in g.name.split()[1:]  # "A6000", "Orin" alone
             if re.fullmatch(r"[A-Za-z]\d{4}", w) or w in ("Orin", "Thor", "Xavier")}
        # Lines worth resolving: a model's first word (short ones only after a space).
        self.needles = tuple(sorted({w if len(w) > 2 else f" {w}" for w in words}
                                    | {"nvidia", "rtx", "gtx", "tesla", "dgx", "series card", "series gpu"}
                                    | set(_BARE_NEEDLES)))
        self.names = functools.lru_cache(maxsize=4096)(self._names)

    def _names(self, line: str) -> List[Tuple[str, Optional[str]]]:
        """Every GPU the line names: "a Tesla P40 and a K80" is two (each part of a list is
        resolved on its own once the whole line names one)."""
        found = self._one(line)
        # a short line listing a few things (a log line full of commas is not a list of GPUs)
        parts = _LIST.split(line) if found and len(line) <= 160 and _LIST.search(line) else []
        if 1 < len(parts) <= 6:
            for part in parts:
                for named in self._one(part):
                    if named not in found:
                        found.append(named)
        return found

    def _one(self, line: str) -> List[Tuple[str, Optional[str]]]:
        line = _GLUED.sub(" ", line[:400])
        if "(e" in line or "(for" in line:
            line = _EXAMPLE.sub(" ", line)
        series = _GEFORCE_SERIES.search(line)
        if series is not None:  # one compute capability for every model of a GeForce series
            number = series.group(1) or series.group(2) or series.group(3)
            return [(f"GeForce RTX {number} series", _SERIES_CC[number])]
        spec = self.matrix.gpu(line) or self.matrix.gpu(_CONSUMER.sub(r"GeForce \1", line))
        if spec is not None:
            return [(spec.name, str(spec.cc))]
        model = _MODEL.search(line) or _bare(line)
        if model is None:
            return []
        spec = self.matrix.gpu(model.group(0))  # a model named by its number alone
        if spec is not None:
            return [(spec.name, str(spec.cc))]
        for pattern, cc in _SERIES:
            if pattern.search(model.group(0)):
                return [(model.group(0).strip(), cc)]
        return [(model.group(0).strip(), None)]


_LAPTOP_CONTEXT = re.compile(r"\b(?:cuda|gpu|nvidia|geforce|laptop|driver|card)\b", re.I)


def _bare(line: str) -> Optional[re.Match[str]]:
    """The GeForce RTX model a line names by its number alone, with a GPU word beside it."""
    for found in _BARE.finditer(line):
        if found.group(0) != found.group(1):  # a word before or after, or Ti/SUPER/D
            series = "GTX" if found.group(1).startswith(("16", "10", "9")) else "RTX"  # GTX 16xx, 10xx
            suffix = found.group(2) or ""
            suffix = " SUPER" if suffix.upper() == "S" else suffix
            if suffix in ("m", "M"):  # a laptop's ("1070m"), said beside CUDA or a GPU word
                if not _LAPTOP_CONTEXT.search(line):
                    continue
                suffix = " Laptop"
            return _MODEL.search(f"GeForce {series} {found.group(1)}{suffix}")
    return None
