"""The compatibility matrix: sourced YAML data, its schema, and queries over it."""

from fadoctor.matrix.load import default_matrix_path, load_matrix
from fadoctor.matrix.models import Matrix

__all__ = ["Matrix", "default_matrix_path", "load_matrix"]
