"""Renderers: pure `Report -> str` functions, one module per format (`text`, `json_`, `junit`,
`markdown`, `github`), the bench table (`bench`), and `dispatch.render`, which picks one by `Format`.
The modules import `options` and the report model, never this package's `__init__`."""
