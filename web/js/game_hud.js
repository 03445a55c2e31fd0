// GameAnim game HUD: AnimeGamer nodes list the game's state under ui.gameanim_hud
// ({turn, character, instruction, states: {stamina, social, entertainment}, level}); this shows it
// on the node as a small HUD (turn, instruction, three 0–100 bars).
import { app } from "../../../scripts/app.js";
import { fitNodeToWidgets } from "./gameanim_core.js";

const HUD_KEY = "gameanim_hud";
const HUD_HEIGHT = 96; // title + instruction + three bar rows at 11 px
const BARS = [
  ["stamina", "#66bb6a"],
  ["social", "#42a5f5"],
  ["entertainment", "#ffa726"],
];

export function renderHud(root, hud) {
  root.replaceChildren();
  root.classList.add("gameanim-hud");
  Object.assign(root.style, {
    display: "flex",
    flexDirection: "column",
    gap: "3px",
    fontSize: "11px",
    color: "#ddd",
    overflow: "hidden",
    boxSizing: "border-box",
  });
  const title = document.createElement("div");
  title.textContent = `Turn ${hud.turn ?? "?"}${hud.character ? ` · ${hud.character}` : ""}${hud.level ? ` · motion ${hud.level}` : ""}`;
  title.style.fontWeight = "bold";
  const instruction = document.createElement("div");
  instruction.textContent = hud.instruction ?? "";
  instruction.style.opacity = "0.85";
  root.append(title, instruction);
  for (const [name, colour] of BARS) {
    const value = Math.max(0, Math.min(100, Number(hud.states?.[name] ?? 0)));
    const row = document.createElement("div");
    Object.assign(row.style, { display: "flex", alignItems: "center", gap: "6px" });
    const label = document.createElement("span");
    label.textContent = name;
    label.style.width = "84px";
    const track = document.createElement("div");
    Object.assign(track.style, { flex: "1", height: "8px", background: "#333", borderRadius: "4px", overflow: "hidden" });
    const fill = document.createElement("div");
    Object.assign(fill.style, { width: `${value}%`, height: "100%", background: colour });
    fill.dataset.state = name;
    fill.dataset.value = String(value);
    track.append(fill);
    const number = document.createElement("span");
    number.textContent = String(Math.round(value));
    number.style.width = "26px";
    row.append(label, track, number);
    root.append(row);
  }
}

app.registerExtension({
  name: "GameAnim.GameHud",
  async beforeRegisterNodeDef(nodeType, nodeData) {
    if (!nodeData?.name?.startsWith("GameAnim")) return;
    const onExecuted = nodeType.prototype.onExecuted;
    nodeType.prototype.onExecuted = function (message) {
      onExecuted?.apply(this, arguments);
      const hud = message?.[HUD_KEY]?.[0];
      if (!hud) return;
      if (!this.gameanimHud) {
        this.gameanimHud = document.createElement("div");
        this.addDOMWidget("gameanim_hud", "gameanim_hud", this.gameanimHud, {
          serialize: false,
          hideOnZoom: false,
          getMinHeight: () => HUD_HEIGHT,
          getMaxHeight: () => HUD_HEIGHT,
          getHeight: () => HUD_HEIGHT,
        });
      }
      renderHud(this.gameanimHud, hud);
      fitNodeToWidgets(this);
    };
  },
});
