// Writes @tollgate/client's catalogue of the proxy's refusals (see proxy-refusals.mjs) from the built server.
import { writeFileSync } from 'node:fs';
import { ERRORS } from '../dist/src/errors.js';
import { PROXY_REFUSALS_FILE, proxyRefusalsText } from './proxy-refusals.mjs';

writeFileSync(PROXY_REFUSALS_FILE, proxyRefusalsText(ERRORS));
