"""A running query as one refresh of its page shows it: every panel's frames and figures, read once.

The Live page's view of a run used to read the run's table and progress log, fold
them, draw them and read the checkpoint itself, panel by panel. It now asks
:func:`snapshot` once per refresh and draws what it holds; the panels that are
read on demand (the state a checkpoint holds, the events a run judged, each
record's latency) are the snapshot's methods, so the page never builds a path
under a run's folder or calls the analysis itself.

Every page that watches one run (its owner's, a read-only link's audience) is
shown the same :class:`RunFrames`, drawn once per change of the run
(:class:`SharedFrames`): a refresh of a page whose run has not moved draws, and
sends, what another page's refresh already built.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pandas as pd

from streaming.analysis import lateness
from streaming.analysis.latency import LatencyEnd, LatencyHeadline, latency_headline, produced_before
from streaming.analysis.profile import topic_batches, topic_events_of
from streaming.analysis.watermark import WatermarkStall, watermark_stall
from streaming.charts.common import current_watermark
from streaming.charts.latency import latency_figures
from streaming.charts.live import live_figures
from streaming.engine.arrival import describe_rule
from streaming.engine.errors import ConfigError
from streaming.engine.output.progress import progress_total, state_store_metrics
from streaming.engine.output.state import state_operators, state_rows
from streaming.engine.query.config import QueryConfig
from streaming.engine.sources import StreamSource
from streaming.engine.sources.kafka import initial_offsets
from streaming.engine.sql import PlanFacts, SqlQuery
from streaming.engine.sql.replay import operators_of
from streaming.export import sql_code
from streaming.report import figures_report, settings_text

if TYPE_CHECKING:
    import plotly.graph_objects as go
    from pyspark.sql import SparkSession

    from streaming.engine.run.query import Run, RunStatus

__all__ = [
    "SHARED_FRAMES",
    "Judgement",
    "LatencyView",
    "LatenessView",
    "Metric",
    "RunFrames",
    "RunSnapshot",
    "SharedFrames",
    "draw_frames",
    "progress_numbers",
    "readable_dropped",
    "snapshot",
    "sql_report",
    "topic_events",
]

STORE_METRIC_BATCHES = 300
"""The state store's own metrics are drawn for this many recent batches."""
REPORTED = ("counts", "drops", "state", "rates", "input", "duration", "gap")
"""The figures a form run's report holds."""
SQL_REPORTED = ("drops", "state", "rates", "gap")
"""The figures a SQL run's report holds: the ones its view draws."""


@dataclass(frozen=True)
class Metric:
    """One number of a run's status row."""

    label: str
    value: Any
    help: str | None = None


T = TypeVar("T")


class Memo:
    """Values made once each by key, whichever thread asks first; the others get the very same value. Its keys are its owner's few
    names (a figure's, a latency end's), so it holds no more than those; reentrant, so a value may be made of other memoised ones."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._made: dict[Hashable, Any] = {}

    def get(self, key: Hashable, make: Callable[[], T]) -> T:
        with self._lock:
            if key not in self._made:
                self._made[key] = make()
            return cast("T", self._made[key])


def figure_json(figure: go.Figure) -> bytes:
    """What a page sends a browser for ``figure``: its JSON, without the figure rebuilt and validated."""
    return figure.to_json().encode()


@dataclass(frozen=True)
class LatencyView:
    """Each record's end-to-end latency to one end, as a refresh shows it: the headline, its figures, and the records produced before the run started."""

    headline: LatencyHeadline
    figures: Mapping[str, go.Figure]
    backlog: Mapping[str, float]
    records: int
    _sent: Memo = field(default_factory=Memo, repr=False, compare=False)

    def sent(self, name: str) -> bytes:
        """The JSON of figure ``name`` (:func:`figure_json`), made once for every page shown this view."""
        return self._sent.get(name, lambda: figure_json(self.figures[name]))


