/** CORS_ALLOWED_ORIGINS: the catch-all's CORS policy (docs/guides/browser.md). */
import { ConfigError, loadConfig } from '../../src/config.js';

describe('CORS_ALLOWED_ORIGINS', () => {
  it('is none unless set', () => {
    expect(loadConfig({}).corsAllowedOrigins).toEqual([]);
    expect(loadConfig({ CORS_ALLOWED_ORIGINS: '' }).corsAllowedOrigins).toEqual([]);
  });

  it('takes comma-separated origins, wildcard subdomains and *, in lower case', () => {
    const config = loadConfig({
      CORS_ALLOWED_ORIGINS: ' https://App.example.com , https://*.example.org,http://localhost:5173,*',
    });
    expect(config.corsAllowedOrigins).toEqual([
      'https://app.example.com',
      'https://*.example.org',
      'http://localhost:5173',
      '*',
    ]);
  });

  it('is refused with a line naming it when an entry is no origin', () => {
    for (const value of ['app.example.com', 'https://app.example.com/', 'ftp://x.example', 'https://*']) {
      expect(() => loadConfig({ CORS_ALLOWED_ORIGINS: value })).toThrow(ConfigError);
      expect(() => loadConfig({ CORS_ALLOWED_ORIGINS: value })).toThrow(/^CORS_ALLOWED_ORIGINS: /);
    }
  });
});
