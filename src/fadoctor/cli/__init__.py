"""The command line: the typer app (`app`), one module per command or command group (`bench`,
`jobs`, `matrix`, `model`, `triage`), the options, inputs and help texts they share, the output
streams, the one error map (`guard`), and what starts before typer (`main`, `early`). Nothing
below imports this package."""
