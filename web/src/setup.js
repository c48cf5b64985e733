// The editor's basic behaviour: the parts of CodeMirror's basicSetup the playground needs.
import { lineNumbers, highlightActiveLine, drawSelection, keymap, highlightActiveLineGutter } from '@codemirror/view';
import { history, defaultKeymap, historyKeymap, indentWithTab } from '@codemirror/commands';
import { syntaxHighlighting, defaultHighlightStyle, bracketMatching } from '@codemirror/language';
import { lintKeymap } from '@codemirror/lint';

export const basicSetup = [
  lineNumbers(),
  highlightActiveLineGutter(),
  history(),
  drawSelection(),
  syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
  bracketMatching(),
  highlightActiveLine(),
  // Tab indents only with a modifier-free key press inside the editor; Escape then Tab
  // leaves the editor, so keyboard users are never trapped (CodeMirror's convention).
  keymap.of([...defaultKeymap, ...historyKeymap, ...lintKeymap, indentWithTab]),
];
