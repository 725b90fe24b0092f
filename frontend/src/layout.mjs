// Layered layout of a flow with ELK (Eclipse Layout Kernel, elkjs), built into its own file
// (flowbuilder/ui/static/dist/layout.js) that the canvas loads only when a flow needs a layout. ELK itself
// runs in a web worker (dist/elk-worker.js, elkjs's own build): the page stays responsive, and a layout
// that takes too long is stopped (the caller then keeps the Python layout).
//
// Input (EditorState.layout_request() in Python, with card sizes measured from the DOM by canvas.js):
//   nodes:  [{id, width, height, inputs: [{name, y}], outputs: [{name, y}]}]  data ports, y from the card top
//   owner:  {subNodeId: consumerId}   service sub-nodes (embedder, model, memory...) drawn UNDER their consumer
//   edges:  [{source, sourceHandle, target, targetHandle}]
//   aspect: width / height of the room a fit fills on the canvas (unconnected parts are packed in rows to it)
//   notes:  [{id, members: [nodeId], header, width, height}]  sticky notes and the nodes they frame (header:
//           room for the text); a note that frames nothing keeps its size and is placed beside the flow
// Output: {positions: {id: {x, y}}, notes: {id: {x, y, width, height}}}
//
// Each main node and the tree of sub-nodes under it form one ELK node (a "cluster") with the main card's
// data ports on its sides, so the layered algorithm ranks, orders and aligns the main cards while every
// sub-node stays below its consumer (n8n's tidy-up). A note that frames nodes is an ELK compound node
// holding their clusters: ELK sizes it round them and keeps other cards out of it. Long links get ELK's
// dummy nodes, so a link that skips a column passes between cards instead of under them.
import ELK from "elkjs/lib/elk-api.js";

const SUB_GAP_Y = 70; // between a card and the sub-nodes under it
const SUB_GAP_X = 45; // between sibling sub-nodes
const FRAME_PAD = 24; // a note's margin round its nodes
const PART_GAP = 60; // between unconnected parts of the flow

// spacing is not inherited by a note's compound node: both get it
const SPACING = {
  "elk.layered.spacing.nodeNodeBetweenLayers": "90",
  "elk.spacing.nodeNode": "40",
  "elk.layered.spacing.edgeNodeBetweenLayers": "30",
  "elk.spacing.edgeNode": "24",
};

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

