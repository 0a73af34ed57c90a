// Fails the build when the JavaScript the first screen loads (the entry and its static imports,
// as index.html names them) is over budget, gzipped.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const BUDGET = 120 * 1024;
const dist = new URL('../dist/', import.meta.url);
const html = readFileSync(new URL('index.html', dist), 'utf8');
const scripts = [...html.matchAll(/<(?:script[^>]*src|link[^>]*rel="modulepreload"[^>]*href)="\/([^"]+\.js)"/g)].map((m) => m[1]);
let total = 0;
for (const file of new Set(scripts)) {
  const size = gzipSync(readFileSync(new URL(file, dist))).length;
  total += size;
  console.log(`  ${file}: ${(size / 1024).toFixed(1)} KB gzip`);
}
console.log(`first-screen JavaScript: ${(total / 1024).toFixed(1)} KB gzip (budget ${BUDGET / 1024} KB)`);
if (scripts.length === 0 || total > BUDGET) {
  console.error('first-screen JavaScript is over budget (or no script was found)');
  process.exit(1);
}
