// Writes @tollgate/client's mintToken from the server's (see client-mint-token.mjs).
import { writeWhole } from './lib/write-whole.mjs';
import { MINT_TOKEN_FILE, clientMintTokenText } from './client-mint-token.mjs';

writeWhole(MINT_TOKEN_FILE, clientMintTokenText());
