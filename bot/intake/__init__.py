"""Webhook intake: a delivery in, handler calls out. Knows no feature: the router it
dispatches to is composed in `bot/routing.py`.

    webhooks      the pure request check and the aiohttp handler: verify, store, 202
    body_fields   what intake reads of a body (simdjson), the full decode where it could differ
    json_body     decoding a webhook body (orjson), the depth limit
    worker        the claim loop, the backoff table (pure), the worker pool
    dispatch      the handlers' `Context`; each handler isolated, successes remembered
    housekeeping  pruning finished deliveries after the retention period
    missed        which deliveries GitHub failed to hand us (pure)
    recovery      asking GitHub to redeliver them, at start and every few minutes
    proxy         the smee.io relay (`WEBHOOK_PROXY_URL`) into the same endpoint
"""
