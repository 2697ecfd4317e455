"""The Step through page's parts: a scenario's walkthroughs held in the session, the buttons that move them, and one batch drawn.

Each browser session holds its own walkthroughs (:class:`Walks`): one stepped
replay per preset, held still between batches. *Next batch* shows the next
micro-batch Spark already ran (the no-data batch after a watermark move) or
hands Spark the next step (a file, or a topic's records of one batch); *Back* and the slider only move the view, since every
batch's progress and output are kept. The scenario and the batch shown are in
the page's URL (``scenario``, ``step``), so a link opens the same view.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd
import streamlit as st

from dashboard.data import choice_of, data_select, data_source, data_widgets
from dashboard.kafka import kafka_source, topic_shape
from dashboard.presses import counted, forget
from dashboard.shared import KEPT, InputErrors, refuse, watermark_widget, windows_widgets
from streaming.analysis.explain import EventsSoFar, Step, explain, result_after
from streaming.charts.walkthrough import steps_figure
from streaming.engine.errors import ConfigError, brief
from streaming.engine.output.results import stamp
from streaming.engine.query.config import OUTPUT_MODES
from streaming.engine.run.walkthrough import Walkthrough, make_room
from streaming.report import LATE, ReportRun, change_colour, clock, spans_days, steps_report
from streaming.scenarios import Scenario

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from streaming.engine.query.config import QueryConfig
    from streaming.engine.run.registry import QueryRegistry
    from streaming.engine.sources import FeedSource, KafkaSource

__all__ = [
    "PRESENTER_STYLE",
    "HeldWalks",
    "Walks",
    "batch_view",
    "brief",
    "controls",
    "draw_table",
    "figure",
    "files_at",
    "held",
    "hold",
    "leave",
    "opener",
    "own_scenario",
    "own_source",
    "report_button",
    "start",
    "styled",
]

PRESENTER_STYLE = """<style>
.scn-caption {font-size: 2rem !important; line-height: 1.4 !important;}
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] {display: none;}
[data-testid="stDataFrame"], [data-testid="stTable"], [data-testid="stCaptionContainer"], [data-testid="stMetric"] {font-size: 1.2rem;}
h1 {font-size: 2.2rem;}
</style>"""
"""Presenter mode: large type, the sidebar folded away."""

W = TypeVar("W", bound="HeldWalks")

HELD = "scn_walks"
"""Session-state key of a plain dict, :func:`_held`, that holds the walkthroughs and the subject the page's presses are for."""
VIEW = "scn_view"
"""How many batches are shown: 0 before the first, ``k`` shows the ``k``-th batch Spark ran."""
SLIDER = "scn_slider"
ERROR = "scn_error"
PRESSES = "scn_presses"
PRESSED = {"scn_next": "next", "scn_next_file": "file", "scn_back": "back", "scn_end": "end"}
"""The buttons whose presses the page counts (widget key → action)."""
KEYS = {"ArrowRight": "scn_next", "Shift+ArrowRight": "scn_next_file", "ArrowLeft": "scn_back", "End": "scn_end"}
"""Their keys, counted with them."""

TABLE_ROWS = 40
"""Tables up to this many rows are drawn whole; longer ones scroll."""


class HeldWalks:
    """Walkthroughs stepped together (:attr:`walks`, side by side), as a page's session holds them; :attr:`subject` is what they run."""

    walks: Sequence[Walkthrough[Any]]

    @property
    def subject(self) -> object:
        raise NotImplementedError

    @property
    def batches(self) -> int:
        """Batches every walkthrough has run (side by side, the fewer)."""
        return min(len(walk.summaries()) for walk in self.walks)

    @property
    def finished(self) -> bool:
        return all(walk.finished for walk in self.walks)

    @property
    def handed(self) -> int:
        return min(walk.handed for walk in self.walks)

    def advance(self) -> None:
        for walk in self.walks:
            walk.advance()

    def to_end(self) -> None:
        for walk in self.walks:
            walk.to_end()

    def reach(self, batches: int) -> None:
        """Hand Spark steps (files, batches of records) until ``batches`` batches have run, or the replay ends."""
        while self.batches < batches and not self.finished:
            self.advance()

    def close(self) -> None:
        for walk in self.walks:
            walk.close()


