"""Step through: a guided scenario run one micro-batch at a time, each batch told in the guide's terms."""

import streamlit as st

from dashboard import sql, sql_walkthrough, walkthrough
from dashboard.shared import KEPT, get_registry, get_spark, session_ready
from streaming.scenarios import SCENARIOS

st.markdown("<style>.scn-caption {font-size: 1.3rem; line-height: 1.5; padding: 0.6rem 0 1rem 0;}</style>", unsafe_allow_html=True)
if st.session_state.get("presenter", st.query_params.get("presenter") == "true"):  # a link's value, before the toggle reads it
    st.markdown(walkthrough.PRESENTER_STYLE, unsafe_allow_html=True)
st.title("Step through")
ready = session_ready()  # before the forms: until Spark is ready, a topic's columns are unknown and the form stops the page
choice, mode = st.columns([3, 1])
names = [*SCENARIOS, walkthrough.OWN]
linked = st.query_params.get("scenario")
name = choice.selectbox(  # the URL holds the scenario's name, not the title shown
    "Scenario", names, index=names.index(linked) if linked in names else 0, key="scenario", persist_state="session",
    format_func=lambda name: SCENARIOS[name].title if name in SCENARIOS else "Your own data and settings",
)
st.query_params["scenario"] = name
presenting = mode.toggle("Presenter mode", key="presenter", **KEPT, help="Large type, the sidebar folded away, your settings folded; → and ← step")
sql_query = None
if name == walkthrough.OWN:
    with st.expander("Your data and settings", expanded=not presenting):
        in_sql = st.segmented_control("Query", sql.QUERY_MODES, default=sql.QUERY_MODES[0], required=True, key="scn_query_mode", help="The form's windowed aggregate, or your own SQL over the data's view") == "SQL"
        if in_sql:
            sql_query = sql_walkthrough.own_query(ready)
        else:
            scenario = walkthrough.own_scenario()
else:
    scenario = SCENARIOS[name]
    st.caption(scenario.summary)
if not ready:
    st.stop()
registry, spark = get_registry(), get_spark()
if name == walkthrough.OWN and in_sql:  # your SQL: Spark's numbers per batch, no scenario notes or event-level view
    if sql_query is None:
        walkthrough.leave()
        st.stop()
    sql_walks = walkthrough.held(sql_query, registry)
    view = walkthrough.controls(sql_walks, sql_walkthrough.opener(sql_query, registry))
    st.query_params["step"] = str(view)
    sql_walks = walkthrough.held(sql_query, registry)
    if sql_walks is None:
        st.info("Press **Next batch** to hand Spark the first micro-batch of your data.")
        st.stop()
    sql_walkthrough.batch_view(sql_walks, view)
    sql_walkthrough.report_button(sql_walks)
    st.stop()
walks = walkthrough.held(scenario, registry)
wanted = st.query_params.get("step", "0")
if walkthrough.VIEW not in st.session_state and wanted.isdigit() and int(wanted) > 0:  # a link to a batch: run up to it
    try:
        walks = walks or walkthrough.start(scenario, registry, spark)
        walks.reach(int(wanted))
        st.session_state[walkthrough.VIEW] = min(int(wanted), walks.batches)
    except Exception as err:  # noqa: BLE001 - Spark failed to start the replay, or the session is gone: a message, never a traceback
        st.error(f"The scenario could not be started: {walkthrough.brief(str(err))}")
view = walkthrough.controls(walks, walkthrough.opener(scenario, registry, spark))
st.query_params["step"] = str(view)
walks = walkthrough.held(scenario, registry)
if walks is None:
    st.info("Press **Next batch** to hand Spark the scenario's first micro-batch of data.")
    st.stop()
if note := scenario.note(walkthrough.files_at(walks.steps(0), view)):
    st.caption(f"**What to look at:** {note}")
columns = st.columns(len(walks.walks)) if len(walks.walks) > 1 else [st.container()]
for index, column in enumerate(columns):
    with column:
        config = walks.walks[index].config
        walkthrough.batch_view(walks.steps(index), view, config.output_mode, scenario.labels[index] if scenario.labels else None)
        walkthrough.figure(walks, index, view)
walkthrough.report_button(walks)
