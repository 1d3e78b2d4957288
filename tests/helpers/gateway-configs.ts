/**
 * The gateway configurations of docs/guides/external-authorization.md, as written there (each block
 * follows a `<!-- tested-config: name -->` line), with only their ports changed, wrapped in what a
 * whole program needs: for tests/e2e/extauth-gateways.test.ts and `npm run bench -- extauth`. Node
 * modules only, so that the bench (Node's type stripping) imports it as the tests do.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const GUIDE = resolve(import.meta.dirname, '../../docs/guides/external-authorization.md');

/** The fenced block after `<!-- tested-config: name -->` in the guide. */
export function guideConfig(name: string): string {
  const text = readFileSync(GUIDE, 'utf8');
  const block = new RegExp(`^<!-- tested-config: ${name} -->\\s*\`\`\`\\w+\\n([\\s\\S]*?)\`\`\`$`, 'm');
  const found = block.exec(text);
  if (found === null) throw new Error(`no tested-config: ${name} block in ${GUIDE}`);
  return found[1]!;
}

/** `text` with `from` replaced, which must be there: a guide that changed fails here, not silently. */
function replaced(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`the guide's block no longer holds ${JSON.stringify(from)}`);
  return text.split(from).join(to);
}

/** Where the gateway listens, and the `host:port` of Tollgate's EXTAUTH_PORT and of the backend. */
export interface GatewayPorts {
  readonly port: number;
  readonly tollgate: string;
  readonly backend: string;
}

/** Writes nginx's configuration into `dir`; the command that runs it. */
export function nginxFromGuide(dir: string, { port, tollgate, backend }: GatewayPorts): string[] {
  let site = guideConfig('nginx');
  site = replaced(site, 'listen 8080;', `listen 127.0.0.1:${port};`);
  site = replaced(site, 'server 127.0.0.1:8081;', `server ${tollgate};`);
  site = replaced(site, 'http://127.0.0.1:3000', `http://${backend}`);
  writeFileSync(join(dir, 'site.conf'), site);
  // Debian's /etc/nginx/nginx.conf, reduced to what a nginx of its own needs.
  writeFileSync(
    join(dir, 'nginx.conf'),
    [
      'user root;',
      'worker_processes 1;',
      `pid ${dir}/nginx.pid;`,
      `error_log ${dir}/error.log warn;`,
      'events {}',
      'http {',
      '  access_log off;',
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${dir}/${t};`),
      `  include ${dir}/site.conf;`,
      '}',
    ].join('\n'),
  );
  return ['/usr/sbin/nginx', '-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'];
}

/** Writes Caddy's Caddyfile into `dir`; the command that runs it. */
export function caddyFromGuide(dir: string, { port, tollgate, backend }: GatewayPorts): string[] {
  let site = guideConfig('caddy');
  site = replaced(site, ':8080 {', `:${port} {`);
  site = replaced(site, '127.0.0.1:8081', tollgate);
  site = replaced(site, '127.0.0.1:3000', backend);
  // Global options of a Caddy of its own: no admin endpoint to share, no certificates.
  writeFileSync(join(dir, 'Caddyfile'), `{\n\tadmin off\n\tauto_https off\n}\n\n${site}`);
  return ['/usr/bin/caddy', 'run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'];
}
