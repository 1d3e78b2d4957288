/**
 * The management API's types, generated once from the OpenAPI document into the @tollgate/client
 * package (scripts/generate-api-types.mjs): the console reads the same file the package ships, and
 * only its types (nothing of the package reaches the bundle).
 */
export type { components, operations, paths } from '../../packages/client/src/generated/management-api';
