import { jest } from '@jest/globals';
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

/**
 * A task writing what was recorded, as the usage recorder does: each run takes what is recorded as it
 * starts and holds until `finishRun`; `written` is what the runs that ended wrote, run by run.
 */
function recordingTask(intervalMs = 3_600_000) {
  const logger = pino({ level: 'silent' });
  const recorded: string[] = [];
  const written: string[][] = [];
  const finishes: (() => void)[] = [];
  const work = () => {
    const taken = recorded.splice(0);
    return new Promise<void>((resolve) =>
      finishes.push(() => {
        written.push(taken);
        resolve();
      }),
    );
  };
  const task = new RepeatingTask('usage writes', intervalMs, work, logger, { runAtStart: false });
  /** Ends the oldest run still going; then lets its follower start. */
  const finishRun = async () => {
    finishes.shift()!();
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { task, recorded, written, runsStarted: () => written.length + finishes.length, finishRun };
}

describe('RepeatingTask', () => {
  it('runs once more right after the run going for what was recorded meanwhile, one run for every ask', async () => {
    const { task, recorded, written, runsStarted, finishRun } = recordingTask();
    recorded.push('a');
    const first = task.run();
    recorded.push('b');
    const asked = [task.run(), task.run()];
    expect(asked[0]).toBe(asked[1]);
    expect(runsStarted()).toBe(1);
    await finishRun();
    await first;
    expect(written).toEqual([['a']]);
    expect(runsStarted()).toBe(2);
    await finishRun();
    await Promise.all(asked);
    expect(written).toEqual([['a'], ['b']]);
    expect(runsStarted()).toBe(2);
  });

  it('starts the run a tick asked for while a slow one went as that one ends, not a whole interval later', async () => {
    jest.useFakeTimers();
    try {
      const { task, recorded, written, runsStarted, finishRun } = recordingTask(1_000);
      task.start();
      jest.advanceTimersByTime(1_000);
      expect(runsStarted()).toBe(1);
      recorded.push('late');
      // The write outlasts its interval: the tick that comes meanwhile asks for the next one.
      jest.advanceTimersByTime(1_000);
      expect(runsStarted()).toBe(1);
      await finishRun();
      expect(runsStarted()).toBe(2);
      await finishRun();
      expect(written).toEqual([[], ['late']]);
      task.stop();
    } finally {
      jest.useRealTimers();
    }
  });

  it('leaves nothing recorded before stop unwritten when stop finds a run going', async () => {
    const { task, recorded, written, finishRun } = recordingTask();
    task.start();
    const going = task.run();
    recorded.push('taken after the run going began');
    task.stop();
    const last = task.run();
    const ended = task.ended();
    await finishRun();
    await going;
    await finishRun();
    await Promise.all([last, ended]);
    expect(written).toEqual([[], ['taken after the run going began']]);
  });

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
