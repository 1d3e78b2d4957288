/**
 * Comments, descriptions and docs cite files of the repository (a guide in docs/guides, the OpenAPI
 * document, a decision record in docs/decisions), never a section of the behaviour spec or an issue
 * number: both live outside the repository, so a reader cannot open them. RFC sections are standards
 * anyone can open, and stay allowed.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');

const SCANNED = ['src', 'console/src', 'packages/client/src', 'scripts', 'bench', 'docs'];

const TEXT = new Set([
  '.ts',
  '.tsx',
  '.js',
  '.mjs',
  '.cjs',
  '.md',
  '.json',
  '.yaml',
  '.yml',
  '.sql',
  '.lua',
  '.sh',
]);

/** "contract 14", "contract section 15", "the contract's 12", "Contract §9". */
const CONTRACT_NUMBER = /\bcontract(?:'s)?\s+(?:sections?\s+)?§?\s*\d+/i;
/** "section 12", "sections 9 and 19", "§12". */
const SECTION_NUMBER = /(?:\bsections?\s+|§\s?)\d+/i;
/** "issue 25", "issues 17 and 25", "issue #24". */
const ISSUE_NUMBER = /\bissues?\s+#?\d+/i;

const PATTERNS = [CONTRACT_NUMBER, SECTION_NUMBER, ISSUE_NUMBER];

/**
 * An RFC's sections ("RFC 5952 section 4", "RFC 3986 §6.2.2.1 and §6.2.2.2", across a line break too)
 * blanked out, line breaks kept so that line numbers stay right.
 */
const withoutRfcSections = (text: string): string =>
  text.replace(
    /\bRFC\s+\d{3,5}(?:,?\s+(?:sections?\s+|§\s?)[\d.]*\d(?:\s+(?:and|or)\s+§?\s?[\d.]*\d)*)?/gi,
    (rfc) => rfc.replace(/[^\n]/g, ' '),
  );

function textFilesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name === 'node_modules') return [];
    const path = join(dir, e.name);
    if (e.isDirectory()) return textFilesUnder(path);
    return TEXT.has(extname(e.name)) ? [path] : [];
  });
}

/** Every line of a text that cites a spec section or an issue, as `line: text`. */
function citationsIn(text: string): string[] {
  return withoutRfcSections(text)
    .split('\n')
    .flatMap((line, i) => (PATTERNS.some((p) => p.test(line)) ? [`${i + 1}: ${line.trim()}`] : []));
}

describe('citations', () => {
  it('finds the citations it is meant to refuse, and leaves RFC sections and other uses of the words', () => {
    const cited = [
      '(contract 14)',
      '(contract section 15)',
      'contract sections 9 and 19',
      'Contract §9',
      'see section 12',
      '§12 says',
      'issue 25: at most 0.05',
      'issue #24',
    ];
    for (const line of cited) expect(citationsIn(line)).toEqual([`1: ${line}`]);
    const allowed = [
      'RFC 5952 section 4 recommends',
      'RFC 9110 §7.6.1',
      'RFC 3986 §6.2.2.1 and §6.2.2.2',
      "the limiter's contract: charge, then refund",
      'the issue is the 5 replicas',
      'the sectioned 3 panes',
    ];
    for (const line of allowed) expect(citationsIn(line)).toEqual([]);
  });

  it('no file of src, console, the client package, scripts, bench or docs cites a spec section or an issue', () => {
    const files = SCANNED.flatMap((dir) => textFilesUnder(join(ROOT, dir)));
    expect(files.length).toBeGreaterThan(100);
    const found = files.flatMap((file) =>
      citationsIn(readFileSync(file, 'utf8')).map((hit) => `${relative(ROOT, file)}:${hit}`),
    );
    expect(found).toEqual([]);
  });
});
