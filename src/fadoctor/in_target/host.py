"""Stage `host`: the interpreter, the OS, libc, and the environment variables that matter."""

import os
import platform
import sys
from typing import Any, Dict, Optional

from .context import Context
from .tables import ENVIRONMENT


def run(context: Context) -> Dict[str, Any]:
    libc, libc_version = None, None
    try:
        parts = (os.confstr("CS_GNU_LIBC_VERSION") or "").split()
        if len(parts) == 2:
            libc, libc_version = "glibc", parts[1]
    except (AttributeError, ValueError, OSError):
        pass
    if libc is None:
        name, version = platform.libc_ver()
        libc, libc_version = (name or None), (version or None)
    import sysconfig

    abi = "cp%d%d" % sys.version_info[:2]
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        abi += "t"
    return {
        "os": platform.system(),
        "os_release": _os_release(),
        "machine": platform.machine(),
        "libc": libc,
        "libc_version": libc_version,
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_executable": sys.executable,
        "python_abi_tag": abi if platform.python_implementation() == "CPython" else None,
        "prefix": sys.prefix,
        "cpus": os.cpu_count(),
        "memory_mib": _memory_mib(),
        "environment": {k: v for k, v in os.environ.items()
                        if any(k == e or (e.endswith("_") and k.startswith(e))
                               for e in ENVIRONMENT)},
    }


def _os_release() -> Optional[str]:
    pretty = None
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            with open(path) as fh:
                for line in fh:
                    if line.startswith("PRETTY_NAME="):
                        pretty = line.split("=", 1)[1].strip().strip('"')
            break
        except OSError:
            continue
    return pretty


def _memory_mib() -> Optional[int]:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024))
    except (AttributeError, ValueError, OSError):
        return None
