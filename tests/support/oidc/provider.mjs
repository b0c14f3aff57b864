// A real OpenID Connect provider (panva's oidc-provider) for Goldset's single sign-on tests
// (tests/goldset/sso). It serves discovery, authorization, token, userinfo, JWKS and end
// session on 127.0.0.1, with its own login page (devInteractions: any login names a user of
// --users; any password), one confidential client, and RS256 id tokens.
//
//   node provider.mjs [--port N] --client-id ID --client-secret SECRET
//        --redirect-uri URI [--post-logout-redirect-uri URI] [--issuer URL]
//        --users '{"ada": {"email": "...", "groups": ["search-eng"]}}'
//        [--clock-offset SECONDS] [--serve-foreign-jwks]
//
// --clock-offset shifts the provider's clock (Date.now), so that the tokens it signs are
// already expired by the relying party's clock without anybody waiting for them to be.
// --serve-foreign-jwks signs with one key and serves, under the same key id, the public
// half of another: every signature then fails to verify against the JWKS it publishes.
// It prints "ready ISSUER" once it listens and answers. Without --port (or with 0) it listens
// on a port the system gives it, which the issuer names: no other process can take that port
// between its choice and the listen, as it could take a free port a caller found beforehand.

import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

import Provider from 'oidc-provider';

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    issuer: { type: 'string' },
    'client-id': { type: 'string', default: 'goldset' },
    'client-secret': { type: 'string', default: 'goldset-test-secret' },
    'redirect-uri': { type: 'string', multiple: true, default: [] },
    'post-logout-redirect-uri': { type: 'string', multiple: true, default: [] },
    users: { type: 'string', default: '{}' },
    'clock-offset': { type: 'string', default: '0' },
    'serve-foreign-jwks': { type: 'boolean', default: false },
  },
});

const users = JSON.parse(args.users);

const offsetMs = Number(args['clock-offset']) * 1000;
if (offsetMs) {
  const realNow = Date.now;
  Date.now = () => realNow() + offsetMs;
}

function signingKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: 'goldset-test-key', alg: 'RS256', use: 'sig' };
}

const key = signingKey();
// The public half of another key under the same kid: what --serve-foreign-jwks publishes.
const foreign = (({ kty, n, e, kid, alg, use }) => ({ kty, n, e, kid, alg, use }))(signingKey());

const scopes = 'openid email profile groups';

function makeProvider(issuer) {
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: args['client-id'],
        client_secret: args['client-secret'],
        redirect_uris: args['redirect-uri'],
        post_logout_redirect_uris: args['post-logout-redirect-uri'],
        response_types: ['code'],
        grant_types: ['authorization_code'],
        id_token_signed_response_alg: 'RS256',
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    jwks: { keys: [key] },
    scopes: scopes.split(' '),
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['preferred_username', 'given_name', 'family_name', 'name'],
      groups: ['groups'],
    },
    features: { devInteractions: { enabled: true } },
    // Goldset is this provider's first-party client: no consent screen, the grant is given.
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) {
        return ctx.oidc.provider.Grant.find(grantId);
      }
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope(scopes);
      await grant.save();
      return grant;
    },
    async findAccount(ctx, id) {
      const user = users[id];
      if (!user) {
        return undefined;
      }
      return {
        accountId: id,
        async claims() {
          return { sub: id, preferred_username: id, email_verified: true, ...user };
        },
      };
    },
    // Cookies are stamped with the provider's clock: a day's life keeps them alive in the
    // browser through a --clock-offset of a few hours.
    ttl: { Interaction: 24 * 3600, Session: 14 * 24 * 3600, Grant: 14 * 24 * 3600 },
  });

  if (args['serve-foreign-jwks']) {
    provider.use(async (ctx, next) => {
      if (ctx.path === '/jwks') {
        ctx.type = 'application/jwk-set+json';
        ctx.body = { keys: [foreign] };
        return;
      }
      await next();
    });
  }
  return provider;
}

// The server listens first, so that the issuer can name the port it got.
const server = createServer();
server.listen(Number(args.port || 0), '127.0.0.1', () => {
  const issuer = args.issuer || `http://127.0.0.1:${server.address().port}`;
  server.on('request', makeProvider(issuer).callback());
  console.log(`ready ${issuer}`);
});
