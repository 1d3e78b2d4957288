// The fastest Node assembly from popular parts: Fastify 5, @fastify/rate-limit counting in Redis
// (ioredis), @fastify/http-proxy forwarding through undici's keep-alive pool.
// Env: PORT, BACKEND_URL, REDIS_URL, SECRET (the one valid key), PREFIX (Redis key prefix).
import Fastify from 'fastify';
import rateLimit from '@fastify/rate-limit';
import httpProxy from '@fastify/http-proxy';
import { Redis } from 'ioredis';

const env = process.env;
const keys = new Set([env.SECRET ?? 'bench-secret']);
// The plugin's documented settings for Redis: fail fast rather than queue behind a lost connection.
const redis = new Redis(env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
  connectTimeout: 500,
  maxRetriesPerRequest: 1,
});

const app = Fastify({ logger: false });
app.decorateRequest('apiKey', '');

// Registered before the limiter so its keyGenerator sees the authenticated key.
app.addHook('onRequest', async (req, reply) => {
  const header = req.headers.authorization;
  const secret = header?.startsWith('Bearer ') ? header.slice(7) : undefined;
  if (secret === undefined || !keys.has(secret)) {
    return reply.code(401).send({ error: 'invalid api key' });
  }
  (req as typeof req & { apiKey: string }).apiKey = secret;
});

await app.register(rateLimit, {
  max: 1_000_000_000,
  timeWindow: 60_000,
  redis,
  nameSpace: `${env.PREFIX ?? 'bench:'}frl:`,
  keyGenerator: (req) => (req as typeof req & { apiKey: string }).apiKey,
});

await app.register(httpProxy, {
  upstream: env.BACKEND_URL ?? 'http://127.0.0.1:18080',
  replyOptions: {
    rewriteRequestHeaders: (req, headers) => {
      const { authorization: _dropped, ...rest } = headers;
      return { ...rest, 'x-api-key': (req as typeof req & { apiKey: string }).apiKey };
    },
  },
});

await app.listen({ port: Number(env.PORT ?? 18084), host: '127.0.0.1' });
process.on('SIGTERM', () => {
  void app.close().then(() => {
    redis.disconnect();
    process.exit(0);
  });
});
