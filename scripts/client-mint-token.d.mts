export const MINT_TOKEN_SOURCE: string;
export const MINT_TOKEN_FILE: string;
export function clientMintTokenText(source?: string): string;
