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
  it('joins a run going when asked with run(), and skips a tick meanwhile: a slow database is not asked again at once', async () => {
    jest.useFakeTimers();
    try {
      const { task, recorded, written, runsStarted, finishRun } = recordingTask(1_000);
      task.start();
      jest.advanceTimersByTime(1_000);
      const going = task.run();
      recorded.push('late');
      expect(task.run()).toBe(going);
      // The write outlasts its interval: the tick meanwhile starts nothing.
      jest.advanceTimersByTime(1_000);
      await finishRun();
      await going;
      expect(runsStarted()).toBe(1);
      jest.advanceTimersByTime(1_000);
      await finishRun();
      expect(written).toEqual([[], ['late']]);
      task.stop();
    } finally {
      jest.useRealTimers();
    }
  });

  it('runs once more after the run going when asked with runAnew(), for what was recorded since, one run for every ask', async () => {
    const { task, recorded, written, runsStarted, finishRun } = recordingTask();
    recorded.push('a');
    const first = task.run();
    recorded.push('b');
    const asked = [task.runAnew(), task.runAnew()];
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
    // With nothing going, it is a run now.
    recorded.push('c');
    const alone = task.runAnew();
    await finishRun();
    await alone;
    expect(written).toEqual([['a'], ['b'], ['c']]);
  });

  it('waits in ended() for the run asked anew after the one going', async () => {
    const { task, recorded, written, finishRun } = recordingTask();
    task.start();
    const going = task.run();
    recorded.push('taken after the run going began');
    task.stop();
    const last = task.runAnew();
    let ended = false;
    const ending = task.ended().then(() => (ended = true));
    await finishRun();
    await going;
    expect(ended).toBe(false);
    await finishRun();
    await Promise.all([last, ending]);
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
