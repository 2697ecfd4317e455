"""What a user's SQL may do on the server's Spark: a SELECT over its run's own views, and nothing else.

A browser user's text reaches the server's session, so it is checked on
Spark's own plans before anything runs (never on the text):

1. **Parsed** with Spark's query parser (``parseQuery``), which takes a query
   and nothing else: a command (``CREATE``, ``INSERT``, ``DROP``, ``SET``,
   ``ADD JAR``, ``EXECUTE IMMEDIATE``, ``USE``...) or a second statement after
   a ``;`` is refused, saying so (the parser only reads it).
2. **The parsed plan** is walked (subqueries and CTE definitions included)
   before analysis, because analysing a reference to a file (``csv.`/path```)
   already reads it: every relation must be one of the run's views (or a CTE
   of the query), the only table-valued function is ``range``, and no function
   that reaches outside the query is named.
3. **The analysed plan** is walked again: below the run's own views nothing
   is looked at; elsewhere every leaf must be a literal relation (``VALUES``,
   ``range``, a CTE reference), and no expression may call Java
   (``reflect``), a UDF, read a file's name or the server's user. Budgets keep
   one query from taking the server: ``range``, ``sequence`` and
   ``array_repeat`` sizes, the length of a string ``repeat``/``lpad``/``rpad``/
   ``space`` build, and no join of two streams without a condition.
4. **Spark's own streaming checks** for the output mode
   (:func:`streaming_checks`), which starting the query would run.

Steps 2 and 3 read each plan in one call into the JVM (:mod:`.walk`): read
node by node from Python, a windowed count cost about 1,350 py4j round trips
and 0.2 s of a check that runs as the user types (now about 40 calls, 46 ms).

A refusal is :class:`SqlError`, naming what was refused and where, in plain
words: no Java frames and no server path. The session the views live in is
the run's own (:func:`~streaming.engine.sql.views.sql_session`), so no other
browser session sees or drops them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..bounds import SQL_CHARACTERS_VARIABLE, max_sql_characters, too_many_windows
from ..errors import brief, first_line
from .walk import ALL, NOT_INTO_VIEWS, Expr, Node, Walk, analysed, per_context, walk

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["REFUSED_FUNCTIONS", "SqlError", "checked", "checked_frame", "conditions", "parse_checked", "streaming_checks"]

REFUSED_FUNCTIONS = frozenset({
    "reflect", "java_method", "try_reflect",
    "input_file_name", "input_file_block_start", "input_file_block_length",
    "current_user", "user", "session_user",
    "from_protobuf", "to_protobuf",
    "xpath", "xpath_boolean", "xpath_double", "xpath_float", "xpath_int", "xpath_long", "xpath_number", "xpath_short", "xpath_string",
})
"""Functions that reach outside the query: Java methods, the server's files (a file's name, a Protobuf descriptor file, XML's external
entities) and its user."""
ALLOWED_TABLE_FUNCTIONS = frozenset({"range"})
REFUSED_EXPRESSION_CLASSES = re.compile(r"Reflect|UDF|UDAF|UDTF|InputFile|CurrentUser|XPath|Protobuf")
"""Analysed expressions refused whatever name reached them (a function of the catalog, an alias)."""
ALLOWED_PLAN_NODES = frozenset({
    "Project", "Filter", "Aggregate", "Join", "LateralJoin", "SubqueryAlias", "Union", "Intersect", "Except", "Distinct", "Deduplicate",
    "DeduplicateWithinWatermark", "Generate", "Expand", "Window", "Sort", "GlobalLimit", "LocalLimit", "Offset", "Sample", "Repartition",
    "RepartitionByExpression", "ResolvedHint", "EventTimeWatermark", "UpdateEventTimeWatermarkColumn", "WithCTE", "CTERelationDef",
    "CTERelationRef", "PipeOperator", "LocalRelation", "OneRowRelation", "Range", "View", "Subquery",
})
"""The analysed plan's operations a query may use outside the run's views: relational ones. Anything else -- a script transformation
(``TRANSFORM ... USING`` runs a program), a command, a relation of another source -- is refused, whatever its syntax."""
REFUSED_PARSED_NODES = frozenset({"ScriptTransformation"})
"""Refused by their parsed form already: ``SELECT TRANSFORM(...) USING 'program'`` (and ``MAP``/``REDUCE ... USING``) runs a program on the server."""
FILE_OPTIONS = frozenset({"rowvalidationxsdpath"})
"""Options of ``from_xml``/``schema_of_xml`` that name a file the server reads."""
MAX_RANGE_ROWS = 1_000_000
"""The most rows the ``range`` calls of one query may make together (their product: ranges cross-joined multiply). Each
micro-batch of a stream-static join computes its ``range`` again, so a query could otherwise keep the server's cores busy for
hours with a single ``range(1e12)``."""
MAX_GENERATED_ELEMENTS = 100_000
"""The most elements the ``sequence``/``array_repeat`` calls of one query may make together for one row (their sizes multiplied:
``explode(sequence(1, 1000000))`` held a micro-batch for minutes, grew the JVM by a gigabyte and ran it out of memory)."""
MAX_BUILT_CHARACTERS = 100_000
"""The longest string the ``repeat``, ``lpad``, ``rpad`` and ``space`` calls of one query may build together (their lengths multiplied:
``repeat('x', 100000000)`` ran the JVM out of memory in 25 s, and ``repeat(repeat('x', 100000), 20000)`` asks for 2 GB)."""
MAX_ROW_CHARACTERS = 10_000_000
"""The most characters the generated elements and built strings of one query may make together for one row (the elements multiplied by
the characters: ``array_join(array_repeat(repeat('x', 100000), 100000), '')`` keeps each budget alone and asks for 10 GB)."""
BUILDERS = {"StringRepeat": ("repeat", 1), "StringLPad": ("lpad", 1), "StringRPad": ("rpad", 1), "StringSpace": ("space", 0)}
"""The analysed expressions that build a string as long as one of their arguments says: the function's name and that argument's position."""
LITERAL_LEAVES = frozenset({"LocalRelation", "OneRowRelation", "Range", "CTERelationRef", "UnresolvedInlineTable"})
"""Analysed leaves that read nothing: ``VALUES``, a ``SELECT`` without ``FROM``, ``range``, a reference to a CTE of the query."""
SPARK_REFUSALS = (
    ("Sorting is not supported", "ORDER BY"),
    ("without watermark", "WATERMARK"),
    ("watermark in the join keys", "JOIN … WATERMARK"),
    ("outer join", "JOIN"),
    ("Outer join", "JOIN"),
    ("Limits are not supported", "LIMIT"),
    ("Multiple streaming aggregations", "GROUP BY"),
    ("Distinct aggregations are not supported", "DISTINCT"),
)
"""Words of Spark's refusals of a streaming plan, and the clause of the user's query each is about (named first in the message)."""
QUERY_CONTEXT_LOGGER = "SQLQueryContextLogger"
LOG = logging.getLogger(__name__)
_POSITION = re.compile(r"\(line (\d+), pos (\d+)\)")
_CONDITION = re.compile(r"^\[([A-Z_.]+)\]\s*")


class SqlError(Exception):
    """A user's SQL refused: ``message`` in plain words, where it is (``line``/``column``, from 1, when Spark says), and Spark's error class."""

    def __init__(
        self, message: str, line: int | None = None, column: int | None = None, condition: str | None = None, spark_message: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.condition = condition
        self.spark_message = spark_message
        """Spark's own text of the error, when Spark raised it (the conditions of its causes are named there: :func:`conditions`)."""

    def __str__(self) -> str:
        where = f"line {self.line}, column {self.column}: " if self.line is not None and self.column is not None else ""
        return f"SQL: {where}{self.message}"


