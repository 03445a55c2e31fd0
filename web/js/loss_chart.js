// GameAnim live loss chart: trainer loop nodes send "gameanim.training" messages
// ({node, step, loss, lr}) through PromptServer.send_sync after each step; this draws them on the
// node as they arrive, with a smoothed curve, so a run can be watched and stopped early. The node is
// found by its execution id ("12:5" inside subgraphs); the chart keeps a 9:4 aspect inside the node.
import { app } from "../../../scripts/app.js";
import { api } from "../../../scripts/api.js";
import { aspectSizeHints, nodeByExecutionId } from "./gameanim_core.js";

const TRAINING_EVENT = "gameanim.training";
const LABEL_HEIGHT = 16;

export class LossChart {
  constructor(root) {
    this.points = [];
    this.root = root;
    root.classList.add("gameanim-loss-chart");
    this.canvas = document.createElement("canvas");
    this.canvas.width = 360;
    this.canvas.height = 160;
    Object.assign(this.canvas.style, {
      width: "100%",
      height: `calc(100% - ${LABEL_HEIGHT}px)`,
      objectFit: "contain",
      display: "block",
      background: "#1b1b1b",
    });
    Object.assign(root.style, { width: "100%", height: "100%", overflow: "hidden", boxSizing: "border-box" });
    this.label = document.createElement("div");
    Object.assign(this.label.style, {
      fontSize: "11px",
      color: "#ccc",
      height: `${LABEL_HEIGHT}px`,
      overflow: "hidden",
      whiteSpace: "nowrap",
    });
    root.append(this.canvas, this.label);
  }

  add(step, loss, lr) {
    if (!Number.isFinite(loss)) return;
    if (this.points.length && step <= this.points[this.points.length - 1].step) this.points = [];
    this.points.push({ step, loss });
    this.root.dataset.points = String(this.points.length);
    this.label.textContent = `step ${step}  loss ${loss.toFixed(5)}${Number.isFinite(lr) ? `  lr ${lr.toExponential(2)}` : ""}`;
    this.draw();
  }

  draw() {
    const ctx = this.canvas.getContext("2d");
    const { width, height } = this.canvas;
    ctx.clearRect(0, 0, width, height);
    if (this.points.length < 2) return;
    const losses = this.points.map((p) => p.loss);
    const lo = Math.min(...losses);
    const hi = Math.max(...losses);
    const first = this.points[0].step;
    const last = this.points[this.points.length - 1].step;
    const x = (s) => 6 + ((s - first) / Math.max(1, last - first)) * (width - 12);
    const y = (v) => height - 6 - ((v - lo) / Math.max(1e-12, hi - lo)) * (height - 12);
    ctx.strokeStyle = "#555";
    ctx.beginPath();
    this.points.forEach((p, i) => (i ? ctx.lineTo(x(p.step), y(p.loss)) : ctx.moveTo(x(p.step), y(p.loss))));
    ctx.stroke();
    ctx.strokeStyle = "#4fc3f7";
    ctx.lineWidth = 2;
    ctx.beginPath();
    let smooth = this.points[0].loss;
    this.points.forEach((p, i) => {
      smooth = 0.9 * smooth + 0.1 * p.loss;
      i ? ctx.lineTo(x(p.step), y(smooth)) : ctx.moveTo(x(p.step), y(smooth));
    });
    ctx.stroke();
    ctx.lineWidth = 1;
  }
}

function chartFor(node) {
  if (!node.gameanimLossChart) {
    const root = document.createElement("div");
    node.gameanimLossChart = new LossChart(root);
    const chart = node.gameanimLossChart;
    node.addDOMWidget("gameanim_loss", "gameanim_loss", root, {
      serialize: false,
      hideOnZoom: false,
      ...aspectSizeHints(node, {
        aspect: () => chart.canvas.height / chart.canvas.width,
        chrome: LABEL_HEIGHT,
        min: 60,
        max: 400,
      }),
    });
  }
  return node.gameanimLossChart;
}

app.registerExtension({
  name: "GameAnim.LossChart",
  setup() {
    api.addEventListener(TRAINING_EVENT, ({ detail }) => {
      const node = nodeByExecutionId(detail?.node);
      if (!node) return;
      chartFor(node).add(Number(detail.step), Number(detail.loss), Number(detail.lr));
      node.setDirtyCanvas?.(true, false);
    });
  },
});
