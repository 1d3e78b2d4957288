// `node bench/lib/collector-main.ts PORT [hang]`: the bench's OTLP/HTTP collector in a process of its
// own, so that what it spends receiving is not counted as the exporter's.
import { startCollector } from './otlp-collector.ts';

const [port, mode] = process.argv.slice(2);
await startCollector(Number(port), mode === 'hang');
