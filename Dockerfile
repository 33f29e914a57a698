# judge-bot, the GitHub App server, in a container. How to run it: docs/deploy.md.
#
#   docker build -t judge-bot .
#   docker run -d --name judge-bot -p 127.0.0.1:3000:3000 --env-file .env -v judge-bot-data:/data judge-bot
#
# One container with SQLite on the /data volume is one process: never start two on the same
# volume. For several replicas use PostgreSQL (compose.yaml).

# The Python the suite runs on; slim = Debian without compilers (every dependency has a wheel).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

# An unprivileged user that owns nothing but /data, where the SQLite database lives.
RUN groupadd --system --gid 10001 judge \
 && useradd --system --uid 10001 --gid judge --home-dir /nonexistent --no-create-home \
        --shell /usr/sbin/nologin judge \
 && install --directory --owner=judge --group=judge --mode=0750 /data

# `pip install .` needs the metadata and the files it names (README.md, the long description;
# LICENSE, the license file) and the code; the sources are removed once installed.
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY bot ./bot
RUN pip install . \
 && rm -rf /src

# The working directory is where judge-bot would read a `.env` file; this image has none
# (pass settings with --env-file or -e), and the judge user cannot write here.
WORKDIR /app

# HOST and PORT are the server's own settings: change PORT and the server and the health check
# follow it (publish the new port too). The database is SQLite on the volume unless
# DATABASE_URL says otherwise (postgresql://...).
ENV HOST=0.0.0.0 \
    PORT=3000 \
    DATABASE_URL=sqlite:////data/judge-bot.sqlite3
VOLUME ["/data"]
EXPOSE 3000

USER 10001:10001

# 200 from /healthz when storage answers, 503 otherwise; urllib raises on anything but 2xx, so
# the exit status is 0 (healthy) or 1 (unhealthy). The slim image has no curl. No proxy: urllib
# would send even 127.0.0.1 to the one HTTP_PROXY names, and report an outbound proxy's state.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as u; u.build_opener(u.ProxyHandler({})).open('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '3000'), timeout=4)"]

# SIGTERM (docker stop) shuts the server down: running deliveries get 10 seconds to finish, and
# one cut short is taken up again once its lease (JUDGE_LEASE_SECONDS) runs out. Docker kills
# after 10 seconds by default: give it longer (docker run --stop-timeout 30).
CMD ["judge-bot", "serve"]
