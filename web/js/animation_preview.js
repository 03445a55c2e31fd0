// GameAnim animation preview: plays the frames a GameAnim node lists under ui.gameanim_preview
// (written by preview.py to ComfyUI's temp folder) in a widget on the node. Play/pause, scrub,
// onion skin (previous frame at 35 %), checkerboard behind alpha, and zoom that is pixel-exact
// (nearest neighbour) for pixel art.
// The widget declares its size (height follows the node width times the frame aspect), so it stays
// inside the node; larger zooms scroll inside it. It is the node's only preview (the frontend's own
// image preview of the same node is dropped), and it comes back when a saved workflow is reopened
// (the preview's file list is kept in the node's properties while ComfyUI keeps its temp files).
import { app } from "../../../scripts/app.js";
import { api } from "../../../scripts/api.js";
import { aspectSizeHints, fitNodeToWidgets, nodeLocatorId } from "./gameanim_core.js";

const PREVIEW_KEY = "gameanim_preview";
const ZOOMS = ["fit", "1", "2", "4", "8"];
const BAR_HEIGHT = 24;

function viewUrl(entry) {
  const params = new URLSearchParams({
    filename: entry.filename,
    subfolder: entry.subfolder ?? "",
    type: entry.type ?? "temp",
  });
  return api.apiURL(`/view?${params.toString()}`);
}

function loadImages(entries) {
  return Promise.all(
    entries.map(
      (entry) =>
        new Promise((resolve) => {
          const img = new Image();
          img.onload = () => resolve(img);
          img.onerror = () => resolve(null);
          img.src = viewUrl(entry);
        }),
    ),
  );
}

function drawCheckerboard(ctx, width, height, cell = 8) {
  ctx.fillStyle = "#bbb";
  ctx.fillRect(0, 0, width, height);
  ctx.fillStyle = "#888";
  for (let y = 0; y < height; y += cell) {
    for (let x = (y / cell) % 2 === 0 ? 0 : cell; x < width; x += 2 * cell) {
      ctx.fillRect(x, y, cell, cell);
    }
  }
}

export class AnimationPlayer {
  constructor(root) {
    this.root = root;
    this.frames = [];
    this.index = 0;
    this.fps = 12;
    this.playing = true;
    this.onion = false;
    this.zoom = "fit";
    this.alpha = false;
    this.timer = null;
    this.aspect = 1;
    this.build();
  }

  build() {
    this.root.classList.add("gameanim-preview");
    Object.assign(this.root.style, {
      display: "flex",
      flexDirection: "column",
      width: "100%",
      height: "100%",
      overflow: "hidden",
      boxSizing: "border-box",
    });
    this.viewport = document.createElement("div");
    Object.assign(this.viewport.style, {
      flex: "1 1 auto",
      minHeight: "0",
      overflow: "auto",
      display: "flex",
      alignItems: "center",
      justifyContent: "center",
      background: "#222",
    });
    this.canvas = document.createElement("canvas");
    Object.assign(this.canvas.style, { objectFit: "contain", imageRendering: "pixelated", display: "block" });
    this.viewport.append(this.canvas);
    const bar = document.createElement("div");
    Object.assign(bar.style, {
      display: "flex",
      gap: "6px",
      alignItems: "center",
      fontSize: "11px",
      height: `${BAR_HEIGHT}px`,
      flex: "0 0 auto",
      overflow: "hidden",
      whiteSpace: "nowrap",
    });
    this.playButton = document.createElement("button");
    this.playButton.textContent = "❚❚";
    this.playButton.title = "Play / pause";
    this.playButton.onclick = () => this.setPlaying(!this.playing);
    this.scrub = document.createElement("input");
    this.scrub.type = "range";
    this.scrub.min = "0";
    this.scrub.value = "0";
    this.scrub.style.flex = "1";
    this.scrub.title = "Scrub frames";
    this.scrub.oninput = () => {
      this.setPlaying(false);
      this.show(Number(this.scrub.value));
    };
    const onion = document.createElement("label");
    this.onionBox = document.createElement("input");
    this.onionBox.type = "checkbox";
    this.onionBox.onchange = () => {
      this.onion = this.onionBox.checked;
      this.show(this.index);
    };
    onion.append(this.onionBox, " onion");
    this.zoomSelect = document.createElement("select");
    this.zoomSelect.title = "Zoom (whole-number zoom is pixel-exact)";
    for (const z of ZOOMS) {
      const option = document.createElement("option");
      option.value = z;
      option.textContent = z === "fit" ? "fit" : `${z}×`;
      this.zoomSelect.append(option);
    }
    this.zoomSelect.onchange = () => {
      this.zoom = this.zoomSelect.value;
      this.show(this.index);
    };
    this.label = document.createElement("span");
    bar.append(this.playButton, this.scrub, onion, this.zoomSelect, this.label);
    this.root.append(this.viewport, bar);
  }

  async load(preview) {
    this.fps = Math.max(0.1, Number(preview.fps) || 12);
    this.alpha = Boolean(preview.alpha);
    this.caption = preview.caption ? String(preview.caption) : "";
    if (preview.width > 0 && preview.height > 0) this.aspect = preview.height / preview.width;
    if (preview.pixel_art && this.zoom === "fit") {
      this.zoom = "4";
      this.zoomSelect.value = "4";
    }
    this.frames = (await loadImages(preview.frames ?? [])).filter(Boolean);
    this.scrub.max = String(Math.max(0, this.frames.length - 1));
    this.root.dataset.frames = String(this.frames.length);
    if (this.frames.length) this.aspect = this.frames[0].naturalHeight / this.frames[0].naturalWidth;
    else this.label.textContent = "preview files are gone (ComfyUI restarted): run the node again";
    this.show(0);
    this.setPlaying(this.frames.length > 1);
  }

