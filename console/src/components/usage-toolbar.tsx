/**
 * The range a usage page shows, held in its address (`range=7d&granularity=hour`), and the toolbar that
 * chooses it: presets, granularity, refresh, and the same buckets as the API's CSV.
 */
import { useMemo, useState } from 'preact/hooks';
import { href, hrefWith, navigate, type Route } from '../route';
import { GRANULARITIES, rangePreset, rangeQuery, RANGES, type Granularity, type RangePreset } from '../usage';
import { ChoiceGroup } from './choice-group';
import { CsvButton } from './csv-button';

export interface UsageRange {
  readonly preset: RangePreset;
  readonly granularity: Granularity;
  /** The API's `from` and `to`: the range ends when it was chosen (or refreshed), not at every render. */
  readonly range: { readonly from: string; readonly to: string };
  /** The address's query with these changed. */
  show(query: { range?: string; granularity?: string }): void;
  refresh(): void;
}

/** The range the route names on the page at `segments`. */
export function useUsageRange(route: Route, segments: readonly string[]): UsageRange {
  const preset = rangePreset(route.query.get('range'));
  const chosen = route.query.get('granularity');
  const granularity: Granularity = (GRANULARITIES as readonly string[]).includes(chosen ?? '')
    ? (chosen as Granularity)
    : preset.granularity;
  const [refreshed, setRefreshed] = useState(0);
  const range = useMemo(() => rangeQuery(preset), [preset.id, refreshed]);
  return {
    preset,
    granularity,
    range,
    show: (query) =>
      navigate(hrefWith(href(...segments), { range: preset.id, granularity: chosen, ...query })),
    refresh: () => setRefreshed((n) => n + 1),
  };
}

export function UsageToolbar({
  usage,
  csv,
}: {
  usage: UsageRange;
  csv: { load: () => Promise<Blob>; name: string };
}) {
  return (
    <div class="toolbar">
      {/* A new range starts at its own granularity; a granularity chosen here stays until then. */}
      <ChoiceGroup
        label="Range"
        options={RANGES}
        value={usage.preset.id}
        onChange={(id) => usage.show({ range: id, granularity: undefined })}
      />
      <div class="field inline">
        <label for="granularity">Granularity</label>
        <select
          id="granularity"
          value={usage.granularity}
          onChange={(e) => usage.show({ granularity: e.currentTarget.value })}
        >
          {GRANULARITIES.map((g) => (
            <option key={g} value={g}>
              {g[0]!.toUpperCase() + g.slice(1)}
            </option>
          ))}
        </select>
      </div>
      <button type="button" class="secondary" onClick={usage.refresh}>
        Refresh
      </button>
      <CsvButton load={csv.load} range={usage.range} name={`${csv.name}-${usage.granularity}`} />
    </div>
  );
}
