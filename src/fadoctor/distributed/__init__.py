"""The distributed check: every rank's facts, gathered by the rank agent, compared and diagnosed."""
