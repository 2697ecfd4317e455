// What the SQL guard (guard.py) and the plan's facts (plan.py) read of a Spark plan, in one call: the walk runs in the JVM and answers
// with JSON, where the same walk from Python made about 1,350 py4j round trips for a windowed count (0.2 s of a check that runs as the user
// types). It decides nothing: every rule stays in guard.py. Compiled when first needed by Janino, the compiler Spark itself generates
// code with (walk.py); hence plain Java without generics or lambdas, and accessors of Spark's case classes called by name.

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.PlanExpression;
import org.apache.spark.sql.catalyst.plans.QueryPlan;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.trees.Origin;

public class PlanWalk {

    /** Into every plan below (a parsed plan: it has no views yet). */
    public static final int ALL = 0;
    /** Not below any view (a plan's own operators, for its facts). */
    public static final int NOT_INTO_VIEWS = 1;
    /** Not below the run's own temporary views, whose names are given (lower case, joined by commas: letters, digits and underscores). */
    public static final int NOT_INTO_RUN_VIEWS = 2;

    /** At most this many characters an answer's part: py4j writes an answer through an 8,192-character buffer, and an answer longer than
     * one buffer waited about 40 ms for its last segment (Nagle's algorithm against Python's delayed acknowledgement; measured: 44 ms for
     * 8,412 characters, 3 ms for 8,150). */
    public static final int PART = 8000;

    /** {@link #json}, deflated and in Base64 (a plan's JSON is mostly repeated keys: a tenth of its size or less), cut in parts of at most
     * {@link #PART} characters. */
    public String[] walk(Object plan, int mode, String views) throws Exception {
        return packed(json(plan, mode, views, null));
    }

    /** {@link #walk} of a query's analysed plan, not below the run's views, with what else a check reads of it: whether it streams, and
     * Spark's rendering of its parsed plan ("logical"), whose window( ) calls plan.py reads. One call instead of six. */
    public String[] analysed(Object execution, String views) throws Exception {
        LogicalPlan analysed = (LogicalPlan) call(execution, "analyzed");
        String extra = "\"streaming\": " + analysed.isStreaming() + ", \"logical\": " + quote(String.valueOf(call(execution, "logical")));
        return packed(json(analysed, NOT_INTO_RUN_VIEWS, views, extra));
    }

    private static String[] packed(String json) throws Exception {
        byte[] text = json.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        java.io.ByteArrayOutputStream packed = new java.io.ByteArrayOutputStream();
        java.util.zip.DeflaterOutputStream deflater = new java.util.zip.DeflaterOutputStream(packed);
        deflater.write(text, 0, text.length);
        deflater.close();
        String encoded = java.util.Base64.getEncoder().encodeToString(packed.toByteArray());
        String[] parts = new String[(encoded.length() + PART - 1) / PART];
        for (int i = 0; i < parts.length; i++) parts[i] = encoded.substring(i * PART, Math.min(encoded.length(), (i + 1) * PART));
        return parts;
    }

    /**
     * {"nodes": [...], "output": [[exprId, name], ...]}: every node of plan, its subqueries' and its CTE definitions' (inner children) too,
     * in guard.py's order: a node, its children's subtrees (the last child's first), then its CTE definitions, then its subqueries.
     */
    public String json(Object plan, int mode, String views, String extra) throws Exception {
        List runViews = Arrays.asList(views.split(","));
        StringBuilder out = new StringBuilder("{");
        if (extra != null) out.append(extra).append(", ");
        out.append("\"nodes\": [");
        ArrayList stack = new ArrayList();
        stack.add(plan);
        boolean first = true;
        while (!stack.isEmpty()) {
            QueryPlan node = (QueryPlan) stack.remove(stack.size() - 1);
            String kind = node.getClass().getSimpleName();
            if (!first) out.append(", ");
            first = false;
            boolean below = true;
            if (kind.equals("View") && mode != ALL) {
                boolean temp = ((Boolean) call(node, "isTempView")).booleanValue();
                String name = String.valueOf(call(call(call(node, "desc"), "identifier"), "table")).toLowerCase(Locale.ROOT);
                below = mode == NOT_INTO_RUN_VIEWS && !(temp && runViews.contains(name));
            }
            ArrayList subqueries = new ArrayList();
            node(out, node, kind, mode != ALL, !below, subqueries);
            if (!below) continue;
            for (int i = subqueries.size() - 1; i >= 0; i--) stack.add(subqueries.get(i));
            List inner = items(node.innerChildren());
            for (int i = inner.size() - 1; i >= 0; i--) {
                if (inner.get(i) instanceof QueryPlan) stack.add(inner.get(i));
            }
            stack.addAll(items(node.children()));
        }
        out.append("], \"output\": [");
        List output = mode == ALL ? new ArrayList() : items(((QueryPlan) plan).output());  // an unresolved plan has no output yet
        for (int i = 0; i < output.size(); i++) {
            Object attribute = output.get(i);
            if (i > 0) out.append(", ");
            out.append('[').append(exprId(attribute)).append(", ").append(quote(String.valueOf(call(attribute, "name")))).append(']');
        }
        return out.append("]}").toString();
    }