@dataclass(frozen=True)
class LatenessView:
    """Every event a run has read judged by the watermark of its micro-batch (:func:`~streaming.analysis.lateness.judge`), with the numbers and how late the events arrived."""

    classified: pd.DataFrame
    batches: pd.DataFrame
    numbers: Mapping[str, Any]
    behind_arrival: tuple[int, list[float], float] | None
    """``(events, [p50, p95, p99] seconds, max seconds)`` behind their arrival (arrival − event time), where each event's arrival is known."""

    def dropped(self, *, deduplicate: bool, source: StreamSource) -> pd.DataFrame:
        """The dropped events themselves (:func:`~streaming.analysis.lateness.dropped_events`) as a user reads them (:func:`readable_dropped`)."""
        return readable_dropped(lateness.dropped_events(self.classified, deduplicate=deduplicate), source)


def readable_dropped(dropped: pd.DataFrame, source: StreamSource) -> pd.DataFrame:
    """The dropped events as a user reads them: the id under the dataset's own column name, and ``file_index`` only where a file is a micro-batch."""
    feed = source.as_feed
    if feed is None:
        return dropped
    id_name = feed.columns.dedup_id
    if id_name is not None and "id" in dropped and id_name not in dropped:
        dropped = dropped.rename(columns={"id": id_name})
    return dropped if feed.batching.by == "file" else dropped.drop(columns="file_index")


UNJUDGED = "Event-by-event lateness is shown for replayed feeds, datasets and topics over fixed windows, where the arrival of every event is known."


@dataclass(frozen=True)
class Judgement:
    """What judges a run's events one by one: the source they come from, its windows (``slide_ms`` ``None``: tumbling), and whether the
    query drops duplicates first."""

    source: StreamSource
    window_ms: int
    slide_ms: int | None
    deduplicate: bool = False


def sql_judgement(query: SqlQuery, facts: PlanFacts | None) -> Judgement | str:
    """A SQL query's events are judged as the form's are when it is one streamed view's rows counted in fixed windows of the view's event
    time, under one WATERMARK clause on that column: then each row's windows and the watermark of its batch say whether it was counted.
    Its filters and joins are not replayed: a row the query filters out is judged all the same."""
    streamed = [view for view in query.views if not view.static]
    if facts is None:
        return "Event-by-event lateness is shown once the query's plan has been read."
    if len(streamed) != 1:
        return "Event-by-event lateness is shown for a query over one streamed view (a stream-stream join has a watermark per side)."
    column = streamed[0].event_time
    windows = [window for window in facts.windows if window.column.casefold() == column.casefold()]  # names resolve as Spark resolves them
    if not facts.aggregates or len(windows) != 1 or [mark.column.casefold() for mark in facts.watermarks] != [column.casefold()]:
        return (f"Event-by-event lateness is shown for a query that aggregates `{streamed[0].name}` in one kind of window( ) of `{column}`, under "
                f"one WATERMARK clause on `{column}`.")
    return Judgement(streamed[0].stream, windows[0].window_ms, windows[0].slide_ms)


def judgement_of(run: Run) -> Judgement | str:
    """What judges ``run``'s events one by one (:class:`Judgement`), or why they are not judged: read from its configuration (and a SQL
    query's plan), not from its progress."""
    config = run.config
    if isinstance(config, SqlQuery):
        judged = sql_judgement(config, run.table.facts)
        if isinstance(judged, str):
            return judged
    elif config.aggregation == "none" or config.session_gap is not None:
        return UNJUDGED
    else:
        judged = Judgement(config.source, config.window_ms, config.slide_ms, config.deduplicate)
    feed, topic = judged.source.as_feed, judged.source.as_topic
    if feed is None and topic is None:
        return UNJUDGED
    if topic is not None and topic.pattern:
        return "Event-by-event lateness is shown for a query on one topic, not a pattern of topics."
    return judged


