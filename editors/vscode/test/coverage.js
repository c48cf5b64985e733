// Checks that the grammar tests cover the whole language: every reserved word of the lexer
// (teil/src/lexer.rs, `KEYWORDS`, plus `red+` and `red*`) and every operator symbol occurs in
// a source line of test/*.teil, and every source line there is followed by assertions (one
// per token, checked by vscode-tmgrammar-test). Run by `npm test`.
"use strict";

const fs = require("fs");
const path = require("path");

const lexer = fs.readFileSync(path.join(__dirname, "../../../teil/src/lexer.rs"), "utf8");
const list = lexer.match(/pub const KEYWORDS: &\[&str\] = &\[([^\]]*)\]/);
if (!list) {
  throw new Error("KEYWORDS not found in teil/src/lexer.rs");
}
const keywords = [...list[1].matchAll(/"([^"]+)"/g)].map((m) => m[1]).concat(["red+", "red*"]);
const symbols = ["+", "-", "*", "/", "#", ".", "^", "=", ":", ",", "[", "]", "(", ")"];

const isAssertion = (l) => /^\s*\/\/\s*(<[~-]|\^)/.test(l);
const sourceLines = [];
for (const file of fs.readdirSync(__dirname).filter((f) => f.endsWith(".teil"))) {
  const lines = fs.readFileSync(path.join(__dirname, file), "utf8").split("\n");
  lines.forEach((line, i) => {
    if (line.trim() === "" || isAssertion(line) || /^\s*\/\//.test(line)) {
      return;
    }
    if (!isAssertion(lines[i + 1] || "")) {
      throw new Error(`${file}:${i + 1}: source line without assertions: ${line}`);
    }
    sourceLines.push(line.replace(/\/\/.*$/, ""));
  });
}
const code = sourceLines.join("\n");
const missing = [];
for (const k of keywords) {
  const re = new RegExp(`(^|[^A-Za-z0-9_])${k.replace(/[+*]/g, "\\$&")}($|[^A-Za-z0-9_])`, "m");
  if (!re.test(code)) {
    missing.push(k);
  }
}
for (const s of symbols) {
  if (!code.includes(s)) {
    missing.push(s);
  }
}
if (missing.length > 0) {
  console.error(`not covered by the grammar tests: ${missing.join(" ")}`);
  process.exit(1);
}
console.log(`grammar coverage: ${keywords.length} keywords and ${symbols.length} symbols in ${sourceLines.length} asserted lines`);
