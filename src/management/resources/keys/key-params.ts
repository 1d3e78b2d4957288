/** What every operation on one consumer API key names: its tag, its path parameter, its 404. */
import { Type } from '@sinclair/typebox';
import { KeyId } from '../../schemas.js';

export const TAG = 'Consumer API keys';
const KeyParams = Type.Object({
  consumerApiKeyId: { ...KeyId, description: 'The key id (`id` of the create response)' },
});
export const keyParams = { schema: KeyParams, notFound: 'key_not_found' } as const;
export const KEY_NOT_FOUND = { key_not_found: 'No key has that id' } as const;