@dataclass(frozen=True)
class RunFrames:
    """A run's progress and result table as read once, and the figures drawn from them: what every page watching the run shows until
    the run changes (:class:`SharedFrames`). It holds no reference to the run, so a cache of it never keeps a run alive, and nothing of
    one page's own (its settings, what a link grants): those are :class:`RunSnapshot`'s."""

    read_at_ms: int
    status: RunStatus
    """The run's status as it was read (each read asks Spark whether the query is active)."""
    progress: pd.DataFrame
    table: pd.DataFrame
    watermark: pd.Timestamp | None
    figures: Mapping[str, go.Figure] = field(repr=False)
    operators: pd.DataFrame = field(repr=False)
    """Each stateful operator's numbers (:func:`~streaming.engine.sql.replay.operators_of`): what a SQL run's view lists."""
    memo: Memo = field(default_factory=Memo, repr=False, compare=False)
    """What pages make of these frames once for all of them: the figures' JSON, a latency view."""

    def drawn_from(self, progress: pd.DataFrame, table: pd.DataFrame, status: RunStatus) -> bool:
        """True when these frames were drawn from ``progress`` and ``table`` themselves, the run then as ``status`` says: a progress log
        and a result table make a new frame only when a batch changed them, so the frames' identity is the run's version."""
        return self.progress is progress and self.table is table and self.status == status

    def sent(self, name: str) -> bytes:
        """The JSON of figure ``name`` (:func:`figure_json`), made once for every page."""
        return self.memo.get(("sent", name), lambda: figure_json(self.figures[name]))


