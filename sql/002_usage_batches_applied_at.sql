-- Batch ids only need to outlive a retry of their batch; they are pruned after a day by applied_at.
CREATE INDEX usage_batches_applied_at ON usage_batches (applied_at);
