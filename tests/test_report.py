"""Reports as self-contained HTML, without Spark: what a page writes into one is escaped and shown as written."""

from __future__ import annotations

import pandas as pd

from streaming.report import clock, figures_report, spans_days


def test_a_reports_texts_are_shown_as_written_and_escaped_once():
    query = "SELECT key, count(*) AS n\nFROM STREAM(events) WHERE key <> '<b>'\nGROUP BY key"
    page = figures_report("SQL query q", ["2 micro-batches"], [], [("Result table", pd.DataFrame({"key": ["a&b"], "n": [1]}))], [("Your query", query)])
    assert "<h3>Your query</h3><pre><code>SELECT key, count(*) AS n\nFROM STREAM(events) WHERE key &lt;&gt; &#x27;&lt;b&gt;&#x27;\nGROUP BY key</code></pre>" in page
    assert "<b>" not in page.replace("<body>", "") and "<td>a&amp;b</td>" in page
    assert page.index("Your query") < page.index("Result table")


def test_a_time_is_written_with_its_date_when_the_data_spans_days() -> None:
    """Step through showed "20:53:00" for a watermark over flights that span 23 days."""
    one_day = [pd.Timestamp("2016-05-10 12:04"), pd.Timestamp("2016-05-10 12:11"), None]
    many = [pd.Timestamp("2013-01-01 05:00"), pd.Timestamp("2013-01-23 20:53"), pd.NaT]
    assert not spans_days(one_day) and spans_days(many)
    assert [clock(value, dated=spans_days(many)) for value in many[:2]] == ["2013-01-01 05:00:00", "2013-01-23 20:53:00"]
    assert clock(one_day[1]) == "12:11:00" and clock(pd.Timestamp("2016-05-10 12:11:00.250")) == "12:11:00.250" and clock(pd.NaT) == "none"
