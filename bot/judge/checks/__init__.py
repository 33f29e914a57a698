"""What the judge checks without a model, before any model is called.

mechanical.py       findings with file and line: secrets, stubs, broken links and
                    anchors, the research counts; hard ones reject on their own
injection.py        text aimed at the judge, and fencing a file's content
markdown.py         just enough Markdown for the link checks
research_claims.py  what a research file claims and cites, and what it earns
"""
