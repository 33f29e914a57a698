"""Where the App is installed.

accounts  installation rows from payloads (pure)
handlers  the routers that store and forget them
"""
