#!/usr/bin/env python3
"""Writes `repro.py`, a reproducer a maintainer runs without TeIL, and `issue.md`, the report
to file upstream, into a committed finding (`fuzz/findings/TARGET/ID/`, spec/fuzzing.md
"Findings"):

    python3 fuzz/targets/standalone.py fuzz/findings/onnxruntime/accuracy_tanh_f32

The finding's program becomes its ONNX model as the adapter builds it (`teil.onnx.from_ops`
with the spellings drawn from the program, `teil.onnx.spelling_seed`, unless the finding's flags
say `--spelling canonical`; with `--workaround nan-reductions` where they say so), embedded in `repro.py` as
base64, beside the shrunk inputs and TeIL's oracle's outputs as literals. `repro.py` needs only
NumPy and the target's package (ONNX Runtime; TVM, whose ONNX front end reads the model with
`onnx`); it runs the model the way the adapter does, prints every output beside the expected
value, and exits 1 while the target differs (or fails), 0 once it agrees: NaN where NaN is
expected, the same infinity, finite values within `ulps` ulps of the expected one (0 unless
the finding's `finding.json` says `"ulps"`; `-0` and `+0` are equal). Its `differs(outputs)`
is the same judgement as a function, which the tests call on the expected values (a fixed
target passes) and on the recorded outputs (the bug is seen).

`issue.md` has the finding's title, the versions, `repro.py` itself, the expected behaviour
with the documentation it follows (`finding.json`'s `semantics`), and what the target does:
`repro.py`'s output, run here (with the packages installed here, which should be the pinned
ones of teil-py/requirements-dev.txt). Where the bug is already reported upstream, it says so.
"""
from __future__ import annotations

import base64
import json
import pathlib
import platform
import subprocess
import sys

import numpy as np

TEMPLATE = '''#!/usr/bin/env python3
"""{title}

Target: {target}. Standalone: needs only {needs}. Exits 1 while the
target's values differ from the expected ones (or it fails), 0 once they agree.

Expected values: TeIL's oracle ({semantics}), written below as literals.
Written by TeIL's fuzz/targets/standalone.py from the finding {finding}.
"""
{model}
INPUTS = {{
{inputs}
}}
EXPECTED = {{
{expected}
}}
# Finite values may be this many ulps (of their type) from the expected ones.
ULPS = {ulps}


def run():
    """The target's outputs, by name, in the graph's output order."""
{run}


def differs(outputs):
    """The cells where `outputs` differ from EXPECTED: NaN must be NaN, an infinity the same
    infinity, a finite value finite and within ULPS ulps (-0 equals +0)."""
    found = []
    for name, want in EXPECTED.items():
        got = np.asarray(outputs[name])
        if got.shape != want.shape:
            found.append((name, "shape", want.shape, got.shape))
            continue
        w, g = want.astype(np.float64), got.astype(np.float64)
        ulp = np.spacing(np.abs(want)).astype(np.float64)
        with np.errstate(invalid="ignore"):
            ok = np.where(np.isnan(w), np.isnan(g),
                          np.where(np.isinf(w), w == g, np.isfinite(g) & (np.abs(g - w) <= ULPS * ulp)))
        for at in zip(*np.nonzero(~ok)):
            found.append((name, at, want[at], got[at]))
    return found


def main():
    try:
        outputs = run()
    except Exception as e:  # a failure on a valid model is the bug too
        print(f"the target failed: {{type(e).__name__}}: {{e}}")
        return 1
    for name, want in EXPECTED.items():
        print(f"{{name}}: expected {{want.ravel().tolist()}}")
        print(f"{{' ' * len(name)}}  target   {{np.asarray(outputs[name]).ravel().tolist()}}")
    found = differs(outputs)
    for name, at, want, got in found:
        where = " shape" if at == "shape" else [int(i) for i in at]
        print(f"differs: {{name}}{{where}}: expected {{want!r}}, target {{got!r}}")
    print("BUG PRESENT" if found else "fixed: the target agrees")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
'''

