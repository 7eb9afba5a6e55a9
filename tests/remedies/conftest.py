"""The code remedies are executed against a real torch: without one (a Python that torch has no
wheel for, such as the oldest fadoctor supports), these modules are not collected."""

from __future__ import annotations

import importlib.util

TORCH_MODULES = ["test_dynamo_snippets.py", "test_sdpa_snippet.py", "test_snippets.py"]
collect_ignore = [] if importlib.util.find_spec("torch") else TORCH_MODULES
