// Writes @tollgate/client's mintToken from the server's (see client-mint-token.mjs).
import { writeFileSync } from 'node:fs';
import { MINT_TOKEN_FILE, clientMintTokenText } from './client-mint-token.mjs';

writeFileSync(MINT_TOKEN_FILE, clientMintTokenText());
