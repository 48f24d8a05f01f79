// The undo panel: file-changing turns, newest first, with diffs; undo on the newest only.

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function diffView(text) {
  const pre = el("pre", "larik-diff");
  for (const line of text.split(/(?<=\n)/)) {
    let cls = "";
    if (line.startsWith("+++") || line.startsWith("---")) cls = "larik-diff-file";
    else if (line.startsWith("+")) cls = "larik-diff-add";
    else if (line.startsWith("-")) cls = "larik-diff-del";
    else if (line.startsWith("@@")) cls = "larik-diff-hunk";
    pre.appendChild(el("span", cls, line));
  }
  return pre;
}

function render({ model, el: host }) {
  const root = el("div", "larik-widget larik-undo");
  const outcome = el("div", "larik-outcome");
  const list = el("div", "larik-turns");
  const status = el("div", "larik-status");
  const error = el("div", "larik-error");
  root.append(outcome, list, status, error);
  host.appendChild(root);

  function drawOutcome() {
    const r = model.get("result") || {};
    outcome.replaceChildren();
    if (r.turn === undefined) return;
    outcome.appendChild(el("div", "larik-outcome-head", r.ok ? `Undid turn ${r.turn}.` : `Turn ${r.turn} was not fully undone.`));
    const ul = el("ul", "larik-outcome-files");
    for (const path of r.restored || []) ul.appendChild(el("li", "larik-restored", `restored ${path}`));
    for (const item of r.refused || []) ul.appendChild(el("li", "larik-refused", `not restored ${item.path}: ${item.reason}`));
    for (const path of r.removed_dirs || []) ul.appendChild(el("li", "larik-restored", `removed ${path}/ (created by the turn)`));
    for (const item of r.kept_dirs || []) ul.appendChild(el("li", "larik-refused", `kept ${item.path}/: ${item.reason}`));
    outcome.appendChild(ul);
  }

  function draw() {
    const panel = model.get("panel") || {};
    list.replaceChildren();
    const turns = panel.turns || [];
    if (!turns.length) {
      list.appendChild(el("div", "larik-empty", panel.session ? "No turn of this session changed files." : "No session is open in this kernel."));
      return;
    }
    for (const turn of turns) {
      const box = el("details", "larik-turn");
      box.dataset.turn = turn.turn;
      if (turn.undoable) box.open = true;
      const head = el("summary", "larik-turn-head");
      head.appendChild(el("b", "", `Turn ${turn.turn}`));
      head.appendChild(el("span", "larik-meta", turn.files.map((f) => f.path).join(", ")));
      if (turn.undoable) {
        const b = el("button", "larik-button larik-undo-button", "Undo");
        b.title = "Put these files back as they were before this turn";
        b.addEventListener("click", (event) => {
          event.preventDefault();
          b.disabled = true;
          error.textContent = "";
          model.send({ type: "undo" });
        });
        head.appendChild(b);
      } else {
        head.appendChild(el("span", "larik-why", turn.why));
      }
      box.appendChild(head);
      for (const file of turn.files) {
        box.appendChild(el("div", "larik-file", file.path));
        if (file.error) box.appendChild(el("div", "larik-error", file.error));
        else if (file.diff) box.appendChild(diffView(file.diff));
        else box.appendChild(el("div", "larik-meta", "no difference from before this turn"));
      }
      list.appendChild(box);
    }
  }

  const syncStatus = () => {
    // An undo's outcome already says what the status would ("Undid turn N."): say it once.
    const shown = (model.get("result") || {}).turn !== undefined;
    status.textContent = shown ? "" : model.get("status") || "";
    error.textContent = model.get("error") || "";
  };
  const onMessage = (msg) => {
    if (msg && msg.type === "error") {
      error.textContent = msg.message;
      draw();
    }
  };
  model.on("change:panel", draw);
  model.on("change:result", drawOutcome);
  model.on("change:result", syncStatus);
  model.on("change:status", syncStatus);
  model.on("change:error", syncStatus);
  model.on("msg:custom", onMessage);
  draw();
  drawOutcome();
  syncStatus();
  return () => {
    model.off("change:panel", draw);
    model.off("change:result", drawOutcome);
    model.off("change:result", syncStatus);
    model.off("change:status", syncStatus);
    model.off("change:error", syncStatus);
    model.off("msg:custom", onMessage);
  };
}

export default { render };