    /** One node; with ``analysed``, the fields only an analysed plan has (a resolved name, an expression's id); ``stopped``: a view the
     * walk does not go below (one of the run's, or any view when the mode says so). */
    private void node(StringBuilder out, QueryPlan node, String kind, boolean analysed, boolean stopped, List subqueries) throws Exception {
        List children = items(node.children());
        out.append("{\"kind\": ").append(quote(kind));
        out.append(", \"stopped\": ").append(stopped);
        out.append(", \"command\": ").append(node instanceof Command);
        out.append(", \"children\": ").append(children.size());
        origin(out, node.origin());
        if (kind.equals("UnresolvedRelation")) {
            out.append(", \"parts\": ").append(strings(items(call(node, "multipartIdentifier"))));
        } else if (kind.equals("UnresolvedTableValuedFunction")) {
            out.append(", \"name\": ").append(strings(items(call(node, "name"))));
        } else if (kind.equals("UnresolvedWith")) {
            List pairs = items(call(node, "cteRelations"));
            ArrayList names = new ArrayList();
            for (int i = 0; i < pairs.size(); i++) names.add(((scala.Product) pairs.get(i)).productElement(0));  // (name, definition, ...)
            out.append(", \"ctes\": ").append(strings(names));
        } else if (kind.equals("UnresolvedEventTimeWatermark")) {
            out.append(", \"column\": ").append(quote(String.valueOf(call(call(node, "eventTimeColExpr"), "sql"))));
            delay(out, call(node, "delay"));
        } else if (!analysed) {
            // nothing more of a parsed node is read
        } else if (kind.equals("Range")) {
            out.append(", \"elements\": ").append(quote(String.valueOf(call(node, "numElements"))));
        } else if (kind.equals("Join")) {
            boolean streams = true;
            for (int i = 0; i < children.size(); i++) streams = streams && ((LogicalPlan) children.get(i)).isStreaming();
            out.append(", \"condition\": ").append(((scala.Option) call(node, "condition")).isDefined());
            out.append(", \"streams\": ").append(streams);
        } else if (kind.equals("EventTimeWatermark")) {
            out.append(", \"column\": ").append(quote(String.valueOf(call(call(node, "eventTime"), "name"))));
            delay(out, call(node, "delay"));
        } else if (kind.equals("Aggregate")) {
            aggregate(out, node);
        } else if (kind.equals("Project")) {
            List named = items(call(node, "projectList"));
            out.append(", \"project\": [");
            for (int i = 0; i < named.size(); i++) {
                Object item = named.get(i);
                String itemKind = item.getClass().getSimpleName();
                Object child = itemKind.equals("Alias") ? call(item, "child") : null;
                if (i > 0) out.append(", ");
                out.append("{\"id\": ").append(exprId(item)).append(", \"alias\": ").append(itemKind.equals("Alias"));
                out.append(", \"attribute\": ")
                    .append(child != null && child.getClass().getSimpleName().equals("AttributeReference") ? String.valueOf(exprId(child)) : "null");
                out.append('}');
            }
            out.append(']');
        }
        out.append(", \"expressions\": [");
        ArrayList stack = new ArrayList(items(node.expressions()));
        boolean first = true;
        while (!stack.isEmpty()) {
            Expression expression = (Expression) stack.remove(stack.size() - 1);
            List arguments = items(expression.children());
            if (!first) out.append(", ");
            first = false;
            expression(out, expression, arguments);
            if (expression instanceof PlanExpression) subqueries.add(((PlanExpression) expression).plan());
            stack.addAll(arguments);
        }
        out.append("]}");
    }

