/** A key's metadata typed as JSON, with what is wrong with it (checked before the API is called). */
export function MetadataField({
  id,
  rows,
  value,
  onInput,
  problem,
}: {
  id: string;
  rows: number;
  value: string;
  onInput: (value: string) => void;
  problem: string | undefined;
}) {
  return (
    <>
      <div class="field">
        <label for={id}>Metadata (JSON object)</label>
        <textarea
          id={id}
          class="mono"
          rows={rows}
          value={value}
          onInput={(e) => onInput(e.currentTarget.value)}
        />
      </div>
      {problem && (
        <p class="error" role="alert">
          {problem}
        </p>
      )}
    </>
  );
}
