// The fork tree widget: sessions with their prompts; branches hang under the prompt they share.
// Data comes from Python as one JSON trait (`tree`); actions go back with model.send().

// Visible rows in display order. Each row: {key, depth, kind, node, session, collapsible}.
// With a query, only prompts whose text (any line of it) matches, sessions whose id matches, and
// their ancestors show.
function flatten(tree, collapsed, query) {
  const rows = [];
  const q = query.trim().toLowerCase();
  function session(node, depth) {
    const key = "s:" + node.id;
    const row = { key, depth, kind: "session", node, session: node, collapsible: false };
    const start = rows.length;
    rows.push(row);
    let matched = q !== "" && node.id.toLowerCase().includes(q);
    let any = false;
    const open = q !== "" || !collapsed.has(key);
    // Branches that share no prompt are alternatives to the first one: they come before it.
    for (const child of node.children) {
      any = true;
      if (open && session(child, depth + 1)) matched = true;
    }
    for (const item of node.items) {
      any = true;
      if (item.kind === "compaction") {
        if (open && q === "") rows.push({ key: `c:${node.id}:${item.at}`, depth: depth + 1, kind: "compaction", node: item, session: node });
        continue;
      }
      const pkey = `p:${node.id}:${item.n}`;
      const prow = { key: pkey, depth: depth + 1, kind: "prompt", node: item, session: node, collapsible: item.children.length > 0 };
      const pstart = rows.length;
      if (open) rows.push(prow);
      let hit = q !== "" && item.prompt_text.toLowerCase().includes(q);
      const popen = open && (q !== "" || !collapsed.has(pkey));
      if (popen) for (const child of item.children) if (session(child, depth + 2)) hit = true;
      if (q !== "" && !hit) rows.length = pstart;
      if (hit) matched = true;
    }
    row.collapsible = any;
    if (q !== "" && !matched) rows.length = start;
    return matched;
  }
  for (const root of tree.roots || []) session(root, 0);
  return rows;
}

function renderRow(row, current, collapsed, selected) {
  const r = el("div", "larik-row larik-row-" + row.kind);
  r.dataset.key = row.key;
  r.setAttribute("role", "treeitem");
  r.style.paddingLeft = 6 + row.depth * 16 + "px";
  if (row.key === selected) r.classList.add("larik-selected");
  const caret = el("span", "larik-caret", row.collapsible ? (collapsed.has(row.key) ? "▸" : "▾") : "");
  r.appendChild(caret);
  if (row.collapsible) r.setAttribute("aria-expanded", collapsed.has(row.key) ? "false" : "true");
  const n = row.node;
  if (row.kind === "session") {
    r.dataset.sessionId = n.id;
    if (n.id === current) r.classList.add("larik-current");
    if (n.branch) r.appendChild(el("span", "larik-branch", "↳ " + n.branch));
    r.appendChild(el("code", "larik-id", n.id));
    r.appendChild(el("span", "larik-meta", [shortTime(n.time), n.model || "", n.cost_label].filter(Boolean).join(" · ")));
    if (n.id === current) r.appendChild(el("span", "larik-badge larik-badge-current", "current"));
    if (!n.items.some((item) => item.kind === "prompt")) r.appendChild(el("span", "larik-badge larik-badge-empty", "no prompt yet"));
    if (n.interrupted) r.appendChild(el("span", "larik-badge larik-badge-interrupted", "interrupted")).title = n.interrupted;
    if (n.error) r.appendChild(el("span", "larik-badge larik-badge-error", "damaged")).title = n.error;
  } else if (row.kind === "prompt") {
    r.dataset.sessionId = row.session.id;
    r.dataset.prompt = n.n;
    if (row.session.id === current) r.classList.add("larik-on-current");
    r.appendChild(el("span", "larik-n", n.n + "."));
    r.appendChild(el("span", "larik-text", n.text || "(empty prompt)"));
    r.title = n.prompt_text.length > 600 ? n.prompt_text.slice(0, 600) + "…" : n.prompt_text;
    r.appendChild(el("span", "larik-meta", [shortTime(n.time), n.cost_label].filter(Boolean).join(" · ")));
    if (n.interrupted) r.appendChild(el("span", "larik-badge larik-badge-interrupted", "interrupted"));
    if (n.undone) r.appendChild(el("span", "larik-badge larik-badge-undone", "undone")).title = "An undo put this prompt's changes back; /notebook and replay leave it out.";
  } else {
    r.appendChild(el("span", "larik-compaction", "⇲ compacted here"));
  }
  return r;
}

