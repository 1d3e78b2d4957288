import pino from 'pino';
import { RepeatingTask } from '../../src/ops/repeating-task.js';

/** A task whose run waits for `finish`, and the lines its logger wrote. */
function slowTask(outcome: 'fails' | 'succeeds') {
  const lines: { level: number; msg: string; task: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  let finish!: () => void;
  const work = () =>
    new Promise<void>((resolve, reject) => {
      finish = () =>
        outcome === 'fails' ? reject(new Error('driver has already been destroyed')) : resolve();
    });
  const task = new RepeatingTask('usage retention', 3_600_000, work, logger);
  return { task, lines, finish: () => finish() };
}

describe('RepeatingTask', () => {
  it('waits in ended() for the run going when it was stopped, and resolves at once with none', async () => {
    const { task, finish } = slowTask('succeeds');
    await task.ended();
    task.start();
    task.stop();
    let ended = false;
    const ending = task.ended().then(() => (ended = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(ended).toBe(false);
    finish();
    await ending;
    expect(ended).toBe(true);
  });

  it('logs a run that fails after the task stopped as cut short by the shutdown, not as one to retry', async () => {
    const { task, lines, finish } = slowTask('fails');
    task.start();
    task.stop();
    finish();
    await task.ended();
    expect(lines.map(({ level, msg, task: name }) => ({ level, msg, name }))).toEqual([
      { level: 30, msg: 'background task cut short by the shutdown', name: 'usage retention' },
    ]);
  });

  it('warns of a run that fails while the task runs: the next run tries again', async () => {
    const { task, lines, finish } = slowTask('fails');
    task.start();
    finish();
    await task.ended();
    task.stop();
    expect(lines.map(({ level, msg }) => ({ level, msg }))).toEqual([
      { level: 40, msg: 'background task failed; will retry' },
    ]);
  });
});
