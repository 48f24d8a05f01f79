// The undo panel: turns that changed files or kernel variables, newest first, with diffs and
// variable changes; undo on the newest, "undo down to here" on the older ones.

// A diff as the kernel rendered it (`render.diff_html`: the one diff rendering).
function diffView(html) {
  const template = document.createElement("template");
  template.innerHTML = html;
  return template.content;
}

const CHANGES = { inserted: "inserted", edited: "edited", deleted: "deleted", outputs: "outputs changed" };

function render({ model, el: host }) {
  const root = el("div", "larik-widget larik-undo");
  const outcome = el("div", "larik-outcome");
  const list = el("div", "larik-turns");
  const status = el("div", "larik-status");
  const error = el("div", "larik-error");
  root.append(outcome, list, status, error);
  host.appendChild(root);
  watchEnded(model, root);

  function drawOutcome() {
    // The words are the kernel's `UndoReport`, rendered there; a turn left alone because the
    // user changed its files since gets the buttons that repeat the action with their answer.
    outcome.innerHTML = model.get("outcome") || "";
    const result = model.get("result") || {};
    if ((result.changed || []).length) {
      const retry = model.get("retry") || { type: "undo" };
      outcome.appendChild(undoButton("Restore anyway", "larik-force-button", "Put the files back as before that turn; the later changes are lost", { ...retry, force: true }));
      outcome.appendChild(undoButton("Skip them", "larik-skip-button", "Keep these files as they are now and undo the rest of the turn", { ...retry, skip_changed: true }));
    }
  }

  function undoButton(label, cls, title, message) {
    const b = el("button", "larik-button " + cls, label);
    b.title = title;
    b.addEventListener("click", (event) => {
      event.preventDefault();
      b.disabled = true;
      error.textContent = "";
      sendOrEnded(model, root, message);
    });
    return b;
  }

  function draw() {
    const panel = model.get("panel") || {};
    // Out of date (turns added or undone elsewhere): what it showed stays, its buttons go, and
    // Refresh shows the session as it is now.
    const stale = model.get("stale") || "";
    list.replaceChildren();
    if (stale) {
      const notice = el("div", "larik-stale", stale + " ");
      const refresh = el("button", "larik-button larik-refresh-button", "Refresh");
      refresh.title = "Show the session's turns as they are now";
      refresh.addEventListener("click", (event) => {
        event.preventDefault();
        refresh.disabled = true;
        sendOrEnded(model, root, { type: "reload" });
      });
      notice.appendChild(refresh);
      list.appendChild(notice);
    }
    const turns = panel.turns || [];
    if (panel.undone_text) list.appendChild(el("div", "larik-undone", panel.undone_text));
    if (!turns.length) {
      list.appendChild(el("div", "larik-empty", panel.empty || ""));
      return;
    }
    for (const turn of turns) {
      const box = el("details", "larik-turn");
      box.dataset.turn = turn.turn;
      box.dataset.state = turn.state;
      if (turn.undoable) box.open = true;
      const head = el("summary", "larik-turn-head");
      head.appendChild(el("b", "", capitalized(turn.label)));
      const changes = turn.changes || [];
      const names = changes.filter((c) => !(c.change in CHANGES)).map((c) => c.name)
        .concat((turn.variables || []).map((v) => `variable ${v.name}`), changes.filter((c) => c.change in CHANGES).map((c) => c.name));
      head.appendChild(el("span", "larik-meta", names.join(", ")));
      if (turn.gone) {
        head.appendChild(el("span", "larik-why", turn.note));
      } else if (stale) {
        // No button acts on a list that is out of date.
      } else if (turn.undoable) {
        head.appendChild(undoButton("Undo", "larik-undo-button", "Put these files and variables back as they were before this turn", turn.undo));
      } else {
        head.appendChild(el("span", "larik-why", turn.why));
        if (turn.prompt) {
          head.appendChild(
            undoButton("Undo down to here", "larik-undo-to-button", `Undo every newer turn, then this one (down to prompt ${turn.prompt})`, { type: "undo_to", prompt: turn.prompt }),
          );
        }
      }
      box.appendChild(head);
      // Files only: the kernel that held its variables is gone (the note every view shows).
      if (turn.note && !turn.gone) box.appendChild(el("div", "larik-why larik-note", turn.note));
      const variables = turn.variables || [];
      if (variables.length) {
        const ul = el("ul", "larik-variables");
        for (const v of variables) {
          // The kernel's words for it (`undo._variable_text`).
          ul.appendChild(el("li", v.restorable ? "larik-variable" : "larik-variable larik-refused", v.text));
        }
        box.appendChild(ul);
      }
      // Each file, then each cell (a cell's change is one of CHANGES), as the undo list names it.
      for (const file of changes.filter((c) => !(c.change in CHANGES))) {
        box.appendChild(el("div", "larik-file", file.name));
        if (file.error) box.appendChild(el("div", "larik-error", file.error));
        else if (file.diff) box.appendChild(diffView(file.diff_html));
        else box.appendChild(el("div", "larik-meta", "no difference from before this turn"));
      }
      for (const cell of changes.filter((c) => c.change in CHANGES)) {
        box.appendChild(el("div", "larik-file larik-cell", `${cell.name} · ${CHANGES[cell.change]}`));
        if (cell.diff) box.appendChild(diffView(cell.diff_html));
      }
      list.appendChild(box);
    }
  }

  const syncStatus = () => {
    // An undo's outcome already says what the status would ("Undid prompt N."): say it once.
    const shown = (model.get("results") || []).length > 0;
    status.textContent = shown ? "" : model.get("status") || "";
    error.textContent = model.get("error") || "";
  };
  const onMessage = (msg) => {
    if (msg && msg.type === "error") {
      error.textContent = msg.message;
      draw();
    }
  };
  return bindView(model, {
    "change:panel change:stale": draw,
    "change:outcome": drawOutcome,
    "change:results change:status change:error": syncStatus,
    "msg:custom": onMessage,
  });
}

export default { render };
