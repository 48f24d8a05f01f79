// The sessions browser: a sortable table; resume, fork, export, and delete after confirmation.

const COLUMNS = [
  { key: "updated", label: "last active", value: (r) => r.updated, show: (r) => shortTime(r.updated) },
  { key: "time", label: "started", value: (r) => r.time, show: (r) => shortTime(r.time) },
  { key: "first_prompt", label: "first prompt", value: (r) => r.first_prompt.toLowerCase(), show: (r) => r.first_prompt },
  { key: "messages", label: "messages", value: (r) => r.messages, show: (r) => String(r.messages) },
  {
    key: "tokens",
    label: "tokens (in / out)",
    value: (r) => r.input_tokens + r.output_tokens,
    show: (r) => `${r.input_tokens.toLocaleString()} / ${r.output_tokens.toLocaleString()}`,
  },
  { key: "cost", label: "cost", value: (r) => (r.cost === null ? -1 : r.cost), show: (r) => r.cost_label },
  { key: "model", label: "model", value: (r) => r.model || "", show: (r) => r.model || "" },
  {
    key: "fork_of",
    label: "branch",
    value: (r) => r.fork_of || "",
    show: (r) => (r.fork_of ? `branched ${r.fork_prompt ? `after prompt ${r.fork_prompt}` : "at the start"} of ${r.fork_of}` : ""),
  },
];

function render({ model, el: host }) {
  const root = el("div", "larik-widget larik-sessions");
  const table = el("table", "larik-table");
  const confirm = el("div", "larik-confirm");
  const status = el("div", "larik-status");
  const error = el("div", "larik-error");
  root.append(table, confirm, status, error);
  host.appendChild(root);
  watchEnded(model, root);
  let sortKey = "updated";
  let descending = true;

  const send = sender(model, root, error);

  function askDelete(id) {
    confirm.replaceChildren(
      el("span", "larik-confirm-text", `Delete session ${id} with its subagents, trace and checkpoints? This cannot be undone.`),
      button("Delete", "larik-danger larik-confirm-delete", () => {
        confirm.replaceChildren();
        send("delete", { session: id, confirm: true });
      }),
      button("Cancel", "larik-confirm-cancel", () => confirm.replaceChildren()),
    );
  }

  function draw() {
    const data = model.get("sessions") || {};
    const rows = (data.rows || []).slice();
    const column = COLUMNS.find((c) => c.key === sortKey) || COLUMNS[0];
    rows.sort((a, b) => {
      const x = column.value(a);
      const y = column.value(b);
      const order = x < y ? -1 : x > y ? 1 : 0;
      return descending ? -order : order;
    });
    // The actions and the row's state come first, so a narrow notebook (the sidebar open)
    // never scrolls its buttons out of sight; the data columns follow and may scroll.
    const head = el("tr");
    head.append(el("th", "", ""), el("th", "", ""));
    for (const c of COLUMNS) {
      const th = el("th", "larik-sort", c.label + (c.key === sortKey ? (descending ? " ▾" : " ▴") : ""));
      th.dataset.sort = c.key;
      th.addEventListener("click", () => {
        if (sortKey === c.key) descending = !descending;
        else {
          sortKey = c.key;
          descending = c.key === "time" || c.key === "updated";
        }
        draw();
      });
      head.appendChild(th);
    }
    const body = el("tbody");
    for (const r of rows) {
      const tr = el("tr", r.id === data.current ? "larik-current" : "");
      tr.dataset.sessionId = r.id;
      tr.title = r.id + (r.error ? `\ndamaged: ${r.error}` : "") + (r.interrupted ? `\n${r.interrupted}` : "");
      const cell = el("td", "larik-row-actions");
      const buttons = el("div", "larik-row-buttons");
      cell.appendChild(buttons);
      buttons.append(
        button("Resume", "larik-resume", () => send("resume", { session: r.id })),
        button("Fork", "larik-fork", () => send("fork", { session: r.id })),
        button("Export", "larik-export", () => send("export", { session: r.id })),
        button("Delete", "larik-danger larik-delete", () => askDelete(r.id)),
      );
      if (r.id === data.current) {
        // Refused before asking: the kernel will not delete the session it is on.
        const del = cell.querySelector(".larik-delete");
        del.disabled = true;
        del.title = "This is the open session: run %larik /new first, then delete it.";
      }
      // The row's state in a column of its own, so a badge never wraps into the buttons.
      const state = el("td", "larik-row-state");
      if (r.id === data.current) state.appendChild(el("span", "larik-badge larik-badge-current", "current"));
      else if (r.held) {
        const badge = el("span", "larik-badge larik-badge-held", "open in a kernel");
        badge.title = "Another kernel has this session open; Resume and Fork continue on a new branch of it.";
        state.appendChild(badge);
      }
      tr.append(cell, state);
      for (const c of COLUMNS) tr.appendChild(el("td", "larik-col-" + c.key, c.show(r)));
      body.appendChild(tr);
    }
    const thead = el("thead");
    thead.appendChild(head);
    table.replaceChildren(thead, body);
    if (!rows.length) table.appendChild(el("caption", "larik-empty", "No sessions in this directory yet."));
  }

  const onMessage = (msg) => {
    if (msg && msg.type === "error") error.textContent = msg.message;
  };
  return bindView(model, {
    "change:sessions": draw,
    "change:status change:error": statusLines(model, status, error),
    "msg:custom": onMessage,
  });
}

export default { render };
