// Figures read from a Tollgate's /metrics (its ops port).

async function metricsText(opsPort: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${opsPort}/metrics`)).text();
}

/** The value of the sample named exactly `name` (labels included, if any). */
export async function metricValue(opsPort: number, name: string): Promise<number> {
  const line = (await metricsText(opsPort)).split('\n').find((l) => l.startsWith(name + ' '));
  return Number(line?.slice(name.length + 1) ?? NaN);
}

/** The sum of every sample of the metric `name`, whatever its labels. */
export async function metricSum(opsPort: number, name: string): Promise<number> {
  const text = await metricsText(opsPort);
  return [
    ...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+(?:\\.\\d+)?(?:e[+-]?\\d+)?)$`, 'gm')),
  ].reduce((n, m) => n + Number(m[1]), 0);
}