// options: {workerUrl, timeoutMs} in the browser, or {elk} (an ELK instance, e.g. elk.bundled.js in node)
export async function layered(request, options = {}) {
  const nodes = new Map(request.nodes.map((n) => [n.id, n]));
  const owner = Object.fromEntries(Object.entries(request.owner || {}).filter(([c, p]) => nodes.has(c) && nodes.has(p)));
  // A sub-node shared by nodes of different clusters (one embedder for the store that writes and the one
  // that searches) is a node of its own: under one of them it would sit in that one's frame.
  const ownerOf = (id) => {
    const seen = new Set();
    while (owner[id] !== undefined && !seen.has(id)) {
      seen.add(id);
      id = owner[id];
    }
    return id;
  };
  for (const child of Object.keys(owner)) {
    const consumers = (request.edges || []).filter((e) => e.source === child && nodes.has(e.target)).map((e) => e.target);
    if (new Set(consumers.map(ownerOf)).size > 1) delete owner[child];
  }
  const children = new Map();
  for (const [child, parent] of Object.entries(owner).sort()) {
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(child);
  }
  const rootOf = (id) => {
    const seen = new Set();
    while (owner[id] !== undefined && !seen.has(id)) {
      seen.add(id);
      id = owner[id];
    }
    return id;
  };
  const mains = request.nodes.map((n) => n.id).filter((id) => owner[id] === undefined);

  // cluster geometry: a card with its sub-node trees centred under it
  const treeWidth = new Map();
  const width = (id) => {
    if (!treeWidth.has(id)) {
      const kids = children.get(id) || [];
      const below = kids.length ? sum(kids.map(width)) + SUB_GAP_X * (kids.length - 1) : 0;
      treeWidth.set(id, Math.max(nodes.get(id).width, below));
    }
    return treeWidth.get(id);
  };
  const height = (id) => {
    const kids = children.get(id) || [];
    return nodes.get(id).height + (kids.length ? SUB_GAP_Y + Math.max(...kids.map(height)) : 0);
  };
  // offsets of every card inside its cluster, the main card at the top centre
  const offsets = new Map();
  const place = (id, left, top) => {
    const w = width(id);
    const card = nodes.get(id);
    offsets.set(id, { x: left + (w - card.width) / 2, y: top });
    const kids = children.get(id) || [];
    let x = left + (w - (sum(kids.map(width)) + SUB_GAP_X * (kids.length - 1))) / 2;
    for (const kid of kids) {
      place(kid, x, top + card.height + SUB_GAP_Y);
      x += width(kid) + SUB_GAP_X;
    }
  };

  const portId = (id, side, name) => `${id}\u0000${side}\u0000${name}`;
  const clusters = new Map();
  for (const id of mains) {
    place(id, 0, 0);
    const card = nodes.get(id);
    const at = offsets.get(id);
    const ports = [
      ...(card.inputs || []).map((p, i) => ({
        id: portId(id, "in", p.name), width: 1, height: 1, x: at.x - 1, y: p.y ?? 40 + 22 * i,
        layoutOptions: { "elk.port.side": "WEST" },
      })),
      ...(card.outputs || []).map((p, i) => ({
        id: portId(id, "out", p.name), width: 1, height: 1, x: at.x + card.width, y: p.y ?? 40 + 22 * i,
        layoutOptions: { "elk.port.side": "EAST" },
      })),
    ];
    clusters.set(id, {
      id, width: width(id), height: height(id), ports,
      layoutOptions: { "elk.portConstraints": "FIXED_POS" },
    });
  }

  // notes that frame nodes become compound nodes around the clusters of their main cards
  const frameOf = new Map();
  const frames = [];
  const free = [];
  for (const note of request.notes || []) {
    const members = [...new Set((note.members || []).filter((m) => nodes.has(m)).map(rootOf))]
      .filter((m) => !frameOf.has(m));
    if (!members.length) {
      // a note that frames no node: placed beside the flow, not left where the file had it
      free.push({ id: note.id, width: Math.max(120, note.width || 220), height: Math.max(60, note.height || 120) });
      continue;
    }
    for (const m of members) frameOf.set(m, note.id);
    frames.push({
      id: note.id,
      children: members.map((m) => clusters.get(m)),
      layoutOptions: {
        ...SPACING,
        "elk.padding": `[top=${FRAME_PAD + (note.header || 0)},left=${FRAME_PAD},bottom=${FRAME_PAD},right=${FRAME_PAD}]`,
      },
    });
  }

  const dataPort = (id, side, name) => {
    const card = nodes.get(id);
    const list = side === "in" ? card.inputs : card.outputs;
    return (list || []).some((p) => p.name === name) ? portId(id, side, name) : id;
  };
  const edges = [];
  const seen = new Set();
  for (const [i, e] of (request.edges || []).entries()) {
    if (!nodes.has(e.source) || !nodes.has(e.target)) continue;
    const a = rootOf(e.source), b = rootOf(e.target);
    if (a === b) continue; // a service link inside a cluster
    // a link between two main cards joins their ports; one from or to a sub-node joins the clusters
    const source = a === e.source ? dataPort(a, "out", e.sourceHandle) : a;
    const target = b === e.target ? dataPort(b, "in", e.targetHandle) : b;
    const key = source + "\u0001" + target;
    if (seen.has(key)) continue;
    seen.add(key);
    edges.push({ id: "e" + i, sources: [source], targets: [target] });
  }

  // Connected parts (a note's frame holds its cards together) are laid out one by one and then packed in
  // rows to the canvas's shape: ELK stacks the parts of a hierarchical graph in one column.
  const tops = [...frames, ...mains.filter((m) => !frameOf.has(m)).map((m) => clusters.get(m)), ...free];
  const topOf = new Map();
  for (const top of tops) {
    topOf.set(top.id, top.id);
    for (const child of top.children || []) topOf.set(child.id, top.id);
  }
  const topOfEnd = (end) => topOf.get(end.split("\u0000")[0]);
  const parent = new Map(tops.map((t) => [t.id, t.id]));
  const find = (x) => (parent.get(x) === x ? x : find(parent.get(x)));
  for (const e of edges) parent.set(find(topOfEnd(e.sources[0])), find(topOfEnd(e.targets[0])));
  const parts = new Map();
  for (const top of tops) {
    const key = find(top.id);
    if (!parts.has(key)) parts.set(key, { children: [], edges: [] });
    parts.get(key).children.push(top);
  }
  for (const e of edges) parts.get(find(topOfEnd(e.sources[0]))).edges.push(e);

  const elk = options.elk || new ELK({ workerUrl: options.workerUrl });
  let timer = null;
  const expired = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`ELK took longer than ${(options.timeoutMs || 30000) / 1000} s`)), options.timeoutMs || 30000);
  });
  const laidParts = [];
  try {
    for (const part of parts.values()) {
      const graph = {
        id: "root",
        layoutOptions: {
          "elk.algorithm": "layered",
          "elk.direction": "RIGHT",
          "elk.hierarchyHandling": "INCLUDE_CHILDREN",
          "elk.edgeRouting": "ORTHOGONAL",
          "elk.padding": "[top=0,left=0,bottom=0,right=0]",
          "elk.layered.nodePlacement.strategy": "NETWORK_SIMPLEX",
          "elk.layered.considerModelOrder.strategy": "NODES_AND_EDGES",
          // a flow of one part wraps its long chain into rows to the canvas's shape (in one row, a 9-card chain
          // at 1280 px would be fitted as chips); parts of a bigger flow are packed in rows instead (below)
          "elk.layered.wrapping.strategy": parts.size === 1 ? "SINGLE_EDGE" : "OFF",
          "elk.aspectRatio": String(Math.min(4, Math.max(0.5, request.aspect || 2.1))),
          ...SPACING,
        },
        children: part.children,
        edges: part.edges,
      };
    laidParts.push(await Promise.race([elk.layout(graph), expired]));
    }
  } finally {
    clearTimeout(timer);
    if (!options.elk) elk.terminateWorker();
  }
  // shelf packing, in the flow's order: of a few dozen row widths (one part a row ... all in one row), the one
  // whose packing is fitted into the canvas's shape at the largest zoom (flowbuilder/ui/state.py shelf_pack)
  const aspect = Math.min(4, Math.max(0.5, request.aspect || 2.1));
  const widest = Math.max(...laidParts.map((g) => g.width));
  const total = sum(laidParts.map((g) => g.width + PART_GAP));
  const shelves = (rowWidth) => {
    const corners = [];
    let x = 0, y = 0, rowHeight = 0, used = 0;
    for (const g of laidParts) {
      if (x > 0 && x + g.width > rowWidth) {
        x = 0;
        y += rowHeight + PART_GAP;
        rowHeight = 0;
      }
      corners.push([x, y]);
      used = Math.max(used, x + g.width);
      x += g.width + PART_GAP;
      rowHeight = Math.max(rowHeight, g.height);
    }
    return { corners, cost: Math.max(used / aspect, y + rowHeight) };
  };
  let best = null;
  for (let i = 0; i <= 48; i++) {
    const packed = shelves(widest + (total - widest) * (i / 48) ** 2);
    if (!best || packed.cost < best.cost) best = packed;
  }
  const origin = new Map(laidParts.map((g, i) => [g, best.corners[i]]));

  const positions = {};
  const notes = {};
  const walk = (node, dx, dy) => {
    for (const child of node.children || []) {
      const x = dx + child.x, y = dy + child.y;
      if (clusters.has(child.id)) {
        const inCluster = [...offsets.keys()].filter((id) => rootOf(id) === child.id);
        for (const id of inCluster) positions[id] = { x: Math.round(x + offsets.get(id).x), y: Math.round(y + offsets.get(id).y) };
      } else {
        notes[child.id] = { x: Math.round(x), y: Math.round(y), width: Math.round(child.width), height: Math.round(child.height) };
        walk(child, x, y);
      }
    }
  };
  for (const g of laidParts) walk(g, ...origin.get(g));
  return { positions, notes };
}
