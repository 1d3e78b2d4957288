/** A fieldset of checkboxes choosing several values (an admin token's scopes, a webhook's events). */
export function CheckboxGroup<T extends string>({
  legend,
  options,
  chosen,
  onChange,
}: {
  legend: string;
  options: readonly T[];
  chosen: readonly T[];
  onChange: (chosen: readonly T[]) => void;
}) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      {options.map((option) => (
        <label class="checkbox" key={option}>
          <input
            type="checkbox"
            checked={chosen.includes(option)}
            onChange={(e) =>
              onChange(
                e.currentTarget.checked
                  ? options.filter((o) => o === option || chosen.includes(o))
                  : chosen.filter((c) => c !== option),
              )
            }
          />
          <span class="mono">{option}</span>
        </label>
      ))}
    </fieldset>
  );
}
