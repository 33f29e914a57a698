"""Where the App is installed: installation payloads (accounts) and their handlers."""
