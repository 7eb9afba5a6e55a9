"""Entry point of the rank agent, run by path by a job's launcher on every rank:
`torchrun ... $(fadoctor rank-script) --out DIR` runs `python <this file> --out DIR`.

Loads this folder as the package `_fadoctor_target`, as __main__.py does (without going on
`sys.path`), runs `rank.main` and leaves without teardown.
"""

import importlib.util
import os
import sys


def _entry() -> object:
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("_fadoctor_target_entry",
                                                  os.path.join(here, "__main__.py"))
    assert spec is not None and spec.loader is not None
    entry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(entry)
    return entry


if __name__ == "__main__":
    status = _entry().load("rank").main(sys.argv[1:])  # type: ignore[attr-defined]
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # skip tearing torch down: everything is written
