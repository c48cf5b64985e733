/* TeIL's shim of <fenv.h> for building CORE-MATH for wasm32-unknown-unknown (no C library):
   only what the vendored sources use (exp.c raises the underflow flag through
   feraiseexcept). WebAssembly has no floating-point exception flags, so raising one does
   nothing; results do not depend on it. */
#ifndef TEIL_SHIM_FENV_H
#define TEIL_SHIM_FENV_H

#define FE_UNDERFLOW 0x10

static inline int feraiseexcept(int excepts) {
  (void)excepts;
  return 0;
}

#endif
