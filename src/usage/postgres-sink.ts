import type { UsageRepository } from './usage-repository.js';
import type { UsageBatch, UsageSink } from './usage.js';

/** Single node: each batch goes straight into Postgres (embedded or not) in one transaction. */
export class PostgresUsageSink implements UsageSink {
  constructor(private readonly repository: UsageRepository) {}

  async write(batch: UsageBatch): Promise<void> {
    await this.repository.applyBatch(undefined, batch);
  }
}
