// The Flowbuilder canvas: a NiceGUI custom element wrapping Vue Flow.
//
// Python owns the graph. This component draws what Python sends (props `nodes`/`edges`, rebuilt
// from the EditorState after every structural edit) and reports what the user did as events;
// it never adds an edge or deletes a node by itself. Fast-changing run status goes through
// `patchNodes` (a batched updateNodeData) so a running flow never re-renders the whole graph.
import { inject, markRaw, nextTick, onUnmounted, provide, ref, toRaw, watch } from "vue";
import { VueFlow, Handle, Position, useVueFlow, Background, Controls, MiniMap } from "flowbuilder-vueflow";

const cssPromises = {};
function loadCss(url) {
  return (cssPromises[url] ??= new Promise((resolve, reject) => {
    const link = document.createElement("link");
    link.rel = "stylesheet";
    link.href = url;
    link.onload = resolve;
    link.onerror = reject;
    document.head.appendChild(link);
  }));
}

// The executor's error starts with "Node 'id' (type) failed: ", which the red card already says;
// the badge shows the cause (the full text stays in its tooltip).
const badgeError = (e) => (e || "failed").replace(/^Node '[^']*' \([^)]*\) failed:\s*/, "");
// Fit shows every node, as far out as it takes (cards turn into title chips when their text would be too small
// to read), with PAD px round the flow and room at the bottom for the activity bar (jobs.py), so a run's line
// never lies over a card the fit placed. (Small flows stay above chip zoom by their layout: ELK wraps a long
// chain to the canvas's shape, layout.mjs.)
const FIT = { maxZoom: 1.2, minZoom: 0.02 };
const PAD = 24;
const BAR_ROOM = 58; // one activity-bar row (about 36 px) 10 px above the bottom, and a gap
// Zoom levels of detail (every canvas text stays >= 11 px on screen):
// - "full" from FULL_ZOOM: the smallest card text (type ids, port types) is 11 px;
// - "medium" from MEDIUM_ZOOM: that small print is hidden, the rest of the card is 13 px and up;
// - "compact" from COMPACT_ZOOM: the medium card with its title, port names and status scaled up to stay 11-12 px
//   (the card keeps its size: rows are 18 px, which holds an 11 px name down to this zoom), so ports stay
//   named and connectable;
// - below, "chip": each card shows only its title, sized to 12 px on screen (as n8n and ComfyUI do), with its
//   port handles on the chip's edges, above it.
const SMALL_PX = 11;
const MAIN_PX = 13;
const FULL_ZOOM = 11 / SMALL_PX;
const MEDIUM_ZOOM = 11 / MAIN_PX;
const COMPACT_ZOOM = 0.6;
const detailLevel = (zoom) =>
  zoom >= FULL_ZOOM - 1e-6 ? "full" : zoom >= MEDIUM_ZOOM - 1e-6 ? "medium" : zoom >= COMPACT_ZOOM - 1e-6 ? "compact" : "chip";
// Above this many nodes only those in view are in the DOM (a 500-node flow stays fluid), and at chip zoom
// each card is drawn "lite": its title chip and bare handle anchors, without the card's rows or Vue Flow's
// Handle components (a fitted 500-node flow would otherwise build ~2000 of them before the first paint); lite
// cards are not dragged or focused and links have no click area (no per-card drag behaviour or key handlers to
// set up: the first paint of a packed 500-node flow draws every card).
const VIRTUAL_FROM = 150;
// A lite card keeps the full card's footprint (fit, layout and links look the same): sizes measured from
// canvas.css (head and type line 45 px; body padding 10, rows 18 + 4 apart, at least 12; the service-in strip).
const CARD = { top: 45, pad: 10, row: 22, minBody: 12, serviceIn: 20, status: 22, border: 1.5 };
const cardHeight = (rows, serviceIn, status) =>
  CARD.top + Math.max(CARD.minBody, rows * CARD.row - 4 + CARD.pad) + (status ? CARD.status : 0) + (serviceIn ? CARD.serviceIn : 0);
const rowCentre = (i) => CARD.top + CARD.pad / 2 + i * CARD.row + 9 - CARD.border;

const CARD_WIDTH = 230; // canvas.css .fb-node

// A card's height from its data (the lite card's own height, and the estimate before Vue Flow measures a card).
const countPorts = (list, service) => (list || []).filter((p) => (p.kind === "service") === service).length;
const nodeStatus = (data) => (data.disabled ? "disabled" : data.status || "idle");
const cardHeightOf = (data) =>
  cardHeight(Math.max(countPorts(data.inputs, false), countPorts(data.outputs, false)), countPorts(data.inputs, true),
    nodeStatus(data) !== "idle");

// Where a node will sit and how big it will be, before Vue Flow has measured it.
const estimatedRect = (node) => {
  const px = (v) => parseFloat(v) || 0;
  if (node.style && node.style.width) return { x: node.position.x, y: node.position.y, w: px(node.style.width), h: px(node.style.height) };
  return { x: node.position.x, y: node.position.y, w: CARD_WIDTH, h: cardHeightOf(node.data || {}) };
};

// The viewport that fits boxes {x, y, w, h} into a canvas of width x height with PAD round them and ``room`` px
// kept free at the bottom.
const fitViewport = (rects, width, height, room = BAR_ROOM) => {
  if (!rects.length || !width || !height) return undefined;
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const r of rects) {
    x0 = Math.min(x0, r.x); y0 = Math.min(y0, r.y); x1 = Math.max(x1, r.x + r.w); y1 = Math.max(y1, r.y + r.h);
  }
  const w = Math.max(1, width - 2 * PAD), h = Math.max(1, height - 2 * PAD - room);
  const zoom = Math.max(FIT.minZoom, Math.min(FIT.maxZoom, w / Math.max(1, x1 - x0), h / Math.max(1, y1 - y0)));
  return { zoom, x: PAD + (w - (x1 - x0) * zoom) / 2 - x0 * zoom, y: PAD + (h - (y1 - y0) * zoom) / 2 - y0 * zoom };
};