@dataclass
class Walks(HeldWalks):
    """A scenario's walkthroughs (one per preset) and what each Spark run so far explains to."""

    scenario: Scenario
    walks: list[Walkthrough[QueryConfig]]
    events: list[EventsSoFar]
    """What each walkthrough has read so far (its source's events read once, shared side by side)."""
    _steps: dict[int, tuple[int, list[Step]]] = field(default_factory=dict)

    @property
    def subject(self) -> Scenario:
        return self.scenario

    @classmethod
    def start(cls, scenario: Scenario, registry: QueryRegistry, spark: SparkSession) -> Walks:
        configs = scenario.configs()
        make_room(registry, len(configs))
        started: list[Walkthrough[QueryConfig]] = []
        by_source: dict[tuple[object, str], EventsSoFar] = {}
        try:
            for config in configs:
                started.append(Walkthrough(registry, config))
            for walk in started:  # side by side, the presets share one source: read it once
                if (walk.config.source, str(walk.plan)) not in by_source:
                    by_source[walk.config.source, str(walk.plan)] = EventsSoFar(spark, walk.config, walk.plan)
        except BaseException:
            for walk in started:
                walk.close()
            raise
        return cls(scenario, started, [by_source[walk.config.source, str(walk.plan)] for walk in started])

    def steps(self, index: int) -> list[Step]:
        """Walkthrough ``index``'s batches so far, told (made again only when Spark ran more)."""
        walk = self.walks[index]
        summaries = walk.summaries()
        cached = self._steps.get(index)
        if cached is None or cached[0] != len(summaries):
            cached = (len(summaries), explain(walk.config, summaries, walk.outputs(), self.events[index](summaries)))
            self._steps[index] = cached
        return cached[1]


def held(subject: object, registry: QueryRegistry) -> Any:
    """This session's walkthroughs of ``subject`` (a scenario, a SQL query) while they run on ``registry``; others held are closed (another
    scenario, query or settings, a lost session, the idle limit)."""
    box = _held()
    if box.get("subject") != subject:  # presses made for another subject never move this one, held or not yet
        forget(PRESSES)
        box["subject"] = subject
    walks: HeldWalks | None = box.get("walks")
    if walks is not None and walks.subject == subject and all(walk.active and walk.registry.shares(registry) for walk in walks.walks):
        return walks
    if walks is not None:
        leave(presses=False)  # another subject's (its presses forgotten above), or closed by the idle limit or a lost session
    return None


def _held() -> dict[str, Any]:
    """The dict in session state that holds this session's walkthroughs. Streamlit may interrupt a run at any touch of session state
    once another press or input arrives; a write into this dict is no such touch, so walkthroughs started are always held, never left
    running unseen."""
    box: dict[str, Any] = st.session_state.setdefault(HELD, {})
    return box


def now_held() -> HeldWalks | None:
    """This session's walkthroughs, whatever they run."""
    walks: HeldWalks | None = _held().get("walks")
    return walks


def start(scenario: Scenario, registry: QueryRegistry, spark: SparkSession) -> Walks:
    """Start the walkthroughs of ``scenario`` for this session (nothing handed over yet, or a topic's first step: see :class:`Walkthrough`)."""
    return hold(lambda: Walks.start(scenario, registry, spark))


def hold(start: Callable[[], W]) -> W:
    """Start walkthroughs (``start``) and keep them as this session's: the holder is found first, so no touch of session state comes
    between starting their queries and holding them."""
    box = _held()
    walks = box["walks"] = start()
    return walks


def opener(scenario: Scenario, registry: QueryRegistry, spark: SparkSession) -> Callable[[], Walks]:
    """What *Next batch* and *Run to end* call for ``scenario``: its walkthroughs held, or started."""
    return lambda: held(scenario, registry) or start(scenario, registry, spark)


def leave(*, presses: bool = True) -> None:
    """Close this session's walkthroughs: the page was left, or another scenario chosen. With ``presses``, the presses the page counted
    and did not apply are forgotten (:func:`~dashboard.presses.forget`): they were made for what is closed."""
    if presses:
        forget(PRESSES)
    box = _held()
    walks: HeldWalks | None = box.pop("walks", None)
    if walks is not None:  # closed before the next touch of session state, where a run may be interrupted
        walks.close()
    if VIEW in st.session_state:  # nothing run to show: the next Next batch hands over the first step, not the step after the old view
        st.session_state[VIEW] = 0


