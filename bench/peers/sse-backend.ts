// A backend that answers every request with an OpenAI-style stream of EVENTS (default 200) events, each
// written on its own turn (so each leaves as a chunk of its own), the last one carrying the usage the
// `openai` preset reads, then `data: [DONE]`. Asked for a path ending in `/paced`, it waits
// FIRST_EVENT_PAUSE_MS (default 5) after the first event before the rest, as a model pauses between
// tokens: that first event then travels alone, with no later event taking the CPUs it needs on the
// way. Env: PORT, EVENTS, UNITS, FIRST_EVENT_PAUSE_MS. Used by `npm run bench -- settle`.
import http from 'node:http';

const env = process.env;
const EVENTS = Number(env.EVENTS ?? 200);
const UNITS = Number(env.UNITS ?? 7);
const FIRST_EVENT_PAUSE_MS = Number(env.FIRST_EVENT_PAUSE_MS ?? 5);
const chunk = (i: number): string =>
  `data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"token ${i} "}}]}\n\n`;
const last = `data: {"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":${UNITS - 2},"total_tokens":${UNITS}}}\n\ndata: [DONE]\n\n`;

http
  .createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const paced = req.url?.endsWith('/paced') === true;
    let sent = 0;
    const next = (): void => {
      if (res.destroyed) return;
      if (sent === EVENTS - 1) {
        res.end(last);
        return;
      }
      res.write(chunk(sent++));
      if (paced && sent === 1) setTimeout(next, FIRST_EVENT_PAUSE_MS);
      else setImmediate(next);
    };
    next();
  })
  .listen(Number(env.PORT ?? 18140), '127.0.0.1');
