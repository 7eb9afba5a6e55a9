"""`python -m fadoctor` entry point."""

from fadoctor.cli.app import main

main()
