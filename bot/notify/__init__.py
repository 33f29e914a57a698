"""Notifications: a short JSON message to an operator's webhook when a person is needed."""
