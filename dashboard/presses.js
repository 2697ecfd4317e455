// Presses of a page's buttons and keys, counted in the browser. Streamlit merges a button's presses that arrive while the script still
// runs the one before (one trigger, one callback), so a quick second press of Next was lost. Here each press of a listed button, or of
// its key, is counted in the page and sent as a running count with the latest presses in order: the server applies those it has not
// seen, however many reruns they arrived in. A counted click is kept from the button itself, so it never also fires Streamlit's trigger.
// The count belongs to one server session (data.session): a new session starts it again at 0.
const LOG = 100;

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const root = parentElement.ownerDocument || document;
  const page = root.defaultView || window;
  const presses = (page.__streamingLabPresses ||= { session: null, count: 0, log: [], listening: false });
  if (presses.session !== data.session) Object.assign(presses, { session: data.session, count: 0, log: [] });
  presses.buttons = data.buttons;
  presses.keys = data.keys;
  presses.send = setStateValue;
  if (presses.listening) return;
  presses.listening = true;

  const live = (key) => root.querySelector(`.st-key-${key} button:not([disabled])`);
  const press = (key) => {
    presses.count += 1;
    presses.log = [...presses.log, presses.buttons[key]].slice(-LOG);
    presses.send("presses", { session: presses.session, count: presses.count, log: presses.log });
  };
  const typing = (target) => target instanceof page.Element
    && (target.isContentEditable || target.closest("textarea, select, [role='slider'], [contenteditable='true']")
      || (target.tagName === "INPUT" && !["checkbox", "radio", "button", "submit", "reset"].includes(target.type)));

  root.addEventListener("click", (event) => {
    const key = Object.keys(presses.buttons || {}).find((name) => event.target instanceof page.Element && event.target.closest(`.st-key-${name} button`));
    if (!key || !live(key)) return;
    event.preventDefault();
    event.stopPropagation();
    press(key);
  }, true);
  root.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    const key = (presses.keys || {})[`${event.shiftKey ? "Shift+" : ""}${event.key}`];
    if (!key || !live(key)) return;
    event.preventDefault();
    press(key);
  }, true);
}
