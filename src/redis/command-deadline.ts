import type { Cluster, Command, Redis } from 'ioredis';

/** The error of a command past its deadline: ioredis' own words for its `commandTimeout`. */
const COMMAND_TIMED_OUT = 'Command timed out';

/**
 * Fails every command of `client` that Redis has not answered within `ms`, as ioredis' `commandTimeout`
 * does, but only once the replies already waiting on the socket have been read. ioredis checks its
 * deadline in a timer; after this process's own thread stalled past it (a long task, a CPU quota
 * throttling the container, a machine short of CPU) that timer runs before the poll that reads a
 * reply Redis sent in time. A healthy Redis then counted as failing, and the replica limited in
 * process until its probe found Redis back (src/limits/failover-limiter.ts): more admitted than the
 * shared count allows.
 *
 * A timer's callbacks run before the loop polls its sockets, and `setImmediate`'s after: the deadline
 * is checked in the latter.
 */
export function failCommandsAfter(client: Redis | Cluster, ms: number): void {
  const timed = new WeakSet<Command>();
  const send = client.sendCommand.bind(client) as (command: Command, ...rest: unknown[]) => unknown;
  client.sendCommand = (command: Command, ...rest: unknown[]) => {
    // A Cluster sends a command again on a redirection: its deadline runs from the first sending.
    if (!timed.has(command)) {
      timed.add(command);
      const timer = setTimeout(() => setImmediate(failIfUnanswered, command), ms);
      const clear = () => clearTimeout(timer);
      command.promise.then(clear, clear);
    }
    return send(command, ...rest);
  };
}

function failIfUnanswered(command: Command): void {
  if (!command.isSettled) command.reject(new Error(COMMAND_TIMED_OUT));
}
