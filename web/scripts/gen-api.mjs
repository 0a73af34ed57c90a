// Generates src/api/schema.d.ts from nutrition-api's OpenAPI document, when the service can
// print it (`nutrition-api openapi`; the binary from OPENAPI_BIN or target/debug). Without it the
// hand-written wire types in src/api/types.ts stay the only source.
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';

const bin = process.env.OPENAPI_BIN ?? new URL('../../target/debug/nutrition-api', import.meta.url).pathname;
if (!existsSync(bin)) {
  console.log(`gen-api: ${bin} not found, keeping src/api/types.ts`);
  process.exit(0);
}
let doc;
try {
  doc = execFileSync(bin, ['openapi'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 20_000, env: { PATH: process.env.PATH } });
  JSON.parse(doc);
} catch {
  console.log('gen-api: this nutrition-api has no `openapi` subcommand yet, keeping src/api/types.ts');
  process.exit(0);
}
const { default: openapiTS, astToString } = await import('openapi-typescript');
const ast = await openapiTS(JSON.parse(doc));
writeFileSync(new URL('../src/api/schema.d.ts', import.meta.url), `// Generated from nutrition-api's OpenAPI document by scripts/gen-api.mjs.\n${astToString(ast)}`);
console.log('gen-api: wrote src/api/schema.d.ts');