def parse_checked(spark: SparkSession, text: str, views: Collection[str]) -> Any:
    """Parse ``text`` as one query and check its parsed plan (steps 1 and 2 of the module docstring); the parsed plan, or :class:`SqlError`.

    ``${...}`` is refused before parsing: Spark's parser replaces it with a server setting, a Java property or an environment variable
    (``${env:HOME}``), so no plan would show it.
    """
    if not isinstance(text, str) or not text.strip():
        raise SqlError("the query is empty: write a SELECT over " + _named(views))
    bound = max_sql_characters()
    if len(text) > bound:
        raise SqlError(
            f"the query is {len(text):,} characters, more than this server checks ({bound:,}, {SQL_CHARACTERS_VARIABLE}): what parsing and "
            "planning a text cost grows with it"
        )
    if "${" in text:
        line, column = position(text, text.index("${"))
        raise SqlError("${...} is refused: Spark would replace it with a server setting or environment variable", line, column)
    parser = spark._jsparkSession.sessionState().sqlParser()
    try:
        plan = parser.parseQuery(_without_final_semicolons(text))
    except Exception as err:  # noqa: BLE001 - py4j raises Spark's ParseException as PySpark's, or a Py4JJavaError
        raise _not_a_query(parser, text) or parse_error(err, text) from None
    _checking(lambda: _check_parsed(walk(plan, ALL).nodes, {name.lower() for name in views}, text))
    return plan


