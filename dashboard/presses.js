// Presses of a page's buttons and keys, counted in the browser. Streamlit merges a button's presses that arrive while the script still
// runs the one before (one trigger, one callback), so a quick second press of Next was lost. Here each press of a listed button, or of
// its key, is counted in the page and sent as a running count with the latest presses in order: the server applies those it has not
// seen, however many reruns they arrived in. A counted click is kept from the button itself, so it never also fires Streamlit's trigger.
// The count belongs to the token the server sent (data.token): a new token (a new session, the page left) starts it again at 0.
const LOG = 100;

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const root = parentElement.ownerDocument || document;
  const page = root.defaultView || window;
  const all = (page.__streamingLabPresses ||= {});
  const presses = (all[data.token] ||= { token: data.token, count: 0, log: [] });
  presses.buttons = data.buttons;
  presses.keys = data.keys;
  presses.send = setStateValue;
  page.__streamingLabPressesNow = presses;
  if (page.__streamingLabPressesListening) return;
  page.__streamingLabPressesListening = true;

  const current = () => page.__streamingLabPressesNow;
  const press = (key) => {
    const now = current();
    now.count += 1;
    now.log = [...now.log, now.buttons[key]].slice(-LOG);
    now.send("presses", { token: now.token, count: now.count, log: now.log });
  };
  const enabled = (key) => root.querySelector(`.st-key-${key} button:not([disabled])`);
  // Keys typed into a field, or moving a radio, a slider or a table's cells, are theirs
  const busy = (target) => target instanceof page.Element && (target.isContentEditable
    || target.closest("input, textarea, select, [role='slider'], [role='radiogroup'], [role='grid'], [data-testid='stDataFrame'], [contenteditable='true']"));

  root.addEventListener("click", (event) => {
    const now = current();
    const target = event.target instanceof page.Element ? event.target : null;
    const key = target && Object.keys(now.buttons || {}).find((name) => target.closest(`.st-key-${name} button`));
    if (!key || target.closest(`.st-key-${key} button`).disabled) return;
    event.preventDefault();
    event.stopPropagation();
    press(key);
  }, true);
  root.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.repeat || event.ctrlKey || event.metaKey || event.altKey || busy(event.target)) return;
    const key = (current().keys || {})[`${event.shiftKey ? "Shift+" : ""}${event.key}`];
    if (!key || !enabled(key)) return;
    event.preventDefault();
    press(key);
  });
}
