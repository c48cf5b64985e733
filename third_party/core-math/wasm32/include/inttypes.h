/* TeIL's shim of <inttypes.h> for building CORE-MATH for wasm32-unknown-unknown (no C
   library): src/binary64/log/dint.h includes it for the PRI* macros of a debugging printf
   that is compiled out (#if 0); like the standard header it includes <stdint.h> (Clang's
   own, freestanding). */
#ifndef TEIL_SHIM_INTTYPES_H
#define TEIL_SHIM_INTTYPES_H
#include <stdint.h>
#endif
