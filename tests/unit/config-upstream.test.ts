/** UPSTREAM_URL: the catch-all backend, the default one when unset, none when set empty (docs/guides/routes.md). */
import { ConfigError, loadConfig } from '../../src/config.js';

describe('UPSTREAM_URL', () => {
  it('defaults to http://127.0.0.1:3000 when unset', () => {
    expect(loadConfig({}).upstreamUrl?.href).toBe('http://127.0.0.1:3000/');
  });

  it('set empty means no catch-all: only routes forward', () => {
    expect(loadConfig({ UPSTREAM_URL: '' }).upstreamUrl).toBeUndefined();
  });

  it('is refused with a line naming it when not an http(s) URL, or with a query or fragment', () => {
    for (const value of ['ftp://backend', 'not a url', 'http://backend/?x=1', 'http://backend/#top']) {
      expect(() => loadConfig({ UPSTREAM_URL: value })).toThrow(ConfigError);
      expect(() => loadConfig({ UPSTREAM_URL: value })).toThrow(/^UPSTREAM_URL: /);
    }
  });
});
