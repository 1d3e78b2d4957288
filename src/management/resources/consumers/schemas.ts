/** The requests and answers of the consumer operations. */
import { type Static, Type } from '@sinclair/typebox';
import { CreditsInput, CreditsOrNull, CreditsUpdate } from '../credits/balance-schemas.js';
import { RateLimitState } from '../plans/schemas.js';
import { Usage } from '../usage/schemas.js';
import {
  ConsumerId,
  ExternalId,
  IsoTimestamp,
  Metadata,
  MetadataSetting,
  Name,
  NextCursor,
  pageFields,
  RateLimitId,
  strict,
} from '../../schemas.js';

const consumerSettings = {
  externalId: Type.Optional(
    Type.Union([
      {
        ...ExternalId,
        description: "The owner's id in the caller's system, 1-200 characters; unique among consumers",
      },
      Type.Null(),
    ]),
  ),
  metadata: MetadataSetting,
  rateLimitId: Type.Optional(
    Type.Union([RateLimitId, Type.Null()], { description: 'The plan all its keys share; null: none' }),
  ),
  credits: Type.Optional({
    ...CreditsInput,
    description: `${CreditsInput.description}. Every key of the consumer spends it`,
  }),
};

export const CreateConsumerRequest = Type.Object(
  { name: Name, ...consumerSettings },
  { ...strict, title: 'CreateConsumerRequest' },
);

export const UpdateConsumerRequest = Type.Object(
  {
    name: Type.Optional(Name),
    ...consumerSettings,
    credits: Type.Optional({
      ...CreditsUpdate,
      description: `${CreditsUpdate.description}. Every key of the consumer spends it`,
    }),
  },
  {
    ...strict,
    minProperties: 1,
    title: 'UpdateConsumerRequest',
    description:
      'Any of the fields; null clears externalId, rateLimitId and credits, and sets metadata to `{}`',
  },
);

export const ListConsumersQuery = Type.Object(
  {
    ...pageFields,
    externalId: Type.Optional(ExternalId),
    namePrefix: Type.Optional({
      ...Name,
      description: 'Consumers whose name starts with this text (case-sensitive)',
    }),
    search: Type.Optional({
      ...Name,
      description:
        'Consumers whose name or external id holds this text anywhere, in any case (`acme` finds "ACME Corp" and the external id "cus_acme_1")',
    }),
    rateLimitId: Type.Optional({ ...RateLimitId, description: 'Consumers bound to this plan' }),
  },
  { ...strict, title: 'ListConsumersQuery' },
);

export const DeleteConsumerQuery = Type.Object(
  {
    force: Type.Optional(
      Type.Boolean({
        description: '`true`: detach the keys of the consumer (they keep working, alone), then delete it',
      }),
    ),
  },
  { ...strict, title: 'DeleteConsumerQuery' },
);

const consumerFields = {
  consumerId: ConsumerId,
  name: Type.String(),
  externalId: Type.Union([Type.String(), Type.Null()]),
  metadata: Metadata,
  rateLimitId: Type.Union([RateLimitId, Type.Null()], {
    description: 'The plan all its keys share, or null',
  }),
  keyCount: Type.Integer({ minimum: 0, description: 'Keys that belong to the consumer' }),
  credits: {
    ...CreditsOrNull,
    description: `${CreditsOrNull.description}. Every key of the consumer spends it`,
  },
  createdAt: IsoTimestamp,
  lastUpdated: IsoTimestamp,
};

export const ConsumerResponse = Type.Object(consumerFields, { ...strict, title: 'Consumer' });

export const ConsumerDetailResponse = Type.Object(
  {
    ...consumerFields,
    usage: Type.Object(
      {
        ...Usage.properties,
        rateLimits: Type.Union([RateLimitState, Type.Null()], {
          description: "From the consumer's plan, shared by all its keys; null without one",
        }),
      },
      {
        ...strict,
        description:
          'What its keys did while they belonged to it (moving a key moves none of its history), and its shared limits',
      },
    ),
  },
  { ...strict, title: 'ConsumerDetailResponse' },
);

export const ListConsumersResponse = Type.Object(
  {
    consumers: Type.Array(ConsumerResponse, { description: 'Oldest first' }),
    nextCursor: NextCursor,
  },
  { ...strict, title: 'ListConsumersResponse' },
);

export const DeleteConsumerResponse = Type.Object(
  { consumerId: ConsumerId, message: Type.String() },
  { ...strict, title: 'DeleteConsumerResponse' },
);

export type CreateConsumerRequest = Static<typeof CreateConsumerRequest>;
export type UpdateConsumerRequest = Static<typeof UpdateConsumerRequest>;
export type ConsumerResponse = Static<typeof ConsumerResponse>;
export type ConsumerDetailResponse = Static<typeof ConsumerDetailResponse>;
export type ListConsumersResponse = Static<typeof ListConsumersResponse>;
export type DeleteConsumerResponse = Static<typeof DeleteConsumerResponse>;