const STATUS_ICON = {
  running: "⏳", ok: "✓", cached: "⚡", failed: "✕", skipped: "–", cancelled: "■", disabled: "⏸", warning: "⚠", changed: "✎",
};

// One node card: data ports left/right, service inputs as diamonds on the bottom edge and service
// outputs as diamonds on the top edge (n8n's sub-node wiring), a status badge and issue marker.
const FlowNode = {
  name: "FbFlowNode",
  inheritAttrs: false, // Vue Flow passes many props we do not declare
  components: { Handle },
  props: ["id", "data", "selected"],
  setup() {
    return { Position, STATUS_ICON, badgeError, lite: inject("fbLite", ref(false)) };
  },
  computed: {
    dataIn() { return (this.data.inputs || []).filter((p) => p.kind !== "service"); },
    dataOut() { return (this.data.outputs || []).filter((p) => p.kind !== "service"); },
    serviceIn() { return (this.data.inputs || []).filter((p) => p.kind === "service"); },
    serviceOut() { return (this.data.outputs || []).filter((p) => p.kind === "service"); },
    issuePorts() { return new Set((this.data.issues || []).map((i) => i.port).filter(Boolean)); },
    issueText() { return (this.data.issues || []).map((i) => (i.port ? i.port + ": " : "") + i.message).join("\n"); },
    status() { return nodeStatus(this.data); },
    progressPct() {
      const p = this.data.progress;
      return p && p.total ? Math.min(100, Math.round((100 * p.done) / p.total)) : null;
    },
  },
  methods: {
    spread(i, n) { return { left: ((i + 1) * 100) / (n + 1) + "%" }; },
    liteHeight() { return cardHeightOf(this.data) + "px"; },
    rowCentre,
    portTitle(p) { return p.name + " (" + p.type + (p.required ? "" : ", optional") + (p.multiple ? ", many" : "") + ")"; },
  },
  template: `
    <div v-if="lite" class="fb-node fb-lite" :class="['fb-status-' + status, {'fb-has-issues': (data.issues || []).length}]"
         :style="{height: liteHeight()}" :data-node-id="id" :data-type="data.typeName" :title="data.typeName">
      <div class="fb-chip"><span>{{ data.label }}</span></div>
      <div v-for="(p, i) in dataIn" :key="'in-' + p.name" class="vue-flow__handle target fb-handle fb-lite-handle vue-flow__handle-left"
           :data-handleid="p.name" :data-nodeid="id" data-handlepos="left" :style="{top: rowCentre(i) + 'px'}"></div>
      <div v-for="(p, i) in dataOut" :key="'out-' + p.name" class="vue-flow__handle source fb-handle fb-lite-handle vue-flow__handle-right"
           :data-handleid="p.name" :data-nodeid="id" data-handlepos="right" :style="{top: rowCentre(i) + 'px'}"></div>
      <div v-for="(p, i) in serviceIn" :key="'si-' + p.name" class="vue-flow__handle target fb-handle fb-lite-handle vue-flow__handle-bottom"
           :data-handleid="p.name" :data-nodeid="id" data-handlepos="bottom" :style="spread(i, serviceIn.length)"></div>
      <div v-for="(p, i) in serviceOut" :key="'so-' + p.name" class="vue-flow__handle source fb-handle fb-lite-handle vue-flow__handle-top"
           :data-handleid="p.name" :data-nodeid="id" data-handlepos="top" :style="spread(i, serviceOut.length)"></div>
    </div>
    <div v-else class="fb-node" :class="['fb-status-' + status, {'fb-has-issues': (data.issues || []).length, 'fb-has-service-in': serviceIn.length}]"
         :data-node-id="id" :data-type="data.typeName">
      <div v-if="serviceOut.length" class="fb-service-out-labels">
        <span v-for="p in serviceOut" :key="'so-' + p.name" :class="'fb-t-' + p.type">{{ p.name }}</span>
      </div>
      <Handle v-for="(p, i) in serviceOut" :key="'hso-' + p.name" type="source" :id="p.name" :position="Position.Top"
              class="fb-handle fb-service" :class="'fb-t-' + p.type" :style="spread(i, serviceOut.length)" :title="portTitle(p)" />
      <div class="fb-chip" :title="data.typeName"><span>{{ data.label }}</span></div>
      <div class="fb-head">
        <span class="fb-cat" :title="data.category">{{ (data.category || '?').slice(0, 1) }}</span>
        <span class="fb-title" :title="data.typeName">{{ data.label }}</span>
        <span v-if="(data.issues || []).length" class="fb-issues" :title="issueText">⚠ {{ data.issues.length }}</span>
      </div>
      <div class="fb-typename">{{ data.typeName }}</div>
      <div class="fb-body">
        <div class="fb-col">
          <div v-for="p in dataIn" :key="'in-' + p.name" class="fb-port fb-in" :class="{'fb-port-issue': issuePorts.has(p.name)}">
            <Handle type="target" :id="p.name" :position="Position.Left" class="fb-handle" :class="'fb-t-' + p.type" :title="portTitle(p)" />
            <span class="fb-pname">{{ p.name }}<b v-if="p.required" class="fb-req" title="required">*</b></span><small :class="'fb-tt-' + p.type">{{ p.type }}</small>
          </div>
        </div>
        <div class="fb-col fb-right">
          <div v-for="p in dataOut" :key="'out-' + p.name" class="fb-port fb-out">
            <small :class="'fb-tt-' + p.type">{{ p.type }}</small><span class="fb-pname">{{ p.name }}</span>
            <Handle type="source" :id="p.name" :position="Position.Right" class="fb-handle" :class="'fb-t-' + p.type" :title="portTitle(p)" />
          </div>
        </div>
      </div>
      <div v-if="status !== 'idle'" class="fb-status" :title="data.error || data.summary || status">
        <span class="fb-status-icon">{{ STATUS_ICON[status] || '' }}</span>
        <span class="fb-status-text">{{ status === 'failed' ? badgeError(data.error) : (data.summary || status) }}</span>
        <span v-if="data.duration != null && status !== 'failed'" class="fb-time">{{ data.duration < 1 ? Math.round(data.duration * 1000) + ' ms' : data.duration.toFixed(1) + ' s' }}</span>
      </div>
      <div v-if="progressPct !== null && status === 'running'" class="fb-progress"><div :style="{width: progressPct + '%'}"></div>
        <span>{{ data.progress.done }} / {{ data.progress.total }}</span></div>
      <div v-if="serviceIn.length" class="fb-service-in-labels">
        <span v-for="(p, i) in serviceIn" :key="'si-' + p.name" :style="spread(i, serviceIn.length)"
              :class="['fb-t-' + p.type, {'fb-port-issue': issuePorts.has(p.name)}]">{{ p.name }}<b v-if="p.required" class="fb-req" title="required">*</b></span>
      </div>
      <Handle v-for="(p, i) in serviceIn" :key="'hsi-' + p.name" type="target" :id="p.name" :position="Position.Bottom"
              class="fb-handle fb-service" :class="'fb-t-' + p.type" :style="spread(i, serviceIn.length)" :title="portTitle(p)" />
    </div>`,
};

