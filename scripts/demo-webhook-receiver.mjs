// A webhook receiver for the webhooks guide: verifies each delivery with the signing secret
// (WEBHOOK_SECRET, the `secret` Tollgate showed when the webhook was created) as any Standard Webhooks
// receiver does, dedupes by webhook-id, and prints what arrived.
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const port = Number(process.env.PORT ?? 9000);
const secret = process.env.WEBHOOK_SECRET;
if (!secret?.startsWith('whsec_')) {
  console.error('demo-webhook-receiver: set WEBHOOK_SECRET to the whsec_… secret of your webhook');
  process.exit(1);
}
const webhook = new Webhook(secret);
const seen = new Set();

createServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('demo webhook receiver: POST deliveries here\n');
    return;
  }
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const id = req.headers['webhook-id'];
    console.log(`POST ${req.url}`);
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature'])
      console.log(`  ${name}: ${req.headers[name]}`);
    console.log(`  ${body}`);
    let event;
    try {
      event = webhook.verify(body, req.headers);
    } catch (err) {
      console.log(`  refused: ${err.message}`);
      res.writeHead(400).end();
      return;
    }
    // At least once: a delivery may come again with the same webhook-id; act on it once.
    console.log(
      seen.has(id)
        ? `  verified ${event.type}, already handled ${id}: ignored`
        : `  verified ${event.type}, handled ${id}`,
    );
    seen.add(id);
    res.writeHead(204).end();
  });
}).listen(port, '127.0.0.1', () =>
  console.log(`demo webhook receiver on http://127.0.0.1:${port}, verifying with WEBHOOK_SECRET`),
);
