"""Test helpers: real broken environments made in temporary folders."""
