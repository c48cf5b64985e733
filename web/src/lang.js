// Syntax highlighting for both TeIL syntaxes and index notation (a CodeMirror stream
// language: TeIL's tokens are simple enough that no grammar is needed for colouring; the
// real parser runs in the toolchain).
import { StreamLanguage } from '@codemirror/language';

const declKeywords = new Set(['alloc', 'var', 'input', 'output', 'inout']);
const operators = new Set([
  'add', 'sub', 'mul', 'div', 'prod', 'contr', 'diag', 'transp', 'expa', 'proj',
  'redmax', 'redmin',
]);

export const teilLanguage = StreamLanguage.define({
  name: 'teil',
  token(stream) {
    if (stream.eatSpace()) return null;
    if (stream.match('//')) {
      stream.skipToEnd();
      return 'comment';
    }
    if (stream.match(/^red[+*]/)) return 'keyword';
    if (stream.match(/^-?\d+(\.\d+)?([eE][+-]?\d+)?/)) return 'number';
    const word = stream.match(/^[A-Za-z_][A-Za-z0-9_]*/);
    if (word) {
      if (declKeywords.has(word[0])) return 'definitionKeyword';
      if (operators.has(word[0])) return 'keyword';
      return 'variableName';
    }
    if (stream.match(/^(\.\[|\^\[|#|:=|[-+*/=:.^])/)) return 'operator';
    if (stream.match(/^[[\](),]/)) return 'punctuation';
    stream.next();
    return 'invalid';
  },
  languageData: { commentTokens: { line: '//' } },
});