// A sticky note (Flow.notes): drawn behind the nodes as a frame (zIndex -1 from Python), its markdown
// rendered by Python (escaped HTML), edited on double-click, saved on blur, resized from its corner.
const NoteNode = {
  name: "FbNoteNode",
  inheritAttrs: false,
  props: ["id", "data", "selected"],
  data() { return { text: this.data.text || "", editing: false }; },
  watch: { "data.text"(v) { if (!this.editing) this.text = v || ""; } },
  methods: {
    edit() {
      this.editing = true;
      this.$nextTick(() => this.$refs.area && this.$refs.area.focus());
    },
    save() {
      this.editing = false;
      if (this.text !== (this.data.text || "")) window.dispatchEvent(new CustomEvent("fb-note-changed", { detail: { id: this.id, text: this.text } }));
    },
    startResize(e) {
      e.stopPropagation();
      e.preventDefault();
      const el = this.$el.closest(".vue-flow__node") || this.$el;
      const zoom = el.getBoundingClientRect().width / el.offsetWidth || 1;
      const w0 = el.offsetWidth, h0 = el.offsetHeight, x0 = e.clientX, y0 = e.clientY;
      let size = { width: w0, height: h0 };
      const move = (ev) => {
        size = { width: Math.max(120, Math.round(w0 + (ev.clientX - x0) / zoom)), height: Math.max(60, Math.round(h0 + (ev.clientY - y0) / zoom)) };
        el.style.width = size.width + "px";
        el.style.height = size.height + "px";
      };
      const up = () => {
        window.removeEventListener("pointermove", move);
        window.removeEventListener("pointerup", up);
        window.dispatchEvent(new CustomEvent("fb-note-resized", { detail: { id: this.id, ...size } }));
      };
      window.addEventListener("pointermove", move);
      window.addEventListener("pointerup", up);
    },
  },
  template: `
    <div class="fb-note" :class="{'fb-note-editing': editing}" :data-note-id="id" @dblclick.stop="edit">
      <div class="fb-note-chip"><span>{{ data.title || 'note' }}</span></div>
      <div class="fb-note-head">note<span class="fb-note-hint">double-click to edit</span></div>
      <textarea v-if="editing" ref="area" class="nodrag nowheel" v-model="text" @blur="save" @keydown.stop
                @keydown.esc="save" placeholder="Write a note (markdown)…"></textarea>
      <div v-else class="fb-note-md" v-html="data.html || ''"></div>
      <div class="fb-note-resize nodrag" title="Drag to resize" @pointerdown="startResize"></div>
    </div>`,
};

