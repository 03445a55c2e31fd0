// GameAnim core web extension: shows the pack's notices (for example "prompt over 77 tokens,
// these words were cut") as toasts. Nodes send them with host.send_ui_event("gameanim.notice", ...).
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

app.registerExtension({
  name: "GameAnim.Core",
  setup() {
    api.addEventListener("gameanim.notice", (event) => showNotice(event.detail));
  },
});
