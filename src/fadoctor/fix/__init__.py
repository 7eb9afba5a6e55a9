"""`fadoctor fix`: plan a working torch + flash-attention install for a machine; print it."""
