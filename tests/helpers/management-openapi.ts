/**
 * Checks real management responses against the OpenAPI document: the schema the document gives for
 * that path, method and status, compiled with a JSON Schema 2020-12 validator as OpenAPI 3.1 specifies;
 * for errors, that the document names the code (and the Retry-After header, when one is sent).
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { buildOpenApiDocument, type OpenApiDocument } from '../../src/management/openapi.js';

type Method = 'get' | 'post' | 'patch' | 'delete';

interface MediaType {
  schema?: object;
  /** Error responses name each code they may carry as an example. */
  examples?: Record<string, unknown>;
}
interface ResponseObject {
  content?: Record<string, MediaType>;
}
interface Operation {
  responses: Record<string, ResponseObject>;
}

export interface OpenApiResponse {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Record<string, string | string[] | undefined>;
}

export class OpenApiChecker {
  private readonly ajv = new Ajv2020({ allErrors: true, strict: false });
  private readonly compiled = new Map<string, ValidateFunction>();

  private constructor(readonly document: OpenApiDocument) {
    formats.default(this.ajv);
  }

  /** `prefix`: the MANAGEMENT_PREFIX the app under test runs with. */
  static async create(prefix = ''): Promise<OpenApiChecker> {
    const dereferenced = (await SwaggerParser.dereference(
      structuredClone(buildOpenApiDocument({ prefix })) as never,
    )) as unknown;
    return new OpenApiChecker(dereferenced as OpenApiDocument);
  }

  /**
   * Problems with one response, `[]` when it matches. `pathTemplate` as in the document, e.g.
   * `/consumer-api-key/{consumerApiKeyId}`.
   */
  problems(method: Method, pathTemplate: string, res: OpenApiResponse): string[] {
    const operation = this.document.paths[pathTemplate]?.[method] as Operation | undefined;
    if (!operation) return [`the document has no ${method.toUpperCase()} ${pathTemplate}`];
    const status = String(res.status);
    const response = operation.responses[status] ?? operation.responses.default;
    if (!response) return [`${method.toUpperCase()} ${pathTemplate} documents no ${status} response`];
    const contentType = String(res.headers['content-type'] ?? '');
    if (!contentType.startsWith('application/json'))
      return [`content-type is "${contentType}", not application/json`];
    const media = response.content?.['application/json'];
    const schema = media?.schema;
    if (!schema) return [`${method.toUpperCase()} ${pathTemplate} ${status} documents no JSON body`];
    // An error's code must be one the document names for this operation and status.
    const code = (res.body as { code?: unknown } | undefined)?.code;
    if (typeof code === 'string' && media.examples && !(code in media.examples)) {
      return [
        `${method.toUpperCase()} ${pathTemplate} ${status} documents the codes ${Object.keys(media.examples).join(', ')}, not ${code}`,
      ];
    }
    if (
      res.headers['retry-after'] !== undefined &&
      !(response as { headers?: Record<string, unknown> }).headers?.['Retry-After']
    ) {
      return [`${method.toUpperCase()} ${pathTemplate} ${status} documents no Retry-After header`];
    }
    const key = `${method} ${pathTemplate} ${status}`;
    let validate = this.compiled.get(key);
    if (!validate) this.compiled.set(key, (validate = this.ajv.compile(schema)));
    if (validate(res.body)) return [];
    return (validate.errors ?? []).map((e) => `${e.instancePath || '(body)'} ${e.message ?? ''}`.trim());
  }
}
