"""`python -m fadoctor` entry point."""

from fadoctor.cli.main import main

main()
