#!/usr/bin/env node
// `npx parley` / `npm run parley --`: the operator's command line (cli/parley.ts), run through tsx.
import { register } from 'tsx/esm/api';

process.env.PARLEY_LOG_LEVEL ??= 'error';
register();
await import('../cli/parley.ts');
