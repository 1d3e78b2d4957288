// Writes @tollgate/client's catalogue of the proxy's refusals (see proxy-refusals.mjs) from the built server.
import { writeWhole } from './lib/write-whole.mjs';
import { ERRORS } from '../dist/src/errors.js';
import { PROXY_REFUSALS_FILE, proxyRefusalsText } from './proxy-refusals.mjs';

writeWhole(PROXY_REFUSALS_FILE, proxyRefusalsText(ERRORS));
