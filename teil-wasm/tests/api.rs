//! The playground's requests, answered natively (the same code runs in the browser).

use serde_json::{json, Value};

fn ask(req: Value) -> Value {
    serde_json::from_str(&teil_wasm::handle(&req.to_string())).expect("answers are JSON")
}

const MATMUL: &str = "input alloc A : [2, 3]\ninput alloc B : [3, 2]\noutput alloc C : [2, 2]\nC = contr 2 3 (prod A B)\n";

#[test]
fn analyze_reports_codes_and_shapes() {
    let a = ask(json!({"cmd": "analyze", "source": MATMUL}));
    assert_eq!(a["ok"], true);
    assert_eq!(a["statements"][0]["shape"], json!([2, 2]));
    assert_eq!(a["statements"][0]["target"], "C");
    assert_eq!(a["statements"][0]["line"], 4);
    assert_eq!(
        a["variables"][0],
        json!({"name": "A", "shape": [2, 3], "elem": "f64", "type": "[2, 3]", "qualifier": "input", "input": true, "output": false})
    );

    let bad = "alloc A : [2, 3]\nalloc B : [2, 3]\nalloc C : [2, 2]\nC = contr 2 3 (prod A B)\n";
    let a = ask(json!({"cmd": "analyze", "source": bad}));
    assert_eq!(a["ok"], false);
    let d = &a["diagnostics"][0];
    assert_eq!(d["code"], "E0305");
    assert_eq!(d["line"], 4);
    assert!(d["help"].as_str().unwrap().contains("contr"), "{d}");
}

#[test]
fn index_notation_is_analysed_as_tin() {
    let tin = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/tin/fig3a.tin"
    ))
    .unwrap();
    let a = ask(json!({"cmd": "analyze", "source": tin, "kind": "tin"}));
    assert_eq!(a["ok"], false);
    assert!(
        a["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "E0305" || d["code"].as_str().unwrap().starts_with("E05")),
        "{a}"
    );
}

#[test]
fn run_computes_the_matrix_product() {
    let a = ask(json!({
        "cmd": "run", "source": MATMUL,
        "inputs": {"A": [[1, 2, 3], [4, 5, 6]], "B": [[1, 0], [0, 1], [1, 1]]},
    }));
    assert_eq!(a["outputs"][0]["name"], "C");
    assert_eq!(a["outputs"][0]["data"], json!([[4.0, 5.0], [10.0, 11.0]]));
    assert_eq!(a["inputs"].as_array().unwrap().len(), 2);
}

#[test]
fn run_marks_undefined_cells_null() {
    let src = "output alloc A : [2]\noutput alloc B : [2]\nB = A\n";
    let a = ask(json!({"cmd": "run", "source": src}));
    assert_eq!(a["outputs"][1]["data"], json!([null, null]));
}

#[test]
fn run_rejects_misshaped_inputs_and_large_programs() {
    let a = ask(json!({"cmd": "run", "source": MATMUL, "inputs": {"A": [[1, 2], [3, 4]]}}));
    assert!(a["error"].as_str().unwrap().contains("input `A`"), "{a}");
    // The caller boundary's errors, coded as everywhere (`teil::interface`).
    let a = ask(json!({"cmd": "run", "source": MATMUL, "inputs": {"C": [[1, 2], [3, 4]], "Q": 1}}));
    assert_eq!(
        a["error"].as_str().unwrap(),
        "[E0602] `C` is not an input of the program (only `input` and `inout` variables take a \
         value)\n[E0601] `Q` is not a variable of the program",
        "{a}"
    );
    let a = ask(json!({"cmd": "run", "source": "alloc A : [100000, 100000]\nA = A\n"}));
    assert!(a["error"].as_str().unwrap().contains("[E0701]"), "{a}");
}

