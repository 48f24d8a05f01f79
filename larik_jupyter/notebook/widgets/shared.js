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

// One way to show a cost everywhere: unknown prices say so, a free session shows $0.00.
function formatCost(cost) {
  if (cost === null || cost === undefined) return "price unknown";
  if (cost > 0 && cost < 0.01) return "<$0.01";
  return "$" + cost.toFixed(2);
}

function capitalized(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : "";
}
