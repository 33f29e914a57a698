"""Reports over the stored verdict log: `judge-bot triage` (the morning look at what the
judges flagged) and `judge-bot calibrate` (seed 000's KPIs and whether blocking mode may
be switched on).

    facts            a stored record reduced to what the reports read (pure)
    triage           records -> distribution, flagged items, open issues (pure)
    kpis             records + human decisions -> figures per scope, readiness (pure)
    model_kpis       the same figures per judge model and per family (pure)
    thresholds       `JUDGE_CALIBRATION_*`: the limits readiness is measured against
    table            width-aware plain-text tables
    triage_view      triage as a table or JSON
    calibration_view calibration as a table or JSON
    sources          reading the window from storage (the only I/O)
    cli              the two commands
"""
