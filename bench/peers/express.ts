// The assembly a Node user builds from popular parts: Express 5, express-rate-limit counting in Redis
// through rate-limit-redis, http-proxy-middleware 4 forwarding over a keep-alive agent.
// Env: PORT, BACKEND_URL, REDIS_URL, SECRET (the one valid key), PREFIX (Redis key prefix).
import http from 'node:http';
import express from 'express';
import { rateLimit } from 'express-rate-limit';
import { RedisStore, type RedisReply } from 'rate-limit-redis';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { Redis } from 'ioredis';

const env = process.env;
const keys = new Set([env.SECRET ?? 'bench-secret']);
const redis = new Redis(env.REDIS_URL ?? 'redis://127.0.0.1:6379');

const app = express();
app.disable('x-powered-by');
app.disable('etag');

app.use((req, res, next) => {
  const header = req.headers.authorization;
  const secret = header?.startsWith('Bearer ') ? header.slice(7) : undefined;
  if (secret === undefined || !keys.has(secret)) {
    res.status(401).json({ error: 'invalid api key' });
    return;
  }
  res.locals.apiKey = secret;
  next();
});

app.use(
  rateLimit({
    windowMs: 60_000,
    // Far above what wrk can send in a minute: the limiter counts but never refuses.
    limit: 1_000_000_000,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    keyGenerator: (_req, res) => res.locals.apiKey as string,
    store: new RedisStore({
      prefix: `${env.PREFIX ?? 'bench:'}erl:`,
      sendCommand: (command: string, ...args: string[]) =>
        redis.call(command, ...args) as Promise<RedisReply>,
    }),
  }),
);

app.use(
  createProxyMiddleware({
    target: env.BACKEND_URL ?? 'http://127.0.0.1:18080',
    agent: new http.Agent({ keepAlive: true, maxSockets: 64 }),
    on: {
      proxyReq: (proxyReq, _req, res) => {
        proxyReq.removeHeader('authorization');
        proxyReq.setHeader('x-api-key', res.locals.apiKey as string);
      },
    },
  }),
);

const server = app.listen(Number(env.PORT ?? 18083), '127.0.0.1');
server.keepAliveTimeout = 120_000;
process.on('SIGTERM', () => {
  server.close();
  redis.disconnect();
  process.exit(0);
});
