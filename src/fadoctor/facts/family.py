"""The flash-attention families fadoctor knows, by the names facts, checks and the matrix use."""

from enum import Enum


class Family(str, Enum):
    """The flash-attention families fadoctor knows."""

    FA2 = "fa2"
    FA3 = "fa3"
    FA4 = "fa4"
    VLLM_FA = "vllm_fa"
