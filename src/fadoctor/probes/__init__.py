"""Probes: everything that touches the examined environment (child processes, NVML, files)."""
