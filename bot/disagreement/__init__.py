"""The `[JUDGE-DISAGREEMENT]` issue.

issue writes its text, lifecycle decides its next step, sync keeps it in line on GitHub.
"""
