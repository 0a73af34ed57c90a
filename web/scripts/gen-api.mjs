// Generates src/api/schema.d.ts from nutrition-api's OpenAPI document (`nutrition-api openapi`; the
// binary from OPENAPI_BIN or target/debug). src/api/types.ts and the client take their wire types
// from it, so there is no fallback: build the service first (`cargo build -p nutrition-api`).
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';

const bin = process.env.OPENAPI_BIN ?? new URL('../../target/debug/nutrition-api', import.meta.url).pathname;
if (!existsSync(bin)) {
  console.error(`gen-api: ${bin} not found; run \`cargo build -p nutrition-api\` or set OPENAPI_BIN`);
  process.exit(1);
}
let doc;
try {
  doc = execFileSync(bin, ['openapi'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 20_000, env: { PATH: process.env.PATH } });
  JSON.parse(doc);
} catch (e) {
  console.error(`gen-api: \`${bin} openapi\` did not print a JSON document: ${e instanceof Error ? e.message : e}`);
  process.exit(1);
}
const { default: openapiTS, astToString } = await import('openapi-typescript');
const ast = await openapiTS(JSON.parse(doc));
writeFileSync(new URL('../src/api/schema.d.ts', import.meta.url), `// Generated from nutrition-api's OpenAPI document by scripts/gen-api.mjs.\n${astToString(ast)}`);
console.log('gen-api: wrote src/api/schema.d.ts');
