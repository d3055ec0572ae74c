/**
 * Builds the server into one ES module, `dist/main.mjs`, with esbuild:
 * what `npm start`, the image, the cluster launcher, the test servers and the
 * bench run. `node --import tsx scripts/build.ts` builds it by hand.
 *
 * Why not run `main.ts` under tsx: tsx compiles with esbuild's `keepNames`,
 * which wraps every function and class in a `__name(...)` call, also the
 * closures made per message on the hot path; the bundle has no such wrappers
 * and it starts in 0.5 s instead of 0.75 s, as it transpiles nothing at start.
 * Packages stay external (`node_modules` is read at run time); the source map
 * is inline, so `--enable-source-maps` gives stack traces in the `.ts` files.
 */
import { buildSync } from 'esbuild';
import { mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const SERVER_BUNDLE = join(ROOT, 'dist', 'main.mjs');

/**
 * Builds `dist/main.mjs` from the working tree (≈ 0.1 s). The file is written
 * under a temporary name and renamed, so processes building at the same time
 * (parallel test files) never start a half-written bundle.
 */
export function buildServer(): string {
  mkdirSync(dirname(SERVER_BUNDLE), { recursive: true });
  const tmp = `${SERVER_BUNDLE}.${process.pid}.tmp`;
  buildSync({
    entryPoints: [join(ROOT, 'main.ts')],
    outfile: tmp,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'inline',
    logLevel: 'warning',
  });
  renameSync(tmp, SERVER_BUNDLE);
  return SERVER_BUNDLE;
}

let built: string | undefined;

/** The node arguments that run the server, built from the working tree once per process. */
export function serverArgs(): string[] {
  built ??= buildServer();
  return ['--enable-source-maps', built];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.stdout.write(`built ${buildServer()}\n`);
}
