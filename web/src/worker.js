// The toolchain runs here, off the page's thread, so a long evaluation never freezes typing.
// The module answers JSON requests through a plain C ABI (teil-wasm/src/lib.rs).
import wasmUrl from './generated/teil.wasm?url';

let exports = null;

async function instantiate() {
  const bytes = await (await fetch(wasmUrl)).arrayBuffer();
  const { instance } = await WebAssembly.instantiate(bytes, {});
  exports = instance.exports;
}

const ready = instantiate();
const encoder = new TextEncoder();
const decoder = new TextDecoder();

function call(request) {
  const bytes = encoder.encode(JSON.stringify(request));
  const ptr = exports.teil_alloc(bytes.length);
  new Uint8Array(exports.memory.buffer, ptr, bytes.length).set(bytes);
  try {
    const out = exports.teil_call(ptr, bytes.length);
    const len = exports.teil_result_len();
    return JSON.parse(decoder.decode(new Uint8Array(exports.memory.buffer, out, len)));
  } finally {
    exports.teil_free(ptr, bytes.length);
  }
}

self.onmessage = async (event) => {
  const { id, request } = event.data;
  try {
    await ready;
  } catch (e) {
    self.postMessage({ id, answer: { error: `cannot load the WebAssembly module: ${e}` }, ms: 0 });
    return;
  }
  const start = performance.now();
  let answer;
  try {
    answer = call(request);
  } catch (e) {
    // A trap leaves the instance unusable: start a fresh one for the next request.
    answer = { error: `internal error in the toolchain: ${e}` };
    await instantiate();
  }
  self.postMessage({ id, answer, ms: performance.now() - start });
};
