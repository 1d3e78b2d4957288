// A backend that answers every request with an OpenAI-style stream of EVENTS (default 200) events, each
// written on its own turn (so each leaves as a chunk of its own), the last one carrying the usage the
// `openai` preset reads, then `data: [DONE]`. Env: PORT, EVENTS, UNITS. Used by `npm run bench -- settle`.
import http from 'node:http';

const env = process.env;
const EVENTS = Number(env.EVENTS ?? 200);
const UNITS = Number(env.UNITS ?? 7);
const chunk = (i: number): string =>
  `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"token ${i} "}}]}\n\n`;
const last = `data: {"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":${UNITS - 2},"total_tokens":${UNITS}}}\n\ndata: [DONE]\n\n`;

http
  .createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let sent = 0;
    const next = (): void => {
      if (res.destroyed) return;
      if (sent === EVENTS - 1) {
        res.end(last);
        return;
      }
      res.write(chunk(sent++));
      setImmediate(next);
    };
    next();
  })
  .listen(Number(env.PORT ?? 18140), '127.0.0.1');
