"""Will this model train here: its attention needs against the installed families, and memory."""
