import { connect } from 'node:net';

/**
 * A request that says `Expect: 100-continue` and, as curl does, sends its body only once a 100 invites
 * it: `first` is what came first (a 100, or the final answer to a client that never sent its body),
 * `final` what followed a 100. `head` is the request line and headers, without Expect and Connection.
 */
export function continueExchange(
  port: number,
  head: readonly string[],
  body: string,
): Promise<{ first: string; final: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write([...head, 'Expect: 100-continue', 'Connection: close', '', ''].join('\r\n')),
    );
    let first: string | undefined;
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (first === undefined) {
        first = text;
        // Only a 100 invites the body.
        if (text.startsWith('HTTP/1.1 100')) {
          text = '';
          socket.write(body);
        }
      }
    });
    socket.on('end', () => resolve({ first: first ?? '', final: text }));
    socket.on('error', reject);
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer')));
  });
}
