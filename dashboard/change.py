"""Change and resume: a stopped kept query edited (a SQL query's text and output mode, or the form's watermark, window, aggregate and output
mode), what Spark will do predicted as you type, and the change applied.

The prediction (:func:`~streaming.engine.run.change.predict`) reads both
queries' analysed plans by the guide's *Recovery Semantics after Changes*:
refused (another stateful operator, state key or value), resumed with what the
user is not told (a watermark that never moves back, rows in state computed
by the old query), or resumed cleanly. *Apply* lets Spark decide
(:func:`~streaming.engine.run.change.resume_changed`): the folder is copied
first and put back when Spark refuses, so a refused change leaves the kept
query as it was; a change that resumes goes on over the rest of the data, and
the folder records both configurations and the batch it changed at. A change
predicted refused or ill-defined is applied only once the user has ticked
that they read what it will do. *Try on a copy*
(:func:`~streaming.engine.run.change.try_change`) runs it on copies first,
and shows its result beside the old query going on and the changed query
from scratch, with the rows that differ; the kept query is not touched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import streamlit as st

from streaming.analysis.result_diff import held, rows_that_differ
from streaming.engine.errors import ConfigError, brief
from streaming.engine.query.config import AGGREGATIONS, OUTPUT_MODES, QueryConfig
from streaming.engine.run.change import CLEAN, GOING_ON, TRIED, Change, Prediction, Trial, predict, resume_changed, try_change
from streaming.engine.sql import SqlError, SqlQuery

from .jobs import Job, job_view, start_job

if TYPE_CHECKING:
    from streaming.engine.run.checkpoints import KeptConfig
    from streaming.engine.run.registry import QueryRegistry

__all__ = ["change_panel", "changing", "show_prediction"]

def change_panel(registry: QueryRegistry, name: str) -> None:
    """*Change and resume* for the stopped kept query ``name``, as its folder holds it now (a change applied before included): the
    editor prefilled with it, the prediction, Apply. Nothing for a query whose folder is gone."""
    try:
        kept = registry.kept_folder(name).config()
    except ConfigError:
        return
    key = f"chg_{name}"
    job: Job | None = st.session_state.get(f"{key}_job")
    trial: Job | None = st.session_state.get(f"{key}_try")
    running = changing(name)
    with st.expander("Change and resume", icon=":material/edit_note:", expanded=job is not None or trial is not None):  # open on an answer too
        try:
            changed = _edited_sql(kept, key) if isinstance(kept, SqlQuery) else _edited_form(kept, key)
        except ConfigError as err:
            st.error(f"The changed query does not run: {err}")
            return
        if changed == kept:
            st.caption("Change the query: the lab says what Spark will do with the kept state before anything runs.")
            _latest(job, trial, changed, offered=False)
            return
        try:
            prediction = _prediction(registry, key, kept, changed)
        except (SqlError, ConfigError) as err:
            st.error(f"The changed query does not run: {err}")
            return
        show_prediction(prediction)
        read = prediction.clean or st.checkbox(  # a tick is for this change's prediction only: another text is a new box, unticked
            "Try it anyway: Spark decides, and the query stays as it was when it refuses" if prediction.verdict == "refused"
            else "I have read what Spark will do with the kept state: apply anyway", key=f"{key}_read_{hashlib.sha256(repr(changed).encode()).hexdigest()[:16]}",
        )
        tried, apply = st.columns(2)
        if tried.button("Try on a copy", key=f"{key}_trial", disabled=running, icon=":material/science:",
                        help="Resumes the change on a copy of the checkpoint over the rest of the data, beside the old query going on and the "
                             "changed one from scratch; the kept query is not touched"):
            _start(registry, name, f"{key}_try", f"Try of the change to {name}", changed, _try)
        if apply.button("Apply the change and resume", key=f"{key}_apply", disabled=not read or running, type="primary",
                        help="Resumes the kept query with the change over the rest of its data; when Spark refuses, the query stays as it was"):
            _start(registry, name, f"{key}_job", f"Change and resume of {name}", changed, _apply)
        _latest(job, trial, changed)


def _edited_sql(kept: SqlQuery, key: str) -> SqlQuery:
    """The kept SQL query as the user changes it: its text and output mode."""
    text = st.text_area("Changed SQL", value=kept.text, key=f"{key}_sql", height=180,
                        help="The kept query, to change: a watermark delay, a filter, the output mode... It goes on over the same views")
    mode = st.selectbox("Output mode", OUTPUT_MODES, index=OUTPUT_MODES.index(kept.output_mode), key=f"{key}_mode")
    return kept.with_changes(text=text, output_mode=mode)


def _edited_form(kept: QueryConfig, key: str) -> QueryConfig:
    """The form's kept query as the user changes it: the settings a tuned query changes (watermark delay, window, aggregate, output mode);
    :class:`ConfigError` naming a value the form refuses."""
    delay, window, aggregate, mode = st.columns(4)
    watermark = delay.text_input("Watermark delay", value=kept.watermark or "", key=f"{key}_watermark", help="Empty: no watermark")
    length = window.text_input("Window", value=kept.window, key=f"{key}_window", disabled=kept.session_gap is not None,
                               help="The window's length (a session window's gap is kept)")
    aggregation = aggregate.selectbox("Aggregate", AGGREGATIONS, index=AGGREGATIONS.index(kept.aggregation), key=f"{key}_aggregation")
    output = mode.selectbox("Output mode", OUTPUT_MODES, index=OUTPUT_MODES.index(kept.output_mode), key=f"{key}_mode")
    return kept.with_changes(watermark=watermark.strip() or None, window=length.strip(), aggregation=aggregation, output_mode=output)


def _latest(job: Job | None, trial: Job | None, changed: KeptConfig, *, offered: bool = True) -> None:
    """The later of the session's change (``job``) and try (``trial``): running, its progress; done, its answer, unless a try was made
    of another text than ``changed``, the one in the box now (then, when a try is ``offered``, a word that this one may be tried)."""
    if trial is None or (job is not None and job.started > trial.started):
        _result(job, _render)
    elif trial.done and not trial.cancelled and trial.error is None and trial.inputs[1] != changed:
        if offered:
            st.caption("The last try was of another text: try this one to see what it does.")
    else:
        _result(trial, _render_trial)


def _start(registry: QueryRegistry, name: str, key: str, what: str, changed: KeptConfig, work: Callable[[QueryRegistry, KeptConfig, Path, Job], Any]) -> None:
    try:
        folder = registry.kept_folder(name).folder
    except ConfigError as err:
        st.error(f"Cannot change it: {err}")
        return
    start_job(key, what, (name, changed), lambda job: work(registry, changed, folder, job))


def changing(name: str) -> bool:
    """Whether this browser session is applying or trying a change to ``name`` now: its Resume and Delete wait for it (a try copies the
    folder as it starts: a resume or a delete meanwhile would change what it copies)."""
    jobs: list[Job | None] = [st.session_state.get(f"chg_{name}_{job}") for job in ("job", "try")]
    return any(job is not None and not job.done for job in jobs)


def _prediction(registry: QueryRegistry, key: str, kept: KeptConfig, changed: KeptConfig) -> Prediction:
    """The prediction for ``changed``, made once per change: it checks both queries' plans on Spark."""
    held = st.session_state.get(f"{key}_predicted")
    if held is None or held[0] != (kept, changed):
        held = ((kept, changed), predict(registry.spark, kept, changed))
        st.session_state[f"{key}_predicted"] = held
    return held[1]


