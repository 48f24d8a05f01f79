function render({ model, el }) {
  const button = document.createElement("button");
  button.className = "jp-Button jp-mod-styled jp-mod-warn larik-stop";
  button.textContent = "■ Stop";
  button.title = "Stop the agent's turn (the partial reply is kept)";
  button.addEventListener("click", () => {
    button.disabled = true;
    model.send({ type: "stop" });
    // Read by the labextension, which interrupts the kernel: the message above reaches a kernel
    // only when its main thread is free, never during the agent's synchronous code.
    el.dispatchEvent(new CustomEvent("larik-stop", { bubbles: true }));
  });
  const sync = () => {
    const running = model.get("running");
    button.style.display = running ? "" : "none";
  };
  model.on("change:running", sync);
  sync();
  el.appendChild(button);
  if (!model.get("rendered")) {
    model.set("rendered", true);
    model.save_changes();
  }
}
export default { render };
