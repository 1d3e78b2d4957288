/**
 * The few pages the portal's server answers itself (a sign-in that failed): plain HTML, no script, no
 * style from elsewhere, every text escaped.
 */
import type { Response } from 'express';

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

export function sendPage(
  res: Response,
  status: number,
  title: string,
  message: string,
  homePath: string,
): void {
  res
    .status(status)
    .set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'")
    .set('Referrer-Policy', 'no-referrer')
    .type('text/html; charset=utf-8')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title></head>` +
        `<body style="font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem"><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p><p><a href="${escapeHtml(homePath)}">Back to the portal</a></p></main></body></html>`,
    );
}