// A data link: Vue Flow's bezier, unless that curve would pass under a card that is neither its source
// nor its target (a link that skips a column); then it goes round them in a lane above or below.
// Big flows (only the nodes in view rendered) keep the plain curve: routing costs a pass over the cards.
const LANE_GAP = 22;
const roundedPath = (pts, r = 8) => {
  let d = `M ${pts[0][0]},${pts[0][1]}`;
  for (let i = 1; i < pts.length - 1; i++) {
    const [px, py] = pts[i - 1], [x, y] = pts[i], [nx, ny] = pts[i + 1];
    const a = Math.min(r, Math.hypot(x - px, y - py) / 2), b = Math.min(r, Math.hypot(nx - x, ny - y) / 2);
    const ux = Math.sign(x - px), uy = Math.sign(y - py), vx = Math.sign(nx - x), vy = Math.sign(ny - y);
    d += ` L ${x - ux * a},${y - uy * a} Q ${x},${y} ${x + vx * b},${y + vy * b}`;
  }
  const last = pts[pts.length - 1];
  return d + ` L ${last[0]},${last[1]}`;
};
// The shortest orthogonal route from a handle to another that passes under no card: out of the source
// handle's side, along at most three lanes beside the cards, into the target handle's side. Cards are
// boxes {x, y, w, h}; the source and target cards are only passed by the short stubs at the handles.
const DIRS = { top: [0, -1], bottom: [0, 1], left: [-1, 0], right: [1, 0] };
const hitsBox = ([ax, ay], [bx, by], c, pad = 4) => {
  // an axis-parallel segment against a card grown by pad
  const x0 = Math.min(ax, bx), x1 = Math.max(ax, bx), y0 = Math.min(ay, by), y1 = Math.max(ay, by);
  return x1 > c.x - pad && x0 < c.x + c.w + pad && y1 > c.y - pad && y0 < c.y + c.h + pad;
};
// Does the segment (x0, y0)-(x1, y1) cross card c grown by 4 px? (Liang-Barsky clipping)
const lineHitsBox = (x0, y0, x1, y1, c) => {
  let lo = 0, hi = 1;
  const dx = x1 - x0, dy = y1 - y0;
  for (const [p, q] of [[-dx, x0 - (c.x - 4)], [dx, c.x + c.w + 4 - x0], [-dy, y0 - (c.y - 4)], [dy, c.y + c.h + 4 - y0]]) {
    if (p === 0) {
      if (q < 0) return false;
    } else {
      const r = q / p;
      if (p < 0) lo = Math.max(lo, r);
      else hi = Math.min(hi, r);
      if (lo > hi) return false;
    }
  }
  return true;
};
const orthoRoute = (s, sSide, t, tSide, cards, ends) => {
  const [sdx, sdy] = DIRS[sSide] || DIRS.right, [tdx, tdy] = DIRS[tSide] || DIRS.left;
  const s1 = [s[0] + sdx * LANE_GAP, s[1] + sdy * LANE_GAP], t1 = [t[0] + tdx * LANE_GAP, t[1] + tdy * LANE_GAP];
  const all = [...cards, ...ends];
  // the stubs at the handles touch their own cards; everything between them keeps clear of every card
  const clear = (pts) => pts.slice(2, -1).every((p, i) => !all.some((c) => hitsBox(pts[i + 1], p, c)))
    && !cards.some((c) => hitsBox(s, s1, c) || hitsBox(t1, t, c));
  const length = (pts) => pts.slice(1).reduce((sum, p, i) => sum + Math.abs(p[0] - pts[i][0]) + Math.abs(p[1] - pts[i][1]), 0);
  // lanes beside the cards near the link only (a route never needs to go far round)
  const x0 = Math.min(s1[0], t1[0]) - 400, x1 = Math.max(s1[0], t1[0]) + 400;
  const y0 = Math.min(s1[1], t1[1]) - 400, y1 = Math.max(s1[1], t1[1]) + 400;
  const local = all.filter((c) => c.x < x1 && c.x + c.w > x0 && c.y < y1 && c.y + c.h > y0);
  const lanesX = [...new Set([s1[0], t1[0], ...local.flatMap((c) => [c.x - LANE_GAP, c.x + c.w + LANE_GAP])])];
  const lanesY = [...new Set([s1[1], t1[1], ...local.flatMap((c) => [c.y - LANE_GAP, c.y + c.h + LANE_GAP])])];
  const near = (lanes, a, b) => [...lanes].sort((u, v) => Math.abs(u - a) + Math.abs(u - b) - Math.abs(v - a) - Math.abs(v - b)).slice(0, 8);
  const middles = [];
  for (const x of lanesX) middles.push([[x, s1[1]], [x, t1[1]]]);
  for (const y of lanesY) middles.push([[s1[0], y], [t1[0], y]]);
  for (const x of near(lanesX, s1[0], t1[0])) {
    for (const y of near(lanesY, s1[1], t1[1])) {
      middles.push([[x, s1[1]], [x, y], [t1[0], y]], [[s1[0], y], [x, y], [x, t1[1]]]);
    }
  }
  // shortest first: the first clear candidate is the route (most links need a handful of checks)
  const candidates = middles
    .map((middle) => [s, s1, ...middle, t1, t].filter((p, i, a) => !i || p[0] !== a[i - 1][0] || p[1] !== a[i - 1][1]))
    .map((pts) => ({ pts, length: length(pts) }))
    .sort((a, b) => a.length - b.length);
  return candidates.find((c) => clear(c.pts))?.pts ?? null;
};
// Routes are recomputed whenever any node changes (Vue Flow's getNodes): remembered per link and geometry.
const routeCache = new Map();
const cachedRoute = (id, key, compute) => {
  const hit = routeCache.get(id);
  if (hit && hit.key === key) return hit.value;
  const value = compute();
  routeCache.set(id, { key, value });
  if (routeCache.size > 4 * VIRTUAL_FROM) routeCache.delete(routeCache.keys().next().value);
  return value;
};
// The cards as boxes, or null while some card is not measured yet (a flow being drawn: routing each
// intermediate state would cost a pass per card for every link).
const cardBoxes = (nodes, source, target) => {
  const box = (n) => ({ x: n.computedPosition.x, y: n.computedPosition.y, w: n.dimensions.width, h: n.dimensions.height });
  const cards = nodes.filter((n) => n.type === "fbnode");
  if (cards.some((n) => !n.dimensions?.width)) return null;
  const boxes = {
    others: cards.filter((n) => n.id !== source && n.id !== target).map(box),
    ends: cards.filter((n) => n.id === source || n.id === target).map(box),
  };
  boxes.key = [...boxes.others, ...boxes.ends].map((c) => `${c.x},${c.y},${c.w},${c.h}`).join(";");
  return boxes;
};

// A service link (a model, embedder, memory or tool wired into the node that uses it): straight from the
// provider's top to the consumer's bottom, unless that line would pass under a card (another one, or its own
// two when the consumer sits below the provider); then an orthogonal route round the cards.
const ServiceEdge = {
  name: "FbServiceEdge",
  inheritAttrs: false,
  props: ["id", "source", "target", "sourceX", "sourceY", "targetX", "targetY", "sourcePosition", "targetPosition",
    "style", "interactionWidth"],
  setup() {
    return { flow: useVueFlow(), lite: inject("fbLite", ref(false)) };
  },
  computed: {
    path() {
      const { sourceX: sx, sourceY: sy, targetX: tx, targetY: ty } = this;
      const straight = `M ${sx},${sy} L ${tx},${ty}`;
      // the count first: reading getNodes would make every link recompute whenever any card is measured
      if (this.flow.nodes.value.length > VIRTUAL_FROM) return straight;
      const nodes = this.flow.getNodes.value;
      const boxes = cardBoxes(nodes, this.source, this.target);
      if (!boxes || !Number.isFinite(sx + sy + tx + ty)) return straight;
      return cachedRoute(this.id, `${sx},${sy},${tx},${ty}|${boxes.key}`, () => {
        const { others, ends } = boxes;
        // straight when it goes up from the provider's top into the consumer's bottom past no other card; a
        // consumer below its provider (a retriever under its store) would have the line cross both cards
        if (ty <= sy && !others.some((c) => lineHitsBox(sx, sy, tx, ty, c))) return straight;
        const pts = orthoRoute([sx, sy], this.sourcePosition || "top", [tx, ty], this.targetPosition || "bottom", others, ends);
        return pts ? roundedPath(pts) : straight;
      });
    },
  },
  template: `
    <path :id="id" class="vue-flow__edge-path" :d="path" :style="style" fill="none" />
    <path v-if="!lite" class="vue-flow__edge-interaction" :d="path" fill="none" stroke-opacity="0" :stroke-width="interactionWidth || 20" />`,
};

