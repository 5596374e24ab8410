// DPoP against a running service with libraries nobody here wrote: panva's `dpop`
// makes the keys and proofs, `oauth4webapi` reads the metadata, calls a protected
// resource with a bound token (its own proofs) and validates the token and a proof as a
// resource server would (RFC 9068 + RFC 9449). Prints one JSON line per algorithm.
//
//   node dpop.mjs BASE_URL     (the service's public base URL, where it is reached)
import { generateKeyPair, generateProof } from 'dpop';
import * as oauth from 'oauth4webapi';

const [base] = process.argv.slice(2);
const issuer = new URL(`${base}/api`);
const insecure = { [oauth.allowInsecureRequests]: true };
const as = await oauth.processDiscoveryResponse(
  issuer,
  await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
);
const client = { client_id: 'demo-mobile-app' };

for (const alg of ['ES256', 'Ed25519']) {
  const result = { alg, algs: as.dpop_signing_alg_values_supported };
  const keypair = await generateKeyPair(alg);
  const authorize = `${base}/api/v1/authorize`;
  const query = 'response_type=token&client_id=demo-mobile-app&businessCode=GCB&countryCode=MX&channelId=MOBILE';
  const token = await fetch(`${authorize}?${query}`, {
    headers: { uuid: crypto.randomUUID(), DPoP: await generateProof(keypair, authorize, 'GET') },
  });
  const body = await token.json();
  result.authorize = token.status;
  result.token_type = body.token_type;

  // oauth4webapi as the app: a protected resource request with its own DPoP proofs.
  const atms = `${base}/api/v1/atms`;
  const dpop = oauth.DPoP(client, keypair);
  const headers = new Headers({ client_id: client.client_id });
  const answer = await oauth.protectedResourceRequest(body.access_token, 'GET', new URL(atms), headers, null, {
    DPoP: dpop,
    ...insecure,
  }).catch((error) => ({ status: `error: ${error.message}` }));
  result.atms_by_oauth4webapi = answer.status;

  // The same with `dpop`'s proof, by hand.
  const proof = await generateProof(keypair, atms, 'GET', undefined, body.access_token);
  const page = await fetch(atms, {
    headers: { Authorization: `DPoP ${body.access_token}`, DPoP: proof, client_id: client.client_id },
  });
  result.atms = page.status;

  // oauth4webapi as a resource server: the token and a fresh proof, validated.
  const request = new Request(atms, {
    headers: {
      Authorization: `DPoP ${body.access_token}`,
      DPoP: await generateProof(keypair, atms, 'GET', undefined, body.access_token),
    },
  });
  try {
    const claims = await oauth.validateJwtAccessToken(as, request, issuer.href, { ...insecure, requireDPoP: true });
    result.validated = true;
    result.jkt = claims.cnf?.jkt;
  } catch (error) {
    result.validated = `error: ${error.message}`;
  }
  console.log(JSON.stringify(result));
}
