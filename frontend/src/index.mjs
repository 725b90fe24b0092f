// Re-export exactly what canvas.js needs. 'vue' stays external: NiceGUI's importmap resolves it to
// NiceGUI's own Vue build, so Vue Flow and NiceGUI share one Vue instance.
export { VueFlow, Handle, Position, MarkerType, useVueFlow } from "@vue-flow/core";
export { Background } from "@vue-flow/background";
export { Controls } from "@vue-flow/controls";
export { MiniMap } from "@vue-flow/minimap";
