/**
 * The schemas of a plan's cost entries and unit (docs/decisions/0190-usage-priced-plan-schema.md):
 * what a request costs, or how its response reports what it used (`settle`), what it reserves first
 * (`cost` or `reserve`), and the unit a plan counts in.
 */
import { Type } from '@sinclair/typebox';
import { NO_CONTROL_CHARACTER_PATTERN } from '../../../plans/clean-text.js';
import { MAX_COST, MIN_COST } from '../../../plans/plan.js';
import {
  MAX_SETTLE_POINTERS,
  MAX_SETTLE_UNITS,
  MAX_UNIT_LENGTH,
  PLAN_UNIT_DEFAULT,
  SETTLE_MAX_DEFAULT,
  SETTLE_PRESETS,
  type SettleRule,
} from '../../../plans/usage-pricing.js';
import { JsonPointerText, RequestMatchSchema } from '../../request-match-schemas.js';
import { strict } from '../../schemas.js';

const Units = (description: string, minimum = 0) =>
  Type.Integer({ minimum, maximum: MAX_SETTLE_UNITS, description });

// One object of three optional fields, exactly one given: a fault is named at its field, not per union branch.
const SettleSchema = Type.Unsafe<SettleRule>(
  Type.Object(
    {
      header: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 128,
          pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]*$",
          description: 'A response header (or trailer) holding the units as a non-negative integer',
          examples: ['x-units-used'],
        }),
      ),
      json: Type.Optional(
        Type.Array(JsonPointerText, {
          minItems: 1,
          maxItems: MAX_SETTLE_POINTERS,
          description: `1 to ${MAX_SETTLE_POINTERS} JSON pointers whose integers are summed: in a JSON body, or, in a text/event-stream, the last integer each takes in any event's data`,
          examples: [['/usage/prompt_tokens', '/usage/completion_tokens']],
        }),
      ),
      preset: Type.Optional(
        Type.Unsafe<(typeof SETTLE_PRESETS)[number]>({
          type: 'string',
          enum: [...SETTLE_PRESETS],
          description:
            '`openai`: `/usage/total_tokens`, or `/response/usage/total_tokens` in a Responses API stream (a chat completion stream reports it in the chunk `stream_options.include_usage` asks for); `anthropic`: input plus output tokens, and the prompt written to and read from the cache when reported, under `usage` or `message.usage`, in a JSON answer or over the events',
        }),
      ),
    },
    {
      ...strict,
      minProperties: 1,
      maxProperties: 1,
      title: 'PlanCostSettle',
      description:
        'One of `header`, `json` or `preset`: where the backend reports the units the request used, read as the response passes (never buffered; a body in gzip, deflate, br or zstd is read decoded and passed on as it came); when it has ended, the difference from the reservation is charged (or refunded) to every limit and balance the reservation was. A response reporting nothing readable keeps its reservation as its cost',
    },
  ),
);

export const CostRuleSchema = Type.Object(
  {
    match: RequestMatchSchema,
    cost: Type.Optional(
      Type.Integer({
        minimum: MIN_COST,
        maximum: MAX_COST,
        description: `What a matching request costs, ${MIN_COST} to ${MAX_COST} units of every limit and balance that applies. Required without \`settle\`; beside it, what is reserved (default 1) unless \`reserve\` says`,
      }),
    ),
    reserve: Type.Optional(
      Type.Object(
        {
          pointer: JsonPointerText,
          add: Type.Optional(
            Units('Added to the integer at `pointer` (e.g. a bound on the prompt). Default 0'),
          ),
          default: Units('Reserved when the body holds no non-negative integer at `pointer`', 1),
        },
        {
          ...strict,
          title: 'PlanCostReserve',
          description:
            'Only beside `settle`, not with `cost`: reserve the integer at `pointer` of the request\'s JSON body plus `add`, else `default` (e.g. `{pointer: "/max_tokens", add: 1000, default: 4096}`)',
        },
      ),
    ),
    settle: Type.Optional(SettleSchema),
    settleMax: Type.Optional(
      Units(
        `Only beside \`settle\`: the most units a request reserves or is settled at. Default ${SETTLE_MAX_DEFAULT}`,
        1,
      ),
    ),
  },
  { ...strict, title: 'PlanCost' },
);
export const PlanUnit = Type.String({
  minLength: 1,
  maxLength: MAX_UNIT_LENGTH,
  pattern: NO_CONTROL_CHARACTER_PATTERN,
  description: `What the plan's limits, balances and usage count, as the console, the portal and exports name it: free text up to ${MAX_UNIT_LENGTH} characters. Default \`${PLAN_UNIT_DEFAULT}\``,
  examples: ['tokens'],
});
