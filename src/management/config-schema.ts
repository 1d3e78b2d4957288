/**
 * The JSON Schema of a configuration file (`tollgate apply`, docs/guides/configuration-as-code.md),
 * built from the create bodies the management API validates, so the file and the API never disagree.
 * Each section is a list of create bodies, with what a file adds: a consumer needs its `externalId`
 * (its identity), and a billing export's credential is a `${ENV_VAR}` reference, never the secret.
 * `portal` is one object, the portal's settings, its OIDC client secret a reference too.
 * packages/client/config-schema.json is this document as written (a unit test keeps them equal).
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { CreateBillingExportRequest } from './resources/billing-exports/schemas.js';
import { CreateConsumerRequest } from './resources/consumers/schemas.js';
import { oidcFields, UpdatePortalSettingsRequest } from './resources/developer-portal/schemas.js';
import { CreatePlanRequest } from './resources/plans/schemas.js';
import { CreateRouteRequest } from './resources/routes/schemas.js';
import { CreateWebhookRequest } from './resources/webhooks/schemas.js';
import { ExternalId } from './schemas.js';

/** `${NAME}`: an environment variable read by `tollgate apply`, never written in the file itself. */
export const ENV_REFERENCE_PATTERN = '^\\$\\{[A-Za-z_][A-Za-z0-9_]*\\}$';

const EnvReference = Type.String({
  pattern: ENV_REFERENCE_PATTERN,
  description:
    'A reference `${ENV_VAR}` to an environment variable holding the secret, read at apply time; never the secret itself',
  examples: ['${STRIPE_SECRET_KEY}'],
});

const ConsumerItem = Type.Object(
  {
    ...CreateConsumerRequest.properties,
    externalId: { ...ExternalId, description: 'Identifies the consumer' },
  },
  { additionalProperties: false, title: 'ConfigConsumer' },
);

const BillingExportItem = Type.Object(
  {
    ...CreateBillingExportRequest.properties,
    credential: Type.Optional({
      ...EnvReference,
      description: `${EnvReference.description}. Sent when the export is created, and again only with --rotate-credentials`,
    }),
  },
  { additionalProperties: false, title: 'ConfigBillingExport' },
);

const PortalItem = Type.Object(
  {
    ...UpdatePortalSettingsRequest.properties,
    oidc: Type.Optional(
      Type.Union(
        [
          Type.Object(
            {
              ...oidcFields,
              clientSecret: {
                ...EnvReference,
                description: `${EnvReference.description}. Sent when OIDC is first set, and again only with --rotate-credentials`,
                examples: ['${PORTAL_OIDC_CLIENT_SECRET}'],
              },
            },
            { additionalProperties: false },
          ),
          Type.Null(),
        ],
        { description: '"Sign in with …" through your OpenID Provider; null: sign-in links only' },
      ),
    ),
  },
  {
    additionalProperties: false,
    title: 'ConfigPortal',
    description:
      "The developer portal's settings (one object): fields left out are kept, or with --prune return to their defaults",
  },
);

const listOf = (item: TSchema, description: string) => Type.Array(item, { description });

/** The document served at /tollgate/config-schema.json. */
export function buildConfigSchema(): Record<string, unknown> {
  const schema = Type.Object(
    {
      $schema: Type.Optional(Type.String({ description: 'For editors: where this schema is' })),
      plans: Type.Optional(listOf(CreatePlanRequest, 'Plans, identified by `rateLimitId`')),
      routes: Type.Optional(listOf(CreateRouteRequest, 'Routes, identified by `routeId`')),
      consumers: Type.Optional(listOf(ConsumerItem, 'Consumers, identified by `externalId`')),
      webhooks: Type.Optional(
        listOf(CreateWebhookRequest, 'Webhooks, identified by `url`; their signing secrets are generated'),
      ),
      billingExports: Type.Optional(
        listOf(BillingExportItem, 'Billing exports, identified by `type` and `eventName`'),
      ),
      portal: Type.Optional(PortalItem),
    },
    {
      additionalProperties: false,
      title: 'Tollgate configuration',
      description:
        'What `tollgate apply` makes the running service hold: each list names the objects of its kind by their identity; keys are not declared',
    },
  );
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    ...(JSON.parse(JSON.stringify(schema)) as Record<string, unknown>),
  };
}