#[test]
fn trace_reaches_the_value() {
    let a = ask(json!({
        "cmd": "trace", "source": MATMUL, "cell": "C[2, 1]",
        "inputs": {"A": [[1, 2, 3], [4, 5, 6]], "B": [[1, 0], [0, 1], [1, 1]]},
    }));
    let lines = a["lines"].as_array().unwrap();
    assert!(lines.len() >= 3, "{a}");
    // The first step evaluates the whole right-hand side; the next the product inside it.
    let span = |k: usize| {
        let s = &lines[k]["span"];
        &MATMUL[s["start"].as_u64().unwrap() as usize..s["end"].as_u64().unwrap() as usize]
    };
    assert_eq!(span(0), "contr 2 3 (prod A B)");
    assert_eq!(span(1), "contr 2 3 (prod A B)");
    assert_eq!(span(2), "(prod A B)");
    assert_eq!(
        lines.last().unwrap()["text"].as_str().unwrap().trim(),
        "= 10"
    );
    let a = ask(json!({"cmd": "trace", "source": MATMUL, "cell": "C[1,,2]"}));
    assert!(
        a["error"]
            .as_str()
            .unwrap()
            .contains("cannot read the cell"),
        "{a}"
    );
}

#[test]
fn fmt_core_and_c() {
    let a = ask(json!({"cmd": "fmt", "source": MATMUL, "syntax": "infix"}));
    assert!(
        a["text"].as_str().unwrap().contains("C = (A # B) .[2 3]"),
        "{a}"
    );
    let a = ask(json!({"cmd": "fmt", "source": MATMUL, "core": true}));
    assert!(a["text"].as_str().unwrap().contains("red+"), "{a}");
    let a = ask(json!({"cmd": "emit_c", "source": MATMUL, "pad": 4}));
    assert!(
        a["text"].as_str().unwrap().contains("void teil_kernel("),
        "{a}"
    );
}

#[test]
fn einsum_lowers_or_points_into_the_equation() {
    let a = ask(json!({"cmd": "einsum", "equation": "ij,jk->ik", "shapes": "[[2,3],[3,4]]"}));
    assert_eq!(a["ok"], true);
    assert_eq!(a["shape"], json!([2, 4]));
    assert!(a["program"].as_str().unwrap().contains("contr"), "{a}");
    let a = ask(json!({"cmd": "einsum", "equation": "ij,jk->ik", "shapes": "[[2,3],[4,4]]"}));
    assert_eq!(a["ok"], false);
    assert_eq!(a["in"], "equation");
    assert!(
        a["diagnostics"][0]["code"]
            .as_str()
            .unwrap()
            .starts_with("E04"),
        "{a}"
    );
}

#[test]
fn explain_and_bad_requests() {
    let a = ask(json!({"cmd": "explain", "code": "E0305"}));
    assert_eq!(a["code"], "E0305");
    assert!(!a["text"].as_str().unwrap().is_empty());
    assert!(ask(json!({"cmd": "nope"}))["error"]
        .as_str()
        .unwrap()
        .contains("unknown request"));
    assert!(ask(json!([1]))["error"].is_string());
    let raw: Value = serde_json::from_str(&teil_wasm::handle("{not json")).unwrap();
    assert!(raw["error"].as_str().unwrap().contains("not JSON"));
}

#[test]
fn hover_and_subexpressions_come_from_the_analysis_layer() {
    let at = MATMUL.find("prod").unwrap() + 1;
    let a = ask(json!({"cmd": "hover", "source": MATMUL, "offset": at}));
    assert_eq!(a["hover"]["shape"], json!([2, 3, 3, 2]), "{a}");
    assert_eq!(a["hover"]["rule"], "T-Prod", "{a}");
    let a = ask(json!({"cmd": "subexpressions", "source": MATMUL, "offset": at}));
    let list = a["subexpressions"].as_array().unwrap();
    let shapes: Vec<&Value> = list.iter().map(|e| &e["shape"]).collect();
    // contr, the parenthesis, prod, A, B: outermost first.
    let expected = [
        json!([2, 2]),
        json!([2, 3, 3, 2]),
        json!([2, 3, 3, 2]),
        json!([2, 3]),
        json!([3, 2]),
    ];
    assert_eq!(shapes, expected.iter().collect::<Vec<_>>(), "{a}");
    assert_eq!(list[2]["rule"], "T-Prod");
    assert_eq!(list[0]["rule"], "T-Contr");
    assert_eq!(list[0]["text"], "contr 2 3 (prod A B)");
    let a = ask(json!({"cmd": "hover", "source": MATMUL, "offset": 0}));
    assert!(a["hover"].is_object() || a["hover"].is_null(), "{a}");
}

