// A full garbage collection in another Node process, then its heap in use, through the inspector it
// opens on SIGUSR1 (at the port its `--inspect-port` names): memory read after a collection shows what
// the process keeps, where a reading between collections shows garbage not yet collected as well.
import { setTimeout as sleep } from 'node:timers/promises';

/** One DevTools protocol session with a process that runs with `--inspect-port=port`. */
export class Inspector {
  private nextId = 1;
  private readonly pending = new Map<number, (result: Record<string, unknown>) => void>();
  private readonly socket: WebSocket;

  private constructor(socket: WebSocket) {
    this.socket = socket;
    socket.addEventListener('message', (event) => {
      const reply = JSON.parse(String(event.data)) as { id?: number; result?: Record<string, unknown> };
      if (reply.id === undefined) return;
      this.pending.get(reply.id)?.(reply.result ?? {});
      this.pending.delete(reply.id);
    });
  }

  /** Signals `pid` to open its inspector, then connects once it listens (within 10 s). */
  static async open(pid: number, port: number): Promise<Inspector> {
    process.kill(pid, 'SIGUSR1');
    for (let tries = 0; ; tries++) {
      try {
        const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
          webSocketDebuggerUrl: string;
        }[];
        const socket = new WebSocket(targets[0]!.webSocketDebuggerUrl);
        await new Promise((resolve, reject) => {
          socket.addEventListener('open', resolve, { once: true });
          socket.addEventListener('error', reject, { once: true });
        });
        return new Inspector(socket);
      } catch (err) {
        if (tries >= 100) throw err;
        await sleep(100);
      }
    }
  }

  private send(method: string): Promise<Record<string, unknown>> {
    const id = this.nextId++;
    this.socket.send(JSON.stringify({ id, method }));
    return new Promise((resolve) => this.pending.set(id, resolve));
  }

  /** A full collection, then the JS heap in use, bytes. */
  async collectedHeapBytes(): Promise<number> {
    await this.send('HeapProfiler.collectGarbage');
    return (await this.send('Runtime.getHeapUsage')).usedSize as number;
  }

  close(): void {
    this.socket.close();
  }
}
