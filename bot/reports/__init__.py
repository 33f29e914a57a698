"""Reports over the stored verdict log: `judge-bot triage` (the morning look at what the
judges flagged), `judge-bot calibrate` (seed 000's KPIs and whether blocking mode may
be switched on), and the same KPIs as gauges on `/metrics`. The commands themselves are
`bot/cli/reports.py`.

    facts            a record's stored facts as the reports read them (pure)
    triage           facts -> distribution, flagged items, open issues (pure)
    shapes           the window's judgments grouped by shape, in one pass (pure)
    kpis             shapes -> figures per scope, readiness (pure)
    model_kpis       the same figures per judge model and per family (pure)
    measures         rates, percentiles, availability, spend (pure)
    readiness        figures -> ready for blocking mode, or why not (pure)
    thresholds       `JUDGE_CALIBRATION_*`: the limits readiness is measured against
    table            width-aware plain-text tables
    triage_view      triage as a table or JSON
    calibration_view calibration as a table or JSON
    sources          reading the window from storage (the only I/O of the commands)
    kpi_metrics      the `judge_kpi_*` gauges and their background refresh
"""
