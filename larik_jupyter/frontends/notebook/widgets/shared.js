// What the session widgets share; `widgets.esm()` puts it before each widget's own module.

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function pad(n) {
  return n < 10 ? "0" + n : "" + n;
}

function shortTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function capitalized(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : "";
}

// A widget whose kernel has ended (restarted or shut down) can no longer act: it says so in
// place and offers to run its command again (the labextension inserts that cell below it and
// runs it; elsewhere the button names the command to run).
function sendOrEnded(model, root, message) {
  try {
    model.send(message);
    return true;
  } catch (err) {
    showEnded(model, root);
    return false;
  }
}

// What a widget's buttons send: `{type, ...extra}`, clearing the last error first.
function sender(model, root, error) {
  return (type, extra) => {
    error.textContent = "";
    sendOrEnded(model, root, Object.assign({ type }, extra));
  };
}

function button(label, cls, onClick) {
  const b = el("button", "larik-button " + cls, label);
  b.addEventListener("click", onClick);
  return b;
}

function watchEnded(model, root) {
  // A kernel restart or shutdown closes the widget's comm: check it can still send.
  const check = () => sendOrEnded(model, root, { type: "ping" });
  model.on("comm:close", () => showEnded(model, root));
  model.on("comm_live_update", check);
}

function showEnded(model, root) {
  if (root.querySelector(".larik-ended")) return;
  const command = model.get("command") || "the command";
  const banner = el("div", "larik-ended");
  banner.appendChild(
    el("span", "larik-ended-text", "This belongs to a kernel that has ended (restarted or shut down), so its buttons no longer reach a kernel. "),
  );
  const again = el("button", "larik-button larik-run-again", `Run ${command} again`);
  again.addEventListener("click", () => {
    const event = new CustomEvent("larik-run-again", { bubbles: true, cancelable: true, detail: { code: command } });
    if (root.dispatchEvent(event)) {
      again.textContent = `Run ${command} in a new cell`;  // no labextension took it
    }
  });
  banner.appendChild(again);
  for (const control of root.querySelectorAll("button, input")) {
    if (control !== again) control.disabled = true;
  }
  root.prepend(banner);
}

// Draw a widget's view from its model now and on each change: `handlers` maps events
// ("change:panel", "msg:custom"; several separated by spaces) to what runs on them, and every
// handler but a message's runs once now, in order. Returns the cleanup anywidget calls when
// the view goes.
function bindView(model, handlers) {
  const bound = [];
  const now = new Set();
  for (const [names, handler] of Object.entries(handlers)) {
    for (const name of names.split(" ")) {
      model.on(name, handler);
      bound.push([name, handler]);
      if (!name.startsWith("msg:")) now.add(handler);
    }
  }
  for (const handler of now) handler();
  return () => {
    for (const [name, handler] of bound) model.off(name, handler);
  };
}

// The status and error lines a widget keeps under what it shows.
function statusLines(model, status, error) {
  return () => {
    status.textContent = model.get("status") || "";
    error.textContent = model.get("error") || "";
  };
}
