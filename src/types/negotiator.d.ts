/** The part of negotiator (Express's own Accept parser) the management API uses. */
declare module 'negotiator' {
  export default class Negotiator {
    constructor(request: { headers: Record<string, string | string[] | undefined> });
    /** The media types the request accepts, most preferred first (parameters set aside). */
    mediaTypes(available?: string[]): string[];
  }
}
