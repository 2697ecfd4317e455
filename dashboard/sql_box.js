// The SQL box (st.text_area) made a SQL editor from the page: its text highlighted by a layer drawn under the transparent text, in a
// monospace font, and committed after a pause in typing (st.text_area has no live=; a blur would take the cursor away).
// Our code only: the data it gets is the widget's key and the pause. Colours read on light and dark themes; one width for every
// style, so the layer stays under the caret.
export default function (component) {
  const { data, parentElement } = component;
  const root = parentElement.ownerDocument || document;
  const KEYWORDS = new Set(("select from where group by having order limit join left right full outer inner cross semi anti on using as and or not in is null " +
    "case when then else end distinct union all with stream watermark delay of interval over partition asc desc between like true false exists " +
    "second seconds minute minutes hour hours day days").split(" "));
  const escape = (text) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const paint = (text, style) => `<span style="${style}">${escape(text)}</span>`;
  const highlighted = (text) => {
    const token = /(--[^\n]*)|('(?:[^'\\]|\\.)*'?)|(`[^`]*`?)|(\b\d+(?:\.\d+)?\b)|([A-Za-z_][A-Za-z_0-9]*)/g;
    let out = "", last = 0, found;
    while ((found = token.exec(text))) {
      const [word, comment, string, quoted, number] = found;
      out += escape(text.slice(last, found.index));
      out += comment ? paint(word, "color:#8b949e") : string ? paint(word, "color:#16a34a") : quoted ? paint(word, "color:#a855f7")
        : number ? paint(word, "color:#d97706") : KEYWORDS.has(word.toLowerCase()) ? paint(word, "color:#3b82f6") : escape(word);
      last = token.lastIndex;
    }
    return out + escape(text.slice(last)) + "\n";
  };
  let tries = 0;
  const attach = () => {
    const area = root.querySelector(`.st-key-${data.key} textarea`);
    if (!area) {
      if (tries++ < 50) setTimeout(attach, 100);
      return;
    }
    if (area.dataset.sqlBox) return;
    area.dataset.sqlBox = "1";
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
    const place = () => {
      Object.assign(layer.style, { left: `${area.offsetLeft}px`, top: `${area.offsetTop}px`, width: `${area.offsetWidth}px`, height: `${area.offsetHeight}px` });
      layer.scrollTop = area.scrollTop;
    };
    let shown = null;
    const draw = () => {
      if (area.value !== shown) {
        shown = area.value;
        layer.innerHTML = highlighted(shown);
      }
      layer.scrollTop = area.scrollTop;
    };
    box.insertBefore(layer, area);
    Object.assign(area.style, { color: "transparent", caretColor: look.color, background: "transparent", position: "relative", zIndex: "1" });
    place();
    draw();
    new ResizeObserver(place).observe(area);
    area.addEventListener("scroll", () => { layer.scrollTop = area.scrollTop; });
    const ticker = setInterval(() => (area.isConnected ? draw() : clearInterval(ticker)), 200);  // a value the page sets (Edit as SQL) comes without an input event
    let timer = null;
    const later = () => {
      clearTimeout(timer);
      timer = setTimeout(() => area.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", code: "Enter", ctrlKey: true, bubbles: true })), data.pause);
    };
    area.addEventListener("input", (event) => { draw(); if (!event.isComposing) later(); });
    area.addEventListener("compositionend", later);
  };
  attach();
}
