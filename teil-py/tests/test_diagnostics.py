"""teil.check, teil.Diagnostic and the exception hierarchy."""

from __future__ import annotations

import json

import pytest

import teil

BAD_ASSIGN = "alloc A : [2, 3]\nalloc B : [3]\nB = A\n"


def snapshot_body(path):
    """An insta snapshot without its YAML header."""
    text = path.read_text()
    return text.split("---\n", 2)[2]


def test_check_accepts_a_well_typed_program():
    assert teil.check("alloc A : [2, 3]\nA = A + A") == []


def test_check_returns_every_error_without_raising():
    diags = teil.check("alloc A : [2]\nalloc B : [3]\nA = B\nB = A\nC = A")
    assert [d.code for d in diags] == ["E0202", "E0202", "E0201"]
    assert all(d.severity == "error" for d in diags)


def test_check_returns_syntax_errors():
    [d] = teil.check("alloc A : [2\n")
    assert d.code.startswith("E00")


def test_diagnostic_attributes():
    [d] = teil.check(BAD_ASSIGN, filename="bad.teil")
    assert d.code == "E0202"
    assert d.severity == "error"
    assert d.rule == "OK-Stmt"
    assert d.file == "bad.teil"
    # The primary label is on the right-hand side, the declaration's shape on the target.
    assert BAD_ASSIGN[d.start : d.end] == "A"
    assert (d.line, d.column) == (3, 5)
    assert d.message == "cannot assign an expression of shape [2, 3] to `B` of shape [3]"
    assert d.label == "this has shape [2, 3]"
    [(start, end, message)] = d.labels
    assert BAD_ASSIGN[start:end] == "B" and (start, end) == (31, 32)
    assert message == "`B` is declared with shape [3]"
    assert d.notes == []
    assert d.help is None or isinstance(d.help, str)
    assert "E0202" in repr(d)


def test_line_and_column_count_characters():
    src = "// é\nalloc A : [2]\nalloc B : [3]\nB = A"
    [d] = teil.check(src)
    assert (d.line, d.column) == (4, 5)
    assert src.encode()[d.start : d.end] == b"A"
    assert d.start == len("// é\nalloc A : [2]\nalloc B : [3]\nB = ".encode())  # bytes, not characters


def test_warnings_are_diagnostics():
    [w] = teil.check("alloc A : [2, 3]\nA = transp 1 1 A")
    assert (w.code, w.severity) == ("W0002", "warning")
    p = teil.Program("alloc A : [2, 3]\nA = transp 1 1 A")
    assert [d.code for d in p.warnings] == ["W0002"]


def test_to_dict_is_the_json_object_of_teil_check():
    [d] = teil.check(BAD_ASSIGN, filename="bad.teil")
    obj = d.to_dict()
    # The fields spec/diagnostics.md lists for `--format json`, and nothing else.
    assert set(obj) == {
        "code", "severity", "message", "rule", "file", "span", "line", "column",
        "label", "labels", "notes", "help", "fixes",
    }
    assert obj["code"] == d.code and obj["severity"] == d.severity
    assert obj["message"] == d.message and obj["rule"] == d.rule and obj["file"] == "bad.teil"
    assert obj["span"] == {
        "start": d.start, "end": d.end, "line": 3, "column": 5, "end_line": 3, "end_column": 6,
    }
    assert (obj["line"], obj["column"], obj["label"]) == (d.line, d.column, d.label)
    assert [(l["span"]["start"], l["span"]["end"], l["message"]) for l in obj["labels"]] == d.labels
    assert obj["notes"] == d.notes and obj["help"] == d.help
    json.dumps(obj)  # plain JSON data


def test_str_is_the_report_without_colour(repo):
    # The corpus snapshots are rendered without colour by the function `teil check` uses.
    checked = 0
    for group in ["fail", "warn"]:
        for path in sorted((repo / "tests/check" / group).glob("*.teil")):
            snap = repo / f"teil/tests/snapshots/corpus__{group}__{path.stem}.snap"
            if not snap.exists():
                continue
            body = snapshot_body(snap).split("\ncanonical prefix form:\n")[0]
            diags = teil.check(path.read_text(), filename=path.name)
            rendered = "".join(str(d) for d in diags) or "(no diagnostics)\n"
            assert "\x1b[" not in rendered
            assert rendered.rstrip() == body.rstrip(), path.name
            checked += 1
    assert checked >= 10


def test_index_notation_by_file_name(repo):
    text = (repo / "tests/tin/fig3a.tin").read_text()
    codes = [d.code for d in teil.check(text, filename="fig3a.tin")]
    assert codes and all(c.startswith("E") for c in codes)
    # The same text read as TeIL is a syntax error.
    assert any(d.code.startswith("E00") for d in teil.check(text, filename="fig3a.teil"))


def test_exception_hierarchy():
    assert issubclass(teil.TeilError, ValueError)
    for cls in (teil.ParseError, teil.ShapeError, teil.RunError):
        assert issubclass(cls, teil.TeilError)
        assert cls.__module__ == "teil"


def test_shape_error_carries_the_diagnostics():
    with pytest.raises(teil.ShapeError) as info:
        teil.Program(BAD_ASSIGN)
    e = info.value
    assert not isinstance(e, teil.ParseError)
    assert [d.code for d in e.diagnostics] == ["E0202"]
    assert str(e) == "".join(str(d) for d in e.diagnostics)


def test_parse_error_when_a_syntax_error_is_among_them():
    with pytest.raises(teil.ParseError) as info:
        teil.Program("alloc A : [2, 3]\nalloc B : [3]\nB = A\nB = = A\n")
    codes = [d.code for d in info.value.diagnostics]
    assert any(c.startswith("E00") for c in codes)
    assert str(info.value) == "".join(str(d) for d in info.value.diagnostics)


def test_every_rejection_class_is_a_shape_error():
    # E01xx declarations, E02xx statements, E03xx expressions.
    for src, code in [
        ("alloc A : [2]\nalloc A : [3]", "E0101"),
        ("alloc A : [0]", "E0102"),
        ("alloc A : [2]\nX = A", "E0201"),
        ("alloc A : [2]\nA = B", "E0301"),
    ]:
        with pytest.raises(teil.ShapeError) as info:
            teil.Program(src)
        assert code in [d.code for d in info.value.diagnostics], src
