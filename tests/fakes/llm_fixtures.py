"""Pytest fixtures (filled in by the module owner)."""
