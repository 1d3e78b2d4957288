/**
 * Where a key may be used from: its allowed origins and client addresses, one a line; empty means
 * anywhere (docs/guides/browser.md). The API checks each entry and answers what is wrong.
 */

/** The lines of a field as the API's list: null when there are none. */
export const listOfLines = (text: string): string[] | null => {
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  return lines.length === 0 ? null : lines;
};

/** A list as the field's text: one a line. */
export const linesOf = (list: readonly string[] | null | undefined): string => (list ?? []).join('\n');

export function KeyRestrictionFields({
  idPrefix,
  origins,
  addresses,
  onOrigins,
  onAddresses,
}: {
  idPrefix: string;
  origins: string;
  addresses: string;
  onOrigins: (value: string) => void;
  onAddresses: (value: string) => void;
}) {
  return (
    <>
      <div class="field">
        <label for={`${idPrefix}-origins`}>Allowed origins</label>
        <textarea
          id={`${idPrefix}-origins`}
          rows={3}
          value={origins}
          onInput={(e) => onOrigins(e.currentTarget.value)}
          aria-describedby={`${idPrefix}-origins-help`}
        />
        <p id={`${idPrefix}-origins-help`} class="help">
          Web pages that may use the key, one a line: https://app.example.com or https://*.example.com. Empty:
          any.
        </p>
      </div>
      <div class="field">
        <label for={`${idPrefix}-addresses`}>Allowed addresses</label>
        <textarea
          id={`${idPrefix}-addresses`}
          rows={3}
          value={addresses}
          onInput={(e) => onAddresses(e.currentTarget.value)}
          aria-describedby={`${idPrefix}-addresses-help`}
        />
        <p id={`${idPrefix}-addresses-help`} class="help">
          Client addresses or CIDR blocks, one a line: 203.0.113.0/24 or 2001:db8::/32. Empty: any.
        </p>
      </div>
    </>
  );
}
