export const PROXY_REFUSALS_FILE: string;
export const PROXY_REFUSAL_CODES: readonly string[];
export function proxyRefusalsText(errors: Record<string, { status: number; message: string }>): string;
