"""`collect(options) -> Facts`: the examined interpreter chosen (`target`), the worker and probes run
(`run`), their outcomes turned into facts (`assemble`). Imports probes, in_target's registry and
facts; only the commands import it."""