OWN = "own"
"""The scenario picker's entry for the user's own data and settings."""


def own_source(prefix: str = "scn", *, aggregates: bool = True) -> tuple[FeedSource | KafkaSource, dict[str, Any], str]:
    """Your data to step through: a sample feed or a mapped dataset (cut into micro-batches as its batching says; with ``aggregates``, what is
    aggregated too), or a topic's records (from its earliest offsets to those latest when the replay starts, at most *Max offsets per trigger*
    a micro-batch); ``(source, shape, title)``, the source stepped one micro-batch at a time. A source that cannot be stepped through stops the
    page with a message naming the field and the value."""
    topic: dict[str, Any] | None = None
    if st.toggle("A Kafka topic", key=f"{prefix}_from_topic", **KEPT, help="Its records from the earliest offsets to those latest when the replay starts, copied a micro-batch at a time into a topic the replay reads"):
        feed, shape = None, topic_shape(prefix)
        topic = shape.pop("topic")
        if not topic.get("value_columns"):  # no brokers, no topic, or its columns not read yet (Spark starting): the form said which
            leave()
            st.stop()
    else:
        feed = data_select(f"{prefix}_feed")
        shape = data_widgets(prefix, feed, aggregates=aggregates)
    try:
        source = kafka_source(topic) if topic is not None else data_source(choice_of(feed), shape["batching"])
        return source.steppable(), shape, f"Your data: topic {topic['topic']}" if topic is not None else f"Your data: {feed}"
    except ConfigError as err:
        leave()  # the replay held read other data
        refuse(InputErrors([err]), "replay")
        raise  # refuse stops the page


def own_scenario(prefix: str = "scn") -> Scenario:
    """The form for stepping through your own data (:func:`own_source`) under your windows, watermark and output mode.

    A configuration Spark would refuse stops the page with a message naming the field and the value.
    """
    source, shape, title = own_source(prefix)
    left, middle, right = st.columns(3)
    with left:
        window, slide, session_gap = windows_widgets(prefix, "1 minute")
    with middle:
        watermark = watermark_widget(prefix, "30 seconds")
    with right:
        modes = list(OUTPUT_MODES)
        output_mode = st.selectbox("Output mode", modes, index=modes.index("update"), key=f"{prefix}_output_mode", **KEPT)
    preset = {
        "window": window, "slide": slide, "session_gap": session_gap, "watermark": watermark, "output_mode": output_mode,
        "aggregation": shape.get("aggregation", "count"), "deduplicate": shape.get("deduplicate", False),
    }
    try:
        scenario = Scenario.of(source, preset, title)
        scenario.configs()  # refused here, before Spark sees it
    except ConfigError as err:
        leave()  # the replay held ran other settings
        refuse(InputErrors([err]), "replay")
    return scenario


def next_file_view(summaries: Sequence[Mapping[str, Any]], view: int) -> int | None:
    """The view of the next batch after the one ``view`` shows that read data, passing over the no-data batches between (each only moved
    the watermark, which the batch shown says it left); ``None`` when no batch after the view has read data yet."""
    rows = [int(summary.get("num_input_rows") or 0) for summary in summaries]
    first = next((index for index in range(view, len(rows)) if rows[index] > 0), None)
    return None if first is None else first + 1


def _next(walks: HeldWalks, view: int) -> int:
    walks.reach(view + 1)
    return min(view + 1, walks.batches)


def _next_file(walks: HeldWalks, view: int) -> int:
    target = next_file_view(walks.walks[0].summaries(), view)
    while target is None and not walks.finished:  # no batch after the view read data yet: hand the next step over (and wait for its batches)
        walks.advance()
        target = next_file_view(walks.walks[0].summaries(), view)
    return min(target if target is not None else walks.batches, walks.batches)


def _to_end(walks: HeldWalks, view: int) -> int:
    walks.to_end()
    return walks.batches


MOVES: dict[str, Callable[[HeldWalks, int], int]] = {"next": _next, "file": _next_file, "end": _to_end}
"""What a press of each button does to the view, handing Spark what it needs to reach it. Each move goes to a view named from the one it
starts at, so a move made again (its rerun was interrupted before the view was kept) hands Spark nothing more."""


