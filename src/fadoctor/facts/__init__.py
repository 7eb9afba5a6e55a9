"""The facts model: what `collect` learns, one frozen, versioned, serializable model (`model`, on
the `frozen` base) with its kernel and collective parts, version-1 files read as version 2 (`v1`),
facts files (`files`) and their validation errors (`validation`). Imports only safety and errors."""
