"""A user's own query in Spark SQL: its views, the checks it passes before Spark runs it, its plan's facts, its result table and its replay.

- :mod:`.views`: a source of the lab as a view (streamed or static) in a session of the run's own;
- :mod:`.guard`: one SELECT over those views, checked on the parsed and the analysed plan;
- :mod:`.plan`: what the analysed plan says (watermarks, the grouping an update upserts by);
- :mod:`.query`: :class:`SqlQuery`, the run's configuration, which builds its frame and table as the form's query does;
- :mod:`.table`: the result table of any columns, folded by output mode;
- :mod:`.replay`: the views read to their end, headless.
"""

from .guard import SqlError
from .plan import PlanFacts, plan_facts
from .query import SqlQuery
from .replay import SqlReplay, replay_sql
from .table import SqlTable
from .views import DEFAULT_VIEW, SqlView

__all__ = ["DEFAULT_VIEW", "PlanFacts", "SqlError", "SqlQuery", "SqlReplay", "SqlTable", "SqlView", "plan_facts", "replay_sql"]
