// End-to-end tests of the built playground (web/dist) in headless Chromium (Debian's package,
// driven by playwright-core). Screenshots go to web/test-results/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from './serve.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.join(here, '..', 'dist');
const results = path.join(here, '..', 'test-results');
const repo = path.join(here, '..', '..');

let server, browser, base;

before(async () => {
  assert.ok(fs.existsSync(path.join(dist, 'index.html')), 'web/dist is missing: run web/build first');
  fs.mkdirSync(results, { recursive: true });
  server = await serve(dist);
  base = `http://127.0.0.1:${server.address().port}/`;
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
});

after(async () => {
  await browser?.close();
  server?.close();
});

async function open(program, { kind, width = 1280, height = 860 } = {}) {
  const page = await browser.newPage({ viewport: { width, height } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e));
  // Requests that failed or were answered with an error (a missing icon shows in the console).
  const failed = [];
  page.on('requestfailed', (r) => failed.push(`${r.url()}: ${r.failure()?.errorText}`));
  page.on('response', (r) => { if (r.status() >= 400) failed.push(`${r.url()}: ${r.status()}`); });
  page.failed = failed;
  const hash = program === undefined ? '' : `#code=${encodeURIComponent(program)}${kind ? `&kind=${kind}` : ''}`;
  await page.goto(base + 'index.html' + hash);
  page.errors = errors;
  return page;
}

async function analysed(page) {
  await page.waitForFunction(() => document.body.dataset.ok !== undefined);
}

const matmul = 'input alloc A : [2, 3]\ninput alloc B : [3, 2]\noutput alloc C : [2, 2]\nC = contr 2 3 (prod A B)\n';

test('an ill-typed program shows its code, rule and help', async () => {
  const tvm = fs.readFileSync(path.join(repo, 'examples', 'tvm_fig3a.teil'), 'utf8');
  const page = await open(tvm);
  await page.waitForSelector('.diag[data-code=E0305]');
  const text = await page.textContent('.diag[data-code=E0305]');
  assert.match(text, /T-Contr|T-Diag/);
  assert.match(text, /help:/);
  await page.screenshot({ path: path.join(results, 'ill-typed.png') });
  await page.close();
});

