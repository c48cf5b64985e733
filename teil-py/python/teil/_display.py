"""Rich displays for notebooks: the ``_repr_html_`` and ``_repr_markdown_`` of
:class:`teil.Diagnostic`, :class:`teil.Program` and :class:`teil.Kernel` (the native classes
call the functions here), of a ``%%teil`` cell's result, and :class:`Trace`, what
:meth:`teil.Program.trace` returns.

Pure Python and the standard library only: nothing here imports IPython, so a user without
notebooks pays nothing. Every piece of user text goes through :func:`html.escape`.
"""

from __future__ import annotations

import html
from typing import Any, NamedTuple, Optional, Sequence

# One small stylesheet, inlined in every display (a notebook keeps no state between outputs).
_STYLE = (
    "<style>"
    ".teil{font-family:var(--jp-content-font-family,system-ui,sans-serif);line-height:1.4}"
    ".teil pre{margin:.3em 0;padding:.4em .6em;background:rgba(127,127,127,.08);"
    "overflow-x:auto}"
    ".teil table{border-collapse:collapse}"
    ".teil td,.teil th{padding:.15em .6em;text-align:left;vertical-align:top}"
    ".teil mark{background:rgba(255,200,0,.45);color:inherit}"
    ".teil .error{color:#c62828;font-weight:bold}"
    ".teil .warning{color:#b26a00;font-weight:bold}"
    "</style>"
)


def _e(text: Any) -> str:
    return html.escape(str(text))


def _shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(n) for n in shape) + "]"


def _md(text: Any) -> str:
    """Text for a Markdown table cell or line: backslashes, pipes and the characters Markdown
    formats are escaped."""
    out = str(text).replace("\\", "\\\\")
    for c in "|*_`<>[]#":
        out = out.replace(c, "\\" + c)
    return out.replace("\n", " ")


def _code(text: Any) -> str:
    """`text` as Markdown inline code, with a fence longer than any run of backticks in it."""
    s = str(text).replace("\n", " ")
    ticks = "`"
    while ticks in s:
        ticks += "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def _fenced(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}text\n{text.rstrip()}\n{fence}"


def diagnostic_html(d: Any) -> str:
    """A diagnostic: severity and code, message, the rule, the rendered report (the source
    lines with the span underlined and labelled), the help, and the code's explanation folded
    away."""
    from . import _native

    head = (
        f'<span class="{_e(d.severity)}">{_e(d.severity)}[{_e(d.code)}]</span>: {_e(d.message)}'
    )
    if d.rule:
        head += f" <small>(rule <code>{_e(d.rule)}</code>)</small>"
    parts = [f'<div class="teil teil-diagnostic">{_STYLE}<div>{head}</div>']
    parts.append(f"<pre>{_e(str(d))}</pre>")
    if d.help:
        parts.append(f"<div><b>help:</b> {_e(d.help)}</div>")
    parts.append(
        f"<details><summary>{_e(d.code)}: what it means</summary>"
        f"<pre>{_e(_native.explain(d.code))}</pre></details>"
    )
    parts.append("</div>")
    return "".join(parts)


def diagnostic_markdown(d: Any) -> str:
    rule = f" (rule {_code(d.rule)})" if d.rule else ""
    lines = [f"**{d.severity}[{d.code}]**: {_md(d.message)}{rule}", "", _fenced(str(d))]
    if d.help:
        lines += ["", f"help: {_md(d.help)}"]
    return "\n".join(lines) + "\n"


# TeIL's names of the element types, by the NumPy dtype `Program.dtypes` gives.
_ELEM = {"float64": "f64", "float32": "f32"}


def _rows(p: Any) -> tuple[list[tuple[str, str, str, str]], list[tuple[str, str]]]:
    dtypes = p.dtypes
    declarations = [
        (name, _shape(shape), qualifier or "", _ELEM.get(dtypes[name], dtypes[name]))
        for name, (shape, qualifier) in p.variables.items()
    ]
    statements = [(text, _shape(shape)) for text, shape in p.statements]
    return declarations, statements


