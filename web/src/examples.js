// The examples menu: the papers' figures, the TVM Fig. 3a kernel (rejected), the CFD
// operator, a softmax and a GELU in binary32 (element types and functions), and
// index-notation kernels, read from the repository's own corpus at build time.

const papers = import.meta.glob('../../tests/papers/*.teil', { query: '?raw', import: 'default', eager: true });
const tin = import.meta.glob('../../tests/tin/fig*.tin', { query: '?raw', import: 'default', eager: true });
const own = import.meta.glob('../examples/*.teil', { query: '?raw', import: 'default', eager: true });
const repo = import.meta.glob('../../examples/*.teil', { query: '?raw', import: 'default', eager: true });

const titles = {
  'matmul.teil': 'Matrix product (both syntaxes)',
  'tvm_fig3a.teil': 'TVM kernel, TeIL paper Fig. 3a (rejected)',
  'cfd.teil': 'CFD operator, TeIL paper §5',
  'softmax_f32.teil': 'Softmax in binary32 (exp, the row maximum subtracted)',
  'gelu_erf.teil': 'GELU, erf form, in binary32',
  'teil_fig07_matmul.teil': 'TeIL paper Fig. 7: matrix product',
  'teil_fig10a_taco.teil': 'TeIL paper Fig. 10a: TACO kernels',
  'teil_fig10b_tvm_fixed.teil': 'TeIL paper Fig. 10b: TVM kernel, fixed',
  'teil_fig10c_tc.teil': 'TeIL paper Fig. 10c: Tensor Comprehensions',
  'teil_fig11_expa_proj.teil': 'TeIL paper Fig. 11: expansion and projection',
  'teil_fig12_core.teil': 'TeIL paper Fig. 12: Core-TeIL',
  'teil_sec36_equations.teil': 'TeIL paper §3.6: equations',
  'teil_fig03a_tvm_rejected.teil': 'TeIL paper Fig. 3a in TeIL (rejected)',
  'report_fig02_decl.teil': 'Report Fig. 2: declarations',
  'report_fig03_scalar.teil': 'Report Fig. 3: scalars',
  'report_fig04_contraction.teil': 'Report Fig. 4: contraction',
  'report_fig05_trace.teil': 'Report Fig. 5: trace',
  'report_fig06_transposition_small.teil': 'Report Fig. 6: transposition (small)',
  'report_fig15_qualifiers.teil': 'Report Fig. 15: qualifiers',
};

function base(path) {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** Strips the corpus's `// expect:` header line, which is test metadata. */
function clean(text) {
  return text.replace(/^\/\/ expect:.*\n/, '');
}

export const examples = [];
for (const [path, text] of Object.entries({ ...repo, ...own, ...papers })) {
  const name = base(path);
  if (!titles[name]) continue;
  examples.push({ id: name, title: titles[name], kind: 'teil', text: clean(text) });
}
for (const [path, text] of Object.entries(tin)) {
  examples.push({ id: base(path), title: `Index notation: ${base(path)}`, kind: 'tin', text: clean(text) });
}
const order = Object.keys(titles);
examples.sort((a, b) => {
  const ia = order.indexOf(a.id), ib = order.indexOf(b.id);
  return (ia < 0 ? 999 : ia) - (ib < 0 ? 999 : ib) || a.id.localeCompare(b.id);
});
