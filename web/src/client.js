// Requests to the toolchain worker, as promises. A request that takes longer than the time
// limit terminates the worker (and the runaway evaluation with it) and starts a fresh one.

const TIME_LIMIT_MS = 20000;

let worker = null;
let nextId = 1;
const pending = new Map();

function start() {
  worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  worker.onmessage = (event) => {
    const { id, answer, ms } = event.data;
    const p = pending.get(id);
    if (!p) return;
    pending.delete(id);
    clearTimeout(p.timer);
    p.resolve({ ...answer, ms });
  };
}

start();

export function ask(request) {
  return new Promise((resolve) => {
    const id = nextId++;
    const timer = setTimeout(() => {
      pending.delete(id);
      worker.terminate();
      for (const p of pending.values()) {
        clearTimeout(p.timer);
        p.resolve({ error: 'cancelled: an earlier request ran too long', ms: 0 });
      }
      pending.clear();
      start();
      resolve({ error: `stopped after ${TIME_LIMIT_MS / 1000} s: the program is too large for the playground`, ms: TIME_LIMIT_MS });
    }, TIME_LIMIT_MS);
    pending.set(id, { resolve, timer });
    worker.postMessage({ id, request });
  });
}
