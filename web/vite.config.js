// The playground is a static site: `vite build` writes web/dist/, servable by any static host.
import { defineConfig } from 'vite';

export default defineConfig({
  base: './',
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022' },
  worker: { format: 'es' },
  // The examples menu imports the repository's example programs (../examples, ../tests).
  server: { fs: { allow: ['..'] } },
});