test('a quick fix makes the program well typed', async () => {
  // A misspelled variable (E0301): the fix replaces it with the declared name.
  const page = await open('alloc Alpha : [2]\nalloc B : [2]\nB = Alphx + Alpha\n');
  await page.waitForSelector('.diag[data-code=E0301] button.fix');
  await page.click('.diag[data-code=E0301] button.fix');
  await page.waitForFunction(() => document.body.dataset.ok === 'true');
  assert.equal(await page.evaluate(() => window.teilEditor.state.doc.toString()), 'alloc Alpha : [2]\nalloc B : [2]\nB = Alpha + Alpha\n');
  assert.equal(await page.locator('.diag.error').count(), 0);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a sub-expression that does not check has no shape, and the page says so', async () => {
  // With the cursor on a misspelled name, the sub-expressions table lists it with '—' (it
  // has no shape); the page once failed on it (`null.join`) when the table was built before
  // the fix was applied.
  const page = await open('alloc Alpha : [2]\nalloc B : [2]\nB = Alphx + Alpha\n');
  await page.waitForSelector('.diag[data-code=E0301] button.where');
  await page.click('.diag[data-code=E0301] button.where');
  await page.waitForFunction(() =>
    [...document.querySelectorAll('#sub-shapes tbody tr')].some((tr) => tr.cells[0]?.textContent === 'Alphx'));
  const rows = await page.$$eval('#sub-shapes tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)));
  const alphx = rows.find((r) => r[0] === 'Alphx');
  assert.equal(alphx[1], '—');
  assert.ok(rows.some((r) => r[0] === 'Alpha' && r[1] === '[2]'), JSON.stringify(rows));
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('spans after non-ASCII text land on the right characters', async () => {
  // Byte offsets (the toolchain's) and string indices (the editor's) differ after `ß`, Greek
  // letters, an emoji (a surrogate pair) and `€`: the fix, the statement and the marker must
  // still cover exactly `Alphx`.
  const comment = '// Größe: αβγ 😀 €\n';
  const program = `${comment}alloc Alpha : [2]\nalloc B : [2]\nB = Alphx + Alpha\n`;
  const page = await open(program);
  await page.waitForSelector('.diag[data-code=E0301] button.fix');
  await page.click('.diag[data-code=E0301] button.where');
  assert.equal(await page.evaluate(() => window.teilEditor.state.selection.main.head), program.indexOf('Alphx'));
  await page.click('.diag[data-code=E0301] button.fix');
  await page.waitForFunction(() => document.body.dataset.ok === 'true');
  assert.equal(
    await page.evaluate(() => window.teilEditor.state.doc.toString()),
    `${comment}alloc Alpha : [2]\nalloc B : [2]\nB = Alpha + Alpha\n`,
  );
  const cells = await page.$$eval('#stmt-shapes tbody td', (tds) => tds.map((td) => td.textContent));
  assert.deepEqual(cells, ['4', 'B = Alpha + Alpha', '[2]']);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('run shows the matrix product', async () => {
  const page = await open(matmul);
  await analysed(page);
  await page.click('#t-run');
  await page.click('#tab-run summary');
  await page.fill('#inputs', JSON.stringify({ A: [[1, 2, 3], [4, 5, 6]], B: [[1, 0], [0, 1], [1, 1]] }));
  await page.click('#run');
  await page.waitForSelector('table[data-name=C]');
  const cells = await page.locator('table[data-name=C] td').allTextContents();
  assert.deepEqual(cells, ['4', '5', '10', '11']);
  await page.screenshot({ path: path.join(results, 'run.png') });
  await page.close();
});

test('the functions compute the native build\'s bits in the browser', async () => {
  // The native values (`teil-interp` through the `core-math` crate) on every input of the
  // `function_bits` request, snapshotted by teil-wasm/tests/function_bits.rs; the page's module
  // computes them from the vendored CORE-MATH sources (third_party/core-math) compiled with
  // Clang. The snapshot's body follows its header, which ends at its second `---` line.
  const snap = fs.readFileSync(path.join(repo, 'teil-wasm', 'tests', 'snapshots', 'function_bits__function_bits.snap'), 'utf8');
  const native = JSON.parse(snap.slice(snap.indexOf('\n---\n') + 5));
  const page = await open(matmul);
  await analysed(page);
  const { ms, ...browser } = await page.evaluate(() => window.teilAsk({ cmd: 'function_bits' }));
  assert.equal(browser.error, undefined, browser.error);
  assert.equal(browser.cases.length, native.cases.length);
  for (const [i, n] of native.cases.entries()) {
    const b = browser.cases[i];
    const what = `${n.function} in ${n.type}`;
    assert.deepEqual([b.function, b.type, b.count], [n.function, n.type, n.count], what);
    // The special inputs one by one (a difference names its input), then all by their digest.
    if (n.special) {
      for (const [k, line] of n.special.entries()) assert.equal(b.special[k], line, `${what}: ${n.special[k]} natively`);
    }
    assert.equal(b.digest, n.digest, `${what}: the ${n.count} inputs' results differ from the native ones`);
  }
  assert.deepEqual(browser, native);
  const inputs = native.cases.reduce((sum, c) => sum + c.count, 0);
  console.log(`element-wise functions: ${inputs} inputs over ${native.cases.length} functions and types, the native bits in the browser (${ms.toFixed(0)} ms)`);
  await page.close();
});

test('the softmax example runs in binary32 and shows binary32 digits and types', async () => {
  const page = await open(matmul);
  await analysed(page);
  await page.selectOption('#examples', 'softmax_f32.teil');
  await page.waitForFunction(() => window.teilEditor.state.doc.toString().includes('redmax'));
  await page.waitForFunction(() => document.body.dataset.ok === 'true'
    && [...document.querySelectorAll('#stmt-shapes tbody td')].some((td) => td.textContent === 'f32[3]'));
  // Element types where the shapes are shown: per statement, and at the cursor.
  const rows = await page.$$eval('#stmt-shapes tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.deepEqual(rows.map((r) => r.slice(1)), [
    ['M = redmax 2 X', 'f32[3]'],
    ['E = exp (X - expa 2 4 M)', 'f32[3, 4]'],
    ['Y = E / expa 2 4 (red+ 2 E)', 'f32[3, 4]'],
  ]);
  await page.evaluate(() => {
    const doc = window.teilEditor.state.doc.toString();
    window.teilEditor.dispatch({ selection: { anchor: doc.indexOf('exp (') + 1 } });
  });
  await page.waitForFunction(() => document.querySelector('#sub-shapes tbody td')?.textContent.startsWith('exp ('));
  const first = await page.$$eval('#sub-shapes tbody tr:first-child td', (tds) => tds.map((td) => td.textContent));
  assert.deepEqual(first.slice(0, 2), ['exp (X - expa 2 4 M)', 'f32[3, 4]']);
  // Run on given inputs: 0.1 is read as the binary32 nearest it, and every value is shown with
  // binary32's shortest digits. These are `teil run`'s values, computed natively by
  // teil-wasm/tests/api.rs (binary32_values_travel_with_their_own_digits).
  await page.click('#t-run');
  await page.click('#tab-run summary');
  await page.fill('#inputs', JSON.stringify({ X: [[1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4], [-1, 0, 50, 100]] }));
  await page.click('#run');
  await page.waitForSelector('table[data-name=Y]');
  assert.deepEqual(await page.locator('table[data-name=Y] td').allTextContents(), [
    '0.032058604', '0.08714432', '0.23688284', '0.6439143',
    '0.2138382', '0.23632778', '0.26118258', '0.2886514',
    '1.4e-44', '3.8e-44', '1.9287499e-22', '1',
  ]);
  assert.deepEqual(await page.locator('table[data-name=X] td').allTextContents(), [
    '1', '2', '3', '4', '0.1', '0.2', '0.3', '0.4', '-1', '0', '50', '100',
  ]);
  const captions = await page.locator('#run-out figcaption').allTextContents();
  assert.deepEqual(captions, ['Y : f32[3, 4]', 'X : f32[3, 4]']);
  await page.screenshot({ path: path.join(results, 'softmax-f32.png') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the GELU example saturates, and shows infinities, -0 and undefined cells', async () => {
  const page = await open(matmul);
  await analysed(page);
  await page.selectOption('#examples', 'gelu_erf.teil');
  await page.waitForFunction(() => window.teilEditor.state.doc.toString().includes('erf'));
  await page.waitForFunction(() => document.body.dataset.ok === 'true');
  await page.click('#t-run');
  await page.click('#tab-run summary');
  // JSON has no infinities: the strings JavaScript's Number reads stand for them.
  await page.fill('#inputs', JSON.stringify({ X: [['-Infinity', -10, -1, -0.5], [0, 1, 5, 'Infinity']] }));
  await page.click('#run');
  await page.waitForSelector('table[data-name=Y]');
  // As teil-wasm/tests/api.rs (infinities_travel_as_strings) computes natively: -∞ · 0 is
  // undefined, erf(-10/√2) is -1 so the product is -0, erf(∞) is 1.
  assert.deepEqual(await page.locator('table[data-name=Y] td').allTextContents(), [
    '•', '-0', '-0.15865526', '-0.15426877',
    '0', '0.8413447', '4.9999986', '∞',
  ]);
  assert.deepEqual(await page.locator('table[data-name=X] td').allTextContents(), [
    '-∞', '-10', '-1', '-0.5', '0', '1', '5', '∞',
  ]);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a trace steps through the semantics to the cell value', async () => {
  const page = await open(matmul);
  await analysed(page);
  await page.click('#t-trace');
  await page.fill('#cell', 'C[2, 1]');
  await page.click('#trace');
  await page.waitForSelector('#trace-out li');
  const steps = await page.locator('#trace-out li code').allTextContents();
  assert.ok(steps.length >= 3);
  assert.ok(steps[0].includes('contr 2 3 (prod A B)'), steps[0]);
  // Random inputs with seed 1, as `teil trace --random-inputs 1`: the last line is the value.
  assert.match(steps.at(-1).trim(), /^= -?\d+$/);
  // Each step highlights the sub-expression it evaluates in the editor.
  await page.click('#step-next');
  await page.click('#step-next');
  assert.equal(await page.textContent('.cm-step'), '(prod A B)');
  for (let i = 0; i < steps.length; i++) await page.click('#step-next');
  assert.equal(await page.textContent('#step-pos'), `step ${steps.length} of ${steps.length}`);
  await page.screenshot({ path: path.join(results, 'trace.png') });
  // A trace that fails leaves no step counter and no highlight of the previous one behind.
  await page.fill('#cell', 'C[9, 9]');
  await page.click('#trace');
  await page.waitForFunction(() => /not one of its cells/.test(document.getElementById('trace-out').textContent));
  assert.equal(await page.textContent('#step-pos'), '');
  assert.equal(await page.locator('.cm-step').count(), 0);
  await page.close();
});

test('the share link round-trips and follows edits', async () => {
  const program = 'alloc A : [2]\nalloc B : [2]\nB = A + A // ünïcode & #hash\n';
  const page = await open(program);
  await analysed(page);
  assert.equal(await page.evaluate(() => window.teilEditor.state.doc.toString()), program);
  await page.click('.cm-content');
  await page.keyboard.press('Control+End');
  await page.keyboard.type('A = B\n');
  await page.waitForFunction(() => decodeURIComponent(location.hash).includes('A = B'));
  const hash = await page.evaluate(() => location.hash);
  assert.equal(decodeURIComponent(hash.slice('#code='.length)), program + 'A = B\n');
  const second = await open(decodeURIComponent(hash.slice('#code='.length)));
  await analysed(second);
  assert.equal(await second.evaluate(() => document.body.dataset.ok), 'true');
  await page.close();
  await second.close();
});

test('the C tab shows the kernel, with a padding selector', async () => {
  const page = await open(matmul);
  await analysed(page);
  await page.click('#t-c');
  await page.waitForFunction(() => document.getElementById('c-out').textContent.includes('void teil_kernel'));
  await page.selectOption('#pad', '4');
  await page.waitForFunction(() => /padded|\b4\b/.test(document.getElementById('c-out').textContent));
  await page.screenshot({ path: path.join(results, 'c.png') });
  await page.close();
});

test('einsum mode lowers an equation and points into it', async () => {
  const page = await open(matmul);
  await analysed(page);
  await page.check('input[name=mode][value=einsum]');
  await page.waitForFunction(() => document.getElementById('einsum-out').textContent.includes('contr'));
  await page.fill('#shapes', '[[2,3],[4,4]]');
  await page.waitForSelector('#problems .diag');
  assert.match(await page.textContent('#problems .diag'), /E04\d\d/);
  // Each occurrence of `j` under the equation with its extent, as `teil einsum` prints them.
  const marks = (await page.textContent('#problems .diag pre')).split('\n');
  assert.equal(marks[0], 'ij,jk->ik');
  assert.match(marks[1], /^ \^ `j` has extent 3 here/);
  assert.match(marks[2], /^ {3}\^ `j` has extent 4 here/);
  // An extent of 0: NumPy's result shape and no program to open (spec/frontends.md).
  await page.fill('#shapes', '[[2,0],[0,4]]');
  await page.waitForFunction(() => document.getElementById('einsum-out').textContent.includes('no TeIL program'));
  assert.match(await page.textContent('#einsum-out'), /the result has shape \[2, 4\] and holds only zeros/);
  assert.equal(await page.isDisabled('#einsum-open'), true);
  assert.equal(await page.$$eval('#problems .diag', (d) => d.length), 0);
  await page.close();
});

test('the sub-expressions at the cursor follow the keyboard, and say when there are none', async () => {
  const page = await open(matmul);
  await analysed(page);
  // The cursor starts in a declaration: the table says what to do instead of staying blank.
  await page.waitForFunction(() => /move the cursor into a statement/.test(document.querySelector('#sub-shapes tbody').textContent));
  // Three lines down, without a click: the statement's sub-expressions, outermost first.
  await page.focus('.cm-content');
  for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowDown');
  await page.waitForFunction(() => document.querySelectorAll('#sub-shapes tbody tr td').length >= 3);
  const first = await page.$$eval('#sub-shapes tbody tr:first-child td', (tds) => tds.map((td) => td.textContent));
  assert.deepEqual(first, ['contr 2 3 (prod A B)', '[2, 2]', 'T-Contr']);
  await page.close();
});

test('usable from the keyboard and on a phone-sized screen', async () => {
  // A long statement: its row scrolls inside the panel, the page does not grow sideways.
  const long = matmul + 'C = contr 2 3 (prod A B) + contr 2 3 (prod A B) + contr 2 3 (prod A B) + contr 2 3 (prod A B)\n';
  const page = await open(long, { width: 390, height: 844 });
  await analysed(page);
  await page.waitForSelector('#stmt-shapes tbody tr');
  assert.ok(
    await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
    'the page is wider than the phone',
  );
  await page.focus('#t-shapes');
  await page.keyboard.press('ArrowRight');
  assert.equal(await page.evaluate(() => document.activeElement.id), 't-run');
  await page.keyboard.press('Enter');
  assert.equal(await page.isVisible('#tab-run'), true);
  await page.screenshot({ path: path.join(results, 'phone.png'), fullPage: true });
  assert.deepEqual(page.failed, []);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the editor fills its column on a wide screen', async () => {
  for (const [width, height] of [[1280, 860], [1600, 1200]]) {
    const page = await open(matmul, { width, height });
    await analysed(page);
    const [editor, left, footer] = await page.evaluate(() => [
      document.querySelector('#editor .cm-editor').getBoundingClientRect().toJSON(),
      document.getElementById('left').getBoundingClientRect().toJSON(),
      document.querySelector('footer').getBoundingClientRect().toJSON(),
    ]);
    // The column is the window between the header and the footer, which ends at the window's
    // bottom; the editor takes it all but its padding and the (empty) problems list.
    assert.ok(Math.abs(footer.bottom - height) <= 1, `${width}x${height}: the footer ends at ${footer.bottom}`);
    assert.ok(Math.abs(left.bottom - footer.top) <= 1, `${width}x${height}: column ends at ${left.bottom}, footer at ${footer.top}`);
    assert.ok(editor.bottom >= left.bottom - 40, `${width}x${height}: editor ends at ${editor.bottom} of ${left.bottom}`);
    assert.ok(await page.evaluate(() => document.documentElement.scrollHeight <= window.innerHeight + 1), 'the page scrolls');
    await page.close();
  }
  // Many problems: they scroll in their own box, and the editor keeps most of the column.
  const bad = matmul + 'C = contr 1 3 (prod A B)\n'.repeat(30);
  const page = await open(bad, { width: 1280, height: 860 });
  await page.waitForSelector('.diag[data-code=E0305]');
  const [editor, problems] = await page.evaluate(() => [
    document.querySelector('#editor .cm-editor').getBoundingClientRect().height,
    document.getElementById('problems').getBoundingClientRect().height,
  ]);
  assert.ok(editor >= 400, `the editor shrank to ${editor}px`);
  assert.ok(problems <= 0.45 * 860, `the problems take ${problems}px`);
  await page.close();
});

test('a wrong statement leaves the other statements their shapes', async () => {
  const src = matmul.replace('C = ', 'alloc D : [2, 2]\nC = ') + 'D = contr 1 2 (prod A B)\n';
  const page = await open(src);
  await page.waitForSelector('.diag[data-code=E0305]');
  await page.waitForSelector('#stmt-shapes tbody tr:nth-child(2)');
  const rows = await page.$$eval('#stmt-shapes tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.deepEqual(rows, [
    ['5', 'C = contr 2 3 (prod A B)', '[2, 2]'],
    ['6', 'D = contr 1 2 (prod A B)', '—'],
  ]);
  assert.deepEqual(page.failed, []);
  await page.close();
});

test('analysis time of a 200-line program (reported, not asserted)', async () => {
  const lines = ['alloc A : [4, 4]', 'alloc B : [4, 4]'];
  for (let i = 0; i < 198; i++) lines.push(i % 2 ? 'B = contr 2 3 (prod A A)' : 'A = transp 1 2 (B + A)');
  const page = await open(lines.join('\n') + '\n');
  await analysed(page);
  await page.click('.cm-content');
  await page.keyboard.press('Control+End');
  for (let i = 0; i < 5; i++) {
    await page.keyboard.type(' ');
    await page.waitForTimeout(400);
  }
  const times = await page.evaluate(() => window.teilAnalysisTimes.slice());
  const sorted = [...times].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  fs.writeFileSync(path.join(results, 'analysis-times.json'), JSON.stringify({ lines: 200, times, median }, null, 1));
  console.log(`analysis of a 200-line program: median ${median.toFixed(2)} ms over ${times.length} edits`);
  assert.ok(times.length >= 2, 'analysis ran on every edit');
  await page.close();
});
