/* TeIL's shim of <stdio.h> for building CORE-MATH for wasm32-unknown-unknown (no C library):
   src/binary64/log/dint.h includes it for a debugging printf that is compiled out (#if 0),
   so it declares nothing. */
#ifndef TEIL_SHIM_STDIO_H
#define TEIL_SHIM_STDIO_H
#endif
