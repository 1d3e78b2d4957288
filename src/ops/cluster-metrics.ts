import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/**
 * With `WORKERS>1` the workers share the ops port, so a scrape lands on any one of them. The worker
 * that takes it asks the primary, which gathers every worker's registry over IPC (prom-client's
 * AggregatorRegistry) and answers with the sum: each scrape then reports the whole process tree.
 */
const SCRAPE = 'tollgate:scrape';
const SCRAPED = 'tollgate:scraped';
const SCRAPE_TIMEOUT_MS = 5_000;

interface ScrapeRequest {
  readonly type: typeof SCRAPE;
  readonly id: number;
}

interface ScrapeReply {
  readonly type: typeof SCRAPED;
  readonly id: number;
  readonly text?: string;
  readonly error?: string;
}

/** Primary side: answers every worker's scrape request with the metrics summed over all workers. */
export function aggregateWorkerMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: ScrapeRequest) => {
    if (message?.type !== SCRAPE) return;
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: SCRAPED, id: message.id, text } satisfies ScrapeReply),
      (err: unknown) =>
        worker.send({ type: SCRAPED, id: message.id, error: (err as Error).message } satisfies ScrapeReply),
    );
  });
}

/**
 * Worker side: lets the primary read `registry`, and returns the scrape to serve on the ops port,
 * which asks the primary for the sum.
 */
export function workerScrape(registry: Registry): () => Promise<string> {
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs prom-client's listener that answers the primary's requests.
  new AggregatorRegistry();
  let nextId = 0;
  const waiting = new Map<number, { resolve(text: string): void; reject(err: Error): void }>();
  process.on('message', (message: ScrapeReply) => {
    if (message?.type !== SCRAPED) return;
    const request = waiting.get(message.id);
    if (request === undefined) return;
    waiting.delete(message.id);
    if (message.text !== undefined) request.resolve(message.text);
    else request.reject(new Error(message.error ?? 'metrics aggregation failed'));
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error('the primary process did not aggregate the metrics in time'));
      }, SCRAPE_TIMEOUT_MS).unref();
      waiting.set(id, {
        resolve: (text) => (clearTimeout(timer), resolve(text)),
        reject: (err) => (clearTimeout(timer), reject(err)),
      });
      process.send!({ type: SCRAPE, id } satisfies ScrapeRequest);
    });
}
