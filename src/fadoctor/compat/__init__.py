"""`fadoctor compat`: reports of real combinations (torch, flash-attention, Python, GPU) turned
into records (`model`, `records`), merged into one compatibility.json, shown as the table people
look for (`table`), and read back as observed evidence for `fix` (`observed`). Imports the report
model, facts' frozen base and errors; the CLI (`cli.compat`) and `fix` import it."""
