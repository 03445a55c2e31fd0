// GameAnim core web extension: shows the pack's notices (for example "prompt over 77 tokens,
// these words were cut", a NaN with its precision hint, a resumed training run) as toasts. Nodes send
// them with host.notify(), which emits "gameanim.notice" {severity, summary, detail}. Also home of the
// helpers the other extensions share: node lookup by execution id and DOM-widget size hints.
import { app } from "../../../scripts/app.js";
import { api } from "../../../scripts/api.js";

const SEVERITIES = new Set(["info", "warn", "error", "success"]);

function showNotice(detail) {
  const severity = SEVERITIES.has(detail?.severity) ? detail.severity : "info";
  const summary = String(detail?.summary ?? "GameAnim");
  const text = String(detail?.detail ?? "");
  const toast = app.extensionManager?.toast;
  if (toast) {
    toast.add({ severity, summary, detail: text, life: severity === "error" ? 0 : 8000 });
  } else {
    console[severity === "error" ? "error" : "log"](`[GameAnim] ${summary}: ${text}`);
  }
}

// The node an execution id names. Inside subgraphs the server's ids are paths ("12:5" = node 5 inside the
// subgraph of node 12), so plain graph.getNodeById(Number(id)) would miss or hit the wrong node.
export function nodeByExecutionId(executionId) {
  const path = String(executionId ?? "").split(":").filter(Boolean);
  let graph = app.graph?.rootGraph ?? app.graph;
  let node = null;
  for (const [i, part] of path.entries()) {
    node = graph?.getNodeById?.(part) ?? graph?.getNodeById?.(Number(part)) ?? null;
    if (!node) return null;
    if (i < path.length - 1) graph = node.subgraph;
  }
  return node;
}

// The key the frontend stores a node's outputs under (app.nodeOutputs): the node id in the root graph,
// "<subgraph id>:<node id>" inside a subgraph.
export function nodeLocatorId(node) {
  const root = app.graph?.rootGraph ?? app.graph;
  return node.graph && node.graph !== root && node.graph.id ? `${node.graph.id}:${node.id}` : String(node.id);
}

// Size hints for a DOM widget whose content has an aspect ratio: its height follows the node's width
// (content width * aspect + fixed chrome), between min and max, so it stays inside the node.
export function aspectSizeHints(node, { aspect, chrome = 0, min = 64, max = 720, margin = 4 }) {
  const height = () => {
    const width = Math.max(16, (node.size?.[0] ?? 300) - 2 * margin);
    return Math.round(Math.min(max, Math.max(min, width * aspect() + chrome)));
  };
  return { getMinHeight: () => min + chrome, getMaxHeight: () => max + chrome, getHeight: height, margin };
}

// Grow the node (never shrink what the user chose) so its widgets get their preferred heights.
export function fitNodeToWidgets(node) {
  const size = node.computeSize?.();
  if (!size) return;
  node.setSize([Math.max(node.size[0], size[0]), Math.max(node.size[1], size[1])]);
  node.setDirtyCanvas?.(true, true);
}

app.registerExtension({
  name: "GameAnim.Core",
  setup() {
    api.addEventListener("gameanim.notice", (event) => showNotice(event.detail));
  },
});