@dataclass(frozen=True)
class RunSnapshot:
    """One refresh of ``run`` on one page: the run's shared :class:`RunFrames` and that page's own settings (how many batches of a
    stalled watermark it warns after)."""

    run: Run
    frames: RunFrames = field(repr=False)
    stall_batches: int

    @property
    def read_at_ms(self) -> int:
        return self.frames.read_at_ms

    @property
    def status(self) -> RunStatus:
        return self.frames.status

    @property
    def progress(self) -> pd.DataFrame:
        return self.frames.progress

    @property
    def table(self) -> pd.DataFrame:
        return self.frames.table

    @property
    def watermark(self) -> pd.Timestamp | None:
        return self.frames.watermark

    @property
    def figures(self) -> Mapping[str, go.Figure]:
        return self.frames.figures

    @property
    def operators(self) -> pd.DataFrame:
        return self.frames.operators

    def sent(self, name: str) -> bytes:
        """The JSON of figure ``name``, made once for every page watching the run."""
        return self.frames.sent(name)

    @property
    def sql(self) -> bool:
        """True for a user's own SQL query (its view lists operators, not windows)."""
        return isinstance(self.run.config, SqlQuery)

    @property
    def watermark_text(self) -> str:
        """The watermark with its date: data may span days, and a time of day alone would hide which."""
        return "none yet" if self.watermark is None else f"{self.watermark:%Y-%m-%d %H:%M:%S}"

    @property
    def arrival_text(self) -> str:
        """The arrival rule this run follows and the no-data batches it has counted (:mod:`streaming.engine.arrival`); for a live stream, that
        timing decides instead."""
        config, no_data = self.run.config, self.run.log.no_data_batches
        if config.fixed:
            return describe_rule(config.ran_arrival(), no_data) + "."
        batches = f"{no_data} no-data batch{'es' if no_data != 1 else ''}"
        return (
            f"A live stream: when its data arrives decides, not an arrival rule, so two runs may differ ({batches} so far: one runs when the "
            "watermark moved and no new data had arrived yet)."
        )

    def status_metric(self) -> Metric:
        run = self.run
        drained = self.status == "active" and run.drained
        return Metric(
            "Status", "stopping…" if run.stopping else "all data read" if drained else self.status,
            "Every file of the replay has been handed over and read: the query is idle, waiting for data that will not come. Stop it, or it is "
            "finished when another query needs its slot" if drained
            else "Spark stops the query once the micro-batch under way ends: seconds, or a minute or more on a loaded machine" if run.stopping else None,
        )

    def numbers(self) -> list[Metric]:
        """The status row: status, batches, watermark, malformed and dropped rows, result rows (and duplicates dropped, for a query that drops
        them), all from this refresh's reads, so the numbers agree with the charts drawn beside them."""
        watermark, total = self.watermark, partial(progress_total, self.progress)
        shown = [
            self.status_metric(),
            Metric("Batches", len(self.progress)),
            Metric("Watermark", self.watermark_text, None if watermark is None else f"{watermark} UTC"),
            Metric("Malformed rows", total("malformed_rows")),
            Metric(
                "Dropped (all operators)" if self.sql else "Dropped (groups)", total("rows_dropped_by_watermark"),
                "Spark's numRowsDroppedByWatermark: rows at the stateful operators, which after the partial aggregation are groups (a window and "
                "key of one micro-batch), not input rows" + ("" if self.sql else "; the events that were too late are under Why was it dropped"),
            ),
            Metric("Result rows", len(self.table)),
        ]
        if not self.sql and self.run.config.deduplicate:
            shown.append(Metric(
                "Duplicates dropped", total("duplicates_dropped"),
                "Rows whose id was already seen within the watermark (the dedup operator's numDroppedDuplicateRows)",
            ))
        return shown

    @property
    def stall(self) -> WatermarkStall | None:
        return None if self.sql else watermark_stall(self.progress, self.stall_batches)

    @property
    def failure(self) -> tuple[str, str | None] | None:
        """``(error, hint)`` of a failed run, ``None`` for the others."""
        run = self.run
        return (run.error or "", run.config.source.explain_failure(run.error or "")) if self.status == "failed" else None

    @property
    def evicted(self) -> tuple[int, int] | None:
        """``(max rows, rows evicted)`` of a result table that keeps at most ``max rows`` windows; ``None`` for one that keeps all."""
        table = self.run.table
        return None if getattr(table, "max_rows", None) is None else (table.max_rows, table.evicted_rows)

    def store_metrics(self) -> pd.DataFrame | None:
        """RocksDB's own metrics over the last :data:`STORE_METRIC_BATCHES` batches; ``None`` for a run that keeps its state elsewhere."""
        return state_store_metrics(self.run.log.recent(STORE_METRIC_BATCHES)) if self.run.config.state_store == "rocksdb" else None

    def state_operators(self, spark: SparkSession) -> pd.DataFrame:
        """The stateful operators whose state the run's checkpoint holds at its latest committed batch (empty before the first)."""
        return state_operators(spark, self.run.checkpoint)

    def state_rows(self, spark: SparkSession, operator: int, limit: int) -> pd.DataFrame:
        """At most ``limit`` rows of operator ``operator``'s state at the latest committed batch."""
        return state_rows(spark, self.run.checkpoint, operator, limit=limit)

    def judgement(self) -> Judgement | str:
        """What judges this run's events one by one (:func:`judgement_of`), or why they are not judged."""
        return judgement_of(self.run)

    def lateness(self, events: pd.DataFrame) -> LatenessView:
        """``events`` (every event the run has read, with the micro-batch that read it) judged by the watermark each batch run so far had."""
        judged, summaries = self.judgement(), self.run.log.summaries()
        if isinstance(judged, str):
            raise ValueError(f"run {self.run.name}: {judged}")
        classified, batches = lateness.judge(events, summaries, judged.window_ms, judged.slide_ms)
        behind = None
        if "arrival" in events and not events["arrival"].isna().all():
            late = (events["arrival"] - events["event_time"]).dropna().dt.total_seconds()
            behind = (len(late), late.quantile([0.5, 0.95, 0.99]).tolist(), float(late.max()))
        return LatenessView(classified, batches, lateness.drop_summary(classified, summaries), behind)

    def latency(self, end: LatencyEnd, *, window_seconds: int, now_ms: int | None = None) -> LatencyView | None:
        """Each record's latency to ``end`` (``None`` for a run whose records carry no produce time); headlined over the last ``window_seconds``
        before ``now_ms``. Without ``now_ms``, as the frames were read: made once for every page that asks for the same end, so each shows
        the same numbers."""
        if now_ms is not None:
            return self._latency(end, window_seconds, now_ms)
        return self.frames.memo.get(("latency", end, window_seconds), lambda: self._latency(end, window_seconds, self.read_at_ms))

    def _latency(self, end: LatencyEnd, window_seconds: int, now_ms: int) -> LatencyView | None:
        log = self.run.latency
        if log is None:
            return None
        entries, started_ms = log.frame(), self.run.started_at.value / 1e6
        headline = latency_headline(entries, end, now_ms=now_ms, window_ms=window_seconds * 1000, started_ms=started_ms)
        return LatencyView(headline, latency_figures(entries, end), produced_before(entries, started_ms), log.records)

    def report(self, *, code: bool = True) -> str:
        """This refresh as one HTML file that opens without a server: the run's settings, numbers, charts and result table; a SQL run's
        text and program only with ``code`` (a read-only link's viewer gets them only when its owner grants them)."""
        run, progress = self.run, progress_numbers(self.progress)
        numbers = f"{progress}, status {self.status}." if self.sql else f"{progress}, watermark {self.watermark_text}, status {self.status}."
        numbers += " " + self.arrival_text
        if self.sql:
            return sql_report(run, numbers, self.table, self.operators, [self.figures[name] for name in SQL_REPORTED], code=code)
        shown = [self.figures[name] for name in REPORTED if name in self.figures]
        return figures_report(f"Query {run.name}", (f"{run.config.source.label}: {settings_text(run.config)}.", numbers), shown, [("Result table", self.table)])