const RoutedEdge = {
  name: "FbRoutedEdge",
  inheritAttrs: false,
  props: ["id", "source", "target", "sourceX", "sourceY", "targetX", "targetY", "style", "interactionWidth", "label",
    "labelStyle", "labelBgStyle"],
  setup() {
    return { flow: useVueFlow(), lite: inject("fbLite", ref(false)) };
  },
  computed: {
    path() { return this.route.d; },
    labelWidth() { return String(this.label || "").length * 7 + 10; },
    route() {
      const { sourceX: sx, sourceY: sy, targetX: tx, targetY: ty } = this;
      const off = tx >= sx ? 0.5 * (tx - sx) : 0.25 * 25 * Math.sqrt(sx - tx);
      const curve = { d: `M ${sx},${sy} C ${sx + off},${sy} ${tx - off},${ty} ${tx},${ty}`, lx: (sx + tx) / 2, ly: (sy + ty) / 2 };
      // the count first: reading getNodes would make every link recompute whenever any card is measured
      if (this.flow.nodes.value.length > VIRTUAL_FROM) return curve;
      const nodes = this.flow.getNodes.value;
      const cards = nodes
        .filter((n) => n.type === "fbnode" && n.id !== this.source && n.id !== this.target && n.dimensions?.width)
        .map((n) => ({ x: n.computedPosition.x, y: n.computedPosition.y, w: n.dimensions.width, h: n.dimensions.height }));
      const inside = (x, y, c) => x > c.x - 4 && x < c.x + c.w + 4 && y > c.y - 4 && y < c.y + c.h + 4;
      const at = (t) => {
        const u = 1 - t;
        return [u * u * u * sx + 3 * u * u * t * (sx + off) + 3 * u * t * t * (tx - off) + t * t * t * tx,
          u * u * u * sy + 3 * u * u * t * sy + 3 * u * t * t * ty + t * t * t * ty];
      };
      const samples = Array.from({ length: 41 }, (_, i) => at(i / 40));
      const hit = cards.filter((c) => samples.some(([x, y]) => inside(x, y, c)));
      if (!hit.length) return curve;
      // out to the right of the source, along a lane, in from the left of the target (also for a link that
      // runs backwards)
      const x1 = sx + LANE_GAP, x2 = tx - LANE_GAP, lo = Math.min(x1, x2), hi = Math.max(x1, x2);
      const across = (y, c) => y > c.y - LANE_GAP / 2 && y < c.y + c.h + LANE_GAP / 2 && c.x < hi && c.x + c.w > lo;
      const lane = (up) => {
        let y = up ? Math.min(...hit.map((c) => c.y)) - LANE_GAP : Math.max(...hit.map((c) => c.y + c.h)) + LANE_GAP;
        for (let k = 0; k < 8; k++) {
          const more = cards.filter((c) => across(y, c));
          if (!more.length) break;
          y = up ? Math.min(...more.map((c) => c.y)) - LANE_GAP : Math.max(...more.map((c) => c.y + c.h)) + LANE_GAP;
        }
        return y;
      };
      const points = (y) => [[sx, sy], [x1, sy], [x1, y], [x2, y], [x2, ty], [tx, ty]];
      const clear = (pts) => pts.slice(1).every(([x, y], i) => {
        const [px, py] = pts[i], steps = Math.ceil(Math.hypot(x - px, y - py) / 6);
        return Array.from({ length: steps + 1 }, (_, k) => [px + ((x - px) * k) / steps, py + ((y - py) * k) / steps])
          .every(([qx, qy]) => !cards.some((c) => inside(qx, qy, c)));
      });
      const mid = (sy + ty) / 2;
      const lanes = [lane(true), lane(false)].sort((a, b) => Math.abs(a - mid) - Math.abs(b - mid));
      const y = lanes.find((candidate) => clear(points(candidate)));
      if (y === undefined) {
        // no single lane is clear (cards above and below): the shortest orthogonal route round them
        const boxes = cardBoxes(nodes, this.source, this.target);
        const pts = boxes && cachedRoute(this.id, `${sx},${sy},${tx},${ty}|${boxes.key}`,
          () => orthoRoute([sx, sy], "right", [tx, ty], "left", boxes.others, boxes.ends));
        if (pts) {
          const longest = pts.slice(1).reduce((b, p, i) => (Math.abs(p[0] - pts[i][0]) > Math.abs(b[1][0] - b[0][0]) ? [pts[i], p] : b), [pts[0], pts[1]]);
          return { d: roundedPath(pts), lx: (longest[0][0] + longest[1][0]) / 2, ly: longest[0][1] };
        }
      }
      const fallback = y ?? lanes[0];
      return { d: roundedPath(points(fallback)), lx: (x1 + x2) / 2, ly: fallback };
    },
  },
  template: `
    <path :id="id" class="vue-flow__edge-path" :d="path" :style="style" fill="none" />
    <path v-if="!lite" class="vue-flow__edge-interaction" :d="path" fill="none" stroke-opacity="0" :stroke-width="interactionWidth || 20" />
    <g v-if="label" class="vue-flow__edge-textwrapper" :transform="'translate(' + route.lx + ' ' + route.ly + ')'">
      <rect class="vue-flow__edge-textbg" :x="-labelWidth / 2" y="-10" :width="labelWidth" height="20" rx="3" :style="labelBgStyle" />
      <text class="vue-flow__edge-text" text-anchor="middle" dominant-baseline="central" :style="labelStyle">{{ label }}</text>
    </g>`,
};

// A copy Vue Flow may annotate: from the raw props, not through Vue's reactive proxies (one trap per field
// would cost more than the copy on a 500-node flow).
const plain = (x) => JSON.parse(JSON.stringify(toRaw(x ?? [])));
const isTyping = (el) => el && (el.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName));

