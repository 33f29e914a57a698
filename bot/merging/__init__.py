"""Merge on approve: a durable merge queue per repository and base branch."""
