/** A row of toggle buttons choosing one value (a range preset): one tab stop per button, state announced. */
export function ChoiceGroup<T extends string>({
  label,
  options,
  value,
  onChange,
}: {
  label: string;
  options: readonly { readonly id: T; readonly label: string }[];
  value: T;
  onChange: (value: T) => void;
}) {
  return (
    <div class="choices" role="group" aria-label={label}>
      {options.map((option) => (
        <button
          key={option.id}
          type="button"
          class="choice"
          aria-pressed={option.id === value}
          onClick={() => onChange(option.id)}
        >
          {option.label}
        </button>
      ))}
    </div>
  );
}
