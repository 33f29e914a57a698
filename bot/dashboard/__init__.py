"""`/dashboard`: the verdict log, the judges' health and the calibration verdict on one
server-rendered page, for a person who holds `DASHBOARD_TOKEN` (or a script sending it).

    access     who may see the page: bearer token, signed session cookie, origin (pure)
    filters    the query string read into a repository, a number of days and a tag (pure)
    chart      verdicts per day as stacked bars, laid out for an inline SVG (pure)
    view       the reports' numbers for one filter, shaped for the template (pure)
    queues     the merge queues' active entries as the page lists them (pure)
    freshness  when a computed view may still be shown (pure), and the cache that keeps one
               per filter, brings it up to date at each request and computes stale ones
               in line or in the background
    watermark  which records a view has seen, so a request reads only the new ones (pure)
    reading    the storage reads one view needs, and folding new records into it (pure)
    live       computing a view and bringing it up to date; the facts kept in memory
    render     the Jinja2 pages
    routes     the aiohttp routes and `add_dashboard`
"""
