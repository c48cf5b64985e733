//! The element-wise functions' values natively (`teil_interp::functions`, the `core-math`
//! crate), on the inputs of the `function_bits` request (`src/bits.rs`), as a snapshot: the
//! playground's end-to-end tests (`web/tests/e2e.test.mjs`) ask the WebAssembly build, compiled
//! from the vendored CORE-MATH sources (`third_party/core-math/`), for the same answer in the
//! browser and require the same text, so both builds give the same bits on every input.
//! A change of these values is a change of every surface's: review it (`cargo insta review`).

#[test]
fn function_bits() {
    let answer: serde_json::Value =
        serde_json::from_str(&teil_wasm::handle(r#"{"cmd": "function_bits"}"#)).unwrap();
    assert!(answer.get("error").is_none(), "{answer}");
    insta::assert_snapshot!(
        "function_bits",
        serde_json::to_string_pretty(&answer).unwrap()
    );
}
