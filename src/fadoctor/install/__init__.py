"""Install planning shared by `checks` (remedies) and `fix` (plans): the machine, torch builds and
their index, flash-attn wheels and build recipes (pure, over the matrix)."""