def program_html(p: Any) -> str:
    """A program: its declarations (name, shape, qualifier, element type ``f64`` or ``f32``)
    and its statements with the shape of each right-hand side, as the playground's statements
    table shows them."""
    declarations, statements = _rows(p)
    parts = [f'<div class="teil teil-program">{_STYLE}']
    parts.append(f"<div><b>TeIL program</b> <code>{_e(p.filename)}</code></div>")
    parts.append(
        "<table><tr><th>variable</th><th>shape</th><th>qualifier</th><th>element</th></tr>"
    )
    for name, shape, qualifier, elem in declarations:
        parts.append(
            f"<tr><td><code>{_e(name)}</code></td><td><code>{_e(shape)}</code></td>"
            f"<td>{_e(qualifier)}</td><td><code>{_e(elem)}</code></td></tr>"
        )
    parts.append("</table>")
    if statements:
        parts.append("<table><tr><th>statement</th><th>shape</th></tr>")
        for text, shape in statements:
            parts.append(
                f"<tr><td><code>{_e(text)}</code></td><td><code>{_e(shape)}</code></td></tr>"
            )
        parts.append("</table>")
    for w in p.warnings:
        parts.append(diagnostic_html(w))
    parts.append("</div>")
    return "".join(parts)


def program_markdown(p: Any) -> str:
    declarations, statements = _rows(p)
    lines = [f"**TeIL program** {_code(p.filename)}", "",
             "| variable | shape | qualifier | element |", "|---|---|---|---|"]
    lines += [f"| {_code(n)} | {_code(s)} | {_md(q)} | {_code(t)} |"
              for n, s, q, t in declarations]
    if statements:
        lines += ["", "| statement | shape |", "|---|---|"]
        lines += [f"| {_code(t)} | {_code(s)} |" for t, s in statements]
    for w in p.warnings:
        lines += ["", diagnostic_markdown(w)]
    return "\n".join(lines) + "\n"


def kernel_html(k: Any) -> str:
    """A compiled kernel: its inputs, outputs and the shared object it loaded."""
    return (
        f'<div class="teil teil-kernel">{_STYLE}<b>TeIL kernel</b> '
        f"<table><tr><th>inputs</th><td>{_e(', '.join(k.inputs) or '(none)')}</td></tr>"
        f"<tr><th>outputs</th><td>{_e(', '.join(k.outputs))}</td></tr>"
        f"<tr><th>shared object</th><td><code>{_e(k.path)}</code></td></tr></table></div>"
    )


def kernel_markdown(k: Any) -> str:
    return (
        f"**TeIL kernel**: inputs {_md(', '.join(k.inputs) or '(none)')}; "
        f"outputs {_md(', '.join(k.outputs))}; shared object {_code(k.path)}\n"
    )


def bound_html(b: Any) -> str:
    """What a ``%%teil`` cell bound (``teil._magics.Bound``): each name, its shape, whether it
    is an output or a drawn input, and its dtype; then the trace it was asked for."""
    rows = "".join(
        f"<tr><td><code>{_e(n)}</code></td><td><code>{_e(_shape(v.shape))}</code></td>"
        f"<td>{'random input' if n in b.drawn else 'output'}</td>"
        f"<td><code>{_e(v.dtype)}</code></td></tr>"
        for n, v in b.bound.items()
    )
    out = (
        f'<div class="teil">{_STYLE}<b>bound</b><table>'
        f"<tr><th>name</th><th>shape</th><th></th><th>dtype</th></tr>{rows}</table></div>"
    )
    if b.trace is not None:
        out += b.trace._repr_html_()
    return out


