"""`fadoctor bench`: time every working attention backend at the user's shape and rank them
(`run`). Imports probes, checks and facts; rendered by `render.bench`, driven by `cli.bench`."""
