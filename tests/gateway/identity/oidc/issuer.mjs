// An OpenID provider (the certified `oidc-provider`) on loopback for the identity tests.
//   node issuer.mjs <port> <audience> <client secret> [<console redirect URI>]
// One client, `toolmesh-test`, gets JWT access tokens for <audience> through the client
// credentials grant, with the scopes it asks for among `tools.read tools.admin`. With a redirect
// URI, a second one, `toolmesh-console`, is the web console: a public client (no secret) with the
// authorization code flow and PKCE; a person signs in on the provider's development pages (any
// login and password) and consents.
import Provider from "oidc-provider";

const [port, audience, secret, consoleRedirect] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: "toolmesh-test",
      client_secret: secret,
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      scope: "tools.read tools.admin",
    },
    ...(consoleRedirect
      ? [
          {
            client_id: "toolmesh-console",
            token_endpoint_auth_method: "none",
            grant_types: ["authorization_code"],
            response_types: ["code"],
            redirect_uris: [consoleRedirect],
            scope: "openid tools.read tools.admin",
          },
        ]
      : []),
  ],
  scopes: ["openid", "tools.read", "tools.admin"],
  features: {
    devInteractions: { enabled: Boolean(consoleRedirect) },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => audience,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resourceIndicator) => ({
        scope: "tools.read tools.admin",
        audience: resourceIndicator,
        accessTokenTTL: 300,
        accessTokenFormat: "jwt",
        jwt: { sign: { alg: "RS256" } },
      }),
    },
  },
});
provider.proxy = false;

provider.listen(Number(port), "127.0.0.1", () => {
  console.log(`ready ${issuer}`);
});
