/** A fault of the file, found before any change: where it is (file, line, field) and what it is. */
export interface ConfigProblem {
  readonly line: number;
  /** The field, as `consumers[1].credits.remaining`; absent when the fault is the file's syntax. */
  readonly field?: string;
  readonly message: string;
}

/** Every fault of one file, each named `FILE:LINE: FIELD: message`. */
export class ConfigFileError extends Error {
  constructor(
    readonly file: string,
    readonly problems: readonly ConfigProblem[],
  ) {
    super(
      problems
        .map((p) => `${file}:${p.line}: ${p.field === undefined ? '' : `${p.field}: `}${p.message}`)
        .join('\n'),
    );
    this.name = 'ConfigFileError';
  }
}