    private void expression(StringBuilder out, Expression expression, List arguments) throws Exception {
        String kind = expression.getClass().getSimpleName();
        out.append("{\"kind\": ").append(quote(kind));
        out.append(", \"plan\": ").append(expression instanceof PlanExpression);
        origin(out, expression.origin());
        out.append(", \"literals\": [");
        for (int i = 0; i < arguments.size(); i++) {
            if (i > 0) out.append(", ");
            out.append(literal(arguments.get(i)));
        }
        out.append(']');
        if (kind.equals("Literal")) out.append(", \"value\": ").append(literal(expression));
        if (kind.equals("UnresolvedFunction")) {
            List parts = items(call(expression, "nameParts"));
            out.append(", \"parts\": ").append(strings(parts));
            if (parts.size() == 1 && String.valueOf(parts.get(0)).toLowerCase(Locale.ROOT).equals("window")) {
                out.append(", \"durations\": [");
                for (int i = 0; i < arguments.size(); i++) out.append(i > 0 ? ", " : "").append(duration(arguments.get(i)));
                out.append(']');
            }
        }
        if (kind.equals("XmlToStructs") || kind.equals("SchemaOfXml")) {
            out.append(", \"options\": ").append(strings(items(((scala.collection.Map) call(expression, "options")).keys().toSeq())));
        }
        out.append('}');
    }

    /** The topmost aggregation's facts: how many grouping expressions, each output expression (whether it is a grouping key, whether a row
     * count), and the types its state keeps per group (each aggregate function's buffer, in order). */
    private void aggregate(StringBuilder out, QueryPlan node) throws Exception {
        List groups = items(call(node, "groupingExpressions"));
        List named = items(call(node, "aggregateExpressions"));
        out.append(", \"grouping\": ").append(groups.size()).append(", \"named\": [");
        for (int i = 0; i < named.size(); i++) {
            Expression item = (Expression) named.get(i);
            boolean alias = item.getClass().getSimpleName().equals("Alias");
            Expression inner = alias ? (Expression) call(item, "child") : item;
            boolean key = false;
            for (int g = 0; g < groups.size(); g++) key = key || inner.semanticEquals((Expression) groups.get(g));
            String innerKind = inner.getClass().getSimpleName();
            if (i > 0) out.append(", ");
            out.append("{\"id\": ").append(exprId(item)).append(", \"alias\": ").append(alias).append(", \"key\": ").append(key);
            out.append(", \"inner\": ").append(quote(innerKind));
            if (innerKind.equals("AggregateExpression")) {
                Expression function = (Expression) call(inner, "aggregateFunction");
                List arguments = items(function.children());
                ArrayList kinds = new ArrayList();
                for (int a = 0; a < arguments.size(); a++) kinds.add(arguments.get(a).getClass().getSimpleName());
                out.append(", \"distinct\": ").append(call(inner, "isDistinct"));
                out.append(", \"function\": ").append(quote(function.getClass().getSimpleName()));
                out.append(", \"arguments\": ").append(strings(kinds));
            }
            out.append('}');
        }
        out.append("], \"buffers\": [");
        ArrayList stack = new ArrayList();
        for (int i = named.size() - 1; i >= 0; i--) stack.add(named.get(i));
        boolean first = true;
        while (!stack.isEmpty()) {
            Expression expression = (Expression) stack.remove(stack.size() - 1);
            if (expression.getClass().getSimpleName().equals("AggregateExpression")) {
                List buffers = items(call(call(expression, "aggregateFunction"), "aggBufferAttributes"));
                for (int b = 0; b < buffers.size(); b++) {
                    if (!first) out.append(", ");
                    first = false;
                    out.append(quote(((Expression) buffers.get(b)).dataType().simpleString()));
                }
            } else {
                List arguments = items(expression.children());
                for (int a = arguments.size() - 1; a >= 0; a--) stack.add(arguments.get(a));
            }
        }
        out.append(']');
    }