def checked_frame(spark: SparkSession, text: str, views: Collection[str]) -> DataFrame:
    """The DataFrame of ``text`` on ``spark`` once every check of the module docstring passed; :class:`SqlError` naming the first that failed.

    Nothing runs: parsing, checking and Spark's analysis only. The DataFrame is made from the very plan that was checked, not from the text
    parsed again, so what runs is what was checked.
    """
    return checked(spark, text, views)[0]


def checked(spark: SparkSession, text: str, views: Collection[str]) -> tuple[DataFrame, Walk]:
    """:func:`checked_frame`, and the walk of its analysed plan the check read: every node but those of the run's views, top first (depth
    first, as :func:`~.walk.walk` gives them), so that :func:`~.plan.plan_facts` reads them without walking the plan again."""
    from pyspark.sql import DataFrame

    plan = parse_checked(spark, text, views)
    try:
        with _quiet():
            frame = DataFrame(_static("org.apache.spark.sql.classic.Dataset").ofRows(spark._jsparkSession, plan), spark)
    except Exception as err:  # noqa: BLE001 - Spark's analysis errors have no common public base across versions
        raise analysis_error(err, text) from None
    names = {name.lower() for name in views}
    walked: list[Walk] = []
    _checking(lambda: walked.append(_check_analysed(analysed(frame._jdf.queryExecution(), names), names, text)))
    return frame, walked[0]


_OUTPUT_MODES = {"append": "Append", "update": "Update", "complete": "Complete"}


def streaming_checks(frame: DataFrame, output_mode: str, text: str) -> None:
    """Spark's own checks of a streaming plan for ``output_mode`` (``UnsupportedOperationChecker.checkForStreaming``, what starting the
    query runs), run before Start: an aggregation without a watermark in append mode, an ``ORDER BY`` outside complete mode, a join
    Spark cannot stream... :class:`SqlError` in Spark's words, at the clause it names. A check that says ready is one Spark will not refuse."""
    try:
        with _quiet():
            mode = getattr(_static("org.apache.spark.sql.streaming.OutputMode"), _OUTPUT_MODES[output_mode])()
            _static("org.apache.spark.sql.catalyst.analysis.UnsupportedOperationChecker").checkForStreaming(frame._jdf.queryExecution().analyzed(), mode)
    except KeyError:
        raise SqlError(f"the output mode {output_mode!r} is not one of {', '.join(_OUTPUT_MODES)}") from None
    except Exception as err:  # noqa: BLE001 - Spark's AnalysisException through py4j
        refusal = analysis_error(err, text)
        spark_words = refusal.spark_message or ""
        if refusal.line is None and "aggregations" in spark_words and "without watermark" in spark_words:  # Spark places this one nowhere
            line, column = _aggregation_at(frame._jdf.queryExecution().analyzed(), text)
            refusal = SqlError(refusal.message, line, column, refusal.condition, refusal.spark_message)
        raise refusal from None


