"""Notifications: a short JSON message to an operator's webhook when a person is needed.
An outbound channel: it knows no feature; features send through it.

    notices    the notice kinds and their text (pure)
    outage     when a run of provider failures is an outage (pure)
    reporting  judgments counted toward an outage; escalation notices
    sender     `Notifier`: once per event, in the background
"""
