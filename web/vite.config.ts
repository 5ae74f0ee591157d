import { defineConfig } from 'vite';
import preact from '@preact/preset-vite';

// The build goes straight into the Go package that embeds it. File names
// carry content hashes, and nothing time- or machine-dependent is written,
// so the same lock file and sources give the same bytes (.ci/run checks).
export default defineConfig({
  plugins: [preact({ devToolsEnabled: false, prefreshEnabled: false })],
  base: '/',
  build: {
    outDir: '../internal/observe/dashboard/dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
});