def _aggregation_at(plan: Any, text: str) -> tuple[int | None, int | None]:
    """Where the first aggregation of ``plan`` (the one closest to the result) starts in ``text``, when the parser recorded it."""
    return next((_at(node, text) for node in walk(plan, NOT_INTO_VIEWS).nodes if node.kind == "Aggregate"), (None, None))


def _refused_at(err: BaseException, text: str) -> tuple[int | None, int | None]:
    """The line and column of the operator Spark's streaming check refused (its ``ExtendedAnalysisException``'s plan), when it says."""
    try:
        java = getattr(err, "java_exception", None) or getattr(err, "_origin", None)  # py4j's error, or PySpark's capture of it
        plan = java.plan()  # type: ignore[union-attr]
        return _origin(plan.get(), text) if plan.isDefined() else (None, None)
    except Exception:  # noqa: BLE001 - another kind of error, or a Spark that does not carry the plan
        return None, None


def _checking(check: Any) -> None:
    """Run ``check``; anything but its refusal (a plan the walk does not know how to read) refuses the query rather than passing it."""
    try:
        check()
    except SqlError:
        raise
    except Exception as err:  # noqa: BLE001 - py4j errors of a node the walk cannot read
        LOG.warning("a SQL query could not be checked: %s", first_line(err))
        raise SqlError("the query could not be checked, so it does not run: write it with plain SELECT, FROM, JOIN, WHERE and GROUP BY") from None


@contextmanager
def _quiet() -> Iterator[None]:
    """PySpark logs every failed analysis with its Java stack (``SQLQueryContextLogger``): a user's typo is an answer here, not a server error."""
    from pyspark.logger import PySparkLogger

    logger = PySparkLogger.getLogger(QUERY_CONTEXT_LOGGER)  # a plain logging.Logger made first under that name would break PySpark's calls
    before = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = before


def _named(views: Collection[str]) -> str:
    return ", ".join(sorted(views)) if views else "the run's views"


# --------------------------------------------------------------------------- errors


def _without_final_semicolons(text: str) -> str:
    """``text`` without the ``;`` (and blanks) it ends with: one query ended as a statement is still one query. Offsets are unchanged."""
    end = len(text)
    while end and text[end - 1] in " \t\r\n;":
        end -= 1
    return text[:end] if ";" in text[end:] else text


def _not_a_query(parser: Any, text: str) -> SqlError | None:
    """Why ``text``, which does not parse as a query, is not one: a command (``SET``, ``EXECUTE IMMEDIATE``, ``CREATE``...) or two statements;
    ``None`` when it is neither (a plain syntax error, told by :func:`parse_error`). Nothing of it runs: the parser only reads it."""
    try:
        command = parser.parsePlan(text)
    except Exception:  # noqa: BLE001 - not one statement either
        command = None
    if command is not None:
        return SqlError(f"{_words(_class(command))} is a command, not a query: only one SELECT runs here", 1, 1)
    end = _statement_end(text)
    if end is not None:
        line, column = position(text, end)
        return SqlError("the text holds more than one statement (a ';' ends the first): only one SELECT runs here", line, column)
    return None


def _statement_end(text: str) -> int | None:
    """The offset of a ``;`` outside quotes and comments that has more text after it; ``None`` when there is none."""
    quote: str | None = None
    index = 0
    while index < len(text):
        char = text[index]
        if quote is not None:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = None
        elif char in "'\"`":
            quote = char
        elif text.startswith("--", index):
            newline = text.find("\n", index)
            index = len(text) if newline < 0 else newline
        elif text.startswith("/*", index):
            close = text.find("*/", index + 2)
            index = len(text) if close < 0 else close + 1
        elif char == ";" and text[index + 1:].strip(" \t\r\n;"):
            return index
        index += 1
    return None


