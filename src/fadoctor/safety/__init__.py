"""Text and commands made safe: text from the examined environment made inert (`inert`), redaction
(`redact`) and secrets kept out of facts (`secrets`), remedy commands quoted word by word (`shell`),
files the user names read as bounded text (`textfile`). Imports only errors: everything may use it."""
