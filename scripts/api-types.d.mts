export const API_TYPES_FILES: readonly string[];
export function apiTypesText(document: object): Promise<string>;