def _moved(presses: Sequence[str], view: int, open_walks: Callable[[], HeldWalks]) -> tuple[int, str | None]:
    """The view after ``presses`` from ``view`` (*Back* only moves the view), and what failed: a failure stops there, to be shown in the
    page, never raised as a traceback. Walkthroughs started afresh (the ones held were closed: the idle limit, a lost session) move from
    their start, not from the old view."""
    for press in presses:
        if press == "back":
            view = max(0, view - 1)
            continue
        try:
            before = now_held()
            walks = open_walks()
            view = MOVES[press](walks, view if walks is before else 0)
        except Exception as err:  # noqa: BLE001 - a Spark failure, a lost session, a timeout: a message, never a traceback
            return view, brief(str(err))
    return view, None


def _pressed(press: str, open_walks: Callable[[], HeldWalks]) -> None:
    """A button's callback, where no browser counts its presses (``AppTest``)."""
    view, error = _moved([press], int(st.session_state.get(VIEW, 0)), open_walks)
    st.session_state[VIEW] = view
    if error is not None:
        st.session_state[ERROR] = error


def controls(walks: HeldWalks | None, open_walks: Callable[[], HeldWalks]) -> int:
    """Back, Next batch, Run to end and the batch slider; the number of batches to show. Next and Run to end call ``open_walks`` for the
    walkthroughs to move (held, or started when none run: :func:`opener`).

    The presses the browser counted (``presses.py``) are applied in order. Once another press arrives, Streamlit starts a new run of the
    page at once and stops this one at its next touch of the session's state: the two runs overlap while this one waits for Spark. So one
    run at a time applies presses (the session's lock: a second run would start the walkthroughs again beside the first's), the view is
    kept first and the presses marked seen after it with no such touch between, and a run stopped in between leaves both as they were:
    the next run makes the same moves again, handing Spark nothing more.
    """
    with _held().setdefault("lock", threading.Lock()):
        presses = counted(key=PRESSES, buttons=PRESSED, keys=KEYS)
        if presses:
            view, error = _moved(presses, int(st.session_state.get(VIEW, 0)), open_walks)
            st.session_state[VIEW] = view
            presses.seen()
            walks = now_held()
            if error is not None:
                st.session_state[ERROR] = error
    if error := st.session_state.pop(ERROR, None):
        st.error(f"Spark could not run the next batch: {error}")
    back, forward, step, end, status = st.columns([1, 1.2, 1.2, 1.2, 2.4])
    view = int(st.session_state.get(VIEW, 0))
    batches = walks.batches if walks is not None else 0
    at_end = walks is not None and walks.finished and view >= batches
    back.button("Back", key="scn_back", on_click=_pressed, args=(PRESSED["scn_back"], open_walks), disabled=view == 0, icon=":material/skip_previous:", width="stretch")
    forward.button(
        "Next batch", key="scn_next", on_click=_pressed, args=(PRESSED["scn_next"], open_walks), disabled=at_end, type="primary", icon=":material/skip_next:", width="stretch",
    )
    step.button(
        "Next file", key="scn_next_file", on_click=_pressed, args=(PRESSED["scn_next_file"], open_walks), disabled=at_end, icon=":material/playlist_play:", width="stretch",
        help="Hand Spark the next file (a topic: the next records) and show the batch that read it, passing over the no-data "
        "batches between (each only moves the watermark, which the batch shown says it leaves): one press a file",
    )
    end.button("Run to end", key="scn_end", on_click=_pressed, args=(PRESSED["scn_end"], open_walks), disabled=at_end, icon=":material/fast_forward:", width="stretch")
    keys = "keys: → next, Shift+→ next file, ← back, End to the end"
    if walks is None:
        status.caption(f"Next batch starts the replay · arrival quiet: each batch's data arrives once Spark has run the one before · {keys}")
        return 0
    status.caption(
        f"{walks.handed} of {walks.walks[0].steps} {walks.walks[0].unit} handed to Spark · {batches} micro-batches run (no-data batches included) · "
        f"arrival quiet · {keys}"
    )
    if batches > 1:
        st.session_state[SLIDER] = view
        st.slider(
            "Step", min_value=0, max_value=batches, key=SLIDER, on_change=_slid,
            help="Step k shows micro-batch k − 1 (step 0: before the first). Moving back only changes the view: every batch is kept.",
        )
    return view


def _slid() -> None:
    st.session_state[VIEW] = int(st.session_state[SLIDER])


