"""Step through: a guided scenario run one micro-batch at a time, each batch told in the guide's terms."""

import streamlit as st

from dashboard import walkthrough
from dashboard.shared import get_registry, get_spark, session_ready
from streaming.scenarios import SCENARIOS

presenter = bool(st.session_state.get("scn_presenter", st.query_params.get("presenter") == "1"))
st.markdown("<style>.scn-caption {font-size: 1.3rem; line-height: 1.5; padding: 0.6rem 0 1rem 0;}</style>", unsafe_allow_html=True)
if presenter:
    st.markdown(walkthrough.PRESENTER_STYLE, unsafe_allow_html=True)
st.title("Step through")
names = list(SCENARIOS)
linked = st.query_params.get("scenario")
choice, mode = st.columns([3, 1])
name = choice.selectbox(
    "Scenario", names, index=names.index(linked) if linked in names else 0, format_func=lambda name: SCENARIOS[name].title, key="scn_name",
)
presenter = mode.toggle("Presenter mode", value=presenter, key="scn_presenter", help="Large type, the sidebar folded away; → and ← step")
scenario = SCENARIOS[name]
st.caption(scenario.summary)
if not session_ready():
    st.stop()
try:
    held = walkthrough.walks(name, get_registry(), get_spark())
    if walkthrough.VIEW not in st.session_state:
        wanted = st.query_params.get("batch", "0")
        held.reach(int(wanted) if wanted.isdigit() else 0)
        st.session_state[walkthrough.VIEW] = min(int(wanted) if wanted.isdigit() else 0, held.batches)
except Exception as err:  # noqa: BLE001 - Spark failed to start the replay, or the session is gone: a message, never a traceback
    st.error(f"The scenario could not be started: {walkthrough.brief(str(err))}")
    st.stop()
if error := st.session_state.pop("scn_error", None):
    st.error(f"Spark could not run the next batch: {error}")
view = walkthrough.controls(held)
st.query_params.update({"scenario": name, "batch": str(view), **({"presenter": "1"} if presenter else {})})
if not presenter:
    st.query_params.pop("presenter", None)
if note := scenario.note(walkthrough.files_at(held.steps(0), view)):
    st.caption(f"**What to look at:** {note}")
columns = st.columns(len(held.walks)) if len(held.walks) > 1 else [st.container()]
for index, column in enumerate(columns):
    with column:
        config = held.walks[index].config
        walkthrough.batch_view(held.steps(index), view, config.output_mode, scenario.labels[index] if scenario.labels else None)
        walkthrough.figure(held, index, view)
walkthrough.report_button(held)