    /** Where the parser saw it: its line and column ("line", "start"), and its first and last characters' offsets in the text
     * ("index", "stop"); nulls when it did not record them. */
    private static void origin(StringBuilder out, Origin origin) {
        scala.Option line = origin.line();
        scala.Option start = origin.startPosition();
        boolean known = line.isDefined() && start.isDefined();
        out.append(", \"line\": ").append(known ? String.valueOf(line.get()) : "null");
        out.append(", \"start\": ").append(known ? String.valueOf(start.get()) : "null");
        scala.Option index = origin.startIndex();
        scala.Option stop = origin.stopIndex();
        boolean placed = index.isDefined() && stop.isDefined();
        out.append(", \"index\": ").append(placed ? String.valueOf(index.get()) : "null");
        out.append(", \"stop\": ").append(placed ? String.valueOf(stop.get()) : "null");
    }

    /** A watermark's delay, a CalendarInterval: its public fields months, days and microseconds. */
    private static void delay(StringBuilder out, Object interval) throws Exception {
        out.append(", \"delay\": [").append(field(interval, "months")).append(", ").append(field(interval, "days")).append(", ")
            .append(field(interval, "microseconds")).append(']');
    }

    /** A literal expression's whole number, as JSON, when its type is one (byte, short, int or long: a date is a count of days and an
     * ANSI interval one of microseconds, which are whole numbers of other units); null for anything else. */
    private static String literal(Object expression) throws Exception {
        if (!expression.getClass().getSimpleName().equals("Literal")) return "null";
        String type = ((org.apache.spark.sql.types.DataType) call(expression, "dataType")).typeName();
        if (!(type.equals("byte") || type.equals("short") || type.equals("integer") || type.equals("long"))) return "null";
        Object value = call(expression, "value");
        boolean whole = value instanceof Byte || value instanceof Short || value instanceof Integer || value instanceof Long;
        return whole ? String.valueOf(value) : "null";
    }

    /** A window( ) argument's length in microseconds, as JSON, read as Spark's TimeWindow reads it before it plans the window: a string
     * (by Spark's own interval parser, months refused), a whole number of microseconds, a day-time or calendar interval; null for
     * anything else, which Spark refuses itself. Read on the parsed plan, because analysing a sliding window already builds one
     * projection for each window a row falls in. */
    private static String duration(Object expression) {
        try {
            if (!expression.getClass().getSimpleName().equals("Literal")) return "null";
            Object value = call(expression, "value");
            if (value == null) return "null";
            if (value instanceof org.apache.spark.unsafe.types.UTF8String) {
                value = org.apache.spark.sql.catalyst.util.IntervalUtils.stringToInterval((org.apache.spark.unsafe.types.UTF8String) value);
            }
            if (value instanceof org.apache.spark.unsafe.types.CalendarInterval) {
                org.apache.spark.unsafe.types.CalendarInterval interval = (org.apache.spark.unsafe.types.CalendarInterval) value;
                if (interval.months != 0) return "null";
                return String.valueOf(Math.addExact(Math.multiplyExact((long) interval.days, 86400000000L), interval.microseconds));
            }
            String type = ((org.apache.spark.sql.types.DataType) call(expression, "dataType")).typeName();
            boolean micros = type.equals("integer") || type.equals("long") || (type.startsWith("interval") && !type.contains("year") && !type.contains("month"));
            return micros && (value instanceof Integer || value instanceof Long) ? String.valueOf(((Number) value).longValue()) : "null";
        } catch (Exception err) {
            return "null";
        }
    }

    private static long exprId(Object named) throws Exception {
        return ((Long) call(call(named, "exprId"), "id")).longValue();
    }

    private static Object call(Object target, String method) throws Exception {
        return target.getClass().getMethod(method, new Class[0]).invoke(target, new Object[0]);
    }

    private static Object field(Object target, String name) throws Exception {
        Field found = target.getClass().getField(name);
        return found.get(target);
    }

    /** The items of a Scala Seq (or of a Java list). */
    private static List items(Object sequence) {
        ArrayList found = new ArrayList();
        if (sequence instanceof List) {
            found.addAll((List) sequence);
            return found;
        }
        scala.collection.Seq seq = (scala.collection.Seq) sequence;
        for (int i = 0; i < seq.size(); i++) found.add(seq.apply(i));
        return found;
    }

    private static String strings(List items) {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < items.size(); i++) {
            if (i > 0) out.append(", ");
            out.append(quote(String.valueOf(items.get(i))));
        }
        return out.append(']').toString();
    }

    private static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20 || (c >= 0xd800 && c <= 0xdfff)) {
                String hex = Integer.toHexString(c);
                out.append("\\u");
                for (int pad = hex.length(); pad < 4; pad++) out.append('0');
                out.append(hex);
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