RUN_ORT = '''    import onnxruntime as ort

    ort.set_default_logger_severity(4)  # the exception says it; no second copy in its log
    session = ort.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, INPUTS)))'''

RUN_TVM = '''    import onnx
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    model = onnx.load_from_string(MODEL)
    mod = relax.transform.LegalizeOps()(from_onnx(model, opset=18))
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    make = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
    result = vm["main"](*[make(INPUTS[i.name], tvm.cpu()) for i in model.graph.input])
    names = [o.name for o in model.graph.output]
    values = [result] if len(names) == 1 else list(result)
    return {n: v.numpy() for n, v in zip(names, values)}'''

#: The head of an ONNX reproducer: the model, serialised.
ONNX_MODEL = '''import base64
import sys

import numpy as np

# The ONNX model (opset 18), serialised: {nodes}.
MODEL = base64.b64decode(
{model}
)'''

#: XLA's: the program is a JAX function (`program`, written out below by `jax_program`), which
#: `run` compiles with `jax.jit` as the adapter (fuzz/targets/xla_ops.py) does.
RUN_JAX = '''    import jax

    jax.config.update("jax_enable_x64", True)  # float64 where the program says so
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp
    import jax.scipy.special

{program}
    results = jax.jit(program)(*INPUTS.values())
    return dict(zip(EXPECTED, (np.asarray(r) for r in results)))'''

TARGETS = {
    "onnxruntime": ("NumPy and onnxruntime", RUN_ORT),
    "tvm": ("NumPy, apache-tvm and onnx (which TVM's ONNX front end reads the model with)", RUN_TVM),
    "jax": ("NumPy and jax (jaxlib: XLA on the CPU)", RUN_JAX),
}


def literal(x: float) -> str:
    if np.isnan(x):
        return 'float("nan")'
    if np.isinf(x):
        return 'float("inf")' if x > 0 else '-float("inf")'
    return repr(float(x))


def array(a: np.ndarray) -> str:
    dtype = "np.float32" if a.dtype == np.float32 else "np.float64"
    values = ", ".join(literal(x) for x in a.ravel())
    return f"np.array([{values}], dtype={dtype}).reshape({tuple(a.shape)!r})"


def write(finding: pathlib.Path) -> pathlib.Path:
    meta = json.loads((finding / "finding.json").read_text())
    document = json.loads((finding / "ops.json").read_text())
    if meta["module"] not in TARGETS:
        raise SystemExit(f"{finding}: no standalone form for {meta['module']}")
    needs, run = TARGETS[meta["module"]]
    if meta["module"] == "jax":
        model, run, inputs, expected = jax_form(finding, meta, document, run)
    else:
        model, inputs, expected = onnx_form(finding, meta, document)
    text = TEMPLATE.format(
        title=meta["summary"].split(": ")[0].rstrip(".") + ".",
        target=meta["target"],
        needs=needs,
        semantics=meta.get("semantics", "IEEE 754 arithmetic as ONNX's operators document it"),
        finding=f"fuzz/findings/{finding.parent.name}/{finding.name}",
        model=model,
        inputs="\n".join(f"    {n!r}: {array(a)}," for n, a in inputs.items()),
        expected="\n".join(f"    {n!r}: {array(a)}," for n, a in expected.items()),
        ulps=meta.get("ulps", 0),
        run=run,
    )
    path = finding / "repro.py"
    path.write_text(text)
    write_issue(finding, meta, text)
    return path