def parse_error(err: BaseException, text: str) -> SqlError:
    """A parse error as :class:`SqlError`: Spark's first sentence, at the line and column it reports (columns from 1)."""
    message = str(err)
    found = _POSITION.search(message)
    line, column = (int(found.group(1)), int(found.group(2)) + 1) if found else (None, None)
    return SqlError(_plain(message), line, column, _condition(err, message))


def analysis_error(err: BaseException, text: str) -> SqlError:
    """An analysis error as :class:`SqlError`: its sentence and, from its query context, the line and column of the fragment it names."""
    message = str(err)
    line = column = None
    contexts = _contexts(err)
    if contexts:
        start = contexts[0]
        line, column = position(text, start)
    else:
        found = _POSITION.search(message)
        if found:
            line, column = int(found.group(1)), int(found.group(2)) + 1
        else:  # a streaming check names the operator it refused, not where it is: its origin in the text says
            line, column = _refused_at(err, text)
    return SqlError(_plain(message), line, column, _condition(err, message), message)


_CONDITIONS = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]")


def conditions(message: str) -> list[str]:
    """The error conditions Spark names in ``message``, outermost first (``[STREAM_FAILED] ... [STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] ...``)."""
    return list(dict.fromkeys(_CONDITIONS.findall(message)))


def _contexts(err: BaseException) -> list[int]:
    """The start offsets into the text of the query contexts Spark attached to ``err`` (none when it attached none)."""
    starts = []
    try:
        for context in err.getQueryContext():  # type: ignore[attr-defined]
            start = context.startIndex()
            if isinstance(start, int) and start >= 0:
                starts.append(start)
    except Exception:  # noqa: BLE001 - an error without contexts
        return []
    return starts


def position(text: str, offset: int) -> tuple[int, int]:
    """``(line, column)``, both from 1, of the character at ``offset`` of ``text``."""
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _condition(err: BaseException, message: str) -> str | None:
    getter = getattr(err, "getCondition", None) or getattr(err, "getErrorClass", None)
    try:
        condition = getter() if getter is not None else None
    except Exception:  # noqa: BLE001 - a Java error without a condition
        condition = None
    if condition:
        return str(condition)
    found = _CONDITION.match(message.strip())
    return found.group(1) if found else None


def _plain(message: str) -> str:
    """Spark's message without its error class, SQLSTATE, position, echoed SQL, plan or Java frames, and with server paths cut (:func:`~streaming.engine.errors.brief`)."""
    head = message.split("== SQL")[0].split("JVM stacktrace:")[0].strip().split("\n")[0]
    head = _CONDITION.sub("", head)
    head = re.sub(r"\s*SQLSTATE: \w+", "", head)
    head = _POSITION.sub("", head)
    head = re.sub(r"[;.]?\s*;?\s*line \d+ pos \d+\s*;?", "", head)
    text = head.strip().rstrip(".;") + "."
    clause = next((clause for words, clause in SPARK_REFUSALS if words in text), None)
    return brief(f"{clause}: {text}" if clause else text, limit=400)


# --------------------------------------------------------------------------- plans


def _static(name: str) -> Any:
    """The JVM class ``name`` of the running SparkContext, to call its static methods: looked up once per context (each package of the
    name is a py4j round trip; a check calls three such classes)."""

    def look_up(context: Any) -> Any:
        found = context._jvm
        for part in name.split("."):
            found = getattr(found, part)
        return found

    return per_context(f"static {name}", look_up)


def _class(node: Any) -> str:
    return str(node.getClass().getSimpleName())


