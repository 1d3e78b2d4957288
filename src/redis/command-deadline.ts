import type { Cluster, Command, Redis } from 'ioredis';

/** The error of a command past its deadline: ioredis' own words for its `commandTimeout`. */
const COMMAND_TIMED_OUT = 'Command timed out';
/** A deadline's timer this late means the thread was held up: it gives that time back. */
const HELD_UP_MS = 10;

/** A command's deadline: when it falls due, the timer that checks it then, whether it was given time back. */
interface Deadline {
  dueAt: number;
  timer: NodeJS.Timeout | undefined;
  extended: boolean;
}

/**
 * Fails every command of `client` that Redis has not answered within `ms` of this process's own
 * running time, as ioredis' `commandTimeout` would, had it not counted time the thread could not run.
 * ioredis checks its deadline in a timer; after the process's thread was held up past it (a long
 * task, a CPU quota throttling the container, a machine short of CPU) that timer runs before the poll
 * that reads a reply Redis sent in time. A healthy Redis then counted as failing, and the replica
 * limited in process until its probe found Redis back (src/limits/failover-limiter.ts): more admitted
 * than the shared count allows.
 *
 * Here a timer that fires late, the thread held up meanwhile, gives the command as long again, once
 * (it may not even have left while the thread was held; a thread that lags for good must still find
 * a hung Redis out); one on time checks the command in `setImmediate`, which Node runs after the poll
 * that reads the sockets.
 */
export function failCommandsAfter(client: Redis | Cluster, ms: number): void {
  const timed = new WeakSet<Command>();
  const send = client.sendCommand.bind(client) as (command: Command, ...rest: unknown[]) => unknown;
  client.sendCommand = (command: Command, ...rest: unknown[]) => {
    // A Cluster sends a command again on a redirection: its deadline runs from the first sending.
    if (!timed.has(command)) {
      timed.add(command);
      const deadline: Deadline = { dueAt: performance.now() + ms, timer: undefined, extended: false };
      deadline.timer = setTimeout(onDue, ms, command, deadline);
      const clear = () => clearTimeout(deadline.timer);
      command.promise.then(clear, clear);
    }
    return send(command, ...rest);
  };
}

function onDue(command: Command, deadline: Deadline): void {
  const now = performance.now();
  const late = now - deadline.dueAt;
  if (late >= HELD_UP_MS && !deadline.extended) {
    deadline.extended = true;
    deadline.dueAt = now + late;
    deadline.timer = setTimeout(onDue, late, command, deadline);
  } else setImmediate(failIfUnanswered, command);
}

function failIfUnanswered(command: Command): void {
  if (!command.isSettled) command.reject(new Error(COMMAND_TIMED_OUT));
}
