"""A tokenizer from a model's own code (trust_remote_code) that transformers 4.34 broke (pure).
From 4.34 on, PreTrainedTokenizer.__init__ registers the special tokens itself
(`self._add_tokens(self.all_special_tokens_extended, special_tokens=True)`, which calls the
subclass's get_vocab / vocab_size), so a tokenizer that calls `super().__init__()` before it sets
what those read (Baichuan's, InternLM's `self.sp_model`, others' `self.vocab`, `self.encoder`)
fails in its own constructor: "'BaichuanTokenizer' object has no attribute 'sp_model'"
(huggingface/transformers#23909, the added-tokens refactor in 4.34.0; #26777 and #27171, the
maintainers' answer: the custom code must set them first). The fix is the model's updated
tokenizer code, or transformers older than 4.34."""

from __future__ import annotations

import re
from typing import List

from packaging.version import InvalidVersion, Version

from fadoctor.report import Category, Remedy
from fadoctor.safety.shell import command
from fadoctor.triage import wheel_table
from fadoctor.triage.context import Context, parse_version
from fadoctor.triage.signal import NAMED, Signal, dedupe

_MISSING = re.compile(r"['\"](\w{1,60}Tokenizer)['\"] object has no attribute ['\"](\w{1,40})['\"]")
# what such tokenizers set in their own __init__ and read in get_vocab / vocab_size
_STATE = ("sp_model", "vocab", "encoder", "sp", "tokenizer", "_tokenizer", "decoder", "sp_model_kwargs")
# the traceback passing through the base constructor's token registration
_BASE = re.compile(r"tokenization_utils\.py\"?, line \d+, in __init__|self\._add_tokens\(|"
                   r"in get_vocab\b|in vocab_size\b")


def _last_before(minor: str) -> str:
    """The newest transformers release below `minor` the package index lists (4.33.3)."""
    rows = wheel_table.table().get("transformers", [])
    below = []
    for row in rows:
        try:
            version = Version(str(row[0]))
        except InvalidVersion:
            continue
        if not version.is_prerelease and version < Version(minor):
            below.append(version)
    return str(max(below)) if below else "4.33.3"


def remote_tokenizer(ctx: Context) -> List[Signal]:
    hit = ctx.first(_MISSING, ("tokenizer' object has no attribute", 'tokenizer" object has no'))
    if hit is None or hit[1].group(1).endswith("FastTokenizer"):
        return []
    cls, attr = hit[1].group(1), hit[1].group(2)
    base = ctx.first(_BASE, ("tokenization_utils.py", "_add_tokens", "get_vocab", "vocab_size"))
    if attr not in _STATE and base is None:
        return []
    stated = ctx.package("transformers")
    version = parse_version(stated.value) if stated is not None else None
    if version is not None and version < Version("4.34"):  # a release before the change
        return []
    pin = _last_before("4.34")
    return [Signal("remote_tokenizer", Category.VERSION_CONFLICT,
                   f"{cls}, a tokenizer from the model's own code, sets self.{attr} after calling "
                   "transformers' base constructor, which from 4.34 on registers the special "
                   f"tokens itself and so reads self.{attr} before it exists: the model's "
                   "tokenizer code predates transformers 4.34",
                   dedupe([ctx.quote(hit[0]), *([ctx.quote(base[0])] if base else [])]), NAMED,
                   [Remedy(summary=f"Use transformers {pin}, the last release before 4.34, with "
                           "this model; or update the model's files (its repository's newer "
                           f"tokenizer code sets self.{attr} before super().__init__()).",
                           commands=[command("pip", "install", f"transformers=={pin}")])],
                   details={"source": "huggingface/transformers#23909 (4.34.0), #26777"})]