def _check_parsed(nodes: Sequence[Node], views: set[str], text: str) -> None:
    ctes = {str(name).lower() for node in nodes if node.kind == "UnresolvedWith" for name in node.fields["ctes"]}
    for node in nodes:
        kind = node.kind
        if kind in REFUSED_PARSED_NODES:
            raise SqlError("TRANSFORM ... USING runs a program on the server: it is refused", *_at(node, text))
        if kind == "UnresolvedRelation":
            parts = list(node.fields["parts"])
            name = ".".join(parts) if not any("/" in part or "\\" in part for part in parts) else f"{parts[0]}.`…`"  # a path is not echoed
            if len(parts) != 1 or (parts[0].lower() not in views and parts[0].lower() not in ctes):
                raise SqlError(
                    f"{name!r} is not a view of this run: a query reads only {_named(views)}"
                    + (" (files, tables and global_temp views are not reachable)" if len(parts) > 1 else ""),
                    *_at(node, text),
                )
        elif kind == "UnresolvedTableValuedFunction":
            name = ".".join(node.fields["name"])
            if name.lower() not in ALLOWED_TABLE_FUNCTIONS:
                raise SqlError(f"the table function {name}(...) is refused: a query reads only {_named(views)} (and range)", *_at(node, text))
        elif not node.children and kind not in LITERAL_LEAVES and kind not in ("UnresolvedRelation",):
            raise SqlError(f"{_words(kind)} is refused: a query reads only {_named(views)}", *_at(node, text))
        for expression in node.expressions:
            if expression.kind == "UnresolvedFunction":
                parts = list(expression.parts)
                if len(parts) > 1:
                    raise SqlError(f"the function {'.'.join(parts)} is refused: only Spark's built-in functions run here", *_at(expression, text))
                if parts[0].lower() in REFUSED_FUNCTIONS:
                    raise SqlError(f"the function {parts[0]} is refused: it reaches outside the query (Java, the server's files or user)", *_at(expression, text))
                if parts[0].lower() == "window":
                    _check_window(expression, text)


def _check_window(call: Expr, text: str) -> None:
    """Refuse a ``window( )`` call whose rows would each fall in more windows than :func:`~streaming.engine.bounds.max_windows_per_row`,
    or whose length or slide is not a literal duration (Spark refuses that too, but only once it plans: its size must be known first)."""
    arguments = call.durations[1:3]
    if not arguments:
        return  # window(column) alone: Spark says what is missing
    length, slide = arguments[0], arguments[-1]
    if length is None or slide is None:
        raise SqlError(
            "window(...) is refused unless its length and slide are literal durations of days or less (such as '10 minutes')", *_at(call, text)
        )
    refusal = too_many_windows(length, slide)
    if refusal is not None:
        raise SqlError(f"window(...) {refusal}", *_at(call, text))


