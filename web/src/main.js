// The playground page: a view over the toolchain's JSON requests (teil-wasm). No language
// logic lives here: diagnostics, shapes, fixes, results and traces all come from the worker.
import { EditorView, keymap, hoverTooltip, Decoration } from '@codemirror/view';
import { EditorState, StateEffect, StateField } from '@codemirror/state';
import { basicSetup } from './setup.js';
import { linter, lintGutter, forceLinting } from '@codemirror/lint';
import { ask } from './client.js';
import { teilLanguage } from './lang.js';
import { examples } from './examples.js';

const $ = (id) => document.getElementById(id);
const state = { kind: 'teil', analysis: null, trace: null, step: 0, lastMs: [] };

// ---------------------------------------------------------------- share links

/** The program in the URL fragment `#code=...` (percent-encoded as encodeURIComponent does). */
function fromFragment() {
  const m = location.hash.match(/^#code=([^&]*)(?:&kind=(teil|tin))?/);
  if (!m) return null;
  try {
    return { text: decodeURIComponent(m[1]), kind: m[2] || 'teil' };
  } catch {
    return null;
  }
}

function shareLink(text) {
  const kind = state.kind === 'tin' ? '&kind=tin' : '';
  return `#code=${encodeURIComponent(text)}${kind}`;
}

// ---------------------------------------------------------------- editor

const highlight = StateEffect.define();
const highlightField = StateField.define({
  create: () => Decoration.none,
  update(deco, tr) {
    deco = deco.map(tr.changes);
    for (const e of tr.effects) {
      if (e.is(highlight)) {
        deco = e.value && e.value.end > e.value.start
          ? Decoration.set([Decoration.mark({ class: 'cm-step' }).range(e.value.start, e.value.end)])
          : Decoration.none;
      }
    }
    return deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

function source() {
  return view.state.doc.toString();
}

const teilLinter = linter(async (v) => {
  const text = v.state.doc.toString();
  const a = await ask({ cmd: 'analyze', source: text, kind: state.kind });
  if (v.state.doc.toString() !== text) return [];
  state.analysis = a;
  state.lastMs.push(a.ms);
  document.body.dataset.analysisMs = String(a.ms);
  renderAnalysis(a, text);
  return (a.diagnostics || []).map((d) => ({
    from: d.span.start,
    to: Math.max(d.span.end, d.span.start),
    severity: d.severity === 'warning' ? 'warning' : 'error',
    source: d.code,
    message: `${d.message}${d.rule ? ` [${d.rule}]` : ''}${d.help ? `\nhelp: ${d.help}` : ''}`,
    actions: (d.fixes || []).map((f) => ({
      name: f.title || 'Apply fix',
      apply(view) {
        applyFix(view, f);
      },
    })),
  }));
}, { delay: 150 });

function applyFix(v, fix) {
  // Edits are spans into the text the fix was computed for (string indices, as every position
  // the module answers).
  v.dispatch({
    changes: fix.edits.map((e) => ({
      from: e.span.start,
      to: e.span.end,
      insert: e.replacement,
    })),
  });
}

const shapeHover = hoverTooltip(async (v, pos) => {
  const text = v.state.doc.toString();
  const a = await ask({ cmd: 'hover', source: text, kind: state.kind, offset: pos });
  if (!a || a.error || !a.hover) return null;
  const h = a.hover;
  return {
    pos: h.start,
    end: h.end,
    above: true,
    create() {
      const dom = document.createElement('div');
      dom.className = 'hover';
      dom.textContent = h.text;
      return { dom };
    },
  };
});

let shareTimer = null;
const view = new EditorView({
  parent: $('editor'),
  state: EditorState.create({
    doc: '',
    extensions: [
      basicSetup,
      teilLanguage,
      teilLinter,
      lintGutter(),
      shapeHover,
      highlightField,
      keymap.of([{ key: 'Mod-Enter', run: () => { runProgram(); return true; } }]),
      EditorView.updateListener.of((u) => {
        if (u.docChanged) {
          clearTimeout(shareTimer);
          shareTimer = setTimeout(() => history.replaceState(null, '', shareLink(source())), 200);
          refreshViews();
        }
        if (u.selectionSet || u.docChanged) scheduleSubShapes();
      }),
      EditorView.contentAttributes.of({ 'aria-label': 'TeIL program' }),
    ],
  }),
});

function setProgram(text, kind) {
  state.kind = kind;
  $('kind').value = kind;
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
  forceLinting(view);
}

// ---------------------------------------------------------------- analysis views

function codeLink(code) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'code';
  b.textContent = code;
  b.title = `Explain ${code}`;
  b.addEventListener('click', () => explain(code));
  return b;
}

function renderAnalysis(a, text) {
  const box = $('problems');
  box.replaceChildren();
  if (a.error && !a.diagnostics) {
    box.textContent = a.error;
    return;
  }
  const diags = a.diagnostics || [];
  // The worker sends at most 1,000 diagnostics; `omitted` counts the rest (spec/limits.md).
  const more = a.omitted ? `, ${a.omitted} not shown` : '';
  $('status').textContent = a.ok
    ? `well typed${diags.length ? `, ${diags.length} warning(s)` : ''}${more}`
    : `${diags.filter((d) => d.severity === 'error').length} error(s)${more}`;
  document.body.dataset.ok = String(!!a.ok);
  for (const d of diags) {
    const item = document.createElement('div');
    item.className = `diag ${d.severity}`;
    item.dataset.code = d.code;
    const head = document.createElement('div');
    head.append(codeLink(d.code), ` ${d.severity}: ${d.message}`);
    if (d.rule) {
      const r = document.createElement('span');
      r.className = 'rule';
      r.textContent = ` [${d.rule}]`;
      head.append(r);
    }
    const where = document.createElement('button');
    where.type = 'button';
    where.className = 'where';
    where.textContent = `line ${d.line}, column ${d.column}`;
    where.addEventListener('click', () => {
      const from = d.span.start;
      view.dispatch({ selection: { anchor: from }, scrollIntoView: true });
      view.focus();
    });
    item.append(head, where);
    for (const l of d.labels || []) {
      const p = document.createElement('div');
      p.className = 'label';
      p.textContent = `line ${l.span.line}: ${l.message}`;
      item.append(p);
    }
    for (const n of d.notes || []) {
      const p = document.createElement('div');
      p.className = 'note';
      p.textContent = `note: ${n}`;
      item.append(p);
    }
    if (d.help) {
      const p = document.createElement('div');
      p.className = 'help';
      p.textContent = `help: ${d.help}`;
      item.append(p);
    }
    for (const f of d.fixes || []) {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'fix';
      b.textContent = f.title || 'Apply fix';
      b.addEventListener('click', () => applyFix(view, f));
      item.append(b);
    }
    box.append(item);
  }
  const body = $('stmt-shapes').querySelector('tbody');
  body.replaceChildren();
  for (const s of a.statements || []) {
    const tr = document.createElement('tr');
    const stmt = text.slice(s.start, s.end);
    // A statement that does not check has no shape; the others keep theirs. The type is
    // written as the editor writes it (`f32[3, 4]`, or `[3, 4]` where no element type is named).
    const shape = s.type ?? '—';
    for (const cell of [String(s.line), stmt, shape]) {
      const td = document.createElement('td');
      td.textContent = cell;
      tr.append(td);
    }
    body.append(tr);
  }
  // The sub-expressions at the cursor, without waiting for the cursor to move.
  scheduleSubShapes();
}

let subTimer = null;
function scheduleSubShapes() {
  clearTimeout(subTimer);
  subTimer = setTimeout(async () => {
    const text = source();
    const offset = view.state.selection.main.head;
    const a = await ask({ cmd: 'subexpressions', source: text, kind: state.kind, offset });
    const body = $('sub-shapes').querySelector('tbody');
    body.replaceChildren();
    for (const s of a.subexpressions || []) {
      const tr = document.createElement('tr');
      // A sub-expression that does not check (a misspelled name) has no shape.
      const shape = s.type ?? '—';
      for (const cell of [s.text, shape, s.rule || '']) {
        const td = document.createElement('td');
        td.textContent = cell;
        tr.append(td);
      }
      body.append(tr);
    }
    if (!body.children.length) {
      // Say why the table is empty rather than leave it blank.
      const td = Object.assign(document.createElement('td'), {
        colSpan: 3,
        className: 'none',
        textContent: 'move the cursor into a statement (click, or the arrow keys)',
      });
      const tr = document.createElement('tr');
      tr.append(td);
      body.append(tr);
    }
  }, 120);
}

// ---------------------------------------------------------------- views on demand

let refreshTimer = null;
function refreshViews() {
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => showTab(currentTab(), false), 250);
}

async function textView(request, out) {
  const a = await ask({ ...request, source: source(), kind: state.kind });
  $(out).textContent = a.error
    ? `${a.error}${a.diagnostics ? `\n${a.diagnostics.map((d) => `${d.code}: ${d.message}`).join('\n')}` : ''}`
    : a.text;
}

function syntax() {
  return document.querySelector('input[name=syntax]:checked').value;
}

const views = {
  'tab-fmt': () => textView({ cmd: 'fmt', syntax: syntax() }, 'fmt-out'),
  'tab-core': () => textView({ cmd: 'fmt', core: true }, 'core-out'),
  'tab-c': () => textView({ cmd: 'emit_c', pad: Number($('pad').value) }, 'c-out'),
};

/** A cell's value: `null` is undefined (•), the infinities come as the strings `"Infinity"` and
 *  `"-Infinity"`; an `f32` value comes with binary32's shortest digits, shown as they are. */
function formatValue(x, elem) {
  if (x === null) return '•';
  if (typeof x === 'string') return x.startsWith('-') ? '-∞' : '∞';
  if (Object.is(x, -0)) return '-0';
  if (elem === 'f32' || Number.isInteger(x)) return String(x);
  return x.toPrecision(6).replace(/\.?0+$/, '');
}

function tensorView(t) {
  const box = document.createElement('figure');
  box.className = 'tensor';
  const cap = document.createElement('figcaption');
  // A large tensor comes as its leading block, whose extents are `shown` (spec/limits.md).
  const block = t.shown ? ` (the first [${t.shown.join(', ')}] shown)` : '';
  cap.textContent = `${t.name} : ${t.type}${block}`;
  box.append(cap);
  const table = document.createElement('table');
  table.dataset.name = t.name;
  const rows = t.shape.length === 0 ? [[t.data]]
    : t.shape.length === 1 ? [t.data]
    : t.shape.length === 2 ? t.data
    : null;
  if (rows) {
    const flat = rows.flat().filter((x) => typeof x === 'number');
    const lo = Math.min(...flat), hi = Math.max(...flat);
    for (const row of rows) {
      const tr = document.createElement('tr');
      for (const x of row) {
        const td = document.createElement('td');
        td.textContent = formatValue(x, t.elem);
        if (x === null) {
          td.className = 'undef';
          td.title = 'undefined';
        } else if (t.shape.length === 2 && hi > lo && typeof x === 'number') {
          // Heat map: blue (lowest) to red (highest).
          const f = (x - lo) / (hi - lo);
          td.style.background = `hsl(${240 - 240 * f} 70% 85%)`;
        }
        tr.append(td);
      }
      table.append(tr);
    }
    box.append(table);
  } else {
    const pre = document.createElement('pre');
    pre.textContent = JSON.stringify(t.data).replaceAll('null', '•').replace(/"(-?)Infinity"/g, '$1∞');
    box.append(pre);
  }
  return box;
}

async function runProgram() {
  showTab('tab-run', true);
  const out = $('run-out');
  out.textContent = 'running…';
  const req = { cmd: 'run', source: source(), kind: state.kind, seed: Number($('seed').value) || 0 };
  const typed = $('inputs').value.trim();
  if (typed) {
    try {
      req.inputs = JSON.parse(typed);
    } catch (e) {
      out.textContent = `the inputs are not JSON: ${e.message}`;
      return;
    }
  }
  const a = await ask(req);
  out.replaceChildren();
  if (a.error) {
    out.textContent = a.error;
    return;
  }
  const h = document.createElement('h2');
  h.textContent = 'Outputs';
  out.append(h, ...a.outputs.map(tensorView));
  const hi = document.createElement('h2');
  hi.textContent = 'Inputs';
  out.append(hi, ...a.inputs.map(tensorView));
}

async function traceCell() {
  const cell = $('cell').value.trim();
  const list = $('trace-out');
  list.replaceChildren();
  const a = await ask({ cmd: 'trace', source: source(), kind: state.kind, cell, seed: Number($('seed').value) || 0 });
  if (a.error) {
    list.textContent = a.error;
    state.trace = null;
    // Nothing to step through: no counter and no highlighted sub-expression of the last one.
    $('step-pos').textContent = '';
    view.dispatch({ effects: highlight.of(null) });
    return;
  }
  state.trace = a.lines;
  a.lines.forEach((l, i) => {
    const li = document.createElement('li');
    li.tabIndex = -1;
    li.innerHTML = '';
    const f = document.createElement('code');
    f.textContent = l.text;
    const r = document.createElement('span');
    r.className = 'rule';
    r.textContent = l.rule;
    li.append(f, r);
    li.addEventListener('click', () => step(i));
    list.append(li);
  });
  step(0);
}

function step(i) {
  if (!state.trace) return;
  state.step = Math.max(0, Math.min(i, state.trace.length - 1));
  const items = $('trace-out').children;
  for (let k = 0; k < items.length; k++) items[k].classList.toggle('current', k === state.step);
  items[state.step]?.scrollIntoView({ block: 'nearest' });
  $('step-pos').textContent = `step ${state.step + 1} of ${state.trace.length}`;
  const line = state.trace[state.step];
  view.dispatch({
    effects: highlight.of(line.span ? { start: line.span.start, end: line.span.end } : null),
  });
}

async function explain(code) {
  $('explain-code').value = code;
  showTab('tab-explain', true);
  const a = await ask({ cmd: 'explain', code });
  $('explain-out').textContent = a.error || `${a.code}: ${a.title}\n\n${a.text}`;
}

// ---------------------------------------------------------------- einsum mode

async function lowerEinsum() {
  const a = await ask({ cmd: 'einsum', equation: $('equation').value, shapes: $('shapes').value });
  const out = $('einsum-out');
  const box = $('problems');
  box.replaceChildren();
  if (a.error) {
    out.textContent = a.error;
    return;
  }
  // An operand with an extent of 0 has no TeIL program (spec/frontends.md, "Extents of 0").
  const lowered = a.ok && a.program !== null;
  if (!a.ok) out.textContent = '';
  else if (lowered) out.textContent = `${a.program}\n// result shape: [${a.shape.join(', ')}]`;
  else out.textContent = `// no TeIL program: operand ${a.empty_operand} has an extent of 0 and TeIL tensors have no empty dimensions\n// the result has shape [${a.shape.join(', ')}] and holds only zeros`;
  $('einsum-open').disabled = !lowered;
  for (const d of a.diagnostics || []) {
    const item = document.createElement('div');
    item.className = `diag ${d.severity}`;
    item.dataset.code = d.code;
    const text = a.in === 'equation' ? $('equation').value : $('shapes').value;
    // Under the text, a caret line per label, as the CLI draws them: the primary label's, then
    // each secondary one's (for E0404, where each occurrence of the index has its extent).
    // Spans are string indices; a caret is as wide as the text it covers; columns count
    // characters.
    const caret = (span, column, message) =>
      `${' '.repeat(column - 1)}${'^'.repeat(Math.max(1, span.end - span.start))}${message ? ` ${message}` : ''}`;
    const lines = [text, caret(d.span, d.column, d.label)];
    for (const l of d.labels || []) {
      if (l.span) lines.push(caret(l.span, l.span.column, l.message));
    }
    const pre = document.createElement('pre');
    pre.textContent = lines.join('\n');
    item.append(codeLink(d.code), ` ${d.message}${d.rule ? ` [${d.rule}]` : ''}`, pre);
    if (d.help) item.append(Object.assign(document.createElement('div'), { className: 'help', textContent: `help: ${d.help}` }));
    box.append(item);
  }
  $('status').textContent = lowered ? 'well typed' : a.ok ? 'no program (an extent of 0)' : `${(a.diagnostics || []).length} error(s)`;
}

function setMode(mode) {
  $('program-pane').hidden = mode !== 'program';
  $('einsum-pane').hidden = mode !== 'einsum';
  if (mode === 'einsum') lowerEinsum();
  else forceLinting(view);
}

// ---------------------------------------------------------------- tabs (WAI-ARIA tabs pattern)

const tabs = [...document.querySelectorAll('[role=tab]')];

function currentTab() {
  return tabs.find((t) => t.getAttribute('aria-selected') === 'true').getAttribute('aria-controls');
}

function showTab(panel, focus) {
  for (const t of tabs) {
    const on = t.getAttribute('aria-controls') === panel;
    t.setAttribute('aria-selected', String(on));
    t.tabIndex = on ? 0 : -1;
    $(t.getAttribute('aria-controls')).hidden = !on;
    if (on && focus) t.focus();
  }
  views[panel]?.();
}

for (const t of tabs) {
  t.addEventListener('click', () => showTab(t.getAttribute('aria-controls'), true));
  t.addEventListener('keydown', (e) => {
    const i = tabs.indexOf(t);
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    showTab(tabs[(to + tabs.length) % tabs.length].getAttribute('aria-controls'), true);
  });
}

// ---------------------------------------------------------------- wiring

const select = $('examples');
select.append(new Option('— choose an example —', ''));
for (const e of examples) select.append(new Option(e.title, e.id));
select.addEventListener('change', () => {
  const e = examples.find((x) => x.id === select.value);
  if (e) setProgram(e.text, e.kind);
});
$('kind').addEventListener('change', () => {
  state.kind = $('kind').value;
  history.replaceState(null, '', shareLink(source()));
  forceLinting(view);
});
$('share').addEventListener('click', async () => {
  const url = location.href.split('#')[0] + shareLink(source());
  history.replaceState(null, '', shareLink(source()));
  try {
    await navigator.clipboard.writeText(url);
    $('status').textContent = 'link copied';
  } catch {
    $('status').textContent = 'link is in the address bar';
  }
});
$('run').addEventListener('click', runProgram);
$('trace').addEventListener('click', traceCell);
$('cell').addEventListener('keydown', (e) => { if (e.key === 'Enter') traceCell(); });
$('step-prev').addEventListener('click', () => step(state.step - 1));
$('step-next').addEventListener('click', () => step(state.step + 1));
$('trace-out').addEventListener('keydown', (e) => {
  if (e.key === 'ArrowDown') step(state.step + 1);
  if (e.key === 'ArrowUp') step(state.step - 1);
});
$('pad').addEventListener('change', () => views['tab-c']());
for (const r of document.querySelectorAll('input[name=syntax]')) r.addEventListener('change', () => views['tab-fmt']());
for (const r of document.querySelectorAll('input[name=mode]')) r.addEventListener('change', () => setMode(r.value));
$('explain-code').addEventListener('keydown', (e) => { if (e.key === 'Enter') explain($('explain-code').value.trim()); });
for (const id of ['equation', 'shapes']) $(id).addEventListener('input', lowerEinsum);
$('einsum-open').addEventListener('click', () => {
  const text = $('einsum-out').textContent.replace(/\n\/\/ result shape:.*$/, '\n');
  document.querySelector('input[name=mode][value=program]').checked = true;
  setMode('program');
  setProgram(text, 'teil');
});
window.addEventListener('hashchange', () => {
  const f = fromFragment();
  if (f && f.text !== source()) setProgram(f.text, f.kind);
});

const initial = fromFragment();
if (initial) {
  setProgram(initial.text, initial.kind);
} else {
  const e = examples.find((x) => x.id === 'matmul.teil') || examples[0];
  select.value = e.id;
  setProgram(e.text, e.kind);
}

// Offline: the service worker keeps every file the page loaded.
if ('serviceWorker' in navigator && location.protocol !== 'file:') {
  navigator.serviceWorker.register('./sw.js').catch(() => {});
}

// For the end-to-end tests and curious users: the analysis times of this session, in ms.
window.teilAnalysisTimes = state.lastMs;
window.teilEditor = view;
// The toolchain's requests, for the end-to-end tests (web/tests/e2e.test.mjs).
window.teilAsk = ask;