function render({ model, el: host }) {
  const root = el("div", "larik-widget larik-tree");
  const bar = el("div", "larik-toolbar");
  const search = el("input", "larik-search");
  search.type = "search";
  search.placeholder = "Search prompts…";
  const expand = el("button", "larik-button", "Expand all");
  const collapse = el("button", "larik-button", "Collapse all");
  const count = el("span", "larik-count");
  bar.append(search, expand, collapse, count);
  const body = el("div", "larik-rows");
  body.tabIndex = 0;
  body.setAttribute("role", "tree");
  const actions = el("div", "larik-actions");
  const status = el("div", "larik-status");
  const error = el("div", "larik-error");
  const fallback = el("div", "larik-fallback");
  const confirm = el("div", "larik-confirm");
  const comparison = el("pre", "larik-comparison");
  root.append(bar, body, actions, confirm, status, error, fallback, comparison);
  host.appendChild(root);
  watchEnded(model, root);

  const collapsed = new Set();
  let selected = null;
  let rows = [];
  let byKey = new Map();
  let query = "";
  let scrolled = false;
  let comparing = null; // the session "Compare with…" was clicked on, awaiting the other one

  function draw() {
    const t0 = performance.now();
    const tree = model.get("tree") || {};
    const current = tree.current;
    rows = flatten(tree, collapsed, query);
    byKey = new Map(rows.map((row) => [row.key, row]));
    if (selected && !byKey.has(selected)) selected = null;
    const frag = document.createDocumentFragment();
    for (const row of rows) frag.appendChild(renderRow(row, current, collapsed, selected));
    body.replaceChildren(frag);
    if (!rows.length) body.appendChild(el("div", "larik-empty", query ? "No prompt matches." : "No sessions in this directory yet."));
    count.textContent = `${tree.count || 0} nodes`;
    drawActions();
    if (!scrolled && current) {
      const row = body.querySelector(`.larik-current`);
      if (row) scrollWithin(body, row);
      scrolled = true;
    }
    const ms = performance.now() - t0;
    root.dataset.renderMs = ms.toFixed(1);
  }

  const send = sender(model, root, error);

  function drawActions() {
    actions.replaceChildren();
    const row = selected && byKey.get(selected);
    if (!row || row.kind === "compaction") return;
    const sid = row.session.id;
    if (row.kind === "prompt") {
      const n = row.node.n;
      actions.append(
        el("span", "larik-actions-label", `Prompt ${n} of ${sid}:`),
        button("Rewind here", "larik-rewind", () => send("rewind", { session: sid, prompt: n })),
        button("Rewind here with files", "larik-rewind-files", () => send("plan_rewind", { session: sid, prompt: n })),
        button("Fork here", "larik-fork", () => send("fork", { session: sid, prompt: n })),
        button("Jump to cells", "larik-jump", () => jumpToCells(sid, n)),
        button("Open as notebook", "larik-notebook", () => send("notebook", { session: sid, prompt: n })),
      );
      actions.querySelector(".larik-notebook").title = "Write this branch up to this prompt as a new notebook and open it";
      actions.querySelector(".larik-rewind").title = "Branch before this prompt and put its text into a new %%larik cell below";
      actions.querySelector(".larik-rewind-files").title = "Also put the files and kernel variables back as they were before this prompt (asks first)";
      actions.querySelector(".larik-fork").title = "Branch after this prompt's turn and continue there";
      actions.querySelector(".larik-jump").title = "Select the cells of the open notebooks that this prompt created or changed";
    } else {
      actions.append(
        el("span", "larik-actions-label", `Session ${sid}:`),
        button("Resume", "larik-resume", () => send("resume", { session: sid })),
        button("Open as notebook", "larik-notebook", () => send("notebook", { session: sid })),
        button("Compare with…", "larik-compare", () => {
          comparing = sid;
          status.textContent = `Select the session to compare ${sid} with, then click Compare.`;
          drawActions();
        }),
      );
      if (comparing && comparing !== sid) {
        actions.append(button(`Compare with ${comparing}`, "larik-compare-go", () => {
          send("compare", { session: comparing, other: sid });
          comparing = null;
          drawActions();
        }));
      }
    }
  }

  // The page's larik-jupyter extension finds the cells by their `larik` metadata.
  async function jumpToCells(sid, n) {
    error.textContent = "";
    const hook = window.larikJupyter;
    if (!hook || typeof hook.jumpToCells !== "function") {
      error.textContent = "Jumping to cells needs the larik-jupyter JupyterLab extension, which this page does not have.";
      return;
    }
    const count = await hook.jumpToCells(sid, n);
    if (count) status.textContent = `Selected the ${count} cell${count === 1 ? "" : "s"} prompt ${n} changed.`;
    else send("no_cells", { session: sid, prompt: n }); // the kernel knows why: undone, not open, or none
  }

  // "Open prompt in Larik sidebar" (a cell's marker or menu) also selects the prompt here.
  // Bring `row` into sight inside the tree's own scrolled list only: never scroll the notebook
  // (an old /tree output far up must not pull the page to it when a prompt is shown elsewhere).
  function scrollWithin(list, row) {
    const box = list.getBoundingClientRect();
    const at = row.getBoundingClientRect();
    if (at.top < box.top) list.scrollTop -= box.top - at.top;
    else if (at.bottom > box.bottom) list.scrollTop += at.bottom - box.bottom;
  }

  function showPrompt(event) {
    const { session, prompt } = event.detail || {};
    const key = `p:${session}:${prompt}`;
    if (!byKey.has(key) && collapsed.delete("s:" + session)) draw();
    if (byKey.has(key)) select(key, true);
  }

  function select(key, focus) {
    const old = selected && body.querySelector(`[data-key="${CSS.escape(selected)}"]`);
    if (old) old.classList.remove("larik-selected");
    selected = key;
    const row = key && body.querySelector(`[data-key="${CSS.escape(key)}"]`);
    if (row) {
      row.classList.add("larik-selected");
      if (focus) scrollWithin(body, row);
    }
    drawActions();
  }

  function toggle(key, open) {
    const isOpen = !collapsed.has(key);
    if (open === isOpen) return false;
    if (isOpen) collapsed.add(key);
    else collapsed.delete(key);
    draw();
    return true;
  }

  body.addEventListener("click", (event) => {
    const target = event.target;
    const rowEl = target.closest && target.closest(".larik-row");
    if (!rowEl) return;
    const key = rowEl.dataset.key;
    const row = byKey.get(key);
    if (target.classList.contains("larik-caret") && row && row.collapsible) {
      toggle(key);
      select(key);
      return;
    }
    select(key);
  });

  body.addEventListener("keydown", (event) => {
    if (!rows.length) return;
    let index = selected ? rows.findIndex((r) => r.key === selected) : -1;
    const row = index >= 0 ? rows[index] : null;
    switch (event.key) {
      case "ArrowDown":
        index = Math.min(rows.length - 1, index + 1);
        break;
      case "ArrowUp":
        index = Math.max(0, index - 1);
        break;
      case "Home":
        index = 0;
        break;
      case "End":
        index = rows.length - 1;
        break;
      case "ArrowRight":
        if (row && row.collapsible) toggle(row.key, true);
        event.preventDefault();
        return;
      case "ArrowLeft":
        if (row && row.collapsible && !collapsed.has(row.key)) toggle(row.key, false);
        else if (row) {
          for (let i = index - 1; i >= 0; i--) {
            if (rows[i].depth < row.depth) {
              select(rows[i].key, true);
              break;
            }
          }
        }
        event.preventDefault();
        return;
      case "Enter": {
        const first = actions.querySelector("button");
        if (first) first.focus();
        event.preventDefault();
        return;
      }
      default:
        return;
    }
    event.preventDefault();
    select(rows[index].key, true);
  });

  let searchTimer = null;
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      query = search.value;
      draw();
    }, 80);
  });
  expand.addEventListener("click", () => {
    collapsed.clear();
    draw();
  });
  collapse.addEventListener("click", () => {
    for (const row of rows) if (row.collapsible && row.kind === "session") collapsed.add(row.key);
    draw();
  });

  function showFallback(code) {
    fallback.replaceChildren(
      el("div", "larik-fallback-label", "Paste this into a new cell below and run it:"),
      el("pre", "larik-fallback-code", code),
      button("Copy", "larik-copy", () => {
        if (navigator.clipboard) navigator.clipboard.writeText(code).catch(() => {});
      }),
    );
  }

  function onMessage(msg) {
    if (!msg || typeof msg !== "object") return;
    if (msg.type === "insert_cell") {
      const hook = window.larikJupyter;
      const inserted = hook && typeof hook.insertCellBelow === "function" && hook.insertCellBelow(msg.code);
      if (inserted) fallback.replaceChildren();
      else showFallback(msg.code);
    } else if (msg.type === "open_notebook") {
      openNotebook(msg.path);
    } else if (msg.type === "error") {
      error.textContent = msg.message;
    }
  }

  // JupyterLab opens it in a tab through the larik-jupyter extension; without it, a link.
  function openNotebook(path) {
    const hook = window.larikJupyter;
    if (hook && typeof hook.openPath === "function" && hook.openPath(path)) return;
    const config = document.getElementById("jupyter-config-data");
    const page = config ? JSON.parse(config.textContent || "{}") : {};
    const root = (page.serverRoot || "").replace(/\/+$/, "");
    if (!root || !path.startsWith(root + "/")) return;
    const link = el("a", "larik-open-link", "Open " + path.slice(root.length + 1));
    link.href = (page.baseUrl || "/") + "lab/tree/" + path.slice(root.length + 1).split("/").map(encodeURIComponent).join("/");
    link.target = "_blank";
    fallback.replaceChildren(link);
  }

  const drawComparison = () => {
    comparison.textContent = model.get("comparison") || "";
    comparison.style.display = comparison.textContent ? "" : "none";
  };

  function drawConfirm() {
    const c = model.get("confirm") || {};
    confirm.replaceChildren();
    if (!c.session) return;
    const changes = (c.files || []).length + (c.variables || []).length + (c.cells || []).length;
    confirm.appendChild(
      el("div", "larik-confirm-text", changes
        ? `Rewind ${c.session} to before prompt ${c.prompt} and undo turn(s) ${c.turns.join(", ")}, restoring:`
        : `Rewind ${c.session} to before prompt ${c.prompt}: no turn from there on changed files or variables.`),
    );
    const ul = el("ul", "larik-confirm-files");
    for (const path of c.files || []) ul.appendChild(el("li", "larik-confirm-file", path));
    for (const name of c.variables || []) ul.appendChild(el("li", "larik-confirm-variable", `variable ${name}`));
    for (const cell of c.cells || []) ul.appendChild(el("li", "larik-confirm-cell", cell));
    confirm.appendChild(ul);
    if (c.stop) confirm.appendChild(el("div", "larik-error", c.stop));
    const rewind = (extra) => send("rewind", { session: c.session, prompt: c.prompt, files: true, turns: c.turns, ...extra });
    const changed = c.changed || [];
    if (changed.length) {
      // The user changed these since their turn: ask before overwriting them.
      confirm.appendChild(el("div", "larik-error", "These changed since their turn; restoring them would overwrite those changes:"));
      const list = el("ul", "larik-confirm-files larik-changed");
      for (const path of changed) list.appendChild(el("li", "larik-refused", `changed since: ${path}`));
      confirm.appendChild(list);
      confirm.append(
        button("Restore anyway", "larik-danger larik-confirm-force", () => rewind({ force: true })),
        button("Skip them", "larik-confirm-skip", () => rewind({ skip_changed: true })),
      );
    } else {
      confirm.append(button("Rewind and restore", "larik-danger larik-confirm-rewind", () => rewind({})));
    }
    confirm.append(button("Cancel", "larik-confirm-cancel", () => send("cancel_rewind", {})));
  }

  window.addEventListener("larik-jupyter:show-prompt", showPrompt);
  const unbind = bindView(model, {
    "change:tree": draw,
    "change:confirm": drawConfirm,
    "change:comparison": drawComparison,
    "change:status change:error": statusLines(model, status, error),
    "msg:custom": onMessage,
  });
  return () => {
    unbind();
    window.removeEventListener("larik-jupyter:show-prompt", showPrompt);
  };
}

export default { render };