def bound_markdown(b: Any) -> str:
    lines = ["| name | shape | | dtype |", "|---|---|---|---|"]
    lines += [
        f"| {_code(n)} | {_code(_shape(v.shape))} | "
        f"{'random input' if n in b.drawn else 'output'} | {_code(v.dtype)} |"
        for n, v in b.bound.items()
    ]
    out = "\n".join(lines) + "\n"
    if b.trace is not None:
        out += "\n" + b.trace._repr_markdown_()
    return out


class TraceStep(NamedTuple):
    """One line of a trace (TeIL paper, Fig. 7): the formula, the equation that produced it,
    and the byte offsets ``(start, end)`` of the source sub-expression it evaluates (``None``
    for the lines that rewrite no source expression)."""

    formula: str
    rule: str
    span: Optional[tuple[int, int]]


class Trace(str):
    """The unfolding of the semantics at one cell, as :meth:`teil.Program.trace` returns it.

    A ``str`` (the text ``teil trace`` prints, so ``print(trace)`` shows it) with the steps as
    data: :attr:`steps` (:class:`TraceStep`, one per line) and :attr:`source` (the program
    text the spans point into). In a notebook it displays as a table of the steps with each
    step's rule and the evaluated sub-expression highlighted in its statement.

    >>> t = teil.Program("alloc A : [2]\\nalloc s : []\\ns = red+ 1 A").trace("s", A=[1.5, 2.0])
    >>> [step.rule for step in t.steps]
    ['[St-Stmt]', '[S-Red]', '[S-Var]', '[expand]', '[store reads]', '[arithmetic]']
    >>> t.steps[-1].formula.split()
    ['=', '3.5']
    >>> t.source[slice(*t.steps[0].span)]
    'red+ 1 A'
    """

    steps: list[TraceStep]
    source: str

    def __new__(cls, text: str, steps: Sequence[tuple[str, str, Optional[tuple[int, int]]]],
                source: str) -> "Trace":
        t = super().__new__(cls, text)
        t.steps = [TraceStep(f, r, None if s is None else (s[0], s[1])) for f, r, s in steps]
        t.source = source
        return t

    def __reduce__(self) -> Any:
        steps = [(s.formula, s.rule, s.span) for s in self.steps]
        return (Trace, (str(self), steps, self.source))

    def _context(self, span: tuple[int, int]) -> tuple[str, str, str]:
        """The line(s) of the source around `span`, split at the span (text before, the span,
        text after); offsets are bytes of the UTF-8 text."""
        data = self.source.encode("utf-8")
        start, end = max(0, min(span[0], len(data))), max(0, min(span[1], len(data)))
        line_start = data.rfind(b"\n", 0, start) + 1
        line_end = data.find(b"\n", end)
        line_end = len(data) if line_end < 0 else line_end
        text = lambda a, b: data[a:b].decode("utf-8", errors="replace")  # noqa: E731
        return text(line_start, start), text(start, end), text(end, line_end)

    def _repr_html_(self) -> str:
        parts = [f'<div class="teil teil-trace">{_STYLE}<table>']
        parts.append("<tr><th>#</th><th>formula</th><th>rule</th><th>evaluates</th></tr>")
        for i, s in enumerate(self.steps, 1):
            where = ""
            if s.span is not None:
                before, at, after = self._context(s.span)
                where = f"<code>{_e(before)}<mark>{_e(at)}</mark>{_e(after)}</code>"
            parts.append(
                f"<tr><td>{i}</td><td><code>{_e(s.formula)}</code></td>"
                f"<td>{_e(s.rule)}</td><td>{where}</td></tr>"
            )
        parts.append("</table></div>")
        return "".join(parts)

    def _repr_markdown_(self) -> str:
        lines = ["| # | formula | rule | evaluates |", "|---|---|---|---|"]
        for i, s in enumerate(self.steps, 1):
            at = _code(self._context(s.span)[1]) if s.span is not None else ""
            lines.append(f"| {i} | {_code(s.formula)} | {_md(s.rule)} | {at} |")
        return "\n".join(lines) + "\n"