#[test]
fn diagnostics_carry_quick_fixes_as_edits() {
    let bad = "alloc A : [2, 3]\nalloc B : [2, 3]\nalloc C : [2, 2]\nC = contr 2 3 (prod A B)\n";
    let a = ask(json!({"cmd": "analyze", "source": bad}));
    let fix = &a["diagnostics"][0]["fixes"][0];
    let edit = &fix["edits"][0];
    let (start, end) = (
        edit["span"]["start"].as_u64().unwrap() as usize,
        edit["span"]["end"].as_u64().unwrap() as usize,
    );
    let fixed = format!(
        "{}{}{}",
        &bad[..start],
        edit["replacement"].as_str().unwrap(),
        &bad[end..]
    );
    let a = ask(json!({"cmd": "analyze", "source": fixed}));
    assert!(
        a["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["code"] != "E0305"),
        "{fixed}: {a}"
    );
}

/// The playground shows what `teil check` shows for a syntax error: the error where it is, its
/// quick fix, and no warning of the initialisation analysis while it stands.
#[test]
fn syntax_errors_come_alone_with_their_fix() {
    let bad = "input var A : [2, 3, 3]\noutput var C : [2]\nC = contract 2 3 A\n";
    let a = ask(json!({"cmd": "analyze", "source": bad}));
    let diags = a["diagnostics"].as_array().unwrap();
    let codes: Vec<&str> = diags.iter().map(|d| d["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["E0001"], "{a}");
    assert_eq!(diags[0]["help"], "did you mean `contr`?");
    let edit = &diags[0]["fixes"][0]["edits"][0];
    let (start, end) = (
        edit["span"]["start"].as_u64().unwrap() as usize,
        edit["span"]["end"].as_u64().unwrap() as usize,
    );
    assert_eq!(
        (&bad[start..end], edit["replacement"].as_str()),
        ("contract", Some("contr"))
    );
    let fixed = format!("{}contr{}", &bad[..start], &bad[end..]);
    let a = ask(json!({"cmd": "analyze", "source": fixed}));
    assert_eq!(a["ok"], true, "{a}");
    assert_eq!(a["diagnostics"], json!([]), "{a}");
}

/// Deterministic printable garbage (a linear congruential generator).
fn garbage(len: usize) -> String {
    let mut x: u64 = 24;
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            char::from(b' ' + ((x >> 33) % 95) as u8)
        })
        .collect()
}

/// Garbage has up to a diagnostic per character; the answer lists the first 1,000 and counts
/// the rest (1 MB of garbage answered 68 MB).
#[test]
fn analyze_of_garbage_answers_a_bounded_list() {
    // 1 MB of random printable text, and 100,000 stray characters (one report each).
    for (src, total) in [(garbage(1 << 20), 2430), ("$%".repeat(50_000), 100_000)] {
        let answer = teil_wasm::handle(&json!({"cmd": "analyze", "source": src}).to_string());
        let a: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(a["ok"], false);
        let diags = a["diagnostics"].as_array().unwrap();
        assert_eq!(diags.len(), teil::render::MAX_EDITOR_DIAGNOSTICS);
        let more = total - teil::render::MAX_EDITOR_DIAGNOSTICS;
        assert_eq!(a["omitted"], json!(format!("{more} more errors")));
        assert!(answer.len() < 1_500_000, "{} bytes", answer.len());
    }
}

/// A run within the memory budget answers at most `MAX_ANSWER_CELLS` cells per tensor: the
/// leading block, its extents in `shown` (was 35 MB for this run).
#[test]
fn a_large_run_answers_a_leading_block_of_each_tensor() {
    let src = "input alloc A : [2048, 2048]\noutput alloc C : [2048, 2048]\nC = add A A\n";
    let answer = teil_wasm::handle(&json!({"cmd": "run", "source": src}).to_string());
    let a: Value = serde_json::from_str(&answer).unwrap();
    let c = &a["outputs"][0];
    assert_eq!(c["name"], "C");
    assert_eq!(c["shape"], json!([2048, 2048]));
    assert_eq!(c["shown"], json!([4, 2048]));
    assert_eq!(c["data"].as_array().unwrap().len(), 4);
    assert_eq!(c["data"][3].as_array().unwrap().len(), 2048);
    let input = &a["inputs"][0];
    // C = A + A, cell by cell, in the block shown.
    assert_eq!(
        c["data"][3][2047].as_f64().unwrap(),
        2.0 * input["data"][3][2047].as_f64().unwrap()
    );
    assert!(answer.len() < 500_000, "{} bytes", answer.len());
    // A small tensor is answered whole.
    let a = ask(json!({"cmd": "run", "source": MATMUL}));
    assert!(a["outputs"][0].get("shown").is_none());
    assert_eq!(a["outputs"][0]["data"].as_array().unwrap().len(), 2);
}

/// One definition of a line (LSP's: `\n`, `\r\n`, lone `\r`): the playground's answers, the
/// JSON and text reports and the language server's positions agree.
#[test]
fn every_surface_agrees_on_lines_after_lone_cr_and_separators() {
    let src = "alloc A : [2]\r\nA = A\rA = \u{2028}A\x0b $\r\n%";
    let a = ask(json!({"cmd": "analyze", "source": src}));
    let got: Vec<(u64, u64)> = a["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["line"].as_u64().unwrap(), d["column"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, [(3, 5), (3, 7), (3, 9), (4, 1)]);
    let Err(diags) = teil::guard::load("playground.teil", src) else {
        panic!("the text has errors")
    };
    let lines = teil::ide::LineIndex::new(src);
    for (d, (line, col)) in diags.iter().zip(&got) {
        let text = teil::render::render_text(d, "f", src, false);
        assert!(text.contains(&format!("[ f:{line}:{col} ]")), "{text}");
        // All characters here are one UTF-16 unit: LSP's position is the 0-based same.
        assert_eq!(
            lines.position(src, d.primary.span.start),
            (*line as u32 - 1, *col as u32 - 1)
        );
    }
}

/// `text[start..end]` for string indices (UTF-16 code units), as the page slices its text.
fn js_slice(text: &str, v: &Value) -> String {
    let units: Vec<u16> = text.encode_utf16().collect();
    let (start, end) = (
        v["start"].as_u64().unwrap() as usize,
        v["end"].as_u64().unwrap() as usize,
    );
    String::from_utf16(&units[start..end]).unwrap()
}

/// Positions are the page's string indices both ways, whatever the characters before them: a
/// comment with 2-, 3- and 4-byte characters (the last two UTF-16 units) shifts every byte
/// offset but no string index past what the page counts.
#[test]
fn positions_are_string_indices_not_bytes() {
    let src = format!("// é € 😀 😀\n{MATMUL}C = contr 2 3 (prod A Bx)\n");
    let a = ask(json!({"cmd": "analyze", "source": src}));
    let d = &a["diagnostics"][0];
    assert_eq!(d["code"], "E0301", "{a}");
    assert_eq!(js_slice(&src, &d["span"]), "Bx");
    let edit = &d["fixes"][0]["edits"][0];
    assert_eq!(js_slice(&src, &edit["span"]), "Bx");
    // Lines and columns stay 1-based characters, as `teil check --format json` prints them.
    assert_eq!(d["line"], 6, "{d}");

    let ok = src.replace("prod A Bx)", "prod A B)");
    let a = ask(json!({"cmd": "analyze", "source": ok}));
    let last = a["statements"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(js_slice(&ok, &last), "C = contr 2 3 (prod A B)", "{a}");
    assert_eq!(last["line"], 6);

    // A request's offset is a string index too: the one of `prod` in the page's text.
    let at = ok[..ok.find("prod").unwrap()].encode_utf16().count() + 1;
    let h = ask(json!({"cmd": "hover", "source": ok, "offset": at}));
    assert_eq!(h["hover"]["rule"], "T-Prod", "{h}");
    assert_eq!(js_slice(&ok, &h["hover"]), "prod A B", "{h}");
    let s = ask(json!({"cmd": "subexpressions", "source": ok, "offset": at}));
    assert_eq!(
        js_slice(&ok, &s["subexpressions"][0]),
        "contr 2 3 (prod A B)"
    );

    let t = ask(json!({"cmd": "trace", "source": ok, "cell": "C[1, 1]"}));
    let spans: Vec<String> = t["lines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["span"].is_object())
        .map(|l| js_slice(&ok, &l["span"]))
        .collect();
    assert!(spans.contains(&"(prod A B)".to_string()), "{spans:?}");
}

/// One wrong statement does not take the others' shapes away (issue 29): the statements that
/// check keep them, the wrong one has none, as the editor's inlay hints.
#[test]
fn statements_keep_their_shapes_beside_an_ill_typed_one() {
    let src = MATMUL.replace("C = ", "alloc D : [2, 2]\nC = ") + "D = contr 1 2 (prod A B)\n";
    let a = ask(json!({"cmd": "analyze", "source": src}));
    assert_eq!(a["ok"], false, "{a}");
    assert_eq!(a["diagnostics"][0]["code"], "E0305", "{a}");
    let statements = a["statements"].as_array().unwrap();
    assert_eq!(statements.len(), 2, "{a}");
    assert_eq!(statements[0]["target"], "C");
    assert_eq!(statements[0]["shape"], json!([2, 2]));
    assert_eq!(js_slice(&src, &statements[0]), "C = contr 2 3 (prod A B)");
    assert_eq!(statements[1]["target"], "D");
    assert_eq!(statements[1]["shape"], Value::Null);
    assert_eq!(statements[1]["line"], 6);
}

/// A playground example (`web/examples/`), which the end-to-end tests run in the page.
fn example(file: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../web/examples/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// Element types beside shapes, written as the editor writes them (`teil::ide`): `f32[3, 4]`
/// once the text names an element type, the bare shape in a text that names none.
#[test]
fn types_are_answered_beside_shapes() {
    let a = ask(json!({"cmd": "analyze", "source": MATMUL}));
    assert_eq!(a["statements"][0]["type"], "[2, 2]", "{a}");
    assert_eq!(a["statements"][0]["elem"], "f64", "{a}");

    let softmax = example("softmax_f32.teil");
    let a = ask(json!({"cmd": "analyze", "source": softmax}));
    assert_eq!(a["ok"], true, "{a}");
    let types: Vec<&Value> = a["statements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["type"])
        .collect();
    assert_eq!(
        types,
        [&json!("f32[3]"), &json!("f32[3, 4]"), &json!("f32[3, 4]")]
    );
    assert_eq!(a["statements"][0]["elem"], "f32");
    assert_eq!(a["variables"][0]["type"], "f32[3, 4]");
    assert_eq!(a["variables"][0]["elem"], "f32");

    // A statement that does not check keeps no type; the others keep theirs.
    let bad = softmax.replace("Y = E /", "Y = M /");
    let a = ask(json!({"cmd": "analyze", "source": bad}));
    assert_eq!(a["ok"], false, "{a}");
    let types: Vec<&Value> = a["statements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["type"])
        .collect();
    assert_eq!(types, [&json!("f32[3]"), &json!("f32[3, 4]"), &Value::Null]);

    let at = softmax.find("exp (").unwrap() + 1;
    let a = ask(json!({"cmd": "subexpressions", "source": softmax, "offset": at}));
    assert_eq!(a["subexpressions"][0]["type"], "f32[3, 4]", "{a}");
    assert_eq!(a["subexpressions"][0]["elem"], "f32", "{a}");
    let a = ask(json!({"cmd": "hover", "source": softmax, "offset": at}));
    assert_eq!(a["hover"]["type"], "f32[3, 4]", "{a}");
}

/// A binary32 result is written with binary32's shortest digits (the page shows them as they
/// come), and a number given for a binary32 input is read in binary32: the values the page's
/// end-to-end test shows for this example, computed natively.
#[test]
fn binary32_values_travel_with_their_own_digits() {
    let inputs = json!({"X": [[1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4], [-1, 0, 50, 100]]});
    let req = json!({"cmd": "run", "source": example("softmax_f32.teil"), "inputs": inputs});
    let text = teil_wasm::handle(&req.to_string());
    let a: Value = serde_json::from_str(&text).unwrap();
    let y = &a["outputs"][0];
    assert_eq!(y["type"], "f32[3, 4]", "{a}");
    assert_eq!(y["elem"], "f32", "{a}");
    assert_eq!(
        y["data"],
        json!([
            [0.032058604, 0.08714432, 0.23688284, 0.6439143],
            [0.2138382, 0.23632778, 0.26118258, 0.2886514],
            [1.4e-44, 3.8e-44, 1.9287499e-22, 1.0]
        ])
    );
    // The digits themselves, not those of the binary64 number holding the binary32 one.
    assert!(text.contains("[0.032058604,0.08714432,"), "{text}");
    assert!(text.contains("[0.1,0.2,0.3,0.4]"), "{text}");
}

/// The infinities, which JSON has no numbers for, travel as the strings JavaScript's `Number`
/// reads, both ways; NaN is `null` (undefined).
#[test]
fn infinities_travel_as_strings() {
    let inputs = json!({"X": [["-Infinity", -10, -1, -0.5], [0, 1, 5, "Infinity"]]});
    let req = json!({"cmd": "run", "source": example("gelu_erf.teil"), "inputs": inputs});
    let a = ask(req);
    assert_eq!(a["inputs"][0]["data"][1][3], "Infinity", "{a}");
    // GELU: -∞ · 0 is NaN; erf saturates, so -10 gives -0 and +∞ gives +∞.
    assert_eq!(
        a["outputs"][0]["data"],
        json!([
            [null, -0.0, -0.15865526, -0.15426877],
            [0.0, 0.8413447, 4.9999986, "Infinity"]
        ]),
        "{a}"
    );
    assert!(a["outputs"][0]["data"][0][1]
        .as_f64()
        .unwrap()
        .is_sign_negative());
    let bad = json!({"cmd": "run", "source": example("gelu_erf.teil"),
        "inputs": {"X": [["inf", 0, 0, 0], [0, 0, 0, 0]]}});
    assert!(ask(bad)["error"]
        .as_str()
        .unwrap()
        .contains("expected a number"));
}

/// The `function_bits` request answers its own size, and refuses a runaway one.
#[test]
fn function_bits_is_bounded() {
    let a = ask(json!({"cmd": "function_bits", "random": 3}));
    assert_eq!(a["random"], 3, "{a}");
    assert_eq!(a["cases"].as_array().unwrap().len(), 16, "{a}");
    let a = ask(json!({"cmd": "function_bits", "random": 1u64 << 40}));
    assert!(a["error"].as_str().unwrap().contains("at most"), "{a}");
}