  setPlaying(playing) {
    this.playing = playing;
    this.playButton.textContent = playing ? "❚❚" : "▶";
    clearInterval(this.timer);
    this.timer = null;
    if (playing && this.frames.length > 1) {
      this.timer = setInterval(() => this.show((this.index + 1) % this.frames.length), 1000 / this.fps);
    }
  }

  show(index) {
    if (!this.frames.length) return;
    this.index = Math.min(Math.max(0, index), this.frames.length - 1);
    const frame = this.frames[this.index];
    const scale = this.zoom === "fit" ? 1 : Number(this.zoom);
    const width = frame.naturalWidth * scale;
    const height = frame.naturalHeight * scale;
    if (this.canvas.width !== width || this.canvas.height !== height) {
      this.canvas.width = width;
      this.canvas.height = height;
    }
    const fit = this.zoom === "fit";
    Object.assign(this.canvas.style, {
      width: fit ? "100%" : `${width}px`,
      height: fit ? "100%" : `${height}px`,
      flex: "0 0 auto",
    });
    this.viewport.style.alignItems = fit ? "center" : "flex-start";
    this.viewport.style.justifyContent = fit ? "center" : "flex-start";
    const ctx = this.canvas.getContext("2d");
    ctx.imageSmoothingEnabled = this.zoom === "fit";
    if (this.alpha) drawCheckerboard(ctx, width, height, 8 * scale);
    else ctx.clearRect(0, 0, width, height);
    if (this.onion && this.frames.length > 1) {
      const previous = this.frames[(this.index - 1 + this.frames.length) % this.frames.length];
      ctx.globalAlpha = 0.35;
      ctx.drawImage(previous, 0, 0, width, height);
      ctx.globalAlpha = 1;
    }
    ctx.drawImage(frame, 0, 0, width, height);
    this.scrub.value = String(this.index);
    this.label.textContent = `${this.caption ? `${this.caption} · ` : ""}${this.index + 1}/${this.frames.length} @ ${this.fps} fps`;
    this.root.dataset.index = String(this.index);
  }

  dispose() {
    clearInterval(this.timer);
  }
}

function playerFor(node) {
  if (!node.gameanimPlayer) {
    const root = document.createElement("div");
    const player = new AnimationPlayer(root);
    node.gameanimPlayer = player;
    node.addDOMWidget("gameanim_preview", "gameanim_preview", root, {
      serialize: false,
      hideOnZoom: false,
      ...aspectSizeHints(node, { aspect: () => player.aspect, chrome: BAR_HEIGHT, min: 48, max: 640 }),
    });
    const onRemoved = node.onRemoved;
    node.onRemoved = function () {
      player.dispose();
      onRemoved?.apply(this, arguments);
    };
  }
  return node.gameanimPlayer;
}

function showPreview(node, preview) {
  node.properties = node.properties ?? {};
  node.properties[PREVIEW_KEY] = preview;
  const player = playerFor(node);
  player.load(preview).then(() => fitNodeToWidgets(node));
}

// One preview per node: a saver that also lists its files under "images" would get the frontend's image
// preview beside ours; the files stay in the history, only the duplicate drawing goes.
function dropBuiltinPreview(node) {
  const outputs = app.nodeOutputs?.[nodeLocatorId(node)];
  if (outputs) {
    delete outputs.images;
    delete outputs.animated;
  }
  node.imgs = undefined;
  node.images = undefined;
  const index = node.widgets?.findIndex((w) => w.name === IMAGE_WIDGET) ?? -1;
  if (index >= 0) node.widgets.splice(index, 1);
}

// Nodes whose only preview is the frontend's image preview (e.g. Save Sprite Sheet): grow the node so the
// image gets the room its aspect needs below the widgets, instead of being drawn past the node's bottom.
const IMAGE_WIDGET = "$$canvas-image-preview"; // the frontend's image preview widget (drawn from its y down)
const MAX_IMAGE_HEIGHT = 640;

export function imageRoomNeeded(node, image) {
  const widget = node.widgets?.find((w) => w.name === IMAGE_WIDGET);
  const top = widget?.y ?? node.computeSize()[1];
  const height = (node.size[0] * image.naturalHeight) / Math.max(1, image.naturalWidth);
  return Math.max(node.computeSize()[1], top + Math.min(MAX_IMAGE_HEIGHT, height) + 15);
}

function fitNodeToImage(node, entry) {
  const img = new Image();
  img.onload = () => {
    const wanted = imageRoomNeeded(node, img);
    if (node.size[1] < wanted) node.setSize([node.size[0], wanted]);
    node.setDirtyCanvas?.(true, true);
  };
  img.src = viewUrl(entry);
}

app.registerExtension({
  name: "GameAnim.AnimationPreview",
  async beforeRegisterNodeDef(nodeType, nodeData) {
    if (!nodeData?.name?.startsWith("GameAnim")) return;
    const onExecuted = nodeType.prototype.onExecuted;
    nodeType.prototype.onExecuted = function (message) {
      onExecuted?.apply(this, arguments);
      const preview = message?.[PREVIEW_KEY]?.[0];
      if (!preview) {
        if (message?.images?.[0]) fitNodeToImage(this, message.images[0]);
        return;
      }
      dropBuiltinPreview(this);
      showPreview(this, preview);
    };
    const onConfigure = nodeType.prototype.onConfigure;
    nodeType.prototype.onConfigure = function () {
      onConfigure?.apply(this, arguments);
      const saved = this.properties?.[PREVIEW_KEY];
      if (saved?.frames?.length) showPreview(this, saved);
    };
  },
});
