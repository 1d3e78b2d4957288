export const API_TYPES_FILE: string;
export function apiTypesText(document: object): Promise<string>;
