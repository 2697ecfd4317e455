// The SQL box (st.text_area) made a SQL editor from the page: its text highlighted by a layer drawn under the transparent text, in a
// monospace font, and committed after a pause in typing (st.text_area has no live=; a blur would take the cursor away).
// Our code only: the data it gets is the widget's key and the pause. Colours read on light and dark themes; one width for every
// style, so the layer stays under the caret. Streamlit may draw a box's textarea again (a rerun, a page change): the input is
// listened to on the document and the layer put under whichever textarea the box has now, so no redraw loses either.
export default function (component) {
  const { data, parentElement } = component;
  const root = parentElement.ownerDocument || document;
  const page = root.defaultView || window;
  const pauses = (page.__streamingLabSqlBoxes ||= {});
  pauses[data.key] = data.pause;
  if (page.__streamingLabSqlBoxListening) return;
  page.__streamingLabSqlBoxListening = true;

  const KEYWORDS = new Set(("select from where group by having order limit join left right full outer inner cross semi anti on using as and or not in is null " +
    "case when then else end distinct union all with stream watermark delay of interval over partition asc desc between like true false exists " +
    "second seconds minute minutes hour hours day days").split(" "));
  const escape = (text) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const paint = (text, colour) => `<span style="color:${colour}">${escape(text)}</span>`;
  const highlighted = (text) => {
    const token = /(--[^\n]*)|('(?:[^'\\]|\\.)*'?)|(`[^`]*`?)|(\b\d+(?:\.\d+)?\b)|([A-Za-z_][A-Za-z_0-9]*)/g;
    let out = "", last = 0, found;
    while ((found = token.exec(text))) {
      const [word, comment, string, quoted, number] = found;
      out += escape(text.slice(last, found.index));
      out += comment ? paint(word, "#8b949e") : string ? paint(word, "#16a34a") : quoted ? paint(word, "#a855f7")
        : number ? paint(word, "#d97706") : KEYWORDS.has(word.toLowerCase()) ? paint(word, "#3b82f6") : escape(word);
      last = token.lastIndex;
    }
    return out + escape(text.slice(last)) + "\n";
  };
  const areaOf = (key) => root.querySelector(`.st-key-${key} textarea`);
  const keyOf = (target) => Object.keys(pauses).find((key) => target instanceof page.HTMLTextAreaElement && target.matches(`.st-key-${key} textarea`));
  const layers = new WeakMap();

  const dress = (area) => {
    if (layers.has(area)) return layers.get(area);
    const box = area.parentElement;
    box.querySelectorAll(".lab-sql-highlight").forEach((old) => old.remove());
    const look = getComputedStyle(area);
    const layer = root.createElement("pre");
    layer.className = "lab-sql-highlight";
    layer.setAttribute("aria-hidden", "true");
    box.style.position = "relative";
    area.style.fontFamily = layer.style.fontFamily = "'Source Code Pro', ui-monospace, monospace";
    Object.assign(layer.style, {
      position: "absolute", margin: "0", overflow: "hidden", pointerEvents: "none", whiteSpace: "pre-wrap", overflowWrap: "break-word",
      boxSizing: "border-box", background: "transparent", color: look.color, fontSize: look.fontSize, lineHeight: look.lineHeight,
      letterSpacing: look.letterSpacing, padding: look.padding, borderStyle: "solid", borderColor: "transparent", borderWidth: look.borderWidth, tabSize: look.tabSize,
    });
    box.insertBefore(layer, area);
    Object.assign(area.style, { color: "transparent", caretColor: look.color, background: "transparent", position: "relative", zIndex: "1" });
    const place = () => Object.assign(layer.style, {
      left: `${area.offsetLeft}px`, top: `${area.offsetTop}px`, width: `${area.offsetWidth}px`, height: `${area.offsetHeight}px`,
    });
    place();
    new page.ResizeObserver(place).observe(area);
    area.addEventListener("scroll", () => { layer.scrollTop = area.scrollTop; });
    const drawn = { layer, text: null };
    layers.set(area, drawn);
    return drawn;
  };
  const draw = (area) => {
    const drawn = dress(area);
    if (area.value !== drawn.text) {
      drawn.text = area.value;
      drawn.layer.innerHTML = highlighted(drawn.text);
    }
    drawn.layer.scrollTop = area.scrollTop;
  };

  const timers = {};
  const later = (key) => {
    clearTimeout(timers[key]);
    timers[key] = setTimeout(() => {
      const area = areaOf(key);  // the box's textarea now, should Streamlit have drawn it again meanwhile
      if (area) area.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", code: "Enter", ctrlKey: true, bubbles: true }));
    }, pauses[key]);
  };
  root.addEventListener("input", (event) => {
    const key = keyOf(event.target);
    if (!key) return;
    draw(event.target);
    if (!event.isComposing) later(key);  // not half-way through an input method's composition
  }, true);
  root.addEventListener("compositionend", (event) => {
    const key = keyOf(event.target);
    if (key) later(key);
  }, true);
  setInterval(() => {  // a box drawn again, or a text the page set (Edit as SQL), comes without an input event
    for (const key of Object.keys(pauses)) {
      const area = areaOf(key);
      if (area) draw(area);
    }
  }, 200);
}
