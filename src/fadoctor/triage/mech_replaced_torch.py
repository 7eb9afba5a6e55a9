"""pip replacing the installed torch while installing a package with compiled torch extensions
(xformers, vLLM, torchvision, torchaudio), or finding no torch the package asks for ("No matching
distribution found for torch>=2.8 (from xformers)"): that release requires another torch; its
release whose metadata requires the installed torch keeps it (data/ext_torch.yaml) (pure)."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from fadoctor.checks.remedies import remedy
from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, name, requirement
from fadoctor.triage import ext_torch
from fadoctor.triage.context import Context
from fadoctor.triage.signal import HINTED, LOGGED, Signal

# pip's own lines (pip/_internal/operations/install: "Attempting uninstall: {name}",
# "Found existing installation: {dist}", "Uninstalling {dist}:")
_UNINSTALLING = re.compile(r"(?:Found existing installation: torch |Uninstalling torch-)"
                           r"(\d+\.\d+(?:\.\d+)?(?:\+\w+)?)")
_NO_TORCH = re.compile(r"(?:satisfies the requirement|distribution found for) torch\s?([<>=!~][^\s()]{1,40})"
                       r"(?:\s?\(from ([\w.-]{1,60})\))?")
_INSTALL = re.compile(r"\b(?:pip3?|uv pip) install\b[^\n]{0,300}")


def _installing(ctx: Context) -> Optional[Tuple[int, str]]:
    """The line that asks pip for a package whose torch pins the table holds."""
    known = ext_torch.table()
    for index, found in ctx.find(_INSTALL, ("install",)):
        words = re.findall(r"[\w.=-]+", found.group(0).lower())
        if any(w.split("==")[0] == "torch" for w in words):
            continue  # torch asked for by name: replacing it is what the command says
        # a requirement ("xformers==0.0.18") or a wheel's file name ("xformers-0.0.18-cp310-...")
        names = [w.split("==")[0] if not w.endswith(".whl") else w.split("-")[0] for w in words]
        name = next((n for n in names if n in known and n != "torch"), None)
        if name is not None:
            return index, name
    return None


# The same told in prose: "it always uninstalls my pytorch1.13.1 and then installs torch2.0"
# (the install is the subject: "it/pip ... uninstalls", or "my torch"; not another script's step)
_PROSE = re.compile(r"\b(?:(?:it|he|pip|this|which)\s+(?:always\s+|then\s+|also\s+)?(?:uninstall|"
                    r"replac|remov|downgrad|overwrit)\w*\s+(?:my\s+|the\s+)?|(?:uninstall|replac|"
                    r"remov|downgrad|overwrit)\w*\s+my\s+)(?:installed\s+)?(?:py)?torch\s*"
                    r"(\d+\.\d+(?:\.\d+)?)", re.I)


def replaced(ctx: Context) -> List[Signal]:
    gone = ctx.first(_UNINSTALLING, ("existing installation: torch", "uninstalling torch-")) or \
        ctx.first(_PROSE, ("torch",))
    asked = _installing(ctx) if gone is not None else None
    if gone is None or asked is None:
        return []
    torch, package = gone[1].group(1), asked[1]
    fixes = ext_torch.remedies(package, None, torch)
    if not fixes:
        return []
    return [Signal("replaced_torch", Category.VERSION_CONFLICT,
                   f"pip replaced torch {torch} to install {package}: the {package} release it "
                   "picked requires another torch (its wheel metadata)",
                   sorted({ctx.quote(asked[0]), ctx.quote(gone[0])}, key=lambda q: q.line), LOGGED,
                   fixes, details={"source": "data/ext_torch.yaml (the index's wheel metadata)"})]


def unmet(ctx: Context) -> List[Signal]:
    """pip finds no torch the package's release asks for: with the stated torch, the release of
    that package whose metadata requires it."""
    found = list(ctx.find(_NO_TORCH, ("requirement torch", "found for torch")))
    if not found or ctx.torch is None:
        return []
    index, match = next(((i, m) for i, m in found if m.group(2)), found[0])
    package = (match.group(2) or "").lower()
    if package not in ext_torch.table():
        asked = _installing(ctx)
        package = asked[1] if asked is not None else ""
    fixes = ext_torch.remedies(package, None, str(ctx.torch)) if package else []
    if not fixes:
        return []
    return [Signal("replaced_torch", Category.VERSION_CONFLICT,
                   f"the {package} being installed requires torch{match.group(1)}, and torch "
                   f"{ctx.torch} is installed: that {package} is written for another torch",
                   sorted({ctx.quote(index), *ctx.quotes("torch")}, key=lambda q: q.line), LOGGED,
                   fixes, details={"source": "data/ext_torch.yaml (the index's wheel metadata)"})]


_SUPPORT = re.compile(r"\b(?:support\w*|compatible|incompatible|requires?|pinned|works? with|"
                      r"built for)\b", re.I)


_TORCH_SAID = re.compile(r"\b(?:py)?torch\s*(?:version\s*)?(\d+\.\d+(?:\.\d+)?)", re.I)
_SUPPORTED = re.compile(r"support\w*\s+(?:py)?torch\s*(?:version\s*)?(\d+\.\d+(?:\.\d+)?)", re.I)


_API_WORDS = re.compile(r"\b(?:argument|keyword|kwarg|parameter|attribute|method)s?\b", re.I)


def _wanted(line: str) -> Optional[str]:
    """The torch a line wants, not the one it says the package supports ("we need pytorch 2.7.1,
    but xformers only supports pytorch 2.7.0")."""
    supported = {m.group(1) for m in _SUPPORTED.finditer(line)}
    return next((m.group(1) for m in _TORCH_SAID.finditer(line) if m.group(1) not in supported),
                None)


def asked_support(ctx: Context) -> List[Signal]:
    """Prose asking whether a package with compiled torch extensions supports the stated torch
    ("the latest xformers only supports pytorch 2.7.0, we need 2.7.1"): its release whose wheel
    metadata requires that torch (a question, so HINTED)."""
    if ctx.torch is None:
        return []
    known = ext_torch.table()
    names = tuple(p for p in known if p != "torch")
    for index in ctx.text.containing(names):
        line = ctx.text.lines[index]
        if not _SUPPORT.search(line) or _API_WORDS.search(line):
            continue  # "vLLM 0.7.3 doesn't support a worker_extension_cls argument": an API
        package = next((p for p in names if re.search(rf"(?<![\w-]){re.escape(p)}(?![\w-])",
                                                      line, re.I)), None)
        if package is None:
            continue
        torch = _wanted(line) or str(ctx.torch)
        fixes = ext_torch.remedies(package, None, torch)
        if not fixes:
            return []
        return [Signal("replaced_torch", Category.VERSION_CONFLICT,
                       f"each {package} release's wheels require one torch (their metadata): "
                       f"torch {torch} needs the {package} release built for it",
                       sorted({ctx.quote(index), *ctx.quotes("torch")}, key=lambda q: q.line),
                       HINTED, fixes,
                       details={"source": "data/ext_torch.yaml (the index's wheel metadata)"})]
    return []


# pip's resolver giving up on every candidate of a wheel index whose local versions name the torch
# they were built for ("Cannot install flashinfer-python==0.2.5+cu124torch2.5 ... because these
# package versions have conflicting dependencies"), and an index path of that form
_PINNED_WHEELS = re.compile(r"Cannot install ([\w.-]{1,60})==[\w.]{1,30}\+cu(\d{3})torch(\d+\.\d+)")
_INDEX_PATH = re.compile(r"(https?://\S{1,200}?/)cu\d{3}/torch\d+\.\d+/?")
_TORCH_INDEX = re.compile(r"\btorch\b[^\n]{0,200}--(?:extra-)?index-url\s+\S{1,200}/whl/(cu\d{3})\b")


def index_for_other_torch(ctx: Context) -> List[Signal]:
    """The wheels pip was offered are each built for one torch (their +cuXYZtorchA.B tags), not
    the installed one: the index folder of the installed torch's CUDA and version."""
    hit = ctx.first(_PINNED_WHEELS, ("cannot install",))
    if hit is None or not ctx.text.containing(("conflicting dependencies",)):
        return []
    package, cuda, built = hit[1].groups()
    torch = f"{ctx.torch.major}.{ctx.torch.minor}" if ctx.torch is not None else None
    if torch == built:
        return []
    variant = next((m.group(1) for _, m in ctx.find(_TORCH_INDEX, ("index-url",))), None) or \
        (f"cu{ctx.torch_cuda.major}{ctx.torch_cuda.minor}" if ctx.torch_cuda else None)
    folder = f"{variant or 'cuXYZ'}/torch{torch or 'A.B'}"
    index = next((m.group(1) for _, m in ctx.find(_INDEX_PATH, ("/torch",))), None)
    commands = ([command("pip", "install", package, "-i", f"{index}{folder}/")]
                if index and variant and torch else [])
    return [Signal("replaced_torch", Category.WRONG_WHEEL,
                   f"every {package} wheel pip was offered is built for torch {built} (CUDA "
                   f"{cuda[:-1]}.{cuda[-1]}: their +cu{cuda}torch{built} tags), and "
                   + (f"torch {ctx.torch} is installed" if ctx.torch else
                      f"none of them fits unless torch {built} is installed"), [ctx.quote(hit[0])],
                   LOGGED,
                   [Remedy(summary=f"Install from the index folder of the installed torch's CUDA "
                           f"and version ({folder}" + ("" if torch else "; `python -c 'import "
                           "torch; print(torch.__version__)'` shows it") + ").",
                           commands=commands)],
                   details={"source": "the wheels' local version tags"})]


# pip's own account of a conflict it left behind, in three wordings (pypa/pip@26.2.1:src/pip/
# _internal/commands/install.py:706-707, `_warn_about_conflicts`, "requires ... but you have ...
# which is incompatible" from 20.2, "you'll have" under the legacy resolver; @19.3:install.py:586
# "has requirement ..., but you'll have"; @26.2.1:commands/check.py:49, `pip check`'s "has
# requirement ..., but you have X Y.")
_CONFLICT = re.compile(r"(?<![\w.-])([A-Za-z0-9][\w.-]{0,60}) (\S{1,40}) (?:requires|has requirement) "
                       r"([A-Za-z0-9][\w-]{0,60})(\[[\w,-]{1,60}\])?([^\n]{0,120}?), but you(?:'ll)? "
                       r"have ([A-Za-z0-9][\w.-]{0,60}) ([\w.+!-]{1,60})(?: which is incompatible)?\.")
# the stack whose conflicts matter here: a conflict elsewhere (numpy under tensorflow) is noise
_STACK = ("torch", "torchvision", "torchaudio", "triton", "flash-attn", "flash-attn-3",
          "flash-attn-4", "transformers", "accelerate", "peft", "trl", "diffusers")


def _norm(package: str) -> str:
    return re.sub(r"[-_.]+", "-", package).lower()


def _specifier(text: str) -> Optional[SpecifierSet]:
    try:
        return SpecifierSet(text.split(";")[0].strip())
    except InvalidSpecifier:
        return None


def _ways_out(package: str, release: str, dep: str, spec: SpecifierSet, have: str
              ) -> List[Remedy]:
    return [remedy(f"Install the {dep} that {package} {release} requires ({dep}{spec}), if the "
                   "rest of the environment allows it, or:",
                   lambda: [command("pip", "install", f"{name(dep)}{spec}")]),
            remedy(f"Keep {dep} {have} and let pip pick the {package} release whose requirements "
                   f"allow it (pin {dep} to the installed version):",
                   lambda: [command("pip", "install", "--upgrade", name(package),
                                    requirement(dep, have.split("+")[0]))])]


def resolver_conflict(ctx: Context) -> List[Signal]:
    """pip installed what it was asked for and says which requirement of another installed
    package is now unmet: install what meets it, or the release of that package whose
    requirement the installed version meets (for torch, the release its wheel metadata names)."""
    known = ext_torch.table()
    for index, found in ctx.find(_CONFLICT, ("but you have", "but you'll have")):
        package, release, dep, _, spec_text, _, have = found.groups()
        package, dep = _norm(package), _norm(dep)
        spec = _specifier(spec_text)
        if spec is None or not ({package, dep} & {*_STACK, *known}):
            continue
        said = f"{package} {release} requires {dep}{spec}, and {dep} {have} is installed"
        fixes = (ext_torch.remedies(package, release, have) if dep == "torch" else []) or \
            _ways_out(package, release, dep, spec, have)
        return [Signal("resolver_conflict", Category.VERSION_CONFLICT,
                       f"pip left a conflict: {said}", [ctx.quote(index)], LOGGED, fixes,
                       details={"source": "pip's own conflict line (commands/install.py, "
                                          "_warn_about_conflicts)"})]
    return []
