import { defineConfig } from 'vite';

// The service worker must keep a fixed name at the root (`/sw.js`, scope `/`); every other
// file gets a content hash so nginx can serve it as immutable.
export default defineConfig({
  build: {
    target: 'es2022',
    modulePreload: { polyfill: false },
    // Inline data: URLs would need a looser CSP.
    assetsInlineLimit: 0,
    rollupOptions: {
      input: { main: 'index.html', sw: 'src/sw.ts' },
      output: {
        entryFileNames: (chunk) => (chunk.name === 'sw' ? 'sw.js' : 'assets/[name]-[hash].js'),
      },
    },
  },
});
