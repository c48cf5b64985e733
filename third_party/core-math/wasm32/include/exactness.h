/* TeIL's guard, force-included (-include) before each CORE-MATH source when teil-interp's
   build.rs compiles it for wasm32-unknown-unknown: the functions are correctly rounded only
   as written, so flags that let the compiler change their operations (-ffast-math and its
   parts, excess precision) stop the build instead of changing bits (as the C backend's
   kernels do, spec/abi.md, "Compiling the C"). */
#if defined(__FAST_MATH__) || defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
#error "CORE-MATH must not be compiled with -ffast-math or -ffinite-math-only"
#endif
#if defined(__FLT_EVAL_METHOD__) && __FLT_EVAL_METHOD__ != 0
#error "CORE-MATH for TeIL needs FLT_EVAL_METHOD 0 (no excess precision)"
#endif