def jax_form(finding, meta, document, run):
    """XLA's reproducer: the program as a JAX function written out by the adapter itself
    (`xla_ops.program_source`, with the contraction spellings it draws, or `jnp.einsum` alone
    under `--only-einsum`), its inputs and expected outputs in each variable's declared type."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("xla_ops", pathlib.Path(__file__).with_name("xla_ops.py"))
    xla = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(xla)
    xla.ONLY_EINSUM = "--only-einsum" in meta.get("flags", [])
    request = {"inputs": document["inputs"], "outputs": document["outputs"], "ops": document["steps"]}
    f32 = set(document.get("float32", []))
    dtype = {n: np.float32 if n in f32 else np.float64 for n in [*document["inputs"], *document["outputs"]]}
    inputs = {n: np.load(finding / "inputs" / f"{n}.npy").astype(dtype[n]) for n in document["inputs"]}
    expected = {n: np.load(finding / "expected" / f"{n}.npy").astype(dtype[n]) for n in document["outputs"]}
    model = "import sys\n\nimport numpy as np\n"
    return model, run.format(program=xla.program_source(request, indent="    ") + "\n"), inputs, expected


def onnx_form(finding, meta, document):
    """An ONNX target's reproducer: the model as the adapter builds it, serialised, and its
    inputs and expected outputs as the model declares them."""
    import teil.onnx

    flags = meta.get("flags", [])
    # The spellings the adapter drew for this program (teil.onnx.spelling_seed), unless the
    # finding was made with `--spelling canonical`.
    canonical = "--spelling" in flags and flags[flags.index("--spelling") + 1:][:1] == ["canonical"]
    spellings = None if canonical else teil.onnx.spelling_seed(document["steps"])
    model = teil.onnx.from_ops(document, spellings=spellings)
    if "nan-reductions" in flags:
        model = teil.onnx.nan_propagating_reductions(model)
    # Each input and output as the model declares it (float32 for FLOAT).
    elem = {v.name: v.type.tensor_type.elem_type for v in [*model.graph.input, *model.graph.output]}
    dtype = {n: np.float32 if e == 1 else np.float64 for n, e in elem.items()}
    inputs = {n: np.load(finding / "inputs" / f"{n}.npy").astype(dtype[n]) for n in document["inputs"]}
    names = teil.onnx.output_names(document)
    expected = {
        out: np.load(finding / "expected" / f"{var}.npy").astype(dtype[out])
        for var, out in zip(document["outputs"], names)
    }
    encoded = base64.b64encode(model.SerializeToString()).decode()
    chunks = "\n".join(f'    "{encoded[i:i + 76]}"' for i in range(0, len(encoded), 76))
    head = ONNX_MODEL.format(nodes=", ".join(n.op_type for n in model.graph.node), model=chunks)
    return head, inputs, expected


def write_issue(finding: pathlib.Path, meta: dict, repro: str) -> None:
    """`issue.md` beside `repro.py`, its output included."""
    run = subprocess.run([sys.executable, str(finding / "repro.py")], capture_output=True, text=True, timeout=600)
    output = (run.stdout + run.stderr).strip()
    versions = [meta["target"], f"NumPy {np.__version__}", f"Python {platform.python_version()}",
                f"{platform.system()} {platform.machine()}"]
    if meta["module"] == "tvm":
        import onnx

        versions.insert(1, f"onnx {onnx.__version__}")
    upstream = meta.get("upstream")
    known = (f"\n**Already reported** as {upstream}; this reproducer is offered there as a comment.\n"
             if upstream else "")
    text = f"""# {meta.get("title", meta["summary"].split(": ")[0])}
{known}
{meta["summary"]}.

## Versions

{chr(10).join(f"- {v}" for v in versions)}

## Reproducer

Save as `repro.py` and run `python3 repro.py`. It needs only {TARGETS[meta["module"]][0]}; it
exits 1 while the bug is present and 0 once fixed.

```python
{repro.rstrip()}
```

## Expected

{meta.get("semantics", "IEEE 754 arithmetic as ONNX's operators document it")}.

## Actual

```text
{output}
```

Found by TeIL's differential fuzzer, whose oracle computes every function correctly rounded
(`teil fuzz --target`, fuzz/findings/{finding.parent.name}/{finding.name}).
"""
    (finding / "issue.md").write_text(text)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(write(pathlib.Path(arg)))
