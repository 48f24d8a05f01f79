// The /check report: what did not hold (if anything), a headline, then each section's problems,
// then the confinement the cells ran under; a problem about a cell links
// to that cell in the open notebook (the kernel asks the page to show it over the bridge).

function render({ model, el: host }) {
  const root = el("div", "larik-widget larik-check");
  const status = el("div", "larik-status");
  const error = el("div", "larik-error");
  host.appendChild(root);

  function draw() {
    root.replaceChildren();
    if (model.get("opening")) root.appendChild(el("div", "larik-check-opening", model.get("opening")));
    root.appendChild(el("div", "larik-check-headline", model.get("headline")));
    for (const section of model.get("sections") || []) {
      root.appendChild(el("div", "larik-check-heading", section.heading));
      const ul = el("ul", "larik-check-items");
      for (const item of section.items) {
        const li = el("li", "larik-check-item");
        if (item.cell_id) {
          const link = el("a", "larik-check-link", item.text);
          link.href = "#";
          link.title = "Go to this cell";
          link.addEventListener("click", (event) => {
            event.preventDefault();
            model.send({ type: "focus", cell_id: item.cell_id });
          });
          li.appendChild(link);
        } else {
          li.textContent = item.text;
        }
        ul.appendChild(li);
      }
      root.appendChild(ul);
    }
    if (model.get("footer")) root.appendChild(el("div", "larik-check-footer", model.get("footer")));
    status.textContent = model.get("status");
    error.textContent = model.get("error");
    root.append(status, error);
  }
  for (const name of ["opening", "headline", "sections", "footer", "status", "error"]) model.on(`change:${name}`, draw);
  draw();
}

export default { render };
