"""`python -m fadoctor` entry point."""

from fadoctor.cli import main

main()