export default {
  components: { VueFlow, Background, Controls, MiniMap },
  props: {
    nodes: Array,
    edges: Array,
    resourcePath: String,
    compat: Object,
  },
  emits: ["connect", "nodes_moved", "node_click", "pane_click", "delete", "shortcut", "drop_node", "note_changed", "note_resized", "ready",
    "hint"],
  setup(props, { emit }) {
    const flowId = "fb-" + Math.random().toString(36).slice(2);
    const flow = useVueFlow(flowId);
    const nodeTypes = { fbnode: markRaw(FlowNode), fbnote: markRaw(NoteNode) };
    const edgeTypes = { fbrouted: markRaw(RoutedEdge), fbservice: markRaw(ServiceEdge) };
    const big = () => (props.nodes || []).length > VIRTUAL_FROM;
    // lite cards (FlowNode) for a big flow at chip zoom; a big flow starts lite: Vue Flow renders every node
    // once to measure it, before the fit brings the zoom down
    const lite = ref(big());
    provide("fbLite", lite);

    watch(() => props.nodes, (v) => flow.setNodes(plain(v)), { immediate: true });
    watch(() => props.edges, (v) => flow.setEdges(plain(v)), { immediate: true });

    const selectedIds = () => ({
      nodes: flow.getSelectedNodes.value.map((n) => n.id),
      edges: flow.getSelectedEdges.value.map((e) => e.id),
    });

    // While a connection is dragged, handles it may end on light up and the others dim. Only a hint:
    // Python's check (the same compatible() that sent `compat`) still decides on the drop.
    const portType = (nodeId, handleId, side) => {
      const node = flow.findNode(nodeId);
      const ports = side === "source" ? node?.data?.outputs : node?.data?.inputs;
      return (ports || []).find((p) => p.name === handleId)?.type;
    };
    const fits = (from, to) => Boolean(from && to && (props.compat?.[from] || []).includes(to));
    // VueFlow's `id` names its store, not a DOM element: the wrapping div names it (NiceGUI owns the DOM id).
    const wrapEl = () => document.querySelector('[data-flow="' + flowId + '"]');
    const handles = () => wrapEl()?.querySelectorAll(".vue-flow__handle") || [];
    flow.onConnectStart(({ nodeId, handleId, handleType }) => {
      const fromType = portType(nodeId, handleId, handleType);
      wrapEl()?.classList.add("fb-connecting");
      for (const el of handles()) {
        const side = el.classList.contains("source") ? "source" : "target";
        const self = el.dataset.nodeid === nodeId && el.dataset.handleid === handleId;
        let ok = false;
        if (el.dataset.nodeid !== nodeId && side !== handleType) {
          const type = portType(el.dataset.nodeid, el.dataset.handleid, side);
          ok = handleType === "source" ? fits(fromType, type) : fits(type, fromType);
        }
        el.classList.toggle("fb-fit", ok);
        el.classList.toggle("fb-unfit", !ok && !self);
        el.closest(".fb-port")?.classList.toggle("fb-port-unfit", !ok && !self);
      }
    });
    flow.onConnectEnd(() => {
      wrapEl()?.classList.remove("fb-connecting");
      for (const el of handles()) {
        el.classList.remove("fb-fit", "fb-unfit");
        el.closest(".fb-port")?.classList.remove("fb-port-unfit");
      }
    });
    flow.onConnect((c) =>
      emit("connect", { source: c.source, sourceHandle: c.sourceHandle, target: c.target, targetHandle: c.targetHandle }),
    );
    // Positions go to Python only when a drag ends: dragging itself costs no round trips.
    flow.onNodeDragStop(({ nodes }) =>
      emit("nodes_moved", nodes.map((n) => ({ id: n.id, x: n.position.x, y: n.position.y }))),
    );
    flow.onNodeClick(({ node }) => emit("node_click", { id: node.id, kind: node.type }));
    flow.onPaneClick(() => emit("pane_click", {}));
    const frames = (n) => new Promise((r) => { const step = (k) => (k ? requestAnimationFrame(() => step(k - 1)) : r()); step(n); });
    // The room the activity bar takes at the bottom of the canvas: at least one row's, so the line of a job that
    // starts later (a run) lies over no card the fit placed.
    const barRoom = () => {
      const bar = document.querySelector(".fb-activity-builder");
      const box = wrapEl()?.getBoundingClientRect();
      if (!bar || !box || bar.classList.contains("hidden") || !bar.offsetHeight) return BAR_ROOM;
      return Math.max(BAR_ROOM, box.bottom - bar.getBoundingClientRect().top + 8);
    };
    const boxOf = (n) => (n.dimensions?.width
      ? { x: n.computedPosition.x, y: n.computedPosition.y, w: n.dimensions.width, h: n.dimensions.height }
      : estimatedRect(n));
    let lastFit = null; // the view the last fit set, and the bar's room it kept
    // Fit shows every node; the zoom picks the level of detail (canvas.css: fb-detail-*).
    const readableFit = async () => {
      const box = wrapEl()?.getBoundingClientRect();
      if (!box?.width) return;
      const nodes = flow.nodes.value;
      const room = barRoom();
      // a blank flow: its first cards come at full size
      const view = nodes.length ? fitViewport(nodes.map(boxOf), box.width, box.height, room)
        : { x: 2 * PAD, y: 2 * PAD, zoom: 1 };
      await flow.setViewport(view);
      lastFit = { ...view, room };
    };
    const atFit = () => {
      const v = flow.getViewport();
      return lastFit && Math.abs(v.zoom - lastFit.zoom) < 1e-4 && Math.abs(v.x - lastFit.x) < 1 && Math.abs(v.y - lastFit.y) < 1;
    };
    // The bar grew past the room the fit kept (several jobs at once): fit again, unless the user moved the view.
    let barObserver = null;
    const watchBar = () => {
      const bar = document.querySelector(".fb-activity-builder");
      if (!bar || barObserver) return;
      barObserver = new ResizeObserver(() => { if (atFit() && barRoom() > lastFit.room + 1) readableFit(); });
      barObserver.observe(bar);
    };
    onUnmounted(() => barObserver?.disconnect());
    let level = null;
    let fitted = false;
    let hinted = false;
    const setLite = (value) => {
      if (value === lite.value) return;
      lite.value = value;
      // the cards changed but maybe not their size: have Vue Flow measure the handles again
      nextTick(() => requestAnimationFrame(() => flow.updateNodeInternals()));
    };
    const applyZoom = (zoom) => {
      const el = wrapEl();
      if (!el || !zoom) return;
      el.style.setProperty("--fb-zoom", String(zoom));
      const next = detailLevel(zoom);
      setLite(big() && (next === "chip" || !fitted)); // a big flow stays lite until its first fit
      if (next === level) return;
      el.classList.remove("fb-detail-" + level);
      el.classList.add("fb-detail-" + next);
      level = next;
      if (level !== "chip") hinted = false;
    };
    watch(() => flow.viewport.value.zoom, applyZoom);
    watch(() => (props.nodes || []).length, () => applyZoom(flow.getViewport().zoom));
    const ready = async () => {
      applyZoom(flow.getViewport().zoom);
      await nextTick();
      await frames(1);
      // every node measured, the view fitted and the cards it shows drawn (benchmarks/ui_render.py waits for it)
      wrapEl()?.setAttribute("data-ready", "1");
    };
    const firstFit = async () => {
      if (fitted) return;
      fitted = true;
      await readableFit();
      await ready();
    };
    flow.onNodesInitialized(firstFit);
    // A big flow is fitted from positions as soon as the pane is there (the zoom picks lite chips), and again
    // once its nodes are measured. A blank flow has nothing to measure: it is ready at once.
    flow.onPaneReady(() => {
      applyZoom(flow.getViewport().zoom);
      watchBar();
      if (big()) readableFit();
      if (!flow.nodes.value.length) readableFit().then(ready);
    });
    // A drag that moved a card at chip zoom from near its edge was probably meant to start a link from a port:
    // the page says how (once, until the user zooms in).
    flow.onNodeDragStart(({ event, node }) => {
      if (level !== "chip" || hinted || node?.type !== "fbnode") return;
      const el = wrapEl()?.querySelector('.vue-flow__node[data-id="' + CSS.escape(node.id) + '"]');
      const p = event?.touches?.[0] || event;
      if (!el || p?.clientX === undefined) return;
      const r = el.getBoundingClientRect();
      const nearX = Math.min(p.clientX - r.left, r.right - p.clientX) < Math.max(12, r.width * 0.2);
      const nearY = Math.min(p.clientY - r.top, r.bottom - p.clientY) < Math.max(8, r.height * 0.2);
      if (!nearX && !nearY) return;
      hinted = true;
      emit("hint", { kind: "ports", node: node.id });
    });

    const onKeyDown = (e) => {
      const mod = e.ctrlKey || e.metaKey;
      const key = e.key.toLowerCase();
      // Save and run work from anywhere on the page, a text field included (the browser's own Ctrl+S is no use here).
      if (mod && (key === "s" || key === "enter") && !e.shiftKey && !e.altKey) {
        e.preventDefault();
        emit("shortcut", { name: key === "s" ? "save" : "run", nodes: [], edges: [] });
        return;
      }
      if (isTyping(e.target) || isTyping(document.activeElement)) return;
      if (e.key === "?") {
        e.preventDefault();
        emit("shortcut", { name: "help", nodes: [], edges: [] });
        return;
      }
      let name = null;
      if (mod && key === "z") name = e.shiftKey ? "redo" : "undo";
      else if (mod && key === "y") name = "redo";
      else if (mod && key === "c") name = "copy";
      else if (mod && key === "v") name = "paste";
      else if (mod && key === "a") name = "select_all";
      else if (!mod && (key === "delete" || key === "backspace")) name = "delete";
      if (!name) return;
      if (name === "select_all") {
        e.preventDefault();
        flow.addSelectedNodes(flow.getNodes.value);
        return;
      }
      if ((name === "copy" || name === "delete") && !selectedIds().nodes.length && !selectedIds().edges.length) return;
      e.preventDefault();
      emit("shortcut", { name, ...selectedIds() });
    };
    const onNoteChanged = (e) => emit("note_changed", e.detail);
    const onNoteResized = (e) => {
      const { id, width, height } = e.detail;
      flow.updateNode(id, { style: { width: width + "px", height: height + "px" } });
      emit("note_resized", e.detail);
    };
    const viewport = () => flow.getViewport();

    const onDragOver = (e) => {
      if (!e.dataTransfer?.types?.includes("application/x-flowbuilder-node")) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = "copy";
    };
    const onDrop = (e) => {
      const type = e.dataTransfer?.getData("application/x-flowbuilder-node");
      if (!type) return;
      e.preventDefault();
      const p = flow.screenToFlowCoordinate({ x: e.clientX, y: e.clientY });
      emit("drop_node", { type, x: Math.round(p.x), y: Math.round(p.y) });
    };

    // ---- called from Python with run_method -------------------------------------------------
    // {id: {status, summary, ...}} in one call: the UI timer coalesces run events into these.
    const patchNodes = (patches) => {
      for (const [id, patch] of Object.entries(patches)) flow.updateNodeData(id, patch);
    };
    const fitView = async () => {
      await nextTick();
      await frames(2); // let new nodes be measured first
      await readableFit();
    };
    // After the drawer opened for a selected card (the canvas narrowed), pan just enough to show that card.
    const keepInView = async (id) => {
      await frames(2);
      const node = flow.findNode(id);
      const box = wrapEl()?.getBoundingClientRect();
      if (!node || !box?.width) return;
      const v = flow.getViewport();
      const r = boxOf(node);
      const shift = (lo, hi, size, end) => (hi > size - end ? size - end - hi : 0) || (lo < PAD ? PAD - lo : 0);
      const dx = shift(r.x * v.zoom + v.x, (r.x + r.w) * v.zoom + v.x, box.width, PAD);
      const dy = shift(r.y * v.zoom + v.y, (r.y + r.h) * v.zoom + v.y, box.height, barRoom());
      if (!dx && !dy) return;
      const after = { x: v.x + dx, y: v.y + dy, zoom: v.zoom };
      await flow.setViewport(after, { duration: 200 });
      drawerPan = { before: drawerPan?.before ?? v, after };
    };
    // The drawer closed again: back to the view the user had, unless they moved it since.
    let drawerPan = null;
    const restoreView = async () => {
      const pan = drawerPan;
      drawerPan = null;
      const v = flow.getViewport();
      if (!pan || Math.abs(v.x - pan.after.x) > 1 || Math.abs(v.y - pan.after.y) > 1 || v.zoom !== pan.after.zoom) return;
      await frames(2); // the canvas is wide again
      await flow.setViewport(pan.before, { duration: 200 });
    };
    const centerPosition = () => {
      const el = wrapEl();
      const r = el ? el.getBoundingClientRect() : { left: 0, top: 0, width: 800, height: 600 };
      const p = flow.screenToFlowCoordinate({ x: r.left + r.width / 2, y: r.top + r.height / 2 });
      return { x: Math.round(p.x), y: Math.round(p.y) };
    };
    const selectNodes = (ids) => {
      flow.removeSelectedNodes(flow.getSelectedNodes.value);
      flow.addSelectedNodes(ids.map((id) => flow.findNode(id)).filter(Boolean));
    };
    const renderedCount = () => wrapEl()?.querySelectorAll(".vue-flow__node").length ?? 0;
    // The layered layout (ELK, static/dist/layout.js, loaded on first use) of Python's layout request,
    // with every card's size and data-port heights measured from the DOM (estimates for cards not drawn).
    const measured = (n) => Boolean(flow.findNode(n.id)?.dimensions?.width);
    const layeredLayout = async (request) => {
      try {
        const dist = (window.path_prefix ?? "") + props.resourcePath + "/dist";
        const { layered } = await import(dist + "/layout.js");
        await nextTick();
        // new cards are measured a frame or two after they are drawn (a big flow draws only those in view)
        const until = performance.now() + 5000;
        while (request.nodes.length <= VIRTUAL_FROM && !request.nodes.every(measured) && performance.now() < until) await frames(1);
        const box = wrapEl()?.getBoundingClientRect();
        const room = [box?.width - 2 * PAD, box?.height - 2 * PAD - barRoom()];
        if (room[0] > 0 && room[1] > 0) request.aspect = room[0] / room[1]; // the shape a fit fills
        const sizes = {};
        for (const n of request.nodes) {
          const node = flow.findNode(n.id);
          if (!node?.dimensions?.width) continue;
          n.width = node.dimensions.width;
          n.height = node.dimensions.height;
          sizes[n.id] = [n.width, n.height];
          const middle = (side, name) => {
            const h = (node.handleBounds?.[side] || []).find((b) => b.id === name);
            return h ? h.y + h.height / 2 : undefined;
          };
          for (const p of n.inputs) p.y = middle("target", p.name);
          for (const p of n.outputs) p.y = middle("source", p.name);
        }
        return { ...(await layered(request, { workerUrl: dist + "/elk-worker.js", timeoutMs: 45000 })), sizes };
      } catch (e) {
        return { error: String(e?.message || e) };
      }
    };

    return {
      flowId, lite, nodeTypes, edgeTypes, onDragOver, onDrop, onKeyDown, onNoteChanged, onNoteResized, viewport,
      patchNodes, fitView, keepInView, restoreView, centerPosition, selectNodes, renderedCount, layeredLayout,
      VIRTUAL_FROM,
      minimapColor: (n) => (n.type === "fbnote" ? "#fde68a" : n.data?.status === "failed" ? "#dc2626" : "#94a3b8"),
    };
  },
  data() {
    // The minimap would cover cards of a fitted flow: off unless asked for (remembered per browser).
    let showMap = false;
    try { showMap = localStorage.getItem("fb-minimap") === "on"; } catch (e) { /* private mode */ }
    return { cssReady: false, showMap, startView: undefined };
  },
  async mounted() {
    window.addEventListener("keydown", this.onKeyDown);
    window.addEventListener("fb-note-changed", this.onNoteChanged);
    window.addEventListener("fb-note-resized", this.onNoteResized);
    await this.$nextTick(); // window.path_prefix is set by NiceGUI after the first tick
    const base = (window.path_prefix ?? "") + this.resourcePath;
    // Vue Flow measures on init, so it renders only once its CSS is in.
    await Promise.all([loadCss(base + "/vueflow.css"), loadCss(base + "/canvas.css")]);
    if ((this.nodes || []).length > VIRTUAL_FROM) {
      this.startView = fitViewport(this.nodes.map(estimatedRect), this.$el.clientWidth, this.$el.clientHeight);
    }
    this.cssReady = true;
    this.$emit("ready", {});
  },
  methods: {
    toggleMap() {
      this.showMap = !this.showMap;
      try { localStorage.setItem("fb-minimap", this.showMap ? "on" : "off"); } catch (e) { /* private mode */ }
    },
  },
  unmounted() {
    window.removeEventListener("keydown", this.onKeyDown);
    window.removeEventListener("fb-note-changed", this.onNoteChanged);
    window.removeEventListener("fb-note-resized", this.onNoteResized);
  },
  template: `
    <div class="fb-wrap" :data-flow="flowId" @dragover="onDragOver" @drop="onDrop">
      <VueFlow v-if="cssReady" :id="flowId" :node-types="nodeTypes" :edge-types="edgeTypes" connection-mode="strict"
               :delete-key-code="null" :multi-selection-key-code="'Shift'" :selection-key-code="'Shift'"
               :default-edge-options="{ type: 'fbrouted' }" :elevate-nodes-on-select="false" :only-render-visible-elements="(nodes || []).length > VIRTUAL_FROM"
               :nodes-draggable="!lite" :nodes-focusable="!lite" :edges-focusable="!lite"
               :default-viewport="startView"
               :min-zoom="0.02" :max-zoom="2.5">
        <Background :gap="18" />
        <MiniMap v-if="showMap && (nodes || []).length <= VIRTUAL_FROM" pannable zoomable :width="160" :height="110" :node-color="minimapColor" />
        <Controls :show-interactive="false">
          <button type="button" class="vue-flow__controls-button fb-map-toggle" :title="showMap ? 'Hide the minimap' : 'Show the minimap'"
                  @click="toggleMap">▦</button>
        </Controls>
      </VueFlow>
    </div>`,
};