def files_at(steps: Sequence[Step], view: int) -> int:
    """Files handed to Spark by the time batch ``view`` (from 1) ran: the batches among the first ``view`` that read new offsets."""
    return sum(step.read_new for step in steps[:view])


def styled(frame: pd.DataFrame, colour: Callable[[pd.Series], str]) -> pd.io.formats.style.Styler:
    """``frame`` with each row's background set by ``colour(row)``, its times written to the second (and the fraction, when there is one)."""
    shown = frame.copy()
    for name in shown.columns:
        if pd.api.types.is_datetime64_any_dtype(shown[name]):
            shown[name] = [stamp(value) for value in shown[name]]
    return shown.style.apply(lambda row: [f"background-color: {colour(row)}" if colour(row) else ""] * len(row), axis=1)


def batch_view(steps: Sequence[Step], view: int, output_mode: str, label: str | None = None) -> None:
    """Batch ``view`` (from 1) of one walkthrough: the caption, the watermark, the rows read, what the sink received, the result table, the rows dropped and the state let go of."""
    if label:
        st.markdown(f"#### {label}")
    if view == 0 or not steps:
        st.info("Nothing has run yet. Press **Next batch** to hand Spark the first micro-batch's data.")
        return
    step = steps[min(view, len(steps)) - 1]
    st.markdown(f"<div class='scn-caption'>{html.escape(step.caption)}</div>", unsafe_allow_html=True)
    dated = spans_days([moment for each in steps for moment in (each.watermark_before, each.watermark_after)])
    before, after = clock(step.watermark_before, dated=dated), clock(step.watermark_after, dated=dated)
    read, state, dropped, watermark = st.columns(4)
    read.metric("Rows read", step.input_rows)
    state.metric("Rows in state", step.state_rows)
    dropped.metric("Dropped as late", len(step.dropped) if len(step.dropped) else step.spark_dropped)
    watermark.metric(
        "Watermark after this batch", after, delta=None if before == after else f"ran with {before}", delta_color="off",
        help="This batch ran with the watermark it started with: rows at or behind that one are marked late",
    )
    if len(step.rows):
        st.caption("Rows read (red: at or behind the watermark)")
        draw_table(styled(step.rows, lambda row: LATE if row["late"] else ""))
    st.caption("What the sink received (green: added, yellow: updated, blue: emitted)")
    draw_table(styled(step.output, change_colour))
    st.caption("The result table after this batch")
    result = result_after(steps, min(view, len(steps)) - 1, output_mode)
    draw_table(styled(result, change_colour))
    if len(step.dropped):
        st.caption("Rows the watermark dropped, with the rule")
        table = step.dropped.assign(windows=[", ".join(f"{clock(start, dated=dated)}–{clock(end, dated=dated)}" for start, end in windows) for windows in step.dropped["windows"]])
        draw_table(styled(table, lambda row: LATE))
    if len(step.evicted):
        st.caption("Windows the state let go of")
        draw_table(styled(step.evicted, lambda row: ""))


def report_button(walks: Walks) -> None:
    """Download the scenario as one HTML file that opens without a server: its settings, figure, and every batch run so far (made when pressed)."""
    if not walks.batches:
        return
    scenario = walks.scenario

    def report() -> str:
        labels = scenario.labels or (None,) * len(walks.walks)
        return steps_report(scenario.title, scenario.summary, [ReportRun(walk.config, walks.steps(index), labels[index]) for index, walk in enumerate(walks.walks)])

    st.download_button(
        "Download report (HTML)", report, file_name=f"{scenario.name}.html", mime="text/html", key="scn_report", on_click="ignore",
        icon=":material/download:", help=f"Every batch run so far ({walks.batches}), with its caption and tables, and the figure",
    )


def figure(held: Walks, index: int, view: int) -> None:
    """The batches up to the one shown (none after it, as a stream seen so far), the one shown marked."""
    steps = held.steps(index)[: max(view, 1)]
    current = steps[view - 1].batch_id if 0 < view <= len(steps) else None
    st.plotly_chart(steps_figure(steps, current), key=f"scn_figure_{index}")


def draw_table(table: pd.io.formats.style.Styler) -> None:
    """A short table as HTML, its row colours in the page (as a presenter points at them); a long one scrolls in a data grid."""
    if len(table.data) <= TABLE_ROWS:
        st.table(table.hide(axis="index"))
    else:
        st.dataframe(table, hide_index=True, width="stretch")
