export const CLIENT_COPIES: readonly { source: string; file: string }[];
export function clientCopyText(source: string, text?: string): string;
