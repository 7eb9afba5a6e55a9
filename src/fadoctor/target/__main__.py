"""Entry point, run by path in the target interpreter: `python -B <folder>/__main__.py --fd N ...`.

Loads this folder as the package `_fadoctor_target` without putting it on `sys.path`, so no
module here can shadow one of the user's, then runs the worker and leaves without teardown.
"""

import faulthandler
import importlib.util
import os
import sys

PACKAGE = "_fadoctor_target"


def _load() -> object:
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
    return importlib.import_module(PACKAGE + ".worker")


if __name__ == "__main__":
    faulthandler.enable()
    status = _load().main(sys.argv[1:])  # type: ignore[attr-defined]
    # Skip interpreter teardown: unloading torch and CUDA is slow and can itself crash, and
    # everything the parent needs has been written.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
