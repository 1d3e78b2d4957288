/** Stops what tests/global-setup.ts started, if it started anything. */
export default async function globalTeardown(): Promise<void> {
  const started = globalThis as typeof globalThis & { tollgateContainers?: { stop(): Promise<unknown> }[] };
  await Promise.all((started.tollgateContainers ?? []).map((c) => c.stop()));
}
