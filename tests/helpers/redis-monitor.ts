import { connect, type Socket } from 'node:net';
import type { Redis } from 'ioredis';

/** One command a Redis server ran, as MONITOR reports it. */
export interface MonitoredCommand {
  /** `lua` for a command a script ran, else the client's address. */
  readonly source: string;
  /** Name (lower case) and arguments. */
  readonly args: readonly string[];
}

/**
 * MONITOR read from a plain socket. ioredis' `monitor()` cannot be trusted with a busy server: it
 * switches its connection to monitoring only in the promise callback of MONITOR's reply, so monitor
 * lines that arrive in the same read as that `+OK` are taken for replies to commands never sent
 * ("Command queue state error ... Last reply: <a monitor line>") and reject the `monitor()` call.
 * Here every line after `+OK` is a monitor line, whatever read it comes in.
 */
export class RedisMonitor {
  readonly commands: MonitoredCommand[] = [];
  private rest = '';
  private marks = 0;
  private readonly socket: Socket;

  private constructor(socket: Socket) {
    this.socket = socket;
  }

  /** Connects to `url` (redis://host:port) and resolves once Redis has answered MONITOR. */
  static start(url: string): Promise<RedisMonitor> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port || 6379), hostname, () => socket.write('MONITOR\r\n'));
      const monitor = new RedisMonitor(socket);
      let started = false;
      socket.on('error', reject);
      socket.on('data', (data: Buffer) => {
        for (const line of monitor.lines(data)) {
          if (started) monitor.record(line);
          else if (line === '+OK') {
            started = true;
            resolve(monitor);
          } else reject(new Error(`MONITOR answered ${line}`));
        }
      });
    });
  }

  /**
   * Resolves, with how many commands are recorded, once every command `client` sent before is: the
   * monitor's lines may trail the replies the client got.
   */
  async caughtUp(client: Pick<Redis, 'echo'>): Promise<number> {
    const mark = `monitor-mark-${this.marks++}`;
    await client.echo(mark);
    while (!this.commands.some((c) => c.args[0] === 'echo' && c.args[1] === mark))
      await new Promise((r) => setTimeout(r, 10));
    return this.commands.length;
  }

  /** Ends the connection: commands run from now on are not recorded. */
  close(): void {
    this.socket.destroy();
  }

  /** Commands run so far by name, `source === 'lua'` (run by a script) or not. */
  counts(insideScripts: boolean): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const { source, args } of this.commands) {
      if ((source === 'lua') === insideScripts) counts[args[0]!] = (counts[args[0]!] ?? 0) + 1;
    }
    return counts;
  }

  private lines(data: Buffer): string[] {
    // Latin-1 keeps one character per byte: quoted arguments are decoded byte by byte below.
    const lines = (this.rest + data.toString('latin1')).split('\r\n');
    this.rest = lines.pop()!;
    return lines;
  }

  private record(line: string): void {
    // +1700000000.123456 [0 127.0.0.1:5555] "set" "k" "v"   or   [0 lua] for a script's commands
    const head = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] /.exec(line);
    if (head === null) throw new Error(`not a MONITOR line: ${line}`);
    const args = parseQuoted(line.slice(head[0].length));
    this.commands.push({ source: head[1]!, args: [args[0]!.toLowerCase(), ...args.slice(1)] });
  }
}

const ESCAPES: Record<string, number> = { n: 10, r: 13, t: 9, a: 7, b: 8, '"': 34, '\\': 92 };

/** `"a" "b\"c" "\xe2\x82\xac"` as its strings (Redis quotes them like sdscatrepr: bytes, escaped). */
function parseQuoted(text: string): string[] {
  const args: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] === ' ') {
      i++;
      continue;
    }
    if (text[i] !== '"') throw new Error(`unquoted MONITOR argument at ${i}: ${text}`);
    const bytes: number[] = [];
    for (i++; text[i] !== '"'; i++) {
      if (i >= text.length) throw new Error(`unterminated MONITOR argument: ${text}`);
      if (text[i] !== '\\') bytes.push(text.charCodeAt(i));
      else if (text[i + 1] === 'x') {
        bytes.push(parseInt(text.slice(i + 2, i + 4), 16));
        i += 3;
      } else bytes.push(ESCAPES[text[++i]!]!);
    }
    i++;
    args.push(Buffer.from(bytes).toString('utf8'));
  }
  return args;
}
