/** The part of swagger-ui-dist's bundle the reference page uses (the package ships no types). */
declare module 'swagger-ui-dist/swagger-ui-es-bundle.js' {
  interface SwaggerRequest {
    url: string;
    headers: Record<string, string>;
  }
  interface SwaggerOptions {
    domNode: HTMLElement;
    spec: object;
    validatorUrl: null;
    tryItOutEnabled?: boolean;
    requestInterceptor?: (request: SwaggerRequest) => SwaggerRequest;
  }
  const SwaggerUI: (options: SwaggerOptions) => unknown;
  export default SwaggerUI;
}