def _bounded(expression: Expr, text: str | None) -> tuple[int, int]:
    """``(elements, characters)``: how many elements ``expression`` generates for one row when it is ``sequence`` or ``array_repeat``, how
    long a string it builds when it is a builder (:data:`BUILDERS`); 1 for what it is not, and at least 1, so that an empty one does not
    cancel the others in a product. :class:`SqlError` when a size is not a whole-number literal (of a whole-number type: a date's day count
    against an interval's microseconds would not say its size), or a string builder's length is more than :data:`MAX_BUILT_CHARACTERS`."""
    name = expression.kind
    if name in BUILDERS:
        function, position = BUILDERS[name]
        length = expression.literals[position]
        if length is None or length > MAX_BUILT_CHARACTERS:
            raise SqlError(
                f"{function}(...) is refused unless its length is a whole number of at most {MAX_BUILT_CHARACTERS:,}: a string built that long "
                "holds the server's memory", *_at(expression, text),
            )
        return 1, max(1, length)
    if name == "Sequence":
        start, stop, *step = expression.literals
        stride = step[0] if step else (1 if stop is None or start is None or stop >= start else -1)  # Spark counts down without a step
        if start is None or stop is None or stride is None or stride == 0:
            raise SqlError(
                "sequence(...) is refused unless its bounds (and step) are whole-number literals: its size must be known before the query runs",
                *_at(expression, text),
            )
        return max(1, (stop - start) // stride + 1), 1
    if name == "ArrayRepeat":
        count = expression.literals[1]
        if count is None:
            raise SqlError("array_repeat(...) is refused unless its count is a whole-number literal", *_at(expression, text))
        return max(1, count), 1
    return 1, 1


def _at(item: Node | Expr, text: str | None) -> tuple[int | None, int | None]:
    """Where ``item`` starts in ``text`` (line and column, from 1), when the parser recorded it; ``(None, None)`` otherwise."""
    if text is None or item.line is None or item.start is None:
        return None, None
    return item.line, item.start + 1


def _check_analysed(walked: Walk, views: set[str], text: str | None = None) -> Walk:
    """Check the ``walked`` analysed plan of ``text`` (step 3 of the module docstring, and the budgets: :data:`MAX_GENERATED_ELEMENTS`,
    :data:`MAX_BUILT_CHARACTERS`, :data:`MAX_ROW_CHARACTERS`, no join of two streams without a condition); ``walked`` itself once it passes (see :func:`checked`)."""
    ranged = generated = built = 1
    for node in walked.nodes:
        kind = node.kind
        if kind == "Range":
            ranged *= max(1, int(node.fields["elements"]))
            if ranged > MAX_RANGE_ROWS:
                raise SqlError(f"range(...) is refused beyond {MAX_RANGE_ROWS:,} rows in all (its calls multiplied): it would keep the server busy, not read data")
        if node.stopped:
            continue  # the run's own view: its source is the lab's, not the user's (the walk did not go below it)
        if node.command:
            raise SqlError(f"{_words(kind)} is a command: only a SELECT runs here")
        if not node.children and kind not in LITERAL_LEAVES:
            raise SqlError(f"{_words(kind)} is refused: a query reads only {_named(views)}")
        if kind not in ALLOWED_PLAN_NODES:
            raise SqlError(f"{_words(kind)} is refused: only relational operations over {_named(views)} run here")
        if kind == "Join" and not node.fields["condition"] and node.fields["streams"]:
            raise SqlError(
                "a join of two streams without a condition is refused: it pairs every row with every row and keeps them all in state",
                *_at(node, text),
            )
        for expression in node.expressions:
            name = expression.kind
            if REFUSED_EXPRESSION_CLASSES.search(name):
                raise SqlError(f"{_words(name)} is refused: it reaches outside the query (Java, a UDF, the server's files or user)")
            if name in ("XmlToStructs", "SchemaOfXml") and any(key.lower() in FILE_OPTIONS for key in expression.options):
                raise SqlError("the XML option rowValidationXSDPath is refused: it reads a file on the server")
            elements, characters = _bounded(expression, text)
            generated, built = generated * elements, built * characters
            if generated > MAX_GENERATED_ELEMENTS:
                raise SqlError(
                    f"sequence(...) and array_repeat(...) are refused beyond {MAX_GENERATED_ELEMENTS:,} elements a row (their sizes multiplied): "
                    "a generated array that large holds a micro-batch for minutes and the server's memory with it", *_at(expression, text),
                )
            if built > MAX_BUILT_CHARACTERS:
                raise SqlError(
                    f"repeat(...), lpad(...), rpad(...) and space(...) are refused beyond {MAX_BUILT_CHARACTERS:,} characters (their lengths "
                    "multiplied): a string built that long holds the server's memory", *_at(expression, text),
                )
            if generated * built > MAX_ROW_CHARACTERS:
                raise SqlError(
                    f"generated arrays of built strings are refused beyond {MAX_ROW_CHARACTERS:,} characters a row (elements times characters): "
                    "a row that large holds the server's memory", *_at(expression, text),
                )
    return walked


def _origin(node: Any, text: str) -> tuple[int | None, int | None]:
    """The line and column (from 1) where ``node`` starts in the text, as the parser recorded it."""
    try:
        origin = node.origin()
        line, start = origin.line(), origin.startPosition()
        if line.isDefined() and start.isDefined():
            return int(line.get()), int(start.get()) + 1
    except Exception:  # noqa: BLE001 - a node without an origin
        pass
    return None, None


def _words(class_name: str) -> str:
    """A plan class's name in words: ``LogicalRelation`` → ``a logical relation``."""
    words = re.sub(r"(?<!^)(?=[A-Z][a-z])", " ", class_name).lower()
    return f"a {words}"