def show_prediction(prediction: Prediction) -> None:
    """What Spark will do with the kept state, in the page's words: refused, resumed without saying what it changes, or resumed cleanly."""
    reasons = "\n".join(f"- {reason}" for reason in prediction.reasons)
    if prediction.verdict == "refused":
        st.error(f"**Spark will refuse this change** ({prediction.condition}): nothing would run, and the query stays as it was.\n{reasons}")
    elif prediction.clean:
        st.success(f"**Spark will resume it**: {CLEAN}.")
    else:
        st.warning(f"**Spark will resume it, and will not tell you:**\n{reasons}")


def _apply(registry: QueryRegistry, changed: KeptConfig, folder: Path, job: Job) -> Change:
    job.report("Spark resumes the kept query with the change, over the rest of its data")
    change = resume_changed(registry, changed, folder, cancel=job.cancel)
    stale = registry.get(folder.name)
    if change.verdict == "resumed" and stale is not None and stale.status != "active":
        registry.remove(folder.name)  # its run ran the old query: the page lists the folder, which holds the new one, and resumes that
    return change


def _try(registry: QueryRegistry, changed: KeptConfig, folder: Path, job: Job) -> Trial:
    job.report("Spark resumes the change on a copy, then the old query on another copy and the change from scratch")
    return try_change(registry, changed, folder, cancel=job.cancel)


def _result(job: Job | None, render: Callable[[Job], None]) -> None:
    if job is not None:
        job_view(job, render, "")


def _render_trial(job: Job) -> None:
    trial: Trial = job.result
    change = trial.change
    if change.verdict == "refused":
        st.error(f"Spark refused the change on the copy ({change.error_condition}): {brief(change.error or '')} Applied, it would not run either; "
                 "the kept query is as it was.")
        return
    st.success(f"On a copy, Spark resumed the change. {_watermarks(change)}")
    _set_aside(change)
    replays = trial.replays()
    differ = rows_that_differ({heading: replay.records for heading, replay in replays.items()})
    if differ.empty:
        st.caption("The three results hold the same rows: over this data the change makes no difference.")
    else:
        st.markdown(f"**Rows that differ** ({len(differ):,}): each row's values, then how many times each result holds it")
        st.dataframe(differ, hide_index=True, key=f"chg_try_differ_{id(job)}")
    for heading, replay in replays.items():  # one under another: a third of the page each cut off all but a window's columns
        st.markdown(f"**{heading}** ({len(replay.result):,} rows)")
        st.dataframe(replay.result, hide_index=True, key=f"chg_try_{heading}_{id(job)}")
    if not differ.empty and (differ[held(TRIED)] == differ[held(GOING_ON)]).all():
        st.caption("Resumed, the change gives what the old query gives going on: from scratch it would not. The state and the watermark carried "
                   "across the restart decide these rows.")


def _set_aside(change: Change) -> None:
    if change.carried.startswith("set aside"):
        st.caption(f"The kept result table was {change.carried}: the changed query's result holds only the rows since the change.")


def _watermarks(change: Change) -> str:
    return (
        f"Watermark before the restart {change.watermark_before or 'none'}, after the rest of the data {change.watermark_after or 'none'}: it never "
        "moves back, so a longer delay starts to matter once event time passes where the old one put it."
    )


def _render(job: Job) -> None:
    change: Change = job.result
    if change.verdict == "refused":
        st.error(f"Spark refused the change ({change.error_condition}): {brief(change.error or '')} The kept query is as it was.")
        return
    st.success(f"Resumed with the change. {_watermarks(change)}")
    _set_aside(change)
    if change.differences:
        st.caption("What changed")
        st.code("\n".join(change.differences), language=None, wrap_lines=True)
    if change.replay is not None:
        st.dataframe(change.replay.result, hide_index=True, key=f"chg_result_{id(job)}")
        st.caption(f"The result over both runs, {change.replay.rows_dropped_by_watermark:,} rows dropped by the watermark in all.")
