// A module of a build, imported in the bench's own process: Node runs the bench by stripping types,
// which leaves src's `.js` imports unresolved, so in-process commands load dist/src instead.
import path from 'node:path';
import { ROOT } from './config.ts';

/** `module` (a path under dist/src, `.js`) of the build in `folder` (this checkout by default). */
export const builtModule = <T>(module: string, folder = ROOT): Promise<T> =>
  import(path.join(folder, 'dist/src', module)) as Promise<T>;
