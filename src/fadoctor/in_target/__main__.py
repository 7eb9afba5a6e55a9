"""Entry point, run by path in the target interpreter: `python -B <folder>/__main__.py --fd N ...`.

This file parses and runs on any Python (2.7 included) up to the handshake: it reads the run's
token from stdin, answers `hello` with its Python version on the channel, and stops there unless
the interpreter is Python >= 3.8. Then it loads this folder as the package `_fadoctor_target`
without putting it on `sys.path` (no module here can shadow one of the user's), runs the worker,
and leaves without teardown. No annotations here: Python 2 must be able to read this file.
"""

import os
import sys

PACKAGE = "_fadoctor_target"
MINIMUM = (3, 8)


def _argument(flag):  # type: (str) -> object
    argv = sys.argv[1:]
    return argv[argv.index(flag) + 1] if flag in argv[:-1] else None


def _token():  # type: () -> str
    """The run's token: the first line of stdin. Stdin is then /dev/null, so imported code
    cannot read it there."""
    data = b""
    while not data.endswith(b"\n") and len(data) < 256:
        chunk = os.read(0, 256 - len(data))
        if not chunk:
            break
        data += chunk
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return data.strip().decode("ascii", "replace")


def _sender(fd, token):  # type: (int, str) -> object
    """send(record): one authenticated line, `<token> <json>`, written whole to fd."""
    import json

    def send(record):  # type: (object) -> None
        line = (token + " " + json.dumps(record, default=str) + "\n").encode("ascii")
        while line:
            line = line[os.write(fd, line):]

    return send


def _hello(send):  # type: (object) -> None
    import platform

    send({"event": "hello", "python": list(sys.version_info[:3]),  # type: ignore[operator]
          "implementation": platform.python_implementation(), "executable": sys.executable})


def _die_with_parent():  # type: () -> None
    """Linux: be killed if fadoctor dies, even by SIGKILL (best effort)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except Exception:
        pass


def load(module="worker"):  # type: (str) -> object
    """This folder as the package `_fadoctor_target`, and its `module` (the rank agent's entry,
    rank_agent.py, loads `rank` through here too)."""
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    # Python put our own folder first on the path: take it off before anything else imports.
    if sys.path and os.path.abspath(sys.path[0] or os.curdir) == here:
        del sys.path[0]
    spec = importlib.util.spec_from_file_location(
        PACKAGE, os.path.join(here, "__init__.py"), submodule_search_locations=[here])
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules[PACKAGE] = package
    spec.loader.exec_module(package)
    return importlib.import_module(PACKAGE + "." + module)


if __name__ == "__main__":
    fd = _argument("--fd")
    send = _sender(int(str(fd)), _token()) if fd is not None else _sender(1, "")
    _hello(send)
    if sys.version_info < MINIMUM:
        os._exit(0)
    _die_with_parent()
    import faulthandler

    faulthandler.enable()
    status = load().main(sys.argv[1:], send)  # type: ignore[attr-defined]
    # Skip interpreter teardown: unloading torch and CUDA is slow and can itself crash, and
    # everything the parent needs has been written.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
