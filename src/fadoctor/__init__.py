"""fadoctor: a compatibility doctor for PyTorch + flash-attention environments."""

__version__ = "0.1.0"