def snapshot(run: Run, *, stall_batches: int) -> RunSnapshot:
    """``run`` (a form's query or a user's SQL) as it stands, for a page that warns of a watermark stalled for ``stall_batches``: the
    frames every page watching it shares (:data:`SHARED_FRAMES`), drawn again only when the run has changed; a page that draws it then
    marks the records of the table as shown (their latency to the page ends here)."""
    return RunSnapshot(run, SHARED_FRAMES.frames(run), stall_batches)


def draw_frames(run: Run, progress: pd.DataFrame, breakdown: pd.DataFrame, table: pd.DataFrame, status: RunStatus) -> RunFrames:
    """``run``'s frames as read (its progress log's ``progress`` and ``breakdown``, its result ``table``, its ``status``) and the live
    figures drawn from them."""
    config = run.config
    if isinstance(config, SqlQuery):  # no windows of the form's: the figures of its progress, and its operators listed
        drawn, measure, slide, operators = pd.DataFrame(), "count", None, pd.DataFrame(operators_of(run.log.summaries()))
    else:
        drawn, measure, operators = table, config.measure, pd.DataFrame()
        slide = None if config.session_gap is not None else pd.Timedelta(milliseconds=config.slide_ms)
    figures = live_figures(
        drawn, progress, breakdown, output_mode=config.output_mode, measure=measure, slide=slide, drawn=run.log.drawn, lag=config.source.reports_lag,
        replayed=config.fixed, changed_at=run.changed_at,
    )
    return RunFrames(time.time_ns() // 1_000_000, status, progress, table, current_watermark(progress), figures, operators)


Draw = Callable[["Run", pd.DataFrame, pd.DataFrame, pd.DataFrame, "RunStatus"], RunFrames]
"""``(run, progress, breakdown, table, status) -> frames``: how :class:`SharedFrames` draws a run (:func:`draw_frames`)."""


@dataclass
class _Held:
    """One run's place in :class:`SharedFrames`: the lock its pages take to read and draw it, and its latest frames."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    frames: RunFrames | None = None


class SharedFrames:
    """The latest :class:`RunFrames` of each run, shared by every page that watches it.

    A read-only link's audience watches one run from many browser sessions, and
    each refresh of each drew the same figures from the same batches again:
    viewers cost the server in proportion to their number, and took the cores
    Spark and the presenter's page needed. Here a run is drawn once per change
    (a new batch folded into its table or logged, its status changed), by
    whichever page refreshes first; the pages refreshing meanwhile wait on the
    run's lock and are handed the same frames, and the figures' JSON is made
    once with them (:meth:`RunFrames.sent`).

    Not ``st.cache_data``: a run is not a value Streamlit can hash, its
    version is its frames' identity (no argument to key by), its cached
    value must not be copied for each session (``st.cache_data`` pickles
    its values, and copies them back on every hit), and ``streaming/`` knows
    nothing of Streamlit; ``st.cache_resource`` would keep every run drawn
    until its ``max_entries`` or ``ttl``. This holds one entry per run and
    drops it when the run itself is let go (a weak reference's callback:
    the frames hold no reference to their run), so it grows neither with
    the sessions nor with time.
    """

    def __init__(self, draw: Draw = draw_frames) -> None:
        self._draw = draw
        self._lock = threading.Lock()
        self._held: dict[str, _Held] = {}

    def frames(self, run: Run) -> RunFrames:
        """``run``'s frames as it stands now: those already drawn while it has not changed, else drawn now (once, whoever asks)."""
        config = run.config
        if not isinstance(config, (QueryConfig, SqlQuery)):
            raise ValueError(f"run {run.name} is not a query of the Live page (a live join is watched on the Joins page)")
        held = self._place(run)
        with held.lock:
            (progress, breakdown), table, status = run.log.frames(), run.table.frame(), run.status
            if held.frames is None or not held.frames.drawn_from(progress, table, status):
                held.frames = self._draw(run, progress, breakdown, table, status)
            return held.frames

    def _place(self, run: Run) -> _Held:
        with self._lock:
            held = self._held.get(run.key)
            if held is None:
                held = self._held[run.key] = _Held()
                weakref.finalize(run, self._forget, run.key)
            return held

    def _forget(self, key: str) -> None:
        with self._lock:
            self._held.pop(key, None)

    def __len__(self) -> int:
        """The runs held: at most those not yet let go."""
        with self._lock:
            return len(self._held)


SHARED_FRAMES = SharedFrames()
"""The server's one :class:`SharedFrames`: every browser session of the app asks it."""


def topic_events(spark: SparkSession, run: Run) -> pd.DataFrame:
    """The records a run on a topic has read so far (:func:`~streaming.analysis.profile.topic_events_of`), each with the batch that read it."""
    judged = judgement_of(run)
    source = None if isinstance(judged, str) else judged.source.as_topic
    if source is None:
        raise ValueError(f"run {run.name} does not read a topic whose records are judged")
    batches = topic_batches(run.log.summaries(), initial_offsets(run.checkpoint), source.topic)
    return topic_events_of(spark, source, batches)


def progress_numbers(progress: pd.DataFrame) -> str:
    """A run's progress in one phrase for a report: its micro-batches, the rows read and the rows the watermark dropped."""
    rows, dropped = progress_total(progress, "num_input_rows"), progress_total(progress, "rows_dropped_by_watermark")
    return f"{len(progress)} micro-batches, {rows:,} rows read, {dropped:,} rows dropped by the watermark"


def sql_report(run: Run, numbers: str, table: pd.DataFrame, operators: pd.DataFrame, figures: Sequence[go.Figure], *, code: bool = True) -> str:
    """A SQL run as one HTML file that opens without a server: its views, with ``code`` its query and the program that runs it (Show code),
    its numbers, charts, operators and result table."""
    query, facts = run.config, run.table.facts
    views = "; ".join(f"{view.name}: {view.source.label}" + (" (static)" if view.static else "") for view in query.views)
    texts = [("Your query", query.text), _program(query, facts)] if code else []
    tables = [("Stateful operators", operators), ("Result table", table)]
    return figures_report(f"SQL query {run.name}", (f"Views: {views}. {query.output_mode.capitalize()} mode.", numbers), figures, tables, texts)


def _program(query: SqlQuery, facts: PlanFacts | None) -> tuple[str, str]:
    """``(caption, text)`` of the program that runs a SQL query (Show code), or why there is none yet, for its report."""
    try:
        return "A PySpark program that runs it (Show code)", sql_code(query, facts.grouping if facts is not None else ())
    except ConfigError as err:
        return "No program yet", str(err)
