"""Registering the GitHub App from `app.yml` in one click (GitHub's manifest flow).

In setup mode (no `APP_ID`) `/` shows a form that sends the manifest to GitHub; GitHub
sends the person back to the callback with a one-time code, which becomes the App's
credentials in `.env`.

  manifest.py   app.yml read and checked; the manifest sent with this server's addresses
  addresses.py  where GitHub reaches this server (GitHub's own pages: `github/web.py`)
  state_token.py the `state` value that proves a callback answers a form this process made
  conversion.py the one-time code exchanged for the App's credentials
  env_file.py   the credentials merged into `.env` (0600), never replacing a value
  pages.py      the setup page and the callback's pages (Jinja2, `bot.pages`)
  routes.py     the aiohttp routes: the setup page and the callback
"""
