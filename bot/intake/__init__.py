"""Webhook intake: verify and store (webhooks), claim and retry (worker), run handlers."""
