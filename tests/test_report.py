"""Reports as self-contained HTML, without Spark: what a page writes into one is escaped and shown as written."""

from __future__ import annotations

import pandas as pd

from streaming.report import figures_report


def test_a_reports_texts_are_shown_as_written_and_escaped_once():
    query = "SELECT key, count(*) AS n\nFROM STREAM(events) WHERE key <> '<b>'\nGROUP BY key"
    page = figures_report("SQL query q", ["2 micro-batches"], [], [("Result table", pd.DataFrame({"key": ["a&b"], "n": [1]}))], [("Your query", query)])
    assert "<h3>Your query</h3><pre><code>SELECT key, count(*) AS n\nFROM STREAM(events) WHERE key &lt;&gt; &#x27;&lt;b&gt;&#x27;\nGROUP BY key</code></pre>" in page
    assert "<b>" not in page.replace("<body>", "") and "<td>a&amp;b</td>" in page
    assert page.index("Your query") < page.index("Result table")
